"""TFRecord shards: what is written is what is read, in order."""

import tensorflow.compat.v1 as tf

from data_pipeline.input import parse_example
from data_pipeline.prepare import serialize_example, write_shards

EXAMPLES = [([5, 6, 7], [8, 9]), ([10], [11, 12, 13, 14]), ([15, 16], [17]),
            ([18, 19, 20, 21], [22, 23]), ([24], [25])]


def read_examples(path):
    """Reads a shard with the protobuf API, independently of parse_example."""
    examples = []
    for record in tf.io.tf_record_iterator(path):
        features = tf.train.Example.FromString(record).features.feature
        examples.append((list(features["source_ids"].int64_list.value),
                         list(features["target_ids"].int64_list.value)))
    return examples


def test_shards_hold_contiguous_runs_in_order(tmp_path):
    names = write_shards(EXAMPLES, str(tmp_path), "train", 2, verbose=False)
    assert names == ["train-00000-of-00002.tfrecord", "train-00001-of-00002.tfrecord"]
    shards = [read_examples(str(tmp_path / name)) for name in names]
    assert shards == [EXAMPLES[:2], EXAMPLES[2:]]


def test_parse_example_gives_int32_ids():
    with tf.Graph().as_default():
        parsed = parse_example(tf.constant(serialize_example([5, 6, 7], [8, 9])))
        assert parsed["source_ids"].dtype == tf.int32 and parsed["target_ids"].dtype == tf.int32
        with tf.Session() as session:
            values = session.run(parsed)
    assert values["source_ids"].tolist() == [5, 6, 7]
    assert values["target_ids"].tolist() == [8, 9]


def test_the_reference_text_survives_and_is_empty_where_not_written():
    with tf.Graph().as_default():
        with_text = parse_example(tf.constant(serialize_example([5], [8, 9], "dois mil e três ☃")))
        without = parse_example(tf.constant(serialize_example([5], [8, 9])))
        with tf.Session() as session:
            texts = session.run([with_text["target_text"], without["target_text"]])
    assert texts == ["dois mil e três ☃".encode("utf-8"), b""]
