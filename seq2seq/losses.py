"""Masked, label-smoothed sequence cross-entropy and token accuracy."""

import collections

import tensorflow.compat.v1 as tf

from seq2seq.common import get_shape

# Scalar sums over the valid tokens: the label-smoothed loss, -log p(label), the token count.
CrossEntropy = collections.namedtuple("CrossEntropy", ["loss_sum", "nll_sum", "num_tokens"])


def token_mean(total, num_tokens):
    """total / num_tokens, 0 when there are no tokens."""
    return total / tf.maximum(num_tokens, 1.0)


def valid_positions(labels, lengths):
    """[batch, time] bool: the steps of labels [batch, time] within [batch] lengths."""
    return tf.sequence_mask(lengths, tf.shape(labels)[1])


def token_cross_entropy(logits, labels, label_smoothing=0.0):
    """A CrossEntropy of logits [tokens, V] and labels [tokens]: the loss -sum_v q_v log p(v)
    against q = (1 - eps) one_hot(label) + eps / V, eps = label_smoothing; the fused ops keep
    no [tokens, V] log-probabilities, nor their gradient (docs/BENCHMARKS.md)."""
    with tf.name_scope("token_cross_entropy"):
        nll = tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=tf.stop_gradient(logits) if label_smoothing else logits)
        loss = nll
        if label_smoothing:
            vocab_size = get_shape(logits)[-1]
            spread = label_smoothing / vocab_size
            target = tf.one_hot(labels, vocab_size, on_value=1.0 - label_smoothing + spread,
                                off_value=spread, dtype=logits.dtype)
            loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=target, logits=logits)
        num_tokens = tf.cast(tf.size(labels), logits.dtype)
        return CrossEntropy(tf.reduce_sum(loss), tf.reduce_sum(nll), num_tokens)


def sequence_cross_entropy(logits, labels, lengths, label_smoothing=0.0):
    """token_cross_entropy of logits [batch, time, V], labels [batch, time] within [batch]
    lengths."""
    with tf.name_scope("sequence_cross_entropy"):
        valid = valid_positions(labels, lengths)
        return token_cross_entropy(tf.boolean_mask(logits, valid), tf.boolean_mask(labels, valid),
                                   label_smoothing)


def batch_token_accuracy(logits, labels, lengths):
    """(fraction of the valid steps whose argmax is the label, their number): logits [batch,
    time, V], labels [batch, time], lengths [batch]."""
    with tf.name_scope("batch_token_accuracy"):
        valid = valid_positions(labels, lengths)
        correct = tf.equal(tf.argmax(logits, axis=-1, output_type=labels.dtype), labels) & valid
        num_tokens = tf.reduce_sum(tf.cast(valid, tf.float32))
        return token_mean(tf.reduce_sum(tf.cast(correct, tf.float32)), num_tokens), num_tokens
