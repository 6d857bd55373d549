"""Compares the decoder variants on the same inputs.

    python -m decode.compare --model_dir runs/default --beam_widths 1,4,8 \
        --json bench/out/compare.json --plot bench/out/compare.png
    python -m decode.compare --model_dir runs/default --graphs runs/graphs \
        && tensorboard --logdir runs/graphs

Every variant (greedy once; while_loop and unrolled at every beam width)
decodes the same sentences with a fresh `Translator`: the graphs it built (the
unrolled search one per length bucket), their build seconds and ops; the first
call ("first ms (incl. build)") and the median of --runs more (ms, sentences/s,
output tokens/s); BLEU (sacrebleu) against references; the agreement of unrolled
with while_loop at each width, and of greedy with while_loop at width 1 (texts,
n-best ids, the largest score difference: they should agree to 1e-5); and, for
greedy and both searches at the widest beam, latency against output length.
--graphs LOGDIR instead writes the graphs of the unrolled search at two lengths
and of the while_loop search, for TensorBoard's Graphs tab.

Lines end at LF or CR LF, as `wc -l` counts them. Progress goes to standard error,
the tables to standard output; the figures hold for this machine and inputs only.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported, in main

import numpy as np  # noqa: E402
import sacrebleu  # noqa: E402

from data_pipeline.corpus import read_text_lines  # noqa: E402

STEADY_COLUMNS = (
    ("decoder", "decoder", "%s"), ("beam", "beam_width", "%d"), ("graphs", "graphs", "%d"),
    ("build s", "build_seconds", "%.2f"), ("ops", "num_ops", "%d"),
    ("first ms (incl. build)", "first_call_ms", "%.1f"), ("steady ms", "steady_ms", "%.1f"),
    ("sent/s", "sentences_per_second", "%.1f"), ("tok/s", "tokens_per_second", "%.0f"),
    ("out len", "mean_output_tokens", "%.1f"), ("BLEU", "bleu", "%.2f"),
)
AGREEMENT_COLUMNS = (
    ("variant", "variant", "%s"), ("against", "against", "%s"),
    ("same text %", "identical_texts_percent", "%.1f"),
    ("same ids %", "identical_ids_percent", "%.1f"),
    ("max |score diff|", "max_score_difference", "%.2g"),
)
GRAPH_LENGTHS = (8, 32)  # --graphs: the unrolled search's steps in its two graphs


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m decode.compare", description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 2)[2], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model_dir", required=True, help="a model directory written by train.py")
    parser.add_argument("--input", help="source sentences, one per line (default: the model's "
                                        "prepared test set, else its dev set)")
    parser.add_argument("--reference", help="reference translations, one per line, for BLEU "
                                            "(default with the default input: its targets)")
    parser.add_argument("--beam_widths", default="1,4,8",
                        help="comma-separated beam widths (default: %(default)s)")
    parser.add_argument("--max_sentences", type=int, default=200,
                        help="use the first N sentences (default: %(default)s; 0: all)")
    parser.add_argument("--runs", type=int, default=3,
                        help="timed calls after the first, for the median (default: %(default)s)")
    parser.add_argument("--latency_sentences", type=int, default=16,
                        help="sentences timed one by one for latency against output length "
                             "(default: %(default)s)")
    parser.add_argument("--json", help="write the full report to this JSON file")
    parser.add_argument("--plot", help="write latency charts to this PNG file")
    parser.add_argument("--graphs", metavar="LOGDIR", help="only write the searches' graphs "
                        "to LOGDIR for TensorBoard (unrolled at %d and %d steps, while_loop)"
                        % GRAPH_LENGTHS)
    args = parser.parse_args(argv)
    try:
        args.beam_widths = sorted({int(width) for width in args.beam_widths.split(",")})
    except ValueError:
        parser.error("--beam_widths must be comma-separated integers, got %r" % args.beam_widths)
    if args.reference and not args.input:
        parser.error("--reference needs --input (the default input brings its own references)")
    if min(args.max_sentences, args.latency_sentences) < 0 or args.runs < 1:
        parser.error("--max_sentences and --latency_sentences must be >= 0, --runs >= 1")
    for name in ("json", "plot"):  # checked now: they are written after minutes of measuring
        path = getattr(args, name)
        if path and not os.path.isdir(os.path.dirname(path) or "."):
            parser.error("--%s %s: no such directory" % (name, path))
    return args


def default_input_files(config):
    """The model's prepared test set, else its dev set: (source path, target path or None)."""
    for split in ("test", "dev"):
        source, target = (os.path.join(config["data"]["data_dir"], "%s.%s" % (split, side))
                          for side in ("src", "tgt"))
        if os.path.isfile(source):
            return source, target if os.path.isfile(target) else None
    raise ValueError("no --input given and no prepared test or dev set in %s (the model's "
                     "data.data_dir): pass --input FILE [--reference FILE]"
                     % config["data"]["data_dir"])


def load_inputs(translator, source_path, reference_path, max_sentences):
    """(token_ids, references or None) of the first `max_sentences` (0: all) non-blank
    sources; ValueError for misaligned references, no sentence, or a file not UTF-8."""
    sources = [line.strip() for line in read_text_lines(source_path)]
    references = ([line.strip() for line in read_text_lines(reference_path)]
                  if reference_path else None)
    if references is not None and len(references) != len(sources):
        raise ValueError("%s has %d lines but %s has %d: they must be aligned"
                         % (source_path, len(sources), reference_path, len(references)))
    token_ids = [translator.tokenize(sentence) for sentence in sources]
    kept = [index for index, ids in enumerate(token_ids) if ids][:max_sentences or None]
    if not kept:
        raise ValueError("%s holds no sentence to translate" % source_path)
    return ([token_ids[index] for index in kept],
            [references[index] for index in kept] if references is not None else None)


def variants_to_compare(beam_widths):
    """(variants: (decoder, beam_width) pairs, greedy once then both beam searches per width,
    agreement pairs: (variant, reference variant) pairs whose results should be identical)."""
    pairs = [(("unrolled", width), ("while_loop", width)) for width in beam_widths]
    return ([("greedy", 1)] + [(decoder, width) for width in beam_widths
                               for decoder in ("while_loop", "unrolled")],
            ([(("greedy", 1), ("while_loop", 1))] if 1 in beam_widths else []) + pairs)


def timed(function, runs):
    """(the first call's result, its seconds, the seconds of `runs` more calls)."""
    timings, results = [], []
    for _ in range(runs + 1):
        start = time.perf_counter()
        results.append(function())
        timings.append(time.perf_counter() - start)
    return results[0], timings[0], timings[1:]


def measure(translator, token_ids, references, decoder, beam_width, runs):
    """(row: a dict of the STEADY_COLUMNS fields, results: a list of SearchResult)."""
    with translator.recording_builds() as built:
        results, first, timings = timed(
            lambda: translator.search(token_ids, decoder, beam_width), runs)
    steady = statistics.median(timings)
    output_tokens = [len(result.ids[0]) for result in results]
    texts = [translator.detokenize(result.ids[0]) for result in results]
    return {
        "decoder": decoder, "beam_width": beam_width, "graphs": len(built),
        "build_seconds": sum(variant.build_seconds for variant in built),
        "num_ops": sum(variant.num_ops for variant in built),
        "first_call_ms": 1000 * first, "steady_ms": 1000 * steady,
        "steady_runs_ms": [1000 * seconds for seconds in timings],
        "sentences_per_second": len(token_ids) / steady,
        "tokens_per_second": sum(output_tokens) / steady,
        "mean_output_tokens": float(np.mean(output_tokens)),
        "bleu": (sacrebleu.corpus_bleu(texts, [references]).score
                 if references is not None else None),
    }, results


def agreement(detokenizer, results, reference_results):
    """How far two variants' lists of SearchResult agree (over the narrower beam): the %
    of identical best texts, of identical n-best ids, and the largest score difference."""
    same_texts, same_ids, max_difference = 0, 0, 0.0
    for result, reference in zip(results, reference_results):
        beams = min(len(result.ids), len(reference.ids))
        same_texts += (detokenizer.detokenize(result.ids[0])
                       == detokenizer.detokenize(reference.ids[0]))
        same_ids += result.ids[:beams] == reference.ids[:beams]
        max_difference = max(max_difference, float(np.max(np.abs(
            np.subtract(result.scores[:beams], reference.scores[:beams])))))
    return {"identical_texts_percent": 100.0 * same_texts / len(results),
            "identical_ids_percent": 100.0 * same_ids / len(results),
            "max_score_difference": max_difference}


def format_table(rows, columns):
    """A plain-text table of `rows` (dicts); None values print as "-"."""
    cells = [[header for header, _, _ in columns]] + [
        [("-" if row[key] is None else fmt % row[key]) for _, key, fmt in columns]
        for row in rows]
    widths = [max(len(line[column]) for line in cells) for column in range(len(columns))]
    return "\n".join("  ".join(cell.rjust(width) if column else cell.ljust(width)
                               for column, (cell, width) in enumerate(zip(line, widths)))
                     for line in cells)


def plot(report, path):
    """Writes latency against beam width, and against output length, to a PNG."""
    import matplotlib  # only --plot needs it
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (by_beam, by_length) = plt.subplots(1, 2, figsize=(12, 4.5))
    for decoder, marker in (("while_loop", "o-"), ("unrolled", "s-"), ("greedy", "^")):
        rows = [(r["beam_width"], r["steady_ms"]) for r in report["results"]
                if r["decoder"] == decoder]
        by_beam.plot(*zip(*rows), marker, label=decoder)
        points = [p for p in report["sentence_latency"] if p["decoder"] == decoder]
        if points:
            by_length.scatter([p["output_tokens"] for p in points], [p["ms"] for p in points],
                              marker=marker[0], label="%s (beam %d)" % (decoder,
                                                                         points[0]["beam_width"]))
    by_beam.set_xticks(sorted({row["beam_width"] for row in report["results"]}))
    by_beam.set(xlabel="beam width", ylabel="ms per call (%d sentences, median)"
                % report["inputs"]["sentences"], title="steady-state latency")
    by_length.set(xlabel="output tokens (best hypothesis)", ylabel="ms (one sentence)",
                  title="latency against output length")
    for axes in (by_beam, by_length):
        axes.grid(alpha=0.3)
        axes.legend()
    figure.suptitle("%s, step %d: this machine and these inputs only"
                    % (report["model"]["name"], report["model"]["step"]))
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def progress_line(row, number, count):
    """One variant's progress, e.g. "[3/5] unrolled@4: built 3 graphs in 4.2 s, ..."."""
    return ("[%d/%d] %s@%d: built %d graph%s in %.1f s, first call %.0f ms (incl. build), "
            "steady %.1f ms" % (number, count, row["decoder"], row["beam_width"], row["graphs"],
                                "" if row["graphs"] == 1 else "s", row["build_seconds"],
                                row["first_call_ms"], row["steady_ms"]))


def write_graphs(translator, logdir):
    """Writes the unrolled search at GRAPH_LENGTHS steps and the while_loop search as
    TensorBoard graphs in logdir/<name>; returns {name: op count}."""
    import tensorflow.compat.v1 as tf

    from decode.translator import search_encoded
    from seq2seq.model import Seq2SeqModel

    op_counts = {}
    for decoder, length in [("unrolled", n) for n in GRAPH_LENGTHS] + [("while_loop", None)]:
        name = "%s_%d_steps" % (decoder, length) if length else decoder
        with tf.Graph().as_default() as graph:
            source_ids = tf.placeholder(tf.int32, [None, None], name="source_ids")
            source_length = tf.placeholder(tf.int32, [None], name="source_length")
            model = Seq2SeqModel(translator.config["model"], translator.source_vocab_size,
                                 translator.target_vocab_size)
            search_encoded(model, model.encode(source_ids, source_length, training=False),
                           source_length, translator.config["decode"], decoder,
                           translator.config["decode"]["beam_width"], unrolled_length=length)
            tf.summary.FileWriter(os.path.join(logdir, name), graph).close()
            op_counts[name] = len(graph.get_operations())
    return op_counts


def main(argv=None):
    args = parse_args(argv)
    import tensorflow.compat.v1 as tf  # after parse_args: --help needs none of it

    from decode.translator import Translator

    tf.logging.set_verbosity(tf.logging.ERROR)
    tf.disable_v2_behavior()
    try:
        translator = Translator(args.model_dir)
        if args.graphs:
            for name, count in write_graphs(translator, args.graphs).items():
                print("%s: %d ops" % (name, count))
            print("tensorboard --logdir %s  (then the Graphs tab)" % args.graphs)
            return 0
        for width in args.beam_widths:
            translator.check_options("while_loop", width)
        source_path, reference_path = ((args.input, args.reference) if args.input
                                       else default_input_files(translator.config))
        token_ids, references = load_inputs(translator, source_path, reference_path,
                                            args.max_sentences)
    except (ValueError, OSError) as error:
        print("error: %s" % error, file=sys.stderr)
        return 2
    report = {
        "model": {"model_dir": args.model_dir, "name": translator.model_name,
                  "step": translator.step},
        "inputs": {"source": source_path, "reference": reference_path, "sentences": len(token_ids),
                   "source_tokens": sum(len(ids) for ids in token_ids)},
        "decode": translator.config["decode"],
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "cpus": os.cpu_count(), "tensorflow": tf.__version__},
    }
    # Each variant is measured with a fresh Translator: a first run costs in proportion to
    # the whole graph. Latency against output length: greedy and both searches, widest beam.
    results, (variants, agreement_pairs) = {}, variants_to_compare(args.beam_widths)
    report.update(results=[], agreement=[], sentence_latency=[])
    for number, (decoder, width) in enumerate(variants, start=1):
        variant_translator = Translator(args.model_dir)
        try:
            row, results[decoder, width] = measure(
                variant_translator, token_ids, references, decoder, width, args.runs)
            if decoder == "greedy" or width == args.beam_widths[-1]:
                for ids in token_ids[:args.latency_sentences]:
                    result, _, timings = timed(lambda: variant_translator.search(
                        [ids], decoder, width)[0], args.runs)
                    report["sentence_latency"].append({
                        "decoder": decoder, "beam_width": width, "source_tokens": len(ids),
                        "output_tokens": len(result.ids[0]),
                        "ms": 1000 * statistics.median(timings)})
        finally:
            variant_translator.close()
        report["results"].append(row)
        print(progress_line(row, number, len(variants)), file=sys.stderr, flush=True)
    report["agreement"] = [
        dict({"variant": "%s@%d" % variant, "against": "%s@%d" % reference},
             **agreement(translator, results[variant], results[reference]))
        for variant, reference in agreement_pairs]
    print("%s (step %d), %d sentences from %s, batch size %d, length penalty %g"
          % (translator.model_name, translator.step, len(token_ids), source_path,
             report["decode"]["batch_size"], report["decode"]["length_penalty"]))
    print(format_table(report["results"], STEADY_COLUMNS) + "\n")
    print(format_table(report["agreement"], AGREEMENT_COLUMNS))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
    if args.plot:
        plot(report, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
