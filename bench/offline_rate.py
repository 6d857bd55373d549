"""Offline decoding rate: the ceiling a server of the same model can approach.

    python -m bench.offline_rate --model_dir runs/lab --input test.src [--passes 3] [--hparams H]

Loads the model once, builds and warms the graphs on the first 64 lines, then
times `Translator.translate` over the whole file (while_loop, the config's beam
width, decode.batch_size batches, the decoding defaults or --hparams) a few times.
"""

import argparse

from bench import harness


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--input", required=True, help="one sentence a line")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--hparams", default="", help='e.g. "decode.concurrent_batches=1,'
                        'decode.inter_op_threads=0,decode.intra_op_threads=0" (one call at a time'
                        " on TensorFlow's pools, the default before issue 10's last change)")
    args = parser.parse_args()
    lines = harness.read_sentences(args.input)
    translator = harness.translator(args.model_dir, hparams=args.hparams)
    translator.translate(lines[:64])

    def report(index, samples):
        seconds = samples["offline"].wall[-1]
        print("offline: %d sentences in %.2f s = %.1f sentences/s"
              % (len(lines), seconds, len(lines) / seconds), flush=True)
    harness.time_rounds({"offline": lambda: translator.translate(lines)}, args.passes, warmup=0,
                        after_round=report)


if __name__ == "__main__":
    main()
