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


def apply_gradients(grads_and_vars, train_config, global_step):
    """Builds the update: learning rate, clipping and one Adam step.

    Args:
      grads_and_vars: list of (gradient, variable) pairs, gradients of the loss
        being minimised.
      train_config: the config's "train" section (learning_rate, warmup_steps,
        decay, max_steps, clip_gradient_norm).
      global_step: the global step variable, incremented by the update.
    Returns:
      (train_op, learning_rate, gradient_norm): the update op, the scalar rate
      it used and the global gradient norm before clipping.
    """
    with tf.name_scope("optimization"):
        learning_rate = learning_rate_schedule(
            global_step, train_config["learning_rate"], train_config["warmup_steps"],
            train_config["decay"], train_config["max_steps"])
        gradients, variables = zip(*grads_and_vars)
        clipped, gradient_norm = clip_gradients(gradients, train_config["clip_gradient_norm"])
        optimizer = tf.train.AdamOptimizer(
            learning_rate, beta1=ADAM_BETA1, beta2=ADAM_BETA2, epsilon=ADAM_EPSILON)
        train_op = optimizer.apply_gradients(zip(clipped, variables), global_step=global_step)
        return train_op, learning_rate, gradient_norm
