"""The model's layers against NumPy implementations of their equations."""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from seq2seq.layers import GRU, Attention, masked_softmax, unroll
from seq2seq.model import BidirectionalEncoder


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def numpy_gru(inputs, h, w_x, b_x, w_h, b_h):
    """Runs the "reset after" GRU over inputs [time, in] from h [units], gate by gate."""
    units = h.shape[0]
    gate = lambda m, i: m[..., i * units:(i + 1) * units]  # noqa: E731
    states = []
    for x in inputs:
        r = sigmoid(x @ gate(w_x, 0) + gate(b_x, 0) + h @ gate(w_h, 0) + gate(b_h, 0))
        z = sigmoid(x @ gate(w_x, 1) + gate(b_x, 1) + h @ gate(w_h, 1) + gate(b_h, 1))
        n = np.tanh(x @ gate(w_x, 2) + gate(b_x, 2) + r * (h @ gate(w_h, 2) + gate(b_h, 2)))
        h = (1 - z) * n + z * h
        states.append(h)
    return np.array(states)


def gru_weights(sess, scope):
    """The four GRU variables under `scope`, as NumPy arrays (with nonzero biases)."""
    names = ["input_projection/kernel", "input_projection/bias",
             "recurrent/kernel", "recurrent/bias"]
    variables = {v.op.name: v for v in tf.global_variables()}
    rng = np.random.RandomState(7)
    values = []
    for name in names:
        variable = variables[scope + "/" + name]
        if name.endswith("bias"):  # Zero-initialised: make them matter.
            variable.load(rng.uniform(-1, 1, variable.shape.as_list()), sess)
        values.append(sess.run(variable))
    return values


def test_gru_matches_numpy():
    rng = np.random.RandomState(0)
    inputs = rng.randn(2, 5, 3).astype(np.float32)
    initial = rng.randn(2, 4).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        gru = GRU(4, name="gru")
        states = unroll(gru.step, gru.project_inputs(tf.constant(inputs)), tf.constant(initial))
        sess.run(tf.global_variables_initializer())
        weights = gru_weights(sess, "gru")
        got = sess.run(states)
    for b in range(2):
        np.testing.assert_allclose(got[b], numpy_gru(inputs[b], initial[b], *weights), atol=1e-5)


def test_gru_recurrent_kernel_is_orthogonal_per_gate():
    with tf.Graph().as_default(), tf.Session() as sess:
        gru = GRU(6, name="gru")
        gru.step(tf.zeros([1, 18]), tf.zeros([1, 6]))
        sess.run(tf.global_variables_initializer())
        kernel, = [sess.run(v) for v in tf.global_variables()
                   if v.op.name == "gru/recurrent/kernel"]
    for gate in range(3):
        block = kernel[:, 6 * gate:6 * (gate + 1)]
        np.testing.assert_allclose(block.T @ block, np.eye(6), atol=1e-5)


def test_encoder_matches_numpy_bidirectional_gru_and_ignores_padding():
    rng = np.random.RandomState(1)
    inputs = rng.randn(3, 6, 5).astype(np.float32)
    lengths = np.array([6, 2, 4], np.int32)
    inputs[1, 2:] = 100.0  # Padding, which must not leak into valid steps.
    with tf.Graph().as_default(), tf.Session() as sess:
        encoder = BidirectionalEncoder(num_units=8, num_layers=1, dropout_rate=0.0, name="encoder")
        outputs, final = encoder(tf.constant(inputs), tf.constant(lengths), training=False)
        sess.run(tf.global_variables_initializer())
        forward = gru_weights(sess, "encoder/layer_0/forward")
        backward = gru_weights(sess, "encoder/layer_0/backward")
        got_outputs, got_final = sess.run([outputs, final])
    zeros = np.zeros(4, np.float32)
    for b, length in enumerate(lengths):
        valid = inputs[b, :length]
        fw = numpy_gru(valid, zeros, *forward)
        bw = numpy_gru(valid[::-1], zeros, *backward)[::-1]
        np.testing.assert_allclose(got_outputs[b, :length], np.concatenate([fw, bw], -1), atol=1e-5)
        np.testing.assert_array_equal(got_outputs[b, length:], 0.0)
        np.testing.assert_allclose(got_final[b], np.concatenate([fw[-1], bw[0]]), atol=1e-5)


def test_masked_softmax_gives_padding_zero_weight():
    scores = np.array([[[3.0, 1.0, 50.0], [-2.0, 0.5, -1e4]]], np.float32)
    mask = np.array([[1.0, 1.0, 0.0]], np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        weights = sess.run(masked_softmax(tf.constant(scores), tf.constant(mask)))
    np.testing.assert_array_equal(weights[..., 2], 0.0)
    np.testing.assert_allclose(weights[..., :2], softmax(scores[..., :2]), rtol=1e-6)


@pytest.mark.parametrize("kind", ["bahdanau", "luong"])
def test_attention_matches_numpy(kind):
    rng = np.random.RandomState(2)
    query = rng.randn(2, 3, 4).astype(np.float32)
    memory = rng.randn(2, 5, 6).astype(np.float32)
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0]], np.float32)
    with tf.Graph().as_default(), tf.Session() as sess:
        attention = Attention(kind, attention_size=7, query_size=4, name="attention")
        keys = attention.project_keys(tf.constant(memory))
        context, weights = attention(
            tf.constant(query), keys, tf.constant(memory), tf.constant(mask))
        sess.run(tf.global_variables_initializer())
        variables = {v.op.name: v for v in tf.global_variables()}
        if kind == "bahdanau":
            variables["attention/key_projection/bias"].load(rng.randn(7), sess)
        values = {name: sess.run(v) for name, v in variables.items()}
        got_context, got_weights = sess.run([context, weights])

    if kind == "bahdanau":
        keys = (memory @ values["attention/key_projection/kernel"]
                + values["attention/key_projection/bias"])
        projected = query @ values["attention/query_projection/kernel"]
        scores = np.tanh(projected[:, :, None] + keys[:, None]) @ values["attention/score/v"]
    else:
        keys = memory @ values["attention/key_projection/kernel"]
        scores = np.einsum("bqh,bsh->bqs", query, keys)
    expected = np.zeros_like(scores)
    for b in range(2):
        valid = int(mask[b].sum())
        expected[b, :, :valid] = softmax(scores[b, :, :valid])
    np.testing.assert_allclose(got_weights, expected, atol=1e-6)
    np.testing.assert_array_equal(got_weights[1, :, 2:], 0.0)
    np.testing.assert_allclose(got_weights.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(got_context, expected @ memory, atol=1e-5)
