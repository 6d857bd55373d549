"""The decoding lab's report (lab/sweep.py, lab/families.py, lab/placeholder_row.py): its
tables, as text or markdown, and its charts."""

from lab.families import BEAM_WIDTH
from lab.sweep import normalisation_name

SWEEP_COLUMNS = (
    ("decoder", "decoder", "%s"), ("beam", "beam_width", "%d"),
    ("normalisation", "length_penalty_kind", "%s"), ("alpha", "length_penalty", "%g"),
    ("BLEU", "bleu", "%.2f"), ("chrF", "chrf", "%.2f"), ("len ratio", "length_ratio", "%.3f"),
    ("empty %", "empty_percent", "%.1f"), ("mean score", "mean_score", "%.3f"),
    ("sent/s", "sentences_per_second", "%.1f"))
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
FAMILY_COLUMNS = (("variant", "variant", "%s"),) + SWEEP_COLUMNS[4:7] + SWEEP_COLUMNS[9:] + (
    ("speed / beam", "speed_vs_beam5", "%.2f"),
    ("p", "p_value_vs_beam5", "%.4f"), ("n-best self-BLEU", "n_best_diversity", "%.1f"),
    ("oracle BLEU", "oracle_bleu", "%.2f"), ("E[utility]", "expected_utility_mean", "%.1f"))
PLACEHOLDER_COLUMNS = ((("placeholders", "placeholders", "%s"), ("kept %", "kept_percent", "%.1f"))
                       + SWEEP_COLUMNS[4:8] + SWEEP_COLUMNS[9:])
TABLES = (  # (the report's key, the table's title, its columns)
    ("sweep", "Sweep: the while_loop search (mean score under each row's normalisation)",
     SWEEP_COLUMNS),
    ("exact", "Exact search (at most %(max_expansions)d expansions a sentence)", EXACT_COLUMNS),
    ("search_errors", "Search errors (over proven sentences) and model errors (reference "
     "better)", SEARCH_ERROR_COLUMNS),
    ("significance", "Paired bootstrap (sacrebleu, 1000 resamples) against the sweep's best BLEU",
     SIGNIFICANCE_COLUMNS),
    ("families", "Decoding families against beam %d (n-best %d; paired bootstrap p; oracle: "
     "each sentence's candidate of best chrF)" % ((BEAM_WIDTH,) * 2), FAMILY_COLUMNS))


def tables(report):
    """The lab's tables in `report`: (title, rows, columns) each, printed and in the markdown;
    a title's %(key)d takes its first row's value."""
    found = [(title % (report[key] or [{}])[0], report[key], columns)
             for key, title, columns in TABLES if key in report]
    if "placeholders" in report:
        run = report["placeholders"]
        found += [("Placeholders: %(sentences)d messages of %(source)s, beam %(beam_width)d; "
                   "kept: the output holds exactly the source's placeholders" % run, run["modes"],
                   PLACEHOLDER_COLUMNS),
                  ("Placeholders: paired bootstrap (sacrebleu, 1000 resamples), keep against "
                   "free", run["significance"], SIGNIFICANCE_COLUMNS)]
    return found


def markdown(report, plot=None):
    """The lab's report as markdown: the run, its tables, `plot` (a path relative to the
    markdown file, or None) and its examples."""
    model, inputs = report["model"], report["inputs"]
    lines = ["# The decoding lab: %s, step %d" % (model["name"], model["step"]), "",
             "%d sentences (%d source tokens) of `%s`, references `%s`; model directory `%s`."
             % (inputs["sentences"], inputs["source_tokens"], inputs["source"],
                inputs["reference"], model["model_dir"])]
    if plot:
        lines += ["", "![BLEU and length ratio against beam width](%s)" % plot]
    for title, rows, columns in tables(report):
        lines += ["", "## " + title, "", format_table(rows, columns, markdown=True)]
    if report.get("examples"):
        lines += ["", "## Sentences on which the decoding choices matter", ""] + [
            "- #%d (%s): `%s` (reference `%s`). %s" % (example["index"], ", ".join(
                example["kinds"]), example["source"], example["reference"], example["note"])
            for example in report["examples"]]
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


def charts():
    """(matplotlib.pyplot drawing to files, a figure of two charts side by side, its axes)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    return plt, figure, axes


def save(plt, figure, report, title, path):
    """Titles `figure` with the model, its step and `title`, writes it to a PNG and closes it."""
    figure.suptitle("%s, step %d%s" % (report["model"]["name"], report["model"]["step"], title))
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def plot_sweep(report, path):
    """Writes the sweep's BLEU and length ratio against beam width to a PNG: a line per
    normalisation, its exact search's figure (if run) dashed in the same colour."""
    plt, figure, axes = charts()
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
    save(plt, figure, report, ", %d sentences: BLEU and length against beam width"
         % report["inputs"]["sentences"], path)
