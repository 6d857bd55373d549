"""Compares the decoder variants on the same inputs; with --sweep and --exact, the decoding lab.

    python -m decode.compare --model_dir runs/default --beam_widths 1,4,8 \
        --json bench/out/compare.json --plot bench/out/compare.png
    python -m decode.compare --model_dir runs/default --sweep --exact --max_expansions 2000 \
        --sweep_plot bench/out/sweep.png --differ beam1/none beam64/none
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

The lab (DESIGN.md "The decoding lab"; what its figures mean: docs/LAB.md): --sweep decodes
with the while_loop search at every --sweep_beam_widths x --normalisations (BLEU, chrF,
length ratio, empty outputs, mean score, sentences/s; --sweep_plot draws BLEU and length
ratio against beam width); --exact (implies --sweep) runs the exact search once per
normalisation and counts each variant's search errors, the exact best's empty translations
and the references that outscore the output; significance is sacrebleu's paired bootstrap of
every variant against the best-BLEU one; --differ A B lists the sentences two variants (named
as beam4/gnmt:0.6 or exact/none) translate differently.

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
from decode.options import LENGTH_PENALTY_KINDS, SCORING_OPTIONS, add_flags, from_flags  # noqa: E402

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
SWEEP_COLUMNS = (
    ("decoder", "decoder", "%s"), ("beam", "beam_width", "%d"),
    ("normalisation", "length_penalty_kind", "%s"), ("alpha", "length_penalty", "%g"),
    ("BLEU", "bleu", "%.2f"), ("chrF", "chrf", "%.2f"), ("len ratio", "length_ratio", "%.3f"),
    ("empty %", "empty_percent", "%.1f"), ("mean score", "mean_score", "%.3f"),
    ("sent/s", "sentences_per_second", "%.1f"),
)
EXACT_COLUMNS = SWEEP_COLUMNS[2:4] + (
    ("proven %", "proven_percent", "%.1f"), ("expansions median", "expansions_median", "%.0f"),
    ("p95", "expansions_p95", "%.0f"), ("s/proven", "seconds_per_proven_sentence", "%.3f"),
) + SWEEP_COLUMNS[4:7] + (("empty best %", "empty_best_percent", "%.1f"),)
SEARCH_ERROR_COLUMNS = SWEEP_COLUMNS[:4] + (
    ("search error %", "search_error_percent", "%.1f"),
    ("reference better %", "reference_better_percent", "%.1f"),
    ("empty %", "empty_output_percent", "%.1f"))
SIGNIFICANCE_COLUMNS = (("a", "a", "%s"), ("b", "b", "%s"), ("BLEU a", "bleu_a", "%.2f"),
                        ("BLEU b", "bleu_b", "%.2f"), ("p", "p_value", "%.4f"))
GRAPH_LENGTHS = (8, 32)  # --graphs: the unrolled search's steps in its two graphs
SCORE_TOLERANCE = 1e-4  # a score higher by more than this is higher (DESIGN.md)


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
                        help="comma-separated beam widths, or none: no implementation "
                             "comparison (default: %(default)s)")
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
    lab = parser.add_argument_group("the decoding lab (needs references)")
    lab.add_argument("--sweep", action="store_true", help="beam widths x normalisations")
    lab.add_argument("--sweep_beam_widths", default="1,2,4,8,16,32,64",
                     help="the sweep's beam widths (default: %(default)s)")
    lab.add_argument("--normalisations", default="none,average,gnmt:0.6,gnmt:1.0",
                     help="the sweep's length normalisations, gnmt with its alpha "
                          "(default: %(default)s)")
    lab.add_argument("--exact", action="store_true", help="the exact search and each variant's "
                                                          "search errors (implies --sweep)")
    add_flags(parser, SCORING_OPTIONS + ("max_expansions",))
    lab.add_argument("--sweep_plot", help="write BLEU and length ratio against beam width here")
    lab.add_argument("--differ", nargs=2, metavar=("A", "B"),
                     help="list the sentences variants A and B translate differently")
    args = parser.parse_args(argv)
    args.sweep = args.sweep or args.exact
    for name in ("beam_widths", "sweep_beam_widths"):
        try:
            setattr(args, name, sorted({int(width) for width in getattr(args, name).split(",")
                                        if getattr(args, name) != "none"}))
        except ValueError:
            parser.error("--%s must be comma-separated integers, got %r"
                         % (name, getattr(args, name)))
    try:
        args.normalisations = [parse_normalisation(text) for text in
                               args.normalisations.split(",")]
    except ValueError as error:
        parser.error("--normalisations: %s" % error)
    if (args.differ or args.sweep_plot) and not args.sweep:
        parser.error("--differ and --sweep_plot need --sweep")
    if args.max_expansions is not None and not args.exact:
        parser.error("--max_expansions needs --exact")
    for name in args.differ or []:
        if name not in lab_variant_names(args):
            parser.error("--differ %s: not a variant of this run (%s)"
                         % (name, " ".join(lab_variant_names(args))))
    if args.reference and not args.input:
        parser.error("--reference needs --input (the default input brings its own references)")
    if min(args.max_sentences, args.latency_sentences) < 0 or args.runs < 1:
        parser.error("--max_sentences and --latency_sentences must be >= 0, --runs >= 1")
    for name in ("json", "plot", "sweep_plot"):  # checked now: written after minutes of work
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
    return ([sources[index] for index in kept], [token_ids[index] for index in kept],
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


def measure(translator, token_ids, references, decoder, beam_width, runs, options):
    """(row: a dict of the STEADY_COLUMNS fields, results: a list of SearchResult)."""
    with translator.recording_builds() as built:
        results, first, timings = timed(
            lambda: translator.search(token_ids, decoder, beam_width, options), runs)
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


def parse_normalisation(text):
    """"none", "average" or "gnmt:ALPHA" -> (length_penalty_kind, length_penalty)."""
    kind, _, alpha = text.strip().partition(":")
    try:
        if kind in LENGTH_PENALTY_KINDS and bool(alpha) == (kind == "gnmt"):
            return kind, float(alpha or 0)
    except ValueError:
        pass
    raise ValueError("%r is not none, average or gnmt:ALPHA (e.g. gnmt:0.6)" % text)


def normalisation_name(kind, alpha):
    """"none", "average" or e.g. "gnmt:0.6", as --normalisations takes them."""
    return "gnmt:%g" % alpha if kind == "gnmt" else kind


def variant_name(decoder, beam_width, kind, alpha):
    """A lab variant's name, e.g. "beam4/gnmt:0.6" or "exact/none"."""
    return "%s/%s" % ("exact" if decoder == "exact" else "beam%d" % beam_width,
                      normalisation_name(kind, alpha))


def lab_variant_names(args):
    """The names of the variants --sweep (and --exact) will decode."""
    return [variant_name(decoder, width, *normalisation) for normalisation in args.normalisations
            for decoder, width in [("while_loop", width) for width in args.sweep_beam_widths]
            + [("exact", None)] * args.exact]


def percent(flags):
    """The percentage of true values among `flags` (None when empty)."""
    flags = list(flags)
    return 100.0 * sum(flags) / len(flags) if flags else None


def quality(texts, references):
    """BLEU, chrF, length ratio (sacrebleu's sys_len / ref_len) and % empty of `texts`."""
    bleu = sacrebleu.corpus_bleu(texts, [references])
    return {"bleu": bleu.score, "chrf": sacrebleu.corpus_chrf(texts, [references]).score,
            "length_ratio": bleu.sys_len / bleu.ref_len,
            "empty_percent": percent(not text.strip() for text in texts)}


def sweep(translator, sources, references, args):
    """Decodes `sources` with the while_loop search at every width x normalisation and, with
    --exact, the exact search once per normalisation; the sentences/s leave graph builds out.

    Returns:
      (the "sweep" rows, the "exact" objects, {variant name: [Translation]}).
    """
    rows, exact_runs, outputs = [], [], {}
    for kind, alpha in args.normalisations:
        variant = {"length_penalty_kind": kind, "length_penalty": alpha}
        flagged = dict(variant, no_repeat_ngram_size=args.no_repeat_ngram_size,
                       min_length=args.min_length)
        for decoder, width in ([("while_loop", width) for width in args.sweep_beam_widths]
                               + [("exact", None)] * args.exact):
            options = flagged if width else dict(flagged, max_expansions=args.max_expansions)
            translator.translate(sources[:1], decoder, width, options=options)  # builds
            started = time.perf_counter()
            translations = translator.translate(sources, decoder, width, options=options)
            seconds = time.perf_counter() - started
            name = variant_name(decoder, width, kind, alpha)
            outputs[name] = translations
            row = dict(decoder=decoder, beam_width=width, **variant, **quality(
                [t.text for t in translations], references),
                mean_score=float(np.mean([t.score for t in translations])),
                sentences_per_second=len(sources) / seconds)
            print("%s: BLEU %.2f in %.1f s" % (name, row["bleu"], seconds), file=sys.stderr)
            if decoder == "exact":
                proven = [t.proven for t in translations]
                expansions = [t.expansions for t in translations]
                row = dict(variant, max_expansions=args.max_expansions or translator.config[
                    "decode"]["max_expansions"], proven_percent=percent(proven),
                    expansions_median=float(np.median(expansions)),
                    expansions_p95=float(np.percentile(expansions, 95)), seconds=seconds,
                    seconds_per_proven_sentence=seconds / sum(proven) if any(proven) else None,
                    empty_best_percent=row["empty_percent"],
                    **{key: row[key] for key in ("bleu", "chrf", "length_ratio", "mean_score")},
                    sentences=[{"index": index, "text": t.text, "score": float(t.score),
                                "proven": t.proven, "expansions": t.expansions}
                               for index, t in enumerate(translations)])
            (exact_runs if decoder == "exact" else rows).append(row)
    return rows, exact_runs, outputs


def search_errors(translator, sources, references, sweep_rows, outputs, exact_runs):
    """DESIGN.md's "search_errors" rows: for every sweep variant, the % of proven sentences
    whose exact best outscores its output, of sentences whose reference outscores it (by
    more than SCORE_TOLERANCE, under the variant's normalisation), of empty outputs."""
    rows = []
    for run in exact_runs:
        variant = {key: run[key] for key in ("length_penalty_kind", "length_penalty")}
        reference_scores = [score["score"] for score in translator.score(
            sources, references, variant)]
        for row in sweep_rows:
            if (row["length_penalty_kind"], row["length_penalty"]) == tuple(variant.values()):
                output = outputs[variant_name(row["decoder"], row["beam_width"], *variant.values())]
                rows.append(dict({key: row[key] for _, key, _ in SWEEP_COLUMNS[:4]}, **{
                    "search_error_percent": percent(
                        best["score"] > t.score + SCORE_TOLERANCE
                        for best, t in zip(run["sentences"], output) if best["proven"]),
                    "reference_better_percent": percent(
                        score > t.score + SCORE_TOLERANCE
                        for score, t in zip(reference_scores, output)),
                    "empty_output_percent": row["empty_percent"]}))
    return rows


def significance(systems, references):
    """sacrebleu's paired bootstrap (1000 resamples) of every (name, texts) in `systems`
    against the first: rows of a, b, bleu_a, bleu_b, p_value."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    _, results = PairedTest(systems, {"BLEU": BLEU()}, [references], test_type="bs")()
    baseline = results["BLEU"][0]
    return [{"a": systems[0][0], "b": name, "bleu_a": baseline.score, "bleu_b": result.score,
             "p_value": result.p_value} for (name, _), result
            in zip(systems[1:], results["BLEU"][1:])]


def differences(sources, references, outputs, name_a, name_b):
    """The sentences variants `name_a` and `name_b` translate differently, with both outputs,
    their scores, the source and the reference."""
    return [{"index": index, "source": source, "reference": reference,
             "a": {"variant": name_a, "text": a.text, "score": a.score},
             "b": {"variant": name_b, "text": b.text, "score": b.score}}
            for index, (source, reference, a, b) in enumerate(zip(
                sources, references, outputs[name_a], outputs[name_b])) if a.text != b.text]


def format_table(rows, columns):
    """A plain-text table of `rows` (dicts); None values print as "-"."""
    cells = [[header for header, _, _ in columns]] + [
        [("-" if row[key] is None else fmt % row[key]) for _, key, fmt in columns]
        for row in rows]
    widths = [max(len(line[column]) for line in cells) for column in range(len(columns))]
    return "\n".join("  ".join(cell.rjust(width) if column else cell.ljust(width)
                               for column, (cell, width) in enumerate(zip(line, widths)))
                     for line in cells)


def pyplot():
    """matplotlib.pyplot, drawing to files (only the plots need it)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot(report, path):
    """Writes latency against beam width, and against output length, to a PNG."""
    plt = pyplot()
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


def plot_sweep(report, path):
    """Writes the sweep's BLEU and length ratio against beam width to a PNG: a line per
    normalisation, its exact search's figure (if run) dashed in the same colour."""
    plt = pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for normalisation in dict.fromkeys((row["length_penalty_kind"], row["length_penalty"])
                                       for row in report["sweep"]):
        rows = [row for row in report["sweep"]
                if (row["length_penalty_kind"], row["length_penalty"]) == normalisation]
        for chart, key in zip(axes, ("bleu", "length_ratio")):
            (line,) = chart.plot([row["beam_width"] for row in rows], [row[key] for row in rows],
                                 "o-", label=normalisation_name(*normalisation))
            for run in report.get("exact", []):
                if (run["length_penalty_kind"], run["length_penalty"]) == normalisation:
                    chart.axhline(run[key], color=line.get_color(), linestyle="--",
                                  label="exact search, " + normalisation_name(*normalisation))
    for chart, label in zip(axes, ("BLEU", "length ratio (output / reference)")):
        chart.set_xscale("log", base=2)
        chart.set_xticks(sorted({row["beam_width"] for row in report["sweep"]}))
        chart.xaxis.set_major_formatter(plt.ScalarFormatter())
        chart.set(xlabel="beam width", ylabel=label)
        chart.grid(alpha=0.3)
    axes[0].legend(fontsize="small")
    figure.suptitle("%s, step %d, %d sentences: BLEU and length against beam width"
                    % (report["model"]["name"], report["model"]["step"],
                       report["inputs"]["sentences"]))
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


def run_lab(args, translator, report, sources, references):
    """Adds the lab's keys (DESIGN.md "The decoding lab") to `report` and prints its tables."""
    report["sweep"], exact_runs, outputs = sweep(translator, sources, references, args)
    print("\nSweep: the while_loop search (mean score under each row's normalisation)")
    print(format_table(report["sweep"], SWEEP_COLUMNS))
    if args.exact:
        report["exact"] = exact_runs
        report["search_errors"] = search_errors(translator, sources, references,
                                                report["sweep"], outputs, report["exact"])
        print("\nExact search (at most %d expansions a sentence)"
              % report["exact"][0]["max_expansions"])
        print(format_table(report["exact"], EXACT_COLUMNS))
        print("\nSearch errors (over proven sentences) and model errors (reference better)")
        print(format_table(report["search_errors"], SEARCH_ERROR_COLUMNS))
    best = max(report["sweep"], key=lambda row: row["bleu"])
    best_name = variant_name(*(best[key] for _, key, _ in SWEEP_COLUMNS[:4]))
    report["significance"] = significance(
        [(name, [t.text for t in outputs[name]]) for name in
         [best_name] + [name for name in outputs if name != best_name]], references)
    print("\nPaired bootstrap (sacrebleu, 1000 resamples) against the best BLEU")
    print(format_table(report["significance"], SIGNIFICANCE_COLUMNS))
    if args.differ:
        report["differ"] = differences(sources, references, outputs, *args.differ)
        print("\n%s and %s differ on %d of %d sentences" % (
            *args.differ, len(report["differ"]), len(sources)))
        for row in report["differ"]:
            print("#%d %s\n  reference: %s" % (row["index"], row["source"], row["reference"]))
            for side in (row["a"], row["b"]):
                print("  %s (%.3f): %s" % (side["variant"], side["score"], side["text"]))


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
        options = from_flags(args, SCORING_OPTIONS)
        for width in args.beam_widths:
            translator.check_options("while_loop", width, options=options)
        source_path, reference_path = ((args.input, args.reference) if args.input
                                       else default_input_files(translator.config))
        sources, token_ids, references = load_inputs(translator, source_path, reference_path,
                                                     args.max_sentences)
        if args.sweep:
            if references is None:
                raise ValueError("--sweep and --exact need references (--reference FILE)")
            lab_translator = Translator(args.model_dir, hparams="decode.max_beam_width=%d" % max(
                args.sweep_beam_widths + [translator.config["decode"]["max_beam_width"]]))
            for width in args.sweep_beam_widths:
                lab_translator.check_options("while_loop", width)
            if args.exact:
                lab_translator.check_options("exact", options={
                    "max_expansions": args.max_expansions})
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
    # Each variant is measured with a fresh Translator: a first run costs in proportion to
    # the whole graph. Latency against output length: greedy and both searches, widest beam.
    results, (variants, agreement_pairs) = {}, (
        variants_to_compare(args.beam_widths) if args.beam_widths else ([], []))
    report.update(results=[], agreement=[], sentence_latency=[])
    for number, (decoder, width) in enumerate(variants, start=1):
        variant_translator = Translator(args.model_dir)
        try:
            row, results[decoder, width] = measure(
                variant_translator, token_ids, references, decoder, width, args.runs, options)
            if decoder == "greedy" or width == args.beam_widths[-1]:
                for ids in token_ids[:args.latency_sentences]:
                    result, _, timings = timed(lambda: variant_translator.search(
                        [ids], decoder, width, options)[0], args.runs)
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
    if variants:
        print(format_table(report["results"], STEADY_COLUMNS) + "\n")
        print(format_table(report["agreement"], AGREEMENT_COLUMNS))
    if args.sweep:
        try:
            run_lab(args, lab_translator, report, sources, references)
        finally:
            lab_translator.close()
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
    if args.plot:
        plot(report, args.plot)
    if args.sweep_plot:
        plot_sweep(report, args.sweep_plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
