"""Sharded TFRecord files of ``tf.train.Example``s: writing and parsing.

Each example holds two int64 lists, "source_ids" and "target_ids", the
SentencePiece ids of one pair without BOS or EOS (the input pipeline adds
them). Shards hold contiguous runs of the examples, so reading the shards in
order gives the examples in the order they were written.
"""

import tensorflow.compat.v1 as tf
from tqdm import tqdm

SOURCE_IDS = "source_ids"
TARGET_IDS = "target_ids"


def shard_names(split, num_shards):
    """``("train", 2)`` -> ``["train-00000-of-00002.tfrecord", "train-00001-of-00002.tfrecord"]``."""
    return ["%s-%05d-of-%05d.tfrecord" % (split, index, num_shards) for index in range(num_shards)]


def write_shards(examples, paths, description, verbose):
    """Writes (source_ids, target_ids) pairs into the shard files, in order.

    Args:
      examples: list of (list of int, list of int).
      paths: the shard files; shard k gets the k-th contiguous slice.
      description: the progress bar's label.
      verbose: whether to show the progress bar.
    """
    num_shards = len(paths)
    with tqdm(total=len(examples), desc=description, unit=" pairs", disable=not verbose) as progress:
        for index, path in enumerate(paths):
            begin = index * len(examples) // num_shards
            end = (index + 1) * len(examples) // num_shards
            with tf.io.TFRecordWriter(path) as writer:
                for source_ids, target_ids in examples[begin:end]:
                    writer.write(serialize_example(source_ids, target_ids))
            progress.update(end - begin)


def serialize_example(source_ids, target_ids):
    """Two id lists -> a serialised tf.train.Example."""
    feature = {
        SOURCE_IDS: tf.train.Feature(int64_list=tf.train.Int64List(value=source_ids)),
        TARGET_IDS: tf.train.Feature(int64_list=tf.train.Int64List(value=target_ids)),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def parse_example(serialized):
    """A serialised example -> {"source_ids": [S] int32, "target_ids": [T] int32}."""
    features = tf.io.parse_single_example(serialized, {
        SOURCE_IDS: tf.io.VarLenFeature(tf.int64),
        TARGET_IDS: tf.io.VarLenFeature(tf.int64),
    })
    return {name: tf.cast(tf.sparse.to_dense(ids), tf.int32) for name, ids in features.items()}
