"""The Estimator's input: bucketed, padded batches from the TFRecord shards.

Each element is (features, labels), padded with PAD_ID (0):

  features["source_ids"]     [B, S] int32  the source pieces, no BOS/EOS
  features["source_length"]  [B]    int32
  labels["target_input"]     [B, T] int32  BOS_ID + y  (decoder input)
  labels["target_output"]    [B, T] int32  y + EOS_ID  (what to predict)
  labels["target_length"]    [B]    int32  len(y) + 1
  labels["target_text"]      [B]    string the reference text (EVAL only)

TRAIN: shuffled, endless, length-bucketed; EVAL: one pass in order (docs/DATA-NOTES.md).
"""

import collections
import os

import tensorflow.compat.v1 as tf

from data_pipeline.prepare import (SOURCE_IDS, TARGET_IDS, TARGET_TEXT, load_manifest,
                                   settings_mismatches)
from data_pipeline.tokenizer import BOS_ID, EOS_ID
from seq2seq.config import ConfigError
from seq2seq.model_dir import checkpoint_step, latest_checkpoint

TRAIN, EVAL = tf.estimator.ModeKeys.TRAIN, tf.estimator.ModeKeys.EVAL
TrainShare = collections.namedtuple("TrainShare", "num_tasks task_index resume_step")
SINGLE_TASK = TrainShare(1, 0, 0)


def input_fn(mode, params, config=None):
    """The Estimator's input_fn: the train split in TRAIN, dev in EVAL.

    Args:
      mode: TRAIN or EVAL.
      params: the resolved config dict, optionally with "num_towers".
      config: the Estimator's RunConfig (cluster task, model_dir to resume from).
    Returns:
      A tf.data.Dataset of (features, labels), as the module docstring says.
    """
    if mode not in (TRAIN, EVAL):
        raise ValueError("input_fn serves TRAIN and EVAL, not %r" % mode)
    if mode == TRAIN:
        return make_dataset(params, "train", mode, train_share(config))
    return make_dataset(params, "dev", mode)


def train_share(run_config):
    """The TrainShare (tasks, this task's index, resume step) of a RunConfig or None."""
    if run_config is None:
        return SINGLE_TASK
    num_tasks = max(1, run_config.num_worker_replicas)
    path = latest_checkpoint(run_config.model_dir) if run_config.model_dir else None
    return TrainShare(num_tasks, run_config.global_id_in_cluster if num_tasks > 1 else 0,
                      checkpoint_step(path) or 0)


def make_input_fn(config, split, mode):
    """An input_fn without arguments over any split: "train", "dev" or "test"."""
    return lambda: make_dataset(config, split, mode)


def make_dataset(config, split, mode, share=SINGLE_TASK):
    """The (features, labels) dataset of one split; ConfigError unless prepared as configured."""
    data_dir = config["data"]["data_dir"]
    manifest = load_manifest(data_dir)
    if manifest is None:
        raise ConfigError("no prepared data in %s: run python -m data_pipeline.prepare "
                          "with the same config first" % data_dir)
    mismatches = settings_mismatches(manifest, config)
    if mismatches:
        raise ConfigError("the data in %s was prepared with other settings (%s): run python -m "
                          "data_pipeline.prepare again" % (data_dir, "; ".join(mismatches)))
    files = [os.path.join(data_dir, name) for name in manifest["splits"][split]["shards"]]
    training, train = mode == TRAIN, config["train"]
    with tf.name_scope("input_%s" % split):
        if training:
            dataset = tf.data.Dataset.from_tensor_slices(files).interleave(
                tf.data.TFRecordDataset, cycle_length=len(files),
                num_parallel_calls=tf.data.AUTOTUNE).shard(share.num_tasks, share.task_index)
        else:
            dataset = tf.data.TFRecordDataset(files)
        dataset = dataset.map(lambda record: _model_inputs(record, not training),
                              num_parallel_calls=tf.data.AUTOTUNE).cache()
        if training:
            seed = train["seed"] + share.resume_step  # a resumed run sees other batches
            dataset = dataset.shuffle(train["shuffle_buffer"], seed=seed).repeat()
            dataset = _bucket_batches(dataset, config)
        else:
            dataset = dataset.padded_batch(train["eval_batch_size"])
        return dataset.prefetch(tf.data.AUTOTUNE)


def parse_example(serialized):
    """A serialised example -> {"source_ids": [S] int32, "target_ids": [T] int32,
    "target_text": [] string}."""
    features = tf.io.parse_single_example(serialized, {
        SOURCE_IDS: tf.io.VarLenFeature(tf.int64), TARGET_IDS: tf.io.VarLenFeature(tf.int64),
        TARGET_TEXT: tf.io.FixedLenFeature([], tf.string, default_value="")})
    return {name: value if name == TARGET_TEXT else tf.cast(tf.sparse.to_dense(value), tf.int32)
            for name, value in features.items()}


def bucket_boundaries(max_length, bucket_width):
    """Lower bounds of buckets 1.. (bucket i holds lengths i * width + 1 .. (i + 1) * width)."""
    return list(range(bucket_width + 1, max_length + 1, bucket_width))


def bucket_batch_sizes(boundaries, max_length, batch_tokens, num_towers):
    """Pairs per batch in each bucket for about `batch_tokens` padded tokens (2 m a pair), a
    multiple of num_towers."""
    longest = [boundary - 1 for boundary in boundaries] + [max_length]
    return [max(num_towers, batch_tokens // (2 * m) // num_towers * num_towers) for m in longest]


def _bucket_batches(dataset, config):
    data, train, num_towers = config["data"], config["train"], config.get("num_towers", 1)
    max_length = max(data["max_source_length"], data["max_target_length"] + 1)  # + BOS or EOS
    boundaries = bucket_boundaries(max_length, train["bucket_width"])
    if train["batch_tokens"] > 0:
        sizes = bucket_batch_sizes(boundaries, max_length, train["batch_tokens"], num_towers)
    elif train["batch_size"] % num_towers:
        raise ConfigError("train.batch_size %d is not divisible by num_towers %d: each tower needs "
                          "an equal share" % (train["batch_size"], num_towers))
    else:
        sizes = [train["batch_size"]] * (len(boundaries) + 1)
    return dataset.bucket_by_sequence_length(
        lambda features, labels: tf.maximum(features["source_length"], labels["target_length"]),
        boundaries, sizes, drop_remainder=num_towers > 1)  # towers split every batch evenly


def _model_inputs(serialized, with_text):
    """A serialised example -> (features, labels) of one pair, as the module docstring says."""
    example = parse_example(serialized)
    source_ids, target_ids = example[SOURCE_IDS], example[TARGET_IDS]
    labels = {"target_input": tf.concat([[BOS_ID], target_ids], axis=0),
              "target_output": tf.concat([target_ids, [EOS_ID]], axis=0),
              "target_length": tf.size(target_ids) + 1}
    if with_text:
        labels["target_text"] = example[TARGET_TEXT]
    return {"source_ids": source_ids, "source_length": tf.size(source_ids)}, labels
