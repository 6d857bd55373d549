"""Translates text, one sentence per line (the model loaded once; lines read in chunks
of many batches, sorted by length within a chunk).

    python -m decode.translate --model_dir runs/default < input.txt > output.txt
    python -m decode.translate --model_dir runs/default --decoder unrolled --beam_width 8 \
        --n_best 3 --input input.txt --output nbest.txt --trace trace.jsonl
    python -m decode.translate --model_dir runs/a --model_dir runs/b --decoder mbr \
        --input input.txt --target_prefix starts.txt
    python -m decode.translate --model_dir runs/lab --input messages.txt --constraints terms.tsv
"""

import argparse
import contextlib
import itertools
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported, in main

from data_pipeline.corpus import iter_text_lines, read_text_lines  # noqa: E402
from decode.request import DECODERS, add_flags, decode_request, flag_values  # noqa: E402

OUTPUT_FORMAT = """\
input: UTF-8 text. Lines end at LF or CR LF, as `wc -l` counts them (at CR in
a file without LF); a CR inside a line is a space, like any run of whitespace.

output: with --n_best 1 (the default), one translation per input line, in
order; an empty input line gives an empty output line. With --n_best N > 1,
each input line gives up to N lines "text<TAB>score" (fewer when fewer
hypotheses are possible), best first, followed by one blank line; an empty
input line gives just the blank line. Scores are length-penalised
log-probabilities (higher is better); mbr ranks by expected utility, which
the lines do not show, so its scores need not descend. --show_unfamiliar
appends to every output line a TAB and "unfamiliar" when the source is unlike
the sentences the model learned from (its translation should not be trusted),
else nothing.

--trace FILE: one JSON line per input line, the search trace of docs/API.md
("HTTP API"; a score null where a slot holds no possible hypothesis), or null
for an empty input line.

--target_prefix FILE: one line per input line (read with the input, before
anything is translated), what its translation starts with; an empty line: no
prefix. --constraints FILE: the same, each line the texts its translation must
contain, separated by TABs (the beam searches). Placeholders and tags of the
input (%(name)s, {}, <b>) come back as written: with --placeholders keep (the
default) each exactly once. Several --model_dir: an ensemble of models sharing
their vocabularies."""

BATCHES_PER_CHUNK = 16  # lines read at a time: many batches for length sorting, bounded memory


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m decode.translate", description=__doc__.split("\n\n")[0],
        epilog=OUTPUT_FORMAT, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model_dir", required=True, action="append",
                        help="a model directory written by train.py (repeated: an ensemble)")
    parser.add_argument("--decoder", choices=DECODERS, default="while_loop",
                        help="decoder variant (default: %(default)s)")
    parser.add_argument("--beam_width", type=int,
                        help="beam width (default: the config's decode.beam_width; "
                             "greedy decodes at width 1; the value must still be "
                             "1..decode.max_beam_width)")
    parser.add_argument("--n_best", type=int, default=1,
                        help="hypotheses per sentence, at most the beam width (default: 1)")
    parser.add_argument("--input", help="input text file (default: standard input)")
    parser.add_argument("--output", help="output file (default: standard output)")
    parser.add_argument("--trace", metavar="FILE",
                        help="write each sentence's search trace to FILE, one JSON line each")
    parser.add_argument("--target_prefix", metavar="FILE",
                        help="what each translation starts with, one line per input line")
    parser.add_argument("--constraints", metavar="FILE",
                        help="what each translation contains, one line of TAB-separated texts "
                             "per input line")
    parser.add_argument("--show_unfamiliar", action="store_true",
                        help='append a TAB and "unfamiliar" (or nothing) to every output line')
    add_flags(parser)
    args = parser.parse_args(argv)
    for name in ("output", "trace"):  # opening it empties it before the input is read
        path = getattr(args, name)
        if args.input and path and os.path.exists(path) and os.path.exists(args.input) and (
                os.path.samefile(args.input, path)):
            parser.error("--%s %s is the --input file: it would be emptied before being read"
                         % (name, path))
    if args.output and args.trace and os.path.abspath(args.output) == os.path.abspath(args.trace):
        parser.error("--output and --trace are both %s: give each a file of its own" % args.output)
    return args


def format_translation(translation, n_best, show_unfamiliar):
    """The output text of one input line (see OUTPUT_FORMAT); translation None: a blank line."""
    flag = "\tunfamiliar" if translation and translation.unfamiliar else "\t"
    flag = flag if show_unfamiliar else ""
    if n_best == 1:
        return (translation.text if translation else "") + flag + "\n"
    hypotheses = translation.n_best if translation else []
    return "".join("%s\t%.6f%s\n" % (h.text, h.score, flag) for h in hypotheses) + "\n"


def translate_lines(translator, lines, request, args):
    """Input lines (blank ones are not translated) under `request`, made for these lines ->
    (output text, trace text: one JSON line per input line, "" without --trace)."""
    token_ids = [translator.tokenize(line.strip()) for line in lines]
    to_translate = [index for index, ids in enumerate(token_ids) if ids]
    translations = dict(zip(to_translate, translator.translate_tokens(
        [token_ids[index] for index in to_translate], request.for_sentences(to_translate),
        originals=[translator.placeholders(lines[index].strip()) for index in to_translate])))
    found = [translations.get(index) for index in range(len(lines))]
    return ("".join(format_translation(t, args.n_best, args.show_unfamiliar) for t in found),
            "".join(json.dumps(t and t.trace, ensure_ascii=False) + "\n" for t in found)
            if args.trace else "")


def read_per_line(path, flag, lines, parse):
    """--flag's FILE, one line per input line: parse(line, "path:number:") for each (a blank
    input line: []); ValueError if the line counts differ."""
    values = read_text_lines(path)
    if len(values) != len(lines):
        raise ValueError("--%s %s has %d lines but the input has %d: give one per input line"
                         % (flag, path, len(values), len(lines)))
    return [parse(value.strip(), "%s:%d:" % (path, number)) if line.strip() else []
            for number, (line, value) in enumerate(zip(lines, values), 1)]


def main(argv=None):
    args = parse_args(argv)
    import tensorflow.compat.v1 as tf  # after parse_args: --help needs none of it

    from decode.translator import Translator

    tf.logging.set_verbosity(tf.logging.ERROR)
    tf.disable_v2_behavior()
    translated = 0  # input lines whose translations are written
    with contextlib.ExitStack() as files:
        try:
            translator = Translator(args.model_dir)
            source = files.enter_context(  # bytes, split into lines as the corpus reader does
                open(args.input, "rb") if args.input else contextlib.nullcontext(sys.stdin.buffer))
            lines = iter_text_lines(source, args.input or "standard input")
            if args.target_prefix or args.constraints:  # read before any output is written
                lines = list(lines)
            given = {"target_prefix": translator.prefix_ids, "constraints": lambda line, name: [
                translator.constraint_ids(text, name) for text in line.split("\t") if text]}
            per_line = {flag: read_per_line(getattr(args, flag), flag, lines, parse)
                        for flag, parse in given.items() if getattr(args, flag)}
            request = decode_request(translator.served, dict(  # the files' lines as fields
                flag_values(args), decoder=args.decoder, beam_width=args.beam_width,
                n_best=args.n_best, trace=bool(args.trace), **per_line))
            lines = iter(lines)
            if not args.output:
                sys.stdout.reconfigure(encoding="utf-8")
            sink = files.enter_context(open(args.output, "w", encoding="utf-8") if args.output
                                       else contextlib.nullcontext(sys.stdout))
            traces = args.trace and files.enter_context(open(args.trace, "w", encoding="utf-8"))
            # At a terminal each line is answered at once.
            chunk_size = 1 if source.isatty() else (
                BATCHES_PER_CHUNK * translator.config["decode"]["batch_size"])
            for chunk in iter(lambda: list(itertools.islice(lines, chunk_size)), []):
                output, trace = translate_lines(translator, chunk, request.for_sentences(
                    range(translated, translated + len(chunk))), args)
                sink.write(output)
                sink.flush()
                if traces:
                    traces.write(trace)
                translated += len(chunk)
        except (ValueError, OSError) as error:  # e.g. a line not UTF-8, read a chunk at a time
            written = " (the output holds the first %d lines' translations)" % translated
            print("error: %s%s" % (error, written if translated else ""), file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
