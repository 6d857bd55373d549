"""Masked, label-smoothed sequence cross-entropy and token accuracy."""

import collections

import tensorflow.compat.v1 as tf

from seq2seq.common import get_shape, sequence_mask

CrossEntropy = collections.namedtuple("CrossEntropy", ["loss_sum", "nll_sum", "num_tokens"])
CrossEntropy.__doc__ = """The cross-entropy of a batch, summed over its valid tokens.

Sums rather than means, so that batches or towers holding different numbers
of tokens add up to the token mean of the whole (`token_mean` divides).

Fields:
  loss_sum: scalar float32, the label-smoothed loss summed over valid tokens
    (what training minimises).
  nll_sum: scalar float32, -log p(label) summed over valid tokens, without
    smoothing (perplexity's, comparable across configs); equal to loss_sum
    when label_smoothing is 0.
  num_tokens: scalar float32, the number of valid tokens.
"""


def _masked_sum(values, lengths):
    """The sum of [batch, time] `values` over the steps within [batch] `lengths`,
    and how many steps that is (both scalar, values' dtype)."""
    mask = sequence_mask(lengths, get_shape(values)[1], dtype=values.dtype)
    return tf.reduce_sum(values * mask), tf.reduce_sum(mask)


def token_mean(total, num_tokens):
    """total / num_tokens for scalar float32s, 0 (not NaN) when there are no tokens."""
    return total / tf.maximum(num_tokens, 1.0)


def sequence_cross_entropy(logits, labels, lengths, label_smoothing=0.0):
    """The cross-entropy over the valid steps of padded sequences, smoothed and not.

    With label smoothing eps the target is (1 - eps) * one_hot(label) + eps / V,
    uniform over the WHOLE vocabulary, gold token included (Szegedy et al.
    2016; tensor2tensor; tf.losses.softmax_cross_entropy), computed from the
    log-probabilities without building a dense target:

        loss = -(1 - eps) * log p(label) - eps * mean_v log p(v)

    Its minimum is the entropy of the smoothed target, not 0. The unsmoothed
    -log p(label) comes from the same log-softmax: evaluation needs both, and
    the log-softmax over [batch, time, V] is the expensive part.

    Args:
      logits: [batch, time, V] float32.
      labels: [batch, time] int32 ids in [0, V), padding included (the
        gather would fail on any other id, even where it is masked).
      lengths: [batch] int32, the valid steps of each sequence.
      label_smoothing: eps, a Python float in [0, 1).
    Returns:
      A `CrossEntropy` of scalars: loss_sum, nll_sum, num_tokens. The
      per-token loss is `token_mean(loss_sum, num_tokens)`.
    """
    with tf.name_scope("sequence_cross_entropy"):
        # log_softmax subtracts the row maximum: no overflow, no log(0).
        log_probs = tf.nn.log_softmax(logits)
        token_nll = -tf.gather(log_probs, labels[:, :, None], batch_dims=2)[:, :, 0]
        nll_sum, num_tokens = _masked_sum(token_nll, lengths)
        if label_smoothing > 0.0:
            token_losses = ((1.0 - label_smoothing) * token_nll
                            - label_smoothing * tf.reduce_mean(log_probs, axis=-1))
            loss_sum, _ = _masked_sum(token_losses, lengths)
        else:
            loss_sum = nll_sum
        return CrossEntropy(loss_sum, nll_sum, num_tokens)


def batch_token_accuracy(logits, labels, lengths):
    """The fraction of one batch's valid steps whose most likely token is the label.

    Args:
      logits: [batch, time, V] float32.
      labels: [batch, time] int32.
      lengths: [batch] int32.
    Returns:
      accuracy: scalar float32 (0 if there are no tokens).
      num_tokens: scalar float32, what it is over (the batch's weight in
        `metrics.streaming_token_accuracy`).
    """
    with tf.name_scope("batch_token_accuracy"):
        correct = tf.equal(tf.argmax(logits, axis=-1, output_type=labels.dtype), labels)
        hits, num_tokens = _masked_sum(tf.cast(correct, tf.float32), lengths)
        return token_mean(hits, num_tokens), num_tokens
