"""Two checkouts' Translators on one model: the same translations, n-best lists and scores.

    cd CHECKOUT && python -m bench.same_results --model_dir runs/lab \
        --input data/catalogs-pt_BR/test.src --json A.json

(run inside each checkout: `python -m` puts the current directory ahead of PYTHONPATH)
    python -m bench.same_results --compare A.json B.json

Decodes the first 500 input lines with while_loop (beam 5, n-best 5), unrolled (beam 5,
n-best 5, the first 100 lines), greedy, the lab's sweep (beam 1, 2, 4, 8, 16 under none,
average, gnmt 0.6 and gnmt 1.0), sampling (8 samples under each restriction, n-best 8) and MBR
(the lab's: 32 epsilon samples, the first 100 lines), recording each call's CPU seconds;
--compare counts the sentences whose n-best texts differ and the largest score difference of
the others.
"""

import argparse
import json
import time

VARIANTS = [("while_loop", 5, {}, 5), ("unrolled", 5, {}, 5), ("greedy", None, {}, 1)] + [
    ("while_loop", width, {"length_penalty_kind": kind, "length_penalty": alpha}, 1)
    for width in (1, 2, 4, 8, 16)
    for kind, alpha in (("none", 0.0), ("average", 0.0), ("gnmt", 0.6), ("gnmt", 1.0))] + [
    ("sample", None, dict(restriction, num_samples=8), 8)
    for restriction in ({}, {"temperature": 0.7}, {"epsilon": 0.02}, {"top_k": 10},
                        {"top_p": 0.9}, {"top_k": 10, "top_p": 0.8, "epsilon": 0.05})] + [
    ("mbr", None, {"num_samples": 32, "epsilon": 0.02}, 1)]
FIRST_100 = ("unrolled", "mbr")  # the slow ones decode the first 100 lines


def decode(model_dir, input_path):
    """{"runs": {variant: [[(text, score)] per sentence]}, "cpu": {variant: seconds}}."""
    import tensorflow.compat.v1 as tf
    tf.disable_v2_behavior()
    from decode.translator import Translator  # the current directory's checkout
    with open(input_path, encoding="utf-8") as f:
        texts = [line.rstrip("\n") for line in f][:500]
    translator, runs, cpu = Translator(model_dir, hparams="decode.max_beam_width=32"), {}, {}
    for decoder, width, options, n_best in VARIANTS:
        name = "%s/%s/%s" % (decoder, width, json.dumps(options, sort_keys=True))
        start = time.process_time()
        found = translator.translate(texts[:100] if decoder in FIRST_100 else texts,
                                     decoder=decoder, beam_width=width, n_best=n_best,
                                     options=options or None)
        cpu[name] = time.process_time() - start
        runs[name] = [[(hypothesis.text, hypothesis.score) for hypothesis in translation.n_best]
                      for translation in found]
    return {"runs": runs, "cpu": cpu}


def compare(a, b):
    """(sentences compared, sentences whose n-best texts differ, largest other score difference)."""
    total, differ, largest = 0, 0, 0.0
    for name, results in a["runs"].items():
        for x, y in zip(results, b["runs"][name]):
            total += 1
            if [text for text, _ in x] != [text for text, _ in y]:
                differ += 1
            else:
                largest = max([largest] + [abs(p[1] - q[1]) for p, q in zip(x, y)])
    return total, differ, largest


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir")
    parser.add_argument("--input")
    parser.add_argument("--json")
    parser.add_argument("--compare", nargs=2, metavar=("A", "B"))
    args = parser.parse_args()
    if args.compare:
        a, b = (json.load(open(path, encoding="utf-8")) for path in args.compare)
        print("%d sentence results, %d with other n-best texts, largest score difference %g"
              % compare(a, b))
        for name in a["cpu"]:
            print("%-60s CPU s %7.2f %7.2f" % (name, a["cpu"][name], b["cpu"][name]))
        return
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump(decode(args.model_dir, args.input), f, ensure_ascii=False)


if __name__ == "__main__":
    main()
