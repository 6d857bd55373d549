"""What each decoding option does to quality and speed, on one model and one test set.

    .venv/bin/python -m bench.decoding_options --model_dir runs/lab \
        --input data/catalogs-pt_BR/test.src --reference data/catalogs-pt_BR/test.ref \
        [--rounds 3] [--json F]

Every variant decodes the same sentences with one Translator (its graphs built and run
once before timing); the variants are then timed in round-robin rounds, so that load
from other processes hits all of them alike. Per variant: BLEU and chrF (sacrebleu),
length ratio (output / reference tokens), the percentage of outputs holding a repeated
word bigram, and the median sentences/s with its ratio to the plain beam search.
"""

import argparse
import functools

import sacrebleu

from bench import harness

VARIANTS = [  # (name, decoder, options); beam 5 is the config's width
    ("beam 5, gnmt 0.6 (plain)", "while_loop", {}),
    ("beam 5, average", "while_loop", {"length_penalty_kind": "average"}),
    ("beam 5, none", "while_loop", {"length_penalty_kind": "none"}),
    ("beam 5, coverage 0.2", "while_loop", {"coverage_penalty": 0.2}),
    ("beam 5, coverage 0.4", "while_loop", {"coverage_penalty": 0.4}),
    ("beam 5, no repeat 2-gram", "while_loop", {"no_repeat_ngram_size": 2}),
    ("beam 5, no repeat 3-gram", "while_loop", {"no_repeat_ngram_size": 3}),
    ("greedy", "greedy", {}),
    ("sample T=1 top-p 0.9 x8", "sample", {"num_samples": 8, "top_p": 0.9, "temperature": 1.0}),
]


def repeated_bigram(text):
    words = text.split()
    bigrams = list(zip(words, words[1:]))
    return len(bigrams) != len(set(bigrams))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--input", required=True)
    parser.add_argument("--reference", required=True)
    parser.add_argument("--max_sentences", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    sources = harness.read_sentences(args.input, args.max_sentences)
    references = harness.read_sentences(args.reference, len(sources))
    translator = harness.translator(args.model_dir)
    token_ids = [translator.tokenize(text) for text in sources]
    rows = []
    for name, decoder, options in VARIANTS:  # also the graphs' first runs, before timing
        outputs = [t.text for t in translator.translate_tokens(token_ids, decoder, options=options)]
        bleu = sacrebleu.corpus_bleu(outputs, [references])
        rows.append({"variant": name, "bleu": bleu.score,
                     "chrf": sacrebleu.corpus_chrf(outputs, [references]).score,
                     "length_ratio": bleu.sys_len / bleu.ref_len,
                     "repeated_bigram_percent": 100.0 * sum(map(repeated_bigram, outputs))
                     / len(outputs)})
    samples = harness.time_rounds(
        {name: functools.partial(translator.translate_tokens, token_ids, decoder, options=options)
         for name, decoder, options in VARIANTS}, args.rounds, warmup=0)
    for row in rows:
        row["sentences_per_second"] = len(sources) / harness.median(samples[row["variant"]].wall)
        row["speed_vs_plain"] = row["sentences_per_second"] / rows[0]["sentences_per_second"]
    print("%d sentences, %d rounds" % (len(sources), args.rounds))
    print(harness.markdown_table(
        ["variant", "BLEU", "chrF", "length ratio", "repeated bigram %", "sentences/s",
         "vs plain"],
        ([row["variant"], "%.2f" % row["bleu"], "%.2f" % row["chrf"], "%.3f" % row["length_ratio"],
          "%.1f" % row["repeated_bigram_percent"], "%.1f" % row["sentences_per_second"],
          "%.2fx" % row["speed_vs_plain"]] for row in rows)))
    harness.write_json(args.json, {"sentences": len(sources), "rounds": args.rounds, "rows": rows})


if __name__ == "__main__":
    main()
