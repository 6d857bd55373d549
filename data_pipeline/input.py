"""The Estimator's input: bucketed, padded batches from the TFRecord shards.

Each element is a (features, labels) pair of dicts, padded with PAD_ID (0):

  features["source_ids"]     [B, S] int32  the source pieces, no BOS/EOS
  features["source_length"]  [B]    int32
  labels["target_input"]     [B, T] int32  BOS_ID + y  (decoder input)
  labels["target_output"]    [B, T] int32  y + EOS_ID  (what to predict)
  labels["target_length"]    [B]    int32  len(y) + 1
  labels["target_text"]      [B]    string the reference as the corpus gave it
                                           (EVAL only; "" in the train split)

TRAIN reads the shards interleaved, shuffles, repeats forever and batches by
length bucket: pairs whose longer side (counting the target's EOS) falls in
the same ``train.bucket_width``-wide bucket are batched together, to about
``train.batch_tokens`` source+target tokens per batch (padding included), or
``train.batch_size`` pairs when batch_tokens is 0. EVAL reads the dev shards
once, in order, in batches of ``train.eval_batch_size``.

Towers: when params["num_towers"] is N > 1, every TRAIN batch has a multiple
of N rows (bucket batch sizes are rounded down to a multiple of N, at least
N; train.batch_size must be divisible by N; partial batches are dropped,
which with an endless repeat loses nothing), so the model_fn can split it
evenly. EVAL batches are not made divisible: EVAL keeps every dev pair, so
its last batch holds the remainder (dev size mod eval_batch_size), and a
model_fn must evaluate without splitting the batch evenly.

Several machines (TF_CONFIG): each training task (chief and workers) reads
its own 1/N of the training pairs, so N tasks see N times the data rather
than the same batches N times. A resumed run shuffles with a seed of its own
(train.seed plus the step it resumes from), so that it does not replay the
first batches of the first run.
"""

import collections
import os
import re

import tensorflow.compat.v1 as tf

from data_pipeline import manifest
from data_pipeline.tfrecords import parse_example
from data_pipeline.tokenizer import BOS_ID, EOS_ID
from seq2seq.config import ConfigError

TRAIN = tf.estimator.ModeKeys.TRAIN
EVAL = tf.estimator.ModeKeys.EVAL
_SPLIT_FOR_MODE = {TRAIN: "train", EVAL: "dev"}

TrainShare = collections.namedtuple("TrainShare", "num_tasks task_index resume_step")
TrainShare.__doc__ = """Which training pairs a task reads, and how it shuffles them.

Fields:
  num_tasks: how many training tasks split the pairs (1: one machine).
  task_index: this task's share, 0..num_tasks - 1.
  resume_step: the global step training resumes from (0 for a new model),
    added to the shuffle seed.
"""
SINGLE_TASK = TrainShare(1, 0, 0)


def input_fn(mode, params, config=None):
    """The Estimator's input_fn: the train split in TRAIN, dev in EVAL.

    Args:
      mode: tf.estimator.ModeKeys.TRAIN or EVAL.
      params: the resolved config dict, optionally with "num_towers".
      config: the Estimator's RunConfig (the Estimator passes it because
        this function names it): which task of a cluster this is, and the
        model directory a run resumes from.
    Returns:
      A tf.data.Dataset of (features, labels); see the module docstring.
    """
    if mode not in _SPLIT_FOR_MODE:
        raise ValueError("input_fn serves TRAIN and EVAL, not %r" % mode)
    share = train_share(config) if mode == TRAIN else SINGLE_TASK
    return make_dataset(params, _SPLIT_FOR_MODE[mode], mode, share)


def train_share(run_config):
    """The TrainShare of the task a RunConfig (or None) describes."""
    if run_config is None:
        return SINGLE_TASK
    num_tasks = max(1, run_config.num_worker_replicas)
    # The chief is 0, the workers 1..N-1; see RunConfig.global_id_in_cluster.
    task_index = run_config.global_id_in_cluster if num_tasks > 1 else 0
    return TrainShare(num_tasks, task_index, latest_step(run_config.model_dir))


def latest_step(model_dir):
    """The global step of the latest checkpoint in model_dir, 0 if there is none."""
    path = tf.train.latest_checkpoint(model_dir) if model_dir else None
    match = re.search(r"-(\d+)$", path or "")
    return int(match.group(1)) if match else 0


def make_input_fn(config, split, mode):
    """An input_fn (no arguments) over any split: "train", "dev" or "test"."""
    def split_input_fn():
        return make_dataset(config, split, mode)
    return split_input_fn


def make_dataset(config, split, mode, share=SINGLE_TASK):
    """Builds the dataset of (features, labels) for one split and mode.

    Args:
      config: the resolved config dict, optionally with "num_towers".
      split: "train", "dev" or "test".
      mode: tf.estimator.ModeKeys.TRAIN (shuffled, endless) or EVAL (one
        pass, in file order).
      share: in TRAIN, the TrainShare of this task (EVAL reads everything).
    Returns:
      A tf.data.Dataset of (features, labels): [B, S] source ids, [B, T]
      target input and output, [B] lengths (see the module docstring).
    Raises:
      ValueError: data not prepared, prepared with other data settings, or
        batch sizes not divisible by num_towers.
    """
    files = prepared_shards(config, split)
    training = mode == TRAIN
    train = config["train"]
    with tf.name_scope("input_%s" % split):
        if training:
            dataset = tf.data.Dataset.from_tensor_slices(files).interleave(
                tf.data.TFRecordDataset, cycle_length=len(files),
                num_parallel_calls=tf.data.experimental.AUTOTUNE)
        else:
            dataset = tf.data.TFRecordDataset(files)
        if training and share.num_tasks > 1:
            dataset = dataset.shard(share.num_tasks, share.task_index)
        # The prepared corpus is small (tens of MB at most in memory), so
        # parsing once and caching keeps later epochs off the disk and parser.
        # Training never reads the reference text: it stays out of the buckets.
        dataset = dataset.map(_model_inputs(with_text=not training),
                              num_parallel_calls=tf.data.experimental.AUTOTUNE)
        dataset = dataset.cache()
        if training:
            dataset = dataset.shuffle(train["shuffle_buffer"],
                                      seed=train["seed"] + share.resume_step).repeat()
            dataset = _bucket_batches(dataset, config)
        else:
            dataset = dataset.padded_batch(train["eval_batch_size"])
        dataset = dataset.map(_features_and_labels)
        return dataset.prefetch(tf.data.experimental.AUTOTUNE)


def prepared_shards(config, split):
    """The shard files of a split, checked against the config's data settings.

    Raises:
      ValueError: no manifest in data_dir, or one from other data settings.
    """
    data_dir = config["data"]["data_dir"]
    prepared = manifest.load(data_dir)
    if prepared is None:
        raise ConfigError("no prepared data in %s: run python -m data_pipeline.prepare "
                         "with the same config first" % data_dir)
    mismatches = manifest.settings_mismatches(prepared, config)
    if mismatches:
        raise ConfigError("the data in %s was prepared with other settings (%s): "
                         "run python -m data_pipeline.prepare again" % (data_dir, "; ".join(mismatches)))
    return [os.path.join(data_dir, name) for name in prepared["splits"][split]["shards"]]


def bucket_boundaries(max_length, bucket_width):
    """Bucket i holds lengths in [i * width + 1, (i + 1) * width]; the last ends at max_length.

    Returns:
      The lower bounds of buckets 1.., as bucket_by_sequence_length wants.
    """
    return list(range(bucket_width + 1, max_length + 1, bucket_width))


def bucket_batch_sizes(boundaries, max_length, batch_tokens, num_towers):
    """Pairs per batch in each bucket, for about `batch_tokens` padded tokens.

    A pair in a bucket whose longest length is m costs at most 2 m tokens
    (source and target padded to m).

    Args:
      boundaries: the bucket_boundaries.
      max_length: the longest pair length, the last bucket's upper end.
      batch_tokens: the padded source + target tokens wanted per batch.
      num_towers: every size is a multiple of it, at least num_towers.
    Returns:
      One size per bucket: len(boundaries) + 1 ints.
    """
    longest = [boundary - 1 for boundary in boundaries] + [max_length]
    return [max(num_towers, batch_tokens // (2 * m) // num_towers * num_towers) for m in longest]


def _bucket_batches(dataset, config):
    """Padded batches of pairs from one length bucket each (see the module docstring)."""
    data, train = config["data"], config["train"]
    num_towers = config.get("num_towers", 1)
    # The target side is one longer than its ids: BOS + y and y + EOS.
    max_length = max(data["max_source_length"], data["max_target_length"] + 1)
    boundaries = bucket_boundaries(max_length, train["bucket_width"])
    if train["batch_tokens"] > 0:
        sizes = bucket_batch_sizes(boundaries, max_length, train["batch_tokens"], num_towers)
    elif train["batch_size"] % num_towers:
        raise ConfigError("train.batch_size %d is not divisible by num_towers %d: each tower needs "
                         "an equal share" % (train["batch_size"], num_towers))
    else:
        sizes = [train["batch_size"]] * (len(boundaries) + 1)
    return dataset.bucket_by_sequence_length(
        element_length_func=_pair_length,
        bucket_boundaries=boundaries,
        bucket_batch_sizes=sizes,
        drop_remainder=num_towers > 1)


def _model_inputs(with_text):
    """The map function: one serialised pair -> the unbatched model inputs
    (see module docstring), with "target_text" if `with_text`."""
    def to_model_inputs(serialized):
        example = parse_example(serialized)
        source_ids, target_ids = example["source_ids"], example["target_ids"]
        inputs = {
            "source_ids": source_ids,
            "source_length": tf.size(source_ids),
            "target_input": tf.concat([[BOS_ID], target_ids], axis=0),
            "target_output": tf.concat([target_ids, [EOS_ID]], axis=0),
            "target_length": tf.size(target_ids) + 1,
        }
        if with_text:
            inputs["target_text"] = example["target_text"]
        return inputs
    return to_model_inputs


def _pair_length(inputs):
    return tf.maximum(inputs["source_length"], inputs["target_length"])


def _features_and_labels(batch):
    features = {key: batch[key] for key in ("source_ids", "source_length")}
    labels = {key: batch[key] for key in ("target_input", "target_output", "target_length",
                                          "target_text") if key in batch}
    return features, labels

