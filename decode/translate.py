"""Translates text, one sentence per line.

    python -m decode.translate --model_dir runs/default < input.txt > output.txt
    python -m decode.translate --model_dir runs/default --decoder unrolled --beam_width 8 \
        --n_best 3 --input input.txt --output nbest.txt

The model directory is loaded once; lines are read in chunks, and each chunk
is translated in length-sorted batches (see `decode.translator`), so a long
input streams through without being held in memory.
"""

import argparse
import contextlib
import itertools
import os
import sys

# Before TensorFlow is imported (in main, after the arguments are parsed, so
# that --help and a usage error are quick): its C++ start-up messages.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from data_pipeline.corpus import CorpusError, iter_text_lines  # noqa: E402
from decode import DECODERS  # noqa: E402

OUTPUT_FORMAT = """\
input: UTF-8 text. Lines end at LF or CR LF, as `wc -l` counts them (at CR in
a file without LF); a CR inside a line is a space, like any run of whitespace.

output: with --n_best 1 (the default), one translation per input line, in
order; an empty input line gives an empty output line. With --n_best N > 1,
each input line gives up to N lines "text<TAB>score" (fewer when fewer
hypotheses are possible), best first, followed by one blank line; an empty
input line gives just the blank line. Scores are length-penalised
log-probabilities (higher is better)."""

# Lines read per chunk: many batches, so that length sorting finds
# sentences of similar length, yet a bounded amount of memory.
BATCHES_PER_CHUNK = 16


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m decode.translate", description=__doc__.split("\n\n")[0],
        epilog=OUTPUT_FORMAT, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model_dir", required=True, help="a model directory written by train.py")
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
    args = parser.parse_args(argv)
    # Opening the output truncates it before a line of the input is read.
    if (args.input and args.output and os.path.exists(args.input)
            and os.path.exists(args.output) and os.path.samefile(args.input, args.output)):
        parser.error("--output %s is the --input file: it would be emptied before "
                     "being read" % args.output)
    return args


def format_translation(translation, n_best):
    """The output text of one input line (see OUTPUT_FORMAT).

    Args:
      translation: its `Translation`, or None for a blank input line.
      n_best: the --n_best option.
    """
    if n_best == 1:
        return (translation.text if translation else "") + "\n"
    hypotheses = translation.n_best if translation else []
    return "".join("%s\t%.6f\n" % hypothesis for hypothesis in hypotheses) + "\n"


def translate_lines(translator, lines, decoder, beam_width, n_best):
    """Translates a list of input lines; returns their output text, in order.

    Blank lines are not translated: they give blank output (see OUTPUT_FORMAT).
    """
    token_ids = [translator.tokenize(line.strip()) for line in lines]
    to_translate = [index for index, ids in enumerate(token_ids) if ids]
    translations = dict(zip(to_translate, translator.translate_tokens(
        [token_ids[index] for index in to_translate], decoder, beam_width, n_best)))
    return "".join(format_translation(translations.get(index), n_best)
                   for index in range(len(lines)))


def chunks(lines, size):
    """Yields lists of up to `size` consecutive items of the iterable `lines`."""
    lines = iter(lines)
    while True:
        chunk = list(itertools.islice(lines, size))
        if not chunk:
            return
        yield chunk


def utf8(stream):
    """Standard output as UTF-8 text whatever the locale, left open on exit."""
    stream.reconfigure(encoding="utf-8")
    return contextlib.nullcontext(stream)


def main(argv=None):
    args = parse_args(argv)
    import tensorflow.compat.v1 as tf  # after parse_args: --help needs none of it

    from decode.translator import Translator

    tf.logging.set_verbosity(tf.logging.ERROR)
    tf.disable_v2_behavior()
    with contextlib.ExitStack() as files:
        try:
            translator = Translator(args.model_dir)
            translator.check_options(args.decoder, args.beam_width, args.n_best)
            # Bytes, split into lines as the corpus reader splits them.
            source = files.enter_context(
                open(args.input, "rb") if args.input
                else contextlib.nullcontext(sys.stdin.buffer))
            sink = files.enter_context(
                open(args.output, "w", encoding="utf-8") if args.output else utf8(sys.stdout))
        except (ValueError, OSError) as error:
            print("error: %s" % error, file=sys.stderr)
            return 2
        # Typed at a terminal, each line is answered at once rather than after
        # a chunk's worth of lines.
        chunk_size = (1 if source.isatty()
                      else BATCHES_PER_CHUNK * translator.config["decode"]["batch_size"])
        try:
            lines = iter_text_lines(source, args.input or "standard input")
            for chunk in chunks(lines, chunk_size):
                sink.write(translate_lines(translator, chunk, args.decoder, args.beam_width,
                                           args.n_best))
                sink.flush()
        except CorpusError as error:  # not UTF-8: the lines before it are translated
            print("error: %s" % error, file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
