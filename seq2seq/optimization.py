"""The optimiser: Adam on a warm-up-then-decay learning rate, clipped gradients.

Warm-up keeps the first updates small while Adam's moment estimates still rest
on a handful of batches; clipping bounds the rare huge gradient of a recurrent
model (a long sentence early in training) without changing the direction.
"""

import math

import tensorflow.compat.v1 as tf

# beta2 = 0.98 (Vaswani et al., 2017) rather than 0.999: a shorter memory of
# the squared gradients, which shrink quickly during the first epoch.
ADAM_BETA1 = 0.9
ADAM_BETA2 = 0.98
ADAM_EPSILON = 1e-9


def learning_rate_schedule(step, peak_rate, warmup_steps, decay, max_steps):
    """The learning rate at a step: linear warm-up to `peak_rate`, then decay.

    Args:
      step: scalar int tensor, the number of updates already taken (the global
        step); the rate returned is the one for the next update.
      peak_rate: float, the rate at the end of warm-up.
      warmup_steps: int, updates over which the rate rises linearly from
        `peak_rate / warmup_steps` to `peak_rate`.
      decay: "rsqrt" (proportional to 1/sqrt(step) after warm-up),
        "constant" (`peak_rate` after warm-up) or "cosine" (half a cosine from
        `peak_rate` at the end of warm-up to 0 at `max_steps`).
      max_steps: int, the last step of training (used by "cosine").
    Returns:
      A scalar float32 tensor.
    """
    with tf.name_scope("learning_rate"):
        # Count from 1 so that the very first update is not wasted on rate 0.
        step = tf.cast(step, tf.float32) + 1.0
        warmup_steps = float(max(warmup_steps, 1))
        warmup = tf.minimum(1.0, step / warmup_steps)
        if decay == "rsqrt":
            decayed = tf.sqrt(warmup_steps / tf.maximum(step, warmup_steps))
        elif decay == "constant":
            decayed = tf.constant(1.0)
        elif decay == "cosine":
            decay_steps = float(max(max_steps - warmup_steps, 1))
            progress = tf.clip_by_value((step - warmup_steps) / decay_steps, 0.0, 1.0)
            decayed = 0.5 * (1.0 + tf.cos(math.pi * progress))
        else:
            raise ValueError("unknown learning rate decay %r" % decay)
        return peak_rate * warmup * decayed


def _sum_repeated_rows(gradient):
    """A sparse gradient with each row once: the slices of a repeated row summed.

    An embedding lookup's gradient holds one slice per looked-up token, so a
    row appears as often as its token in the batch (BOS in every sentence).
    `tf.global_norm` squares the slices as they are, which is not the norm of
    the gradient: rows [g, g] count 2 |g|^2 where the gradient's row 2 g has 4 |g|^2.

    Args:
      gradient: a `tf.IndexedSlices` with values [n, ...] and indices [n],
        or a dense tensor or None, returned unchanged.
    Returns:
      A dense tensor or None unchanged, else an `IndexedSlices` with values
      [rows, ...] and unique indices [rows].
    """
    if not isinstance(gradient, tf.IndexedSlices):
        return gradient
    rows, slice_rows = tf.unique(gradient.indices)
    values = tf.math.unsorted_segment_sum(gradient.values, slice_rows, tf.size(rows))
    return tf.IndexedSlices(values, rows, gradient.dense_shape)


def clip_gradients(gradients, clip_norm):
    """Scales the gradients down together when their global norm exceeds `clip_norm`.

    Args:
      gradients: list of tensors or `tf.IndexedSlices` (None entries allowed).
      clip_norm: float; 0 or less disables clipping.
    Returns:
      (clipped gradients in the same order, sparse ones with each row once,
      and their global norm before clipping as a scalar float32 tensor,
      reported in the summaries).
    """
    with tf.name_scope("clip_gradients"):
        gradients = [_sum_repeated_rows(gradient) for gradient in gradients]
        global_norm = tf.global_norm(gradients)
        if clip_norm <= 0:
            return gradients, global_norm
        clipped, _ = tf.clip_by_global_norm(gradients, clip_norm, use_norm=global_norm)
        return clipped, global_norm


def adam_update(grads_and_vars, learning_rate, global_step):
    """One Adam step on the given gradients, incrementing the global step.

    Args:
      grads_and_vars: list of (gradient, variable) pairs, already clipped.
      learning_rate: scalar float tensor.
      global_step: the global step variable.
    Returns:
      The update op.
    """
    optimizer = tf.train.AdamOptimizer(
        learning_rate, beta1=ADAM_BETA1, beta2=ADAM_BETA2, epsilon=ADAM_EPSILON)
    return optimizer.apply_gradients(grads_and_vars, global_step=global_step)
