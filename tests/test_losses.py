"""The sequence loss and accuracy against NumPy, written with an explicit target distribution."""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from seq2seq.losses import sequence_cross_entropy, token_accuracy

LOGITS = np.random.RandomState(0).randn(3, 4, 6).astype(np.float32) * 3.0
LABELS = np.array([[1, 2, 3, 4], [5, 0, 0, 0], [2, 2, 5, 0]], np.int32)
LENGTHS = np.array([4, 1, 3], np.int32)


def numpy_loss(logits, labels, lengths, smoothing):
    """Cross-entropy against (1 - eps) * one_hot + eps / V, averaged over valid tokens."""
    vocab = logits.shape[-1]
    losses = []
    for b, length in enumerate(lengths):
        for t in range(length):
            shifted = logits[b, t] - logits[b, t].max()
            log_probs = shifted - np.log(np.exp(shifted).sum())
            target = np.full(vocab, smoothing / vocab)
            target[labels[b, t]] += 1.0 - smoothing
            losses.append(-(target * log_probs).sum())
    return np.mean(losses), len(losses)


def run(tensors):
    with tf.Graph().as_default(), tf.Session() as sess:
        return sess.run(tensors())


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_matches_numpy_and_ignores_padding(smoothing):
    padded_logits = LOGITS.copy()
    padded_logits[1, 1:] = 1e4  # Padding steps: would dominate if not masked.

    loss, num_tokens = run(lambda: sequence_cross_entropy(
        tf.constant(padded_logits), tf.constant(LABELS), tf.constant(LENGTHS), smoothing))

    expected, count = numpy_loss(LOGITS, LABELS, LENGTHS, smoothing)
    np.testing.assert_allclose(loss, expected, rtol=1e-5)
    assert num_tokens == count == 8


def test_cross_entropy_is_stable_for_huge_logits():
    logits = np.zeros((1, 1, 3), np.float32)
    logits[0, 0] = [1e4, -1e4, 0.0]
    loss, _ = run(lambda: sequence_cross_entropy(
        tf.constant(logits), tf.constant([[1]]), tf.constant([1]), 0.1))
    # -(0.9 + 0.1 / 3) * log p(1) - 0.1 / 3 * log p(2), with log p(0) = 0.
    np.testing.assert_allclose(loss, (0.9 + 0.1 / 3) * 2e4 + 0.1 / 3 * 1e4, rtol=1e-6)


def test_cross_entropy_of_an_empty_batch_is_zero():
    loss, num_tokens = run(lambda: sequence_cross_entropy(
        tf.constant(LOGITS), tf.constant(LABELS), tf.zeros([3], tf.int32), 0.1))
    assert loss == 0.0 and num_tokens == 0.0


def test_token_accuracy_counts_valid_argmax_hits():
    predictions = LOGITS.argmax(-1)
    labels = LABELS.copy()
    labels[0, :2] = predictions[0, :2]  # 2 hits guaranteed in the first row.
    accuracy, num_tokens = run(lambda: token_accuracy(
        tf.constant(LOGITS), tf.constant(labels), tf.constant(LENGTHS)))
    hits = sum((predictions[b, :n] == labels[b, :n]).sum() for b, n in enumerate(LENGTHS))
    assert num_tokens == 8
    np.testing.assert_allclose(accuracy, hits / 8.0)
