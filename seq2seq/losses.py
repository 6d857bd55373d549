"""Masked, label-smoothed sequence cross-entropy and token accuracy."""

import collections

import tensorflow.compat.v1 as tf

from seq2seq.common import get_shape, sequence_mask

# Scalar sums over the valid tokens: the label-smoothed loss, -log p(label), the token count.
CrossEntropy = collections.namedtuple("CrossEntropy", ["loss_sum", "nll_sum", "num_tokens"])


def _masked_sum(values, lengths):
    """(sum of [batch, time] values within [batch] lengths, number of such steps)."""
    mask = sequence_mask(lengths, get_shape(values)[1], dtype=values.dtype)
    return tf.reduce_sum(values * mask), tf.reduce_sum(mask)


def token_mean(total, num_tokens):
    """total / num_tokens, 0 when there are no tokens."""
    return total / tf.maximum(num_tokens, 1.0)


def sequence_cross_entropy(logits, labels, lengths, label_smoothing=0.0):
    """A CrossEntropy of logits [batch, time, V], labels [batch, time], lengths [batch]:
    the loss -(1 - eps) log p(label) - eps mean_v log p(v), eps = label_smoothing."""
    with tf.name_scope("sequence_cross_entropy"):
        log_probs = tf.nn.log_softmax(logits)
        token_nll = -tf.gather(log_probs, labels[:, :, None], batch_dims=2)[:, :, 0]
        nll_sum, num_tokens = _masked_sum(token_nll, lengths)
        loss_sum = nll_sum
        if label_smoothing > 0.0:
            smoothed = label_smoothing * tf.reduce_mean(log_probs, axis=-1)
            loss_sum, _ = _masked_sum((1.0 - label_smoothing) * token_nll - smoothed, lengths)
        return CrossEntropy(loss_sum, nll_sum, num_tokens)


def batch_token_accuracy(logits, labels, lengths):
    """(fraction of the valid steps whose argmax is the label, their number): logits [batch,
    time, V], labels [batch, time], lengths [batch]."""
    with tf.name_scope("batch_token_accuracy"):
        correct = tf.equal(tf.argmax(logits, axis=-1, output_type=labels.dtype), labels)
        hits, num_tokens = _masked_sum(tf.cast(correct, tf.float32), lengths)
        return token_mean(hits, num_tokens), num_tokens
