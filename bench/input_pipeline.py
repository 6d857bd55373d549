"""Input pipeline speed: pairs/s and tokens/s of input_fn in TRAIN mode.

Prepares the config's data if needed, then pulls batches from
data_pipeline.input.input_fn(TRAIN, config) in one session with no model attached: the most
the pipeline can feed a trainer. The first `--warmup` batches (the shards read and parsed
before the cache holds them) are timed apart from the steady state of all later epochs. Tokens
are real source + target tokens (target with its EOS), as the training progress line counts
them; the padded count gives the padding that bucketing leaves.

Usage:
  .venv/bin/python -m bench.input_pipeline [--config configs/default.yaml]
      [--hparams k=v,...] [--warmup 400] [--batches 2000] [--json bench/out/input.json]
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow.compat.v1 as tf  # noqa: E402

from bench import harness  # noqa: E402
from data_pipeline.input import TRAIN, input_fn  # noqa: E402
from data_pipeline.prepare import prepare  # noqa: E402
from seq2seq.config import load_config  # noqa: E402


def batch_counts(config):
    """Graph: the next TRAIN batch's pair, token and padded-token counts."""
    features, labels = tf.data.make_one_shot_iterator(input_fn(TRAIN, config)).get_next()
    return {
        "pairs": tf.size(features["source_length"]),
        "tokens": tf.reduce_sum(features["source_length"]) + tf.reduce_sum(labels["target_length"]),
        "padded_tokens": tf.size(features["source_ids"]) + tf.size(labels["target_output"]),
    }


def timed_pass(name, session, counts, num_batches):
    """Runs `num_batches` batches; prints and returns their summed counts and rates."""
    def run():
        totals = dict.fromkeys(counts, 0)
        for _ in range(num_batches):
            for key, value in session.run(counts).items():
                totals[key] += int(value)
        return totals
    seconds, _, totals = harness.measure(run)
    result = dict(totals, seconds=seconds, batches=num_batches,
                  pairs_per_second=totals["pairs"] / seconds,
                  tokens_per_second=totals["tokens"] / seconds,
                  padding=1 - totals["tokens"] / totals["padded_tokens"])
    print("%-8s %6d batches  %9.0f pairs/s  %10.0f tokens/s  %4.1f%% padding  (%.1f pairs/batch)"
          % (name, num_batches, result["pairs_per_second"], result["tokens_per_second"],
             100 * result["padding"], totals["pairs"] / num_batches))
    return result


def main():
    tf.disable_v2_behavior()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/default.yaml")
    parser.add_argument("--hparams", default="")
    parser.add_argument("--warmup", type=int, default=400,
                        help="batches timed as the first pass, >= 1")
    parser.add_argument("--batches", type=int, default=2000, help="batches timed in steady state")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    if args.warmup < 1:  # the timed part starts after a warm-up step or batch
        parser.error("--warmup must be at least 1, got %d" % args.warmup)
    config = load_config(args.config, args.hparams)
    prepare(config, verbose=False)
    train = config["train"]
    print("%s: batch_tokens %d, batch_size %d, bucket_width %d, shuffle_buffer %d"
          % (args.config, train["batch_tokens"], train["batch_size"], train["bucket_width"],
             train["shuffle_buffer"]))
    with tf.Graph().as_default():
        counts = batch_counts(config)
        with tf.Session() as session:
            results = {"warmup": timed_pass("warm-up", session, counts, args.warmup),
                       "steady": timed_pass("steady", session, counts, args.batches)}
    harness.write_json(args.json, dict(results, config=args.config, hparams=args.hparams))


if __name__ == "__main__":
    main()
