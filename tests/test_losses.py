"""The sequence loss and accuracy against NumPy, written with an explicit target distribution."""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from seq2seq.losses import batch_token_accuracy, sequence_cross_entropy, token_mean

LOGITS = np.random.RandomState(0).randn(3, 4, 6).astype(np.float32) * 3.0
LABELS = np.array([[1, 2, 3, 4], [5, 0, 0, 0], [2, 2, 5, 0]], np.int32)
LENGTHS = np.array([4, 1, 3], np.int32)


def numpy_token_losses(logits, labels, lengths, smoothing):
    """Cross-entropy against (1 - eps) * one_hot + eps / V of every valid token, in float64."""
    logits = logits.astype(np.float64)
    vocab = logits.shape[-1]
    losses = []
    for b, length in enumerate(lengths):
        for t in range(length):
            shifted = logits[b, t] - logits[b, t].max()
            log_probs = shifted - np.log(np.exp(shifted).sum())
            target = np.full(vocab, smoothing / vocab)
            target[labels[b, t]] += 1.0 - smoothing
            losses.append(-(target * log_probs).sum())
    return np.array(losses)


def run(tensors):
    with tf.Graph().as_default(), tf.Session() as sess:
        return sess.run(tensors())


def with_mean(cross_entropy):
    """(token mean of the loss, loss_sum, nll_sum, num_tokens)."""
    return (token_mean(cross_entropy.loss_sum, cross_entropy.num_tokens),) + tuple(cross_entropy)


def padded_logits():
    """LOGITS with huge values at padding steps: they would dominate if not masked."""
    logits = LOGITS.copy()
    logits[1, 1:] = 1e4
    return logits


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_cross_entropy_matches_numpy_and_ignores_padding(smoothing):
    loss, loss_sum, nll_sum, num_tokens = run(lambda: with_mean(sequence_cross_entropy(
        tf.constant(padded_logits()), tf.constant(LABELS), tf.constant(LENGTHS), smoothing)))

    expected = numpy_token_losses(LOGITS, LABELS, LENGTHS, smoothing)
    assert num_tokens == len(expected) == 8
    np.testing.assert_allclose(loss_sum, expected.sum(), rtol=1e-5)
    np.testing.assert_allclose(loss, expected.mean(), rtol=1e-5)
    # The unsmoothed NLL, whatever the smoothing: perplexity's figure.
    np.testing.assert_allclose(nll_sum, numpy_token_losses(LOGITS, LABELS, LENGTHS, 0.0).sum(),
                               rtol=1e-5)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_the_gradient_is_softmax_minus_the_target_and_zero_at_padding(smoothing):
    """The fused ops' gradient of loss_sum: p - q at each valid token, nothing at padding;
    the NLL, perplexity's figure, passes no gradient of its own when smoothed."""
    def gradients():
        logits = tf.constant(padded_logits())
        cross_entropy = sequence_cross_entropy(logits, tf.constant(LABELS), tf.constant(LENGTHS),
                                               smoothing)
        return tf.gradients(cross_entropy.loss_sum, logits)[0]

    expected = np.zeros_like(LOGITS, np.float64)
    for b, length in enumerate(LENGTHS):
        for t in range(length):
            probs = np.exp(LOGITS[b, t] - LOGITS[b, t].max())
            target = np.full(LOGITS.shape[-1], smoothing / LOGITS.shape[-1])
            target[LABELS[b, t]] += 1.0 - smoothing
            expected[b, t] = probs / probs.sum() - target
    np.testing.assert_allclose(run(gradients), expected, atol=1e-6)


def test_unsmoothed_loss_is_the_nll():
    loss_sum, nll_sum = run(lambda: sequence_cross_entropy(
        tf.constant(LOGITS), tf.constant(LABELS), tf.constant(LENGTHS))[:2])
    assert loss_sum == nll_sum


def test_sums_of_two_batches_add_up_to_their_token_mean():
    """What the towers rely on: sum(loss_sum) / sum(num_tokens) is the token mean."""
    def both_halves():
        halves = [sequence_cross_entropy(tf.constant(LOGITS[rows]), tf.constant(LABELS[rows]),
                                         tf.constant(LENGTHS[rows]), 0.1)
                  for rows in (slice(0, 1), slice(1, 3))]
        return token_mean(halves[0].loss_sum + halves[1].loss_sum,
                          halves[0].num_tokens + halves[1].num_tokens)

    expected = numpy_token_losses(LOGITS, LABELS, LENGTHS, 0.1).mean()
    np.testing.assert_allclose(run(both_halves), expected, rtol=1e-5)


def test_cross_entropy_is_stable_for_huge_logits():
    logits = np.zeros((1, 1, 3), np.float32)
    logits[0, 0] = [1e4, -1e4, 0.0]
    cross_entropy = run(lambda: sequence_cross_entropy(
        tf.constant(logits), tf.constant([[1]]), tf.constant([1]), 0.1))
    # -(0.9 + 0.1 / 3) * log p(1) - 0.1 / 3 * log p(2), with log p(0) = 0.
    np.testing.assert_allclose(cross_entropy.loss_sum, (0.9 + 0.1 / 3) * 2e4 + 0.1 / 3 * 1e4,
                               rtol=1e-6)
    np.testing.assert_allclose(cross_entropy.nll_sum, 2e4, rtol=1e-6)


def test_cross_entropy_of_an_empty_batch_is_zero():
    loss, loss_sum, nll_sum, num_tokens = run(lambda: with_mean(sequence_cross_entropy(
        tf.constant(LOGITS), tf.constant(LABELS), tf.zeros([3], tf.int32), 0.1)))
    assert loss == loss_sum == nll_sum == num_tokens == 0.0


def test_batch_token_accuracy_counts_valid_argmax_hits():
    predictions = LOGITS.argmax(-1)
    labels = LABELS.copy()
    labels[0, :2] = predictions[0, :2]  # 2 hits guaranteed in the first row.
    accuracy, num_tokens = run(lambda: batch_token_accuracy(
        tf.constant(LOGITS), tf.constant(labels), tf.constant(LENGTHS)))
    hits = sum((predictions[b, :n] == labels[b, :n]).sum() for b, n in enumerate(LENGTHS))
    assert num_tokens == 8
    np.testing.assert_allclose(accuracy, hits / 8.0)
