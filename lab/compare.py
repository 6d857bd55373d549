"""Compares the decoder variants on the same inputs; with --sweep, --exact, --families,
--compare_models, --ensemble_best and --placeholders, the decoding lab (lab/sweep.py,
lab/families.py, lab/placeholder_row.py).

    python -m lab.compare --model_dir runs/default --beam_widths 1,4,8 --plot compare.png
    python -m lab.compare --model_dir runs/lab --beam_widths none --sweep --exact --json lab.json
    python -m lab.compare --model_dir runs/lab --beam_widths none --families mbr,diverse
    python -m lab.compare --model_dir runs/lab --beam_widths none --placeholders msgs.tsv
    python -m lab.compare --model_dir runs/default --graphs runs/graphs

Greedy once, then the while_loop and unrolled searches at every beam width, each with a fresh
`Translator`: its graphs, their build seconds and ops, the first call and the median of --runs
more, BLEU, and the agreement of the variants that should agree (to 1e-5). Progress goes to
standard error, the tables to standard output.
"""

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import time

import numpy as np
import sacrebleu

from data_pipeline.corpus import read_text_lines
from decode.request import COMMON_OPTIONS, add_flags, flag_values
from lab import families, lab_report, placeholder_row, sweep
from lab.graph_writer import GRAPH_LENGTHS, write_graphs

STEADY_COLUMNS = (
    ("decoder", "decoder", "%s"), ("beam", "beam_width", "%d"), ("graphs", "graphs", "%d"),
    ("build s", "build_seconds", "%.2f"), ("ops", "num_ops", "%d"),
    ("first ms (incl. build)", "first_call_ms", "%.1f"), ("steady ms", "steady_ms", "%.1f"),
    ("sent/s", "sentences_per_second", "%.1f"), ("tok/s", "tokens_per_second", "%.0f"),
    ("out len", "mean_output_tokens", "%.1f"), ("BLEU", "bleu", "%.2f"))
AGREEMENT_COLUMNS = (
    ("variant", "variant", "%s"), ("against", "against", "%s"),
    ("same text %", "identical_texts_percent", "%.1f"),
    ("same ids %", "identical_ids_percent", "%.1f"),
    ("max |score diff|", "max_score_difference", "%.2g"))


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python -m lab.compare", description=__doc__.split("\n\n")[0],
        epilog="\n".join([__doc__.split("\n\n", 1)[1], sweep.__doc__, families.__doc__,
                           placeholder_row.__doc__]),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model_dir", required=True, help="a model directory written by train.py")
    parser.add_argument("--input", help="source sentences, one per line (default: the model's "
                                        "prepared test set, else its dev set)")
    parser.add_argument("--reference", help="reference translations, one per line, for BLEU "
                                            "(default with the default input: its targets)")
    parser.add_argument("--beam_widths", default="1,4,8", help="comma-separated beam widths, "
                        "or none: no implementation comparison (default: %(default)s)")
    parser.add_argument("--max_sentences", type=int, default=200,
                        help="use the first N sentences (default: %(default)s; 0: all)")
    parser.add_argument("--runs", type=int, default=3,
                        help="timed calls after the first, for the median (default: %(default)s)")
    parser.add_argument("--latency_sentences", type=int, default=16, help="sentences timed one "
                        "by one for latency against output length (default: %(default)s)")
    parser.add_argument("--json", help="write the full report to this JSON file")
    parser.add_argument("--plot", help="write latency charts (with --beam_widths none: the "
                                       "sweep's) to this PNG file")
    parser.add_argument("--graphs", metavar="LOGDIR", help="only write the searches' graphs "
                        "to LOGDIR for TensorBoard (unrolled at %d and %d steps, while_loop)"
                        % GRAPH_LENGTHS)
    parser.add_argument("--placeholders", metavar="F.tsv", help="the placeholder row on these "
                        "messages with placeholders (source<TAB>reference)")
    add_flags(parser, COMMON_OPTIONS + ("max_expansions",))
    sweep.add_flags(parser)
    families.add_flags(parser)
    args = parser.parse_args(argv)
    for name in ("beam_widths", "sweep_beam_widths"):
        text = getattr(args, name)
        try:
            setattr(args, name, sorted({int(width) for width in text.split(",") if text != "none"}))
        except ValueError:
            parser.error("--%s must be comma-separated integers, got %r" % (name, text))
    sweep.check_flags(parser, args)
    families.check_flags(parser, args)
    if args.reference and not args.input:
        parser.error("--reference needs --input (the default input brings its own references)")
    if min(args.max_sentences, args.latency_sentences) < 0 or args.runs < 1:
        parser.error("--max_sentences and --latency_sentences must be >= 0, --runs >= 1")
    if args.plot and not (args.beam_widths or args.sweep):
        parser.error("--plot needs the comparison (--beam_widths) or --sweep")
    if not (args.beam_widths or args.lab or args.graphs or args.placeholders):
        parser.error("--beam_widths none leaves nothing to do: add --sweep, --families or "
                     "--placeholders")
    if args.markdown and not (args.lab or args.placeholders):
        parser.error("--markdown needs the lab (--sweep or the families) or --placeholders")
    for name in ("json", "plot", "sweep_plot", "markdown"):  # written after minutes of work
        path = getattr(args, name)
        if path and not os.path.isdir(os.path.dirname(path) or "."):
            parser.error("--%s %s: no such directory" % (name, path))
    return args


def default_input_files(config):
    """The model's prepared test set, else its dev set: (source path, target path or None)."""
    data_dir = config["data"]["data_dir"]
    for split in ("test", "dev"):
        source, target = (os.path.join(data_dir, split + side) for side in (".src", ".tgt"))
        if os.path.isfile(source):
            return source, target if os.path.isfile(target) else None
    raise ValueError("no --input given and no prepared test or dev set in %s (the model's "
                     "data.data_dir): pass --input FILE [--reference FILE]" % data_dir)


def load_inputs(translator, source_path, reference_path, max_sentences):
    """(sources, token_ids, references or None) of the first `max_sentences` (0: all)
    non-blank sources; ValueError for misaligned references, no sentence, or a file not UTF-8."""
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
    blank = sum(not ids for ids in token_ids[:kept[-1]])
    if blank:
        print("%s: %d blank line(s) skipped; the report's indices count the sentences kept"
              % (source_path, blank), file=sys.stderr)
    return ([sources[index] for index in kept], [token_ids[index] for index in kept],
            references and [references[index] for index in kept])


def variants_to_compare(beam_widths):
    """(variants: (decoder, beam_width) pairs, greedy then both beam searches per width, if any;
    agreement pairs: (variant, reference variant) pairs whose results should be identical)."""
    pairs = [(("greedy", 1), ("while_loop", 1))] * (1 in beam_widths) + [
        (("unrolled", width), ("while_loop", width)) for width in beam_widths]
    return [("greedy", 1)] * bool(beam_widths) + [
        (decoder, width) for width in beam_widths for decoder in ("while_loop", "unrolled")], pairs


def timed(function, runs):
    """(the first call's result, its seconds, the seconds of `runs` more calls)."""
    timings, results = [], []
    for _ in range(runs + 1):
        start = time.perf_counter()
        results.append(function())
        timings.append(time.perf_counter() - start)
    return results[0], timings[0], timings[1:]


def measure(translator, token_ids, references, request, runs):
    """(a row of the STEADY_COLUMNS' fields, a SearchResult per sentence) of a DecodeRequest."""
    with translator.recording_builds() as built:
        results, first, timings = timed(lambda: translator.search(token_ids, request), runs)
    steady = statistics.median(timings)
    output_tokens = [len(result.ids[0]) for result in results]
    texts = [translator.detokenize(result.ids[0]) for result in results]
    return {
        "decoder": request.decoder, "beam_width": request.width, "graphs": len(built),
        "build_seconds": sum(variant.build_seconds for variant in built),
        "num_ops": sum(variant.num_ops for variant in built), "first_call_ms": 1000 * first,
        "steady_ms": 1000 * steady, "steady_runs_ms": [1000 * seconds for seconds in timings],
        "sentences_per_second": len(token_ids) / steady,
        "tokens_per_second": sum(output_tokens) / steady,
        "mean_output_tokens": float(np.mean(output_tokens)),
        "bleu": references and sacrebleu.corpus_bleu(texts, [references]).score}, results


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


def plot(report, path):
    """Writes latency against beam width, and against output length, to a PNG."""
    plt, figure, (by_beam, by_length) = lab_report.charts()
    for decoder, marker in (("while_loop", "o-"), ("unrolled", "s-"), ("greedy", "^")):
        by_beam.plot(*zip(*[(row["beam_width"], row["steady_ms"]) for row in report["results"]
                            if row["decoder"] == decoder]), marker, label=decoder)
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
    lab_report.save(plt, figure, report, ": this machine and these inputs only", path)


def progress_line(row, number, count):
    """One variant's progress, e.g. "[3/5] unrolled@4: built 3 graphs in 4.2 s, ..."."""
    return ("[%d/%d] %s@%d: built %d graph%s in %.1f s, first call %.0f ms (incl. build), "
            "steady %.1f ms" % (number, count, row["decoder"], row["beam_width"], row["graphs"],
                                "" if row["graphs"] == 1 else "s", row["build_seconds"],
                                row["first_call_ms"], row["steady_ms"]))


def compare(args, translator, report, token_ids, references, options):
    """Measures every variant of --beam_widths, each with a fresh Translator, into `report`'s
    results, agreement and sentence_latency (greedy and the widest beam), and prints them."""
    from decode.translator import Translator

    variants, agreement_pairs = variants_to_compare(args.beam_widths)
    results, report["results"], report["sentence_latency"] = {}, [], []
    for number, (decoder, width) in enumerate(variants, start=1):
        with contextlib.closing(Translator(args.model_dir)) as fresh:
            request = fresh.request(decoder, width, options=options)
            row, results[decoder, width] = measure(fresh, token_ids, references, request, args.runs)
            if decoder == "greedy" or width == args.beam_widths[-1]:
                for ids in token_ids[:args.latency_sentences]:
                    result, _, timings = timed(lambda: fresh.search([ids], request)[0], args.runs)
                    report["sentence_latency"].append({
                        "decoder": decoder, "beam_width": width, "source_tokens": len(ids),
                        "output_tokens": len(result.ids[0]),
                        "ms": 1000 * statistics.median(timings)})
        report["results"].append(row)
        print(progress_line(row, number, len(variants)), file=sys.stderr, flush=True)
    report["agreement"] = [
        dict({"variant": "%s@%d" % variant, "against": "%s@%d" % reference},
             **agreement(translator, results[variant], results[reference]))
        for variant, reference in agreement_pairs]
    print("%s (step %d), %d sentences from %s, batch size %d, length penalty %g"
          % (report["model"]["name"], report["model"]["step"], len(token_ids),
             report["inputs"]["source"], report["decode"]["batch_size"],
             report["decode"]["length_penalty"]))
    if variants:
        print(lab_report.format_table(report["results"], STEADY_COLUMNS) + "\n")
        print(lab_report.format_table(report["agreement"], AGREEMENT_COLUMNS))


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported
    import tensorflow.compat.v1 as tf  # after parse_args: --help needs none of it

    from decode.translator import Translator

    tf.logging.set_verbosity(tf.logging.ERROR)
    tf.disable_v2_behavior()
    try:
        translator = Translator(args.model_dir)
        if args.graphs:
            write_graphs(translator, args.graphs)
            return 0
        options = flag_values(args, COMMON_OPTIONS)
        for width in args.beam_widths:  # checked before anything is decoded
            translator.request("while_loop", width, options=options)
        source_path, reference_path = ((args.input, args.reference) if args.input
                                       else default_input_files(translator.config))
        sources, token_ids, references = load_inputs(translator, source_path, reference_path,
                                                     args.max_sentences)
        lab_translator = args.lab and sweep.open_translator(args, translator, references, options)
        models = families.open_models(args, lab_translator) if args.lab else []
        messages = args.placeholders and placeholder_row.read(translator, args.placeholders,
                                                             options)
    except (ValueError, OSError) as error:
        print("error: %s" % error, file=sys.stderr)
        return 2
    report = {
        "model": {"model_dir": args.model_dir, "name": translator.model_name,
                  "step": translator.step},
        "inputs": {"source": source_path, "reference": reference_path, "sentences": len(token_ids),
                   "source_tokens": sum(len(ids) for ids in token_ids)},
        "decode": translator.config["decode"], "options": options,
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "cpus": os.cpu_count(), "tensorflow": tf.__version__},
    }
    compare(args, translator, report, token_ids, references, options)
    if args.lab:
        try:
            if args.sweep:
                sweep.run(args, lab_translator, report, sources, references, options)
            if models or args.families:
                families.run(args, lab_translator, models, report, sources, references, options)
        finally:
            for each in [lab_translator] + [model for _, model in models]:
                each.close()
    if args.placeholders:
        placeholder_row.run(translator, report, args.placeholders, *messages, options)
    for title, rows, columns in lab_report.tables(report):
        print("\n%s\n%s" % (title, lab_report.format_table(rows, columns)))
    write_outputs(args, report)
    return 0


def write_outputs(args, report):
    """Writes the report to --json and --markdown, its charts to --plot and --sweep_plot."""
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
    if args.plot:
        (plot if report["results"] else lab_report.plot_sweep)(report, args.plot)
    if args.sweep_plot:
        lab_report.plot_sweep(report, args.sweep_plot)
    if args.markdown:
        chart = args.sweep_plot or (None if report["results"] else args.plot)
        with open(args.markdown, "w", encoding="utf-8") as f:
            f.write(lab_report.markdown(report, chart and os.path.relpath(
                chart, os.path.dirname(os.path.abspath(args.markdown)))))


if __name__ == "__main__":
    sys.exit(main())
