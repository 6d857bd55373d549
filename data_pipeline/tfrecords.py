"""Sharded TFRecord files of ``tf.train.Example``s: writing and parsing.

Each example holds two int64 lists, "source_ids" and "target_ids", the
SentencePiece ids of one pair without BOS or EOS (the input pipeline adds
them). Dev and test examples also hold "target_text", the reference as the
corpus gave it (normalised, not round-tripped through SentencePiece): BLEU is
scored against it, as sacreBLEU means it to be. Shards hold contiguous runs
of the examples, so reading the shards in order gives the examples in the
order they were written.
"""

import tensorflow.compat.v1 as tf
from tqdm import tqdm

SOURCE_IDS = "source_ids"
TARGET_IDS = "target_ids"
TARGET_TEXT = "target_text"


def shard_names(split, num_shards):
    """``("train", 2)`` -> ``["train-00000-of-00002.tfrecord", "train-00001-of-00002.tfrecord"]``."""
    return ["%s-%05d-of-%05d.tfrecord" % (split, index, num_shards) for index in range(num_shards)]


def write_shards(examples, paths, description, verbose):
    """Writes examples into the shard files, in order.

    Args:
      examples: list of (source_ids, target_ids) or (source_ids, target_ids,
        target_text): lists of int, and a str.
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
                for example in examples[begin:end]:
                    writer.write(serialize_example(*example))
            progress.update(end - begin)


def serialize_example(source_ids, target_ids, target_text=None):
    """Two id lists, and the reference text if given -> a serialised tf.train.Example."""
    feature = {
        SOURCE_IDS: tf.train.Feature(int64_list=tf.train.Int64List(value=source_ids)),
        TARGET_IDS: tf.train.Feature(int64_list=tf.train.Int64List(value=target_ids)),
    }
    if target_text is not None:
        feature[TARGET_TEXT] = tf.train.Feature(
            bytes_list=tf.train.BytesList(value=[target_text.encode("utf-8")]))
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def parse_example(serialized):
    """A serialised example -> {"source_ids": [S] int32, "target_ids": [T] int32,
    "target_text": [] string, "" where the example holds none (train)}."""
    features = tf.io.parse_single_example(serialized, {
        SOURCE_IDS: tf.io.VarLenFeature(tf.int64),
        TARGET_IDS: tf.io.VarLenFeature(tf.int64),
        TARGET_TEXT: tf.io.FixedLenFeature([], tf.string, default_value=""),
    })
    parsed = {name: tf.cast(tf.sparse.to_dense(features[name]), tf.int32)
              for name in (SOURCE_IDS, TARGET_IDS)}
    parsed[TARGET_TEXT] = features[TARGET_TEXT]
    return parsed
