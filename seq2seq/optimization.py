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


def clip_gradients(gradients, clip_norm):
    """Scales the gradients down together when their global norm exceeds `clip_norm`.

    Args:
      gradients: list of tensors or `tf.IndexedSlices` (None entries allowed).
      clip_norm: float; 0 or less disables clipping.
    Returns:
      (clipped gradients in the same order, their global norm before clipping
      as a scalar float32 tensor, reported in the summaries).
    """
    with tf.name_scope("clip_gradients"):
        global_norm = tf.global_norm(gradients)
        if clip_norm <= 0:
            return list(gradients), global_norm
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
