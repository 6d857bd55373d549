"""Masked, label-smoothed sequence cross-entropy and token accuracy."""

import tensorflow.compat.v1 as tf

from seq2seq.common import get_shape, sequence_mask


def _token_mean(values, lengths):
    """The mean of [batch, time] `values` over the steps within `lengths`, and the count."""
    mask = sequence_mask(lengths, get_shape(values)[1], dtype=values.dtype)
    num_tokens = tf.reduce_sum(mask)
    # max(num_tokens, 1): a batch without tokens gives 0, not NaN.
    return tf.reduce_sum(values * mask) / tf.maximum(num_tokens, 1.0), num_tokens


def sequence_cross_entropy(logits, labels, lengths, label_smoothing=0.0):
    """The per-token cross-entropy over the valid steps of padded sequences.

    With label smoothing eps the target is (1 - eps) * one_hot(label) + eps / V,
    uniform over the WHOLE vocabulary, gold token included (Szegedy et al.
    2016; tensor2tensor; tf.losses.softmax_cross_entropy), computed from the
    log-probabilities without building a dense target:

        loss = -(1 - eps) * log p(label) - eps * mean_v log p(v)

    Its minimum is the entropy of the smoothed target, not 0.

    Args:
      logits: [batch, time, V] float32.
      labels: [batch, time] int32 ids in [0, V), padding included (the
        gather would fail on any other id, even where it is masked).
      lengths: [batch] int32, the valid steps of each sequence.
      label_smoothing: eps, a Python float in [0, 1).
    Returns:
      loss: scalar float32, the mean over valid tokens (0 if there are none).
      num_tokens: scalar float32, how many tokens the mean is over (to weight
        losses of several batches or towers).
    """
    with tf.name_scope("sequence_cross_entropy"):
        # log_softmax subtracts the row maximum: no overflow, no log(0).
        log_probs = tf.nn.log_softmax(logits)
        token_losses = -tf.gather(log_probs, labels[:, :, None], batch_dims=2)[:, :, 0]
        if label_smoothing > 0.0:
            token_losses = ((1.0 - label_smoothing) * token_losses
                            - label_smoothing * tf.reduce_mean(log_probs, axis=-1))
        return _token_mean(token_losses, lengths)


def token_accuracy(logits, labels, lengths):
    """The fraction of valid steps whose most likely token is the label.

    Args:
      logits: [batch, time, V] float32.
      labels: [batch, time] int32.
      lengths: [batch] int32.
    Returns:
      accuracy: scalar float32 (0 if there are no tokens).
      num_tokens: scalar float32.
    """
    with tf.name_scope("token_accuracy"):
        correct = tf.equal(tf.argmax(logits, axis=-1, output_type=labels.dtype), labels)
        return _token_mean(tf.cast(correct, tf.float32), lengths)
