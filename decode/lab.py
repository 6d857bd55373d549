"""The decoding lab (DESIGN.md "The decoding lab"; what its figures mean: docs/LAB.md), run by
`python -m decode.compare --sweep [--exact]`.

--sweep decodes with the while_loop search at every --sweep_beam_widths x --normalisations
(BLEU, chrF, length ratio, empty outputs, mean score, sentences/s); --exact (implies --sweep)
runs the exact search once per normalisation and counts each variant's search errors, the
exact best's empty translations and the references that outscore the output; significance is
sacrebleu's paired bootstrap of every variant against the best-BLEU one; --differ A B lists
the sentences two variants (named as beam4/gnmt:0.6 or exact/none) translate differently;
--markdown writes the report as markdown.
"""

import sys
import time

import numpy as np
import sacrebleu

from decode.options import LENGTH_PENALTY_KINDS

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
SCORE_TOLERANCE = 1e-4  # a score higher by more than this is higher (DESIGN.md)


def add_flags(parser):
    """The lab's flags (checked by `check_flags`); --max_expansions is among the options'."""
    lab = parser.add_argument_group("the decoding lab (needs references)")
    lab.add_argument("--sweep", action="store_true", help="beam widths x normalisations")
    lab.add_argument("--sweep_beam_widths", default="1,2,4,8,16,32,64",
                     help="the sweep's beam widths (default: %(default)s)")
    lab.add_argument("--normalisations", default="none,average,gnmt:0.6,gnmt:1.0",
                     help="the sweep's length normalisations, gnmt with its alpha "
                          "(default: %(default)s)")
    lab.add_argument("--exact", action="store_true", help="the exact search and each variant's "
                                                          "search errors (implies --sweep)")
    lab.add_argument("--sweep_plot", help="write BLEU and length ratio against beam width here")
    lab.add_argument("--differ", nargs=2, metavar=("A", "B"),
                     help="list the sentences variants A and B translate differently")
    lab.add_argument("--markdown", metavar="F.md", help="write the lab's report as markdown")


def check_flags(parser, args):
    """Parses and checks the lab's flags in `args` (parser.error names the first bad one)."""
    args.sweep = args.sweep or args.exact
    try:
        args.normalisations = [parse_normalisation(text) for text in
                               args.normalisations.split(",")]
    except ValueError as error:
        parser.error("--normalisations: %s" % error)
    if (args.differ or args.sweep_plot or args.markdown) and not args.sweep:
        parser.error("--differ, --sweep_plot and --markdown need --sweep")
    if args.max_expansions is not None and not args.exact:
        parser.error("--max_expansions needs --exact")
    for name in args.differ or []:
        if name not in variant_names(args):
            parser.error("--differ %s: not a variant of this run (%s)"
                         % (name, " ".join(variant_names(args))))


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


def variants(args):
    """The (decoder, beam_width) pairs decoded per normalisation: the sweep's, then exact's."""
    return [("while_loop", width) for width in args.sweep_beam_widths] + [("exact", None)] * bool(
        args.exact)


def variant_names(args):
    """The names of the variants --sweep (and --exact) will decode."""
    return [variant_name(decoder, width, *normalisation) for normalisation in args.normalisations
            for decoder, width in variants(args)]


def open_translator(args, translator, references):
    """A Translator for the lab (its max_beam_width the widest sweep width, at least the
    model's), its widths and --max_expansions checked; ValueError without references."""
    from decode.translator import Translator

    if references is None:
        raise ValueError("--sweep and --exact need references (--reference FILE)")
    lab_translator = Translator(args.model_dir, hparams="decode.max_beam_width=%d" % max(
        args.sweep_beam_widths + [translator.config["decode"]["max_beam_width"]]))
    for width in args.sweep_beam_widths:
        lab_translator.check_options("while_loop", width)
    if args.exact:
        lab_translator.check_options("exact", options={"max_expansions": args.max_expansions})
    return lab_translator


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
        for decoder, width in variants(args):
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


def run(args, translator, report, sources, references):
    """Adds the lab's keys (DESIGN.md "The decoding lab") to `report` and prints its tables."""
    report["sweep"], exact_runs, outputs = sweep(translator, sources, references, args)
    if args.exact:
        report["exact"] = exact_runs
        report["search_errors"] = search_errors(translator, sources, references,
                                                report["sweep"], outputs, report["exact"])
    best = max(report["sweep"], key=lambda row: row["bleu"])
    best_name = variant_name(*(best[key] for _, key, _ in SWEEP_COLUMNS[:4]))
    report["significance"] = significance(
        [(name, [t.text for t in outputs[name]]) for name in
         [best_name] + [name for name in outputs if name != best_name]], references)
    for title, rows, columns in tables(report):
        print("\n%s\n%s" % (title, format_table(rows, columns)))
    if args.differ:
        report["differ"] = differences(sources, references, outputs, *args.differ)
        print("\n%s and %s differ on %d of %d sentences" % (
            *args.differ, len(report["differ"]), len(sources)))
        for row in report["differ"]:
            print("#%d %s\n  reference: %s" % (row["index"], row["source"], row["reference"]))
            for side in (row["a"], row["b"]):
                print("  %s (%.3f): %s" % (side["variant"], side["score"], side["text"]))


def tables(report):
    """The lab's tables in `report`: (title, rows, columns) each, printed and in the markdown."""
    found = [("Sweep: the while_loop search (mean score under each row's normalisation)",
              report["sweep"], SWEEP_COLUMNS)]
    if "exact" in report:
        found += [("Exact search (at most %d expansions a sentence)"
                   % report["exact"][0]["max_expansions"], report["exact"], EXACT_COLUMNS),
                  ("Search errors (over proven sentences) and model errors (reference better)",
                   report["search_errors"], SEARCH_ERROR_COLUMNS)]
    return found + [("Paired bootstrap (sacrebleu, 1000 resamples) against the best BLEU",
                     report["significance"], SIGNIFICANCE_COLUMNS)]


def markdown(report, plot=None):
    """The lab's report as markdown: the run, its tables and `plot` (a path relative to the
    markdown file, or None)."""
    model, inputs = report["model"], report["inputs"]
    lines = ["# The decoding lab: %s, step %d" % (model["name"], model["step"]), "",
             "%d sentences (%d source tokens) of `%s`, references `%s`; model directory `%s`."
             % (inputs["sentences"], inputs["source_tokens"], inputs["source"],
                inputs["reference"], model["model_dir"])]
    if plot:
        lines += ["", "![BLEU and length ratio against beam width](%s)" % plot]
    for title, rows, columns in tables(report):
        lines += ["", "## " + title, "", format_table(rows, columns, markdown=True)]
    return "\n".join(lines) + "\n"


def format_table(rows, columns, markdown=False):
    """A plain-text (or markdown) table of `rows` (dicts); None values print as "-"."""
    cells = [[header for header, _, _ in columns]] + [
        [("-" if row[key] is None else fmt % row[key]) for _, key, fmt in columns]
        for row in rows]
    if markdown:
        cells.insert(1, ["---" if fmt == "%s" else "---:" for _, _, fmt in columns])
        return "\n".join("| %s |" % " | ".join(line) for line in cells)
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
            for exact in report.get("exact", []):
                if (exact["length_penalty_kind"], exact["length_penalty"]) == normalisation:
                    chart.axhline(exact[key], color=line.get_color(), linestyle="--",
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
