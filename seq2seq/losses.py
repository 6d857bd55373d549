"""Masked, label-smoothed sequence cross-entropy and token accuracy."""

import collections

import tensorflow.compat.v1 as tf

from seq2seq.common import get_shape, sequence_mask

# Scalars summed over the valid tokens, so that batches and towers add up:
# loss_sum the label-smoothed loss (training's), nll_sum -log p(label)
# (perplexity's), num_tokens float32.
CrossEntropy = collections.namedtuple("CrossEntropy", ["loss_sum", "nll_sum", "num_tokens"])


def _masked_sum(values, lengths):
    """(sum of [batch, time] values within [batch] lengths, number of such steps)."""
    mask = sequence_mask(lengths, get_shape(values)[1], dtype=values.dtype)
    return tf.reduce_sum(values * mask), tf.reduce_sum(mask)


def token_mean(total, num_tokens):
    """total / num_tokens, 0 when there are no tokens."""
    return total / tf.maximum(num_tokens, 1.0)


def sequence_cross_entropy(logits, labels, lengths, label_smoothing=0.0):
    """-(1 - eps) log p(label) - eps mean_v log p(v) over the valid steps, and the plain NLL.

    Args:
      logits: [batch, time, V] float32.
      labels: [batch, time] int32 in [0, V), padding included.
      lengths: [batch] int32.
      label_smoothing: eps in [0, 1): that mass spread over the whole vocabulary.
    Returns:
      A `CrossEntropy` of scalars.
    """
    with tf.name_scope("sequence_cross_entropy"):
        log_probs = tf.nn.log_softmax(logits)
        token_nll = -tf.gather(log_probs, labels[:, :, None], batch_dims=2)[:, :, 0]
        nll_sum, num_tokens = _masked_sum(token_nll, lengths)
        if label_smoothing > 0.0:
            loss_sum, _ = _masked_sum((1.0 - label_smoothing) * token_nll
                                      - label_smoothing * tf.reduce_mean(log_probs, axis=-1),
                                      lengths)
        else:
            loss_sum = nll_sum
        return CrossEntropy(loss_sum, nll_sum, num_tokens)


def batch_token_accuracy(logits, labels, lengths):
    """(fraction of the valid steps whose argmax is the label, their number), scalars.

    Args:
      logits: [batch, time, V] float32.
      labels: [batch, time] int32.
      lengths: [batch] int32.
    """
    with tf.name_scope("batch_token_accuracy"):
        correct = tf.equal(tf.argmax(logits, axis=-1, output_type=labels.dtype), labels)
        hits, num_tokens = _masked_sum(tf.cast(correct, tf.float32), lengths)
        return token_mean(hits, num_tokens), num_tokens
