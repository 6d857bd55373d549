"""Two towers on virtual CPU devices against one device, same batch, same start."""

import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from conftest import TINY_CONFIG

from data_pipeline.input import make_dataset
from data_pipeline.tokenizer import Tokenizer
from seq2seq.config import ConfigError
from training.model_fn import model_fn, parallel_gradients, session_config, split_batch

TRAIN = tf.estimator.ModeKeys.TRAIN


@pytest.fixture(scope="module")
def batch(tiny_config, tiny_data):
    """One training batch (features, labels) as NumPy arrays, rows divisible by 2."""
    with tf.Graph().as_default():
        dataset = make_dataset(dict(tiny_config, num_towers=2), "train", TRAIN)
        next_batch = tf.data.make_one_shot_iterator(dataset).get_next()
        with tf.Session() as session:
            return session.run(next_batch)


@pytest.fixture(scope="module")
def model_dir(tiny_data, tmp_path_factory):
    """A directory with the SentencePiece model, which model_fn reads the vocabulary from."""
    directory = str(tmp_path_factory.mktemp("towers_model"))
    Tokenizer.load(tiny_data.data_dir).copy_to(directory)
    return directory


def _train_step(config, batch, model_dir, num_towers, initial_values=None):
    """Builds model_fn's TRAIN graph on `num_towers` towers and runs one update.

    Returns:
      (initial values, values after the update, the device of every op), the
      values as {variable name: array} over all global variables (weights,
      Adam's moments, the global step).
    """
    with tf.Graph().as_default() as graph:
        tf.set_random_seed(config["train"]["seed"])
        features, labels = tf.nest.map_structure(tf.constant, batch)
        spec = model_fn(features, labels, TRAIN, dict(config, num_towers=num_towers),
                        tf.estimator.RunConfig(model_dir=model_dir))
        variables = tf.global_variables()
        with tf.Session(config=session_config(2)) as session:
            session.run(tf.global_variables_initializer())
            if initial_values is not None:
                for variable in variables:
                    variable.load(initial_values[variable.op.name], session)
            before = {v.op.name: value for v, value in zip(variables, session.run(variables))}
            session.run(spec.train_op)
            after = {v.op.name: value for v, value in zip(variables, session.run(variables))}
        devices = {op.name: op.device for op in graph.get_operations()}
    return before, after, devices


def test_two_towers_update_equals_one_device(tiny_config, batch, model_dir):
    assert tiny_config["model"]["dropout"] == 0.0
    # Without the histogram summaries, which have no part in the update: a faster test.
    tiny_config = dict(tiny_config, train=dict(tiny_config["train"], histogram_steps=0))
    # The loss is averaged over target tokens: unequal halves tell a token
    # average from an average of the towers' averages.
    target_lengths = np.split(batch[1]["target_length"], 2)
    assert target_lengths[0].sum() != target_lengths[1].sum(), \
        "the halves should hold different numbers of target tokens, to test the weighting"
    initial, one_device, _ = _train_step(tiny_config, batch, model_dir, num_towers=1)
    _, two_towers, devices = _train_step(tiny_config, batch, model_dir, num_towers=2,
                                         initial_values=initial)
    assert set(one_device) == set(two_towers)
    # Adam's first moment after one step is 0.1 * gradient: comparing it
    # compares the gradients themselves, not only the signs Adam's first
    # update mostly depends on.
    assert any(name.endswith("/Adam") for name in one_device)
    for name, value in one_device.items():
        np.testing.assert_allclose(two_towers[name], value, rtol=1e-5, atol=1e-5, err_msg=name)
        if name.endswith("/kernel"):
            assert not np.allclose(value, initial[name]), name + " did not change"

    for tower in (0, 1):
        placed = [device for name, device in devices.items()
                  if name.startswith("tower_%d/" % tower) and device]
        on_own_device = sum(device.endswith("CPU:%d" % tower) for device in placed)
        # The rest: embedding lookups and their gradients, which tf.nn.embedding_lookup
        # colocates with the shared table on CPU:0.
        assert on_own_device > 0.9 * len(placed), tower


def test_split_batch_keeps_the_structure():
    with tf.Graph().as_default(), tf.Session() as session:
        inputs = ({"a": tf.reshape(tf.range(8), [4, 2])}, {"b": tf.range(4)})
        halves = session.run(split_batch(inputs, 2))
    np.testing.assert_array_equal(halves[0][0]["a"], [[0, 1], [2, 3]])
    np.testing.assert_array_equal(halves[1][1]["b"], [2, 3])


def test_a_tower_creating_variables_is_an_error():
    def unshared_loss(inputs):
        weight = tf.Variable(1.0)
        return tf.reduce_sum(inputs) * weight, tf.constant(1.0)

    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="tower 1 created new variables"):
            parallel_gradients(unshared_loss, tf.ones([4]), 2)


@pytest.mark.parametrize("num_towers", [1, 2])
def test_gradients_are_the_token_weighted_mean(num_towers):
    """Against a hand-derived gradient: loss = sum(w * x) / sum(tokens), with
    the halves holding 1 and 5 tokens (an average of the towers' averages
    would weigh them equally)."""
    x = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    tokens = np.array([1.0, 0.0, 2.0, 3.0], np.float32)
    with tf.Graph().as_default(), tf.Session(config=session_config(2)) as session:
        weight = tf.Variable(0.5)

        def loss_fn(inputs):
            tower_x, tower_tokens = inputs
            return tf.reduce_sum(weight * tower_x), tf.reduce_sum(tower_tokens)

        loss, grads_and_vars = parallel_gradients(
            loss_fn, (tf.constant(x), tf.constant(tokens)), num_towers)
        session.run(tf.global_variables_initializer())
        loss, ((gradient, _),) = session.run([loss, grads_and_vars])
    np.testing.assert_allclose(loss, 0.5 * x.sum() / tokens.sum(), rtol=1e-6)
    np.testing.assert_allclose(gradient, x.sum() / tokens.sum(), rtol=1e-6)


@pytest.mark.parametrize("visible_gpus", [0, 1])
def test_more_towers_than_visible_gpus_is_an_error_on_a_gpu_build(
        visible_gpus, tiny_config, tmp_path, monkeypatch, caplog):
    """Not towers silently collapsed onto fewer devices by soft placement."""
    import train
    monkeypatch.setattr(tf.test, "is_built_with_cuda", lambda: True)
    monkeypatch.setattr(tf.config, "list_physical_devices",
                        lambda kind=None: ["GPU"] * visible_gpus if kind == "GPU" else [])
    monkeypatch.setattr(tf.config, "get_logical_device_configuration", lambda device: None)
    with pytest.raises(ConfigError, match="--num_gpus 2, but TensorFlow sees %d GPU"
                       % visible_gpus):
        train.run(tiny_config, str(tmp_path), num_gpus=2)
    assert train.main(["--config", TINY_CONFIG, "--model_dir", str(tmp_path),
                       "--num_gpus", "2"]) == 1
    assert "--num_gpus 2, but TensorFlow sees" in caplog.text
    assert not os.listdir(tmp_path), "nothing prepared or written"
    assert session_config(1) is None  # one tower: the default device, as before
