"""input_fn: what it yields equals what was prepared; padding, buckets, towers."""

import collections
import copy
import types

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from data_pipeline.input import (
    EVAL, SINGLE_TASK, TRAIN, TrainShare, bucket_batch_sizes, bucket_boundaries, input_fn,
    make_dataset, make_input_fn, train_share)
from data_pipeline.tokenizer import BOS_ID, EOS_ID, Tokenizer


def batches(make_dataset, limit=None):
    """Runs a dataset in its own graph; returns up to `limit` (features, labels)."""
    results = []
    with tf.Graph().as_default():
        next_batch = tf.data.make_one_shot_iterator(make_dataset()).get_next()
        with tf.Session() as session:
            while limit is None or len(results) < limit:
                try:
                    results.append(session.run(next_batch))
                except tf.errors.OutOfRangeError:
                    break
    return results


def with_train(config, **train):
    config = copy.deepcopy(config)
    config["train"].update(train)
    return config


def unpad(row, length):
    """The first `length` entries, checking that the rest is padding."""
    assert not row[length:].any(), row
    return row[:length].tolist()


def test_eval_yields_the_dev_set_in_order(tiny_config, tiny_data):
    tokenizer = Tokenizer.load(tiny_data.data_dir)
    source_path, target_path = tiny_data.raw_text["dev"]
    with open(source_path, encoding="utf-8") as sources, open(target_path, encoding="utf-8") as targets:
        pairs = [(s.rstrip("\n"), t.rstrip("\n")) for s, t in zip(sources, targets)]
    expected = [(tokenizer.encode_source(s), tokenizer.encode_target(t), t) for s, t in pairs]
    seen = []
    for features, labels in batches(lambda: input_fn(EVAL, tiny_config)):
        assert len(features["source_ids"]) <= tiny_config["train"]["eval_batch_size"]
        for row in range(len(features["source_ids"])):
            source = unpad(features["source_ids"][row], features["source_length"][row])
            length = labels["target_length"][row]
            target_input = unpad(labels["target_input"][row], length)
            target_output = unpad(labels["target_output"][row], length)
            assert target_input[0] == BOS_ID and target_output[-1] == EOS_ID
            assert target_input[1:] == target_output[:-1]
            seen.append((source, target_output[:-1], labels["target_text"][row].decode("utf-8")))
    assert seen == expected


def test_train_batches_shapes_dtypes_and_buckets(tiny_config, tiny_data):
    width = tiny_config["train"]["bucket_width"]
    for features, labels in batches(lambda: input_fn(TRAIN, tiny_config), limit=80):
        assert "target_text" not in labels, "training batches carry no reference text"
        arrays = list(features.values()) + list(labels.values())
        assert all(array.dtype == np.int32 for array in arrays)
        source_length, target_length = features["source_length"], labels["target_length"]
        assert features["source_ids"].shape == (32, source_length.max())
        for key in ("target_input", "target_output"):
            assert labels[key].shape == (32, target_length.max())
        buckets = (np.maximum(source_length, target_length) - 1) // width
        assert len(set(buckets.tolist())) == 1, (source_length, target_length)


def test_token_batches_stay_within_the_budget(tiny_config, tiny_data):
    config = with_train(tiny_config, batch_tokens=256)
    rows = set()
    for features, labels in batches(lambda: input_fn(TRAIN, config), limit=40):
        padded_tokens = features["source_ids"].size + labels["target_output"].size
        assert padded_tokens <= 256
        rows.add(len(features["source_ids"]))
    assert len(rows) > 1  # short pairs come in bigger batches


def test_tower_batches_split_evenly(tiny_config, tiny_data):
    config = dict(with_train(tiny_config, batch_tokens=256), num_towers=3)
    for features, _ in batches(lambda: input_fn(TRAIN, config), limit=40):
        assert len(features["source_ids"]) % 3 == 0
    config = dict(tiny_config, num_towers=3)
    with pytest.raises(ValueError, match="train.batch_size 32 is not divisible by num_towers 3"):
        batches(lambda: input_fn(TRAIN, config), limit=1)


def test_bucket_sizes():
    boundaries = bucket_boundaries(max_length=10, bucket_width=4)
    assert boundaries == [5, 9]  # buckets 1-4, 5-8, 9-10
    assert bucket_batch_sizes(boundaries, 10, batch_tokens=100, num_towers=1) == [12, 6, 5]
    assert bucket_batch_sizes(boundaries, 10, batch_tokens=100, num_towers=4) == [12, 4, 4]


def test_test_split_is_read_once(tiny_config, tiny_data):
    rows = sum(len(features["source_ids"])
               for features, _ in batches(make_input_fn(tiny_config, "test", EVAL)))
    assert rows == tiny_data.manifest["splits"]["test"]["kept"]


def test_unprepared_or_stale_data(tiny_config, tiny_data, tmp_path):
    elsewhere = copy.deepcopy(tiny_config)
    elsewhere["data"]["data_dir"] = str(tmp_path)
    with pytest.raises(ValueError, match="no prepared data in"):
        input_fn(TRAIN, elsewhere)
    stale = copy.deepcopy(tiny_config)
    stale["data"]["vocab_size"] += 1
    with pytest.raises(ValueError, match="data.vocab_size: 300 -> 301"):
        input_fn(TRAIN, stale)
    with pytest.raises(ValueError, match="TRAIN and EVAL"):
        input_fn(tf.estimator.ModeKeys.PREDICT, tiny_config)


def pairs_seen(config, share, num_batches):
    """The distinct (source, target) id pairs in a task's first training batches."""
    seen = set()
    for features, labels in batches(lambda: make_dataset(config, "train", TRAIN, share),
                                    limit=num_batches):
        for row in range(len(features["source_ids"])):
            source = unpad(features["source_ids"][row], features["source_length"][row])
            target = unpad(labels["target_output"][row], labels["target_length"][row])
            seen.add((tuple(source), tuple(target)))
    return seen


def test_two_training_tasks_read_disjoint_halves_of_the_pairs(tiny_config, tiny_data):
    counts = collections.Counter()
    for path in tiny_data.train_files:
        for record in tf.io.tf_record_iterator(path):
            feature = tf.train.Example.FromString(record).features.feature
            counts[(tuple(feature["source_ids"].int64_list.value),
                    tuple(feature["target_ids"].int64_list.value) + (EOS_ID,))] += 1
    # The embedded corpus repeats its closed families ("Monday") in train: a
    # repeated pair may be in both halves, every other one in exactly one.
    repeated = {pair for pair, count in counts.items() if count > 1}
    # One length bucket, so that no rarely filled bucket holds pairs back: 80
    # batches of 32 from a half of 1,000 pairs pass each of them at least twice.
    config = with_train(tiny_config, bucket_width=1000)
    halves = [pairs_seen(config, TrainShare(2, index, 0), 80) for index in (0, 1)]
    assert not (halves[0] & halves[1]) - repeated
    assert halves[0] | halves[1] == set(counts)
    assert abs(len(halves[0] - repeated) - len(halves[1] - repeated)) <= 1 + sum(counts[pair] for pair in repeated)


def test_a_resumed_run_shuffles_differently(tiny_config, tiny_data):
    def first_sources(resume_step):
        [(features, _)] = batches(
            lambda: make_dataset(tiny_config, "train", TRAIN, TrainShare(1, 0, resume_step)),
            limit=1)
        return features["source_ids"].tolist()
    assert first_sources(0) == first_sources(0)
    assert first_sources(0) != first_sources(1500)


def test_train_share_reads_the_task_and_the_step_to_resume_from(tmp_path):
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        with tf.Session() as session:
            session.run(tf.assign(step, 1500))
            tf.train.Saver().save(session, str(tmp_path / "model.ckpt"), global_step=step)
    worker = types.SimpleNamespace(num_worker_replicas=3, global_id_in_cluster=2,
                                   model_dir=str(tmp_path))
    assert train_share(worker) == TrainShare(3, 2, 1500)
    alone = types.SimpleNamespace(num_worker_replicas=1, global_id_in_cluster=0,
                                  model_dir=str(tmp_path / "new"))
    assert train_share(alone) == TrainShare(1, 0, 0)
    assert train_share(None) == SINGLE_TASK
