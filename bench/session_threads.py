"""Decoding session threads: thread settings of the Translator's session, compared.

`decode.inter_op_threads` and `decode.intra_op_threads` set the decoding session's threads
(docs/DECODING-NOTES.md). TensorFlow fixes a process's intra-op pool with its first session, so
each setting is measured in a child process of its own; the settings take turns, `--rounds`
times, and the table gives the median of each measure: ms of wall and of process CPU time per
sentence of the model's test sentences (while_loop, the config's beam width) translated 32 at
a time ("batch 32"), one at a time ("batch 1"), and one at a time by 32 threads at once
("32 threads x 1", the unbatched server's load).

Usage:
  .venv/bin/python -m bench.session_threads --model_dir runs/serve_small
      [--settings=-1/1,0/0] [--rounds 3] [--sentences 96]
"""

import argparse
import functools
import os
import sys
import threading

from bench import harness

MEASURES = ("batch 32", "batch 1", "32 threads x 1")
THREADS = 32


def measure(model_dir, setting, sentences):
    """The child: {measure: (wall ms, CPU ms) per sentence} for one thread setting."""
    inter, intra = setting.split("/")
    translator = harness.translator(model_dir, hparams="decode.inter_op_threads=%s,"
                                               "decode.intra_op_threads=%s" % (inter, intra))
    translator.translate(sentences[:32])

    def in_batches(size):
        for start in range(0, len(sentences), size):
            translator.translate(sentences[start:start + size])

    def in_batches_of_one(share):
        for sentence in share:
            translator.translate([sentence])

    def concurrently():
        threads = [threading.Thread(target=in_batches_of_one, args=(sentences[index::THREADS],))
                   for index in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def per_sentence(work):
        """(wall ms, CPU ms) per sentence of running `work()` over all the sentences."""
        wall, cpu, _ = harness.measure(work)
        return wall * 1000.0 / len(sentences), cpu * 1000.0 / len(sentences)
    return {"batch 32": per_sentence(lambda: in_batches(32)),
            "batch 1": per_sentence(lambda: in_batches(1)),
            "32 threads x 1": per_sentence(concurrently)}


def benchmark_sentences(model_dir, count):
    """`count` sentences: the model's test sentences, repeated as needed."""
    sentences = harness.read_sentences(harness.model_test_source(model_dir))
    return (sentences * (count // len(sentences) + 1))[:count]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", required=True, help="a model directory written by train.py")
    parser.add_argument("--settings", default="0/0,-1/1",
                        help="inter_op/intra_op thread settings to compare")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sentences", type=int, default=96)
    parser.add_argument("--child", help=argparse.SUPPRESS)  # measure this setting here
    parser.add_argument("--json", help=argparse.SUPPRESS)  # where the child writes it
    args = parser.parse_args(argv)
    model_dir = os.path.abspath(args.model_dir)
    if args.child:
        sentences = benchmark_sentences(model_dir, args.sentences)
        harness.write_json(args.json, measure(model_dir, args.child, sentences))
        return 0

    def run_child(setting):
        return harness.child_json(["-m", "bench.session_threads", "--model_dir", model_dir,
                                   "--sentences", str(args.sentences), "--child=" + setting])
    runs = harness.time_rounds({setting: functools.partial(run_child, setting)
                                for setting in args.settings.split(",")}, args.rounds, warmup=0)
    print(harness.markdown_table(
        ["inter/intra threads"] + ["%s: ms wall (CPU) per sentence" % name for name in MEASURES],
        ([setting] + ["%.2f (%.2f)" % (harness.median(r[name][0] for r in samples.results),
                                       harness.median(r[name][1] for r in samples.results))
                      for name in MEASURES] for setting, samples in runs.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
