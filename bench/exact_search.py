"""How far the exact search (decoder exact, issue 18) gets on one model and one test set.

    .venv/bin/python -m bench.exact_search --model_dir runs/lab \
        --input data/catalogs-pt_BR/test.tsv --sentences 100 \
        [--normalisations gnmt:0.6,none] [--max_expansions 2000] [--rows_per_call 512]

For each length normalisation: the percentage of sentences proven optimal within the cap,
the expansions per sentence (median, 95th percentile, most), the wall and CPU seconds of the
whole exact search (its first beam search included; CPU: every thread of this process, which
load from other processes does not inflate), wall seconds per proven sentence, and how often
the exact best beats the beam search it started from (by more than 1e-4) or is empty.
"""

import argparse

import numpy as np

from bench import harness
from decode import translator as translator_module


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--input", required=True, help="sources, one per line (a TSV: column 1)")
    parser.add_argument("--sentences", type=int, default=100, help="the first N lines")
    parser.add_argument("--normalisations", default="gnmt:0.6,none",
                        help="kind[:alpha],... (default: %(default)s)")
    parser.add_argument("--max_expansions", type=int, default=2000)
    parser.add_argument("--rows_per_call", type=int, default=translator_module.EXACT_ROWS_PER_CALL)
    args = parser.parse_args(argv)
    sources = harness.read_sentences(args.input, args.sentences)
    translator_module.EXACT_ROWS_PER_CALL = args.rows_per_call
    translator = harness.translator(args.model_dir)
    translator.warm_up(["while_loop", "exact"])
    print("%d sentences, max_expansions %d, %d prefixes per model call"
          % (len(sources), args.max_expansions, args.rows_per_call))
    print(harness.markdown_table([
        "normalisation", "proven", "expansions median", "p95", "most", "wall s", "CPU s",
        "wall s / proven sentence", "exact beats beam", "empty best"]))
    for normalisation in args.normalisations.split(","):
        kind, _, alpha = normalisation.partition(":")
        options = {"length_penalty_kind": kind, "length_penalty": float(alpha or 0)}
        beams = translator.translate(sources, options=options)
        seconds, cpu_seconds, exact = harness.measure(lambda: translator.translate(
            sources, "exact", options=dict(options, max_expansions=args.max_expansions)))
        expansions = [translation.expansions for translation in exact]
        proven = sum(translation.proven for translation in exact)
        print(harness.markdown_row([
            normalisation, "%.0f%%" % (100.0 * proven / len(exact)),
            "%.0f" % harness.median(expansions), harness.percentile(expansions, 0.95),
            max(expansions), "%.1f" % seconds, "%.1f" % cpu_seconds,
            "%.3f" % (seconds / max(proven, 1)),
            "%.0f%%" % (100.0 * np.mean([e.score > b.score + 1e-4 for e, b in zip(exact, beams)])),
            "%.0f%%" % (100.0 * np.mean([e.text == "" for e in exact]))]), flush=True)


if __name__ == "__main__":
    main()
