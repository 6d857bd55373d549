"""Stops training at the first NaN or infinite loss or gradient, naming the step.

The check is an assertion in the graph that the update depends on, rather than
a `SessionRunHook` looking at the loss afterwards, for two reasons: the
diverged step's gradients are never applied, so no checkpoint (not even one
saved at that very step) holds NaN weights; and the Estimator's own
`NanTensorHook`, which runs before any hook of ours, can only say "NaN loss
during training." without the step. The gradient norm is checked too: a
finite loss can come with an infinite gradient, whose update writes NaN
weights a step before the loss shows it (tests/test_train.py provokes this
with an absurd learning rate).
"""

import re

import tensorflow.compat.v1 as tf

_GUARD_NAME = "non_finite_loss_guard"


class NonFiniteLossError(RuntimeError):
    """The training loss became NaN or infinite."""


def assert_finite_step(loss, gradient_norm, global_step):
    """An op that fails, naming the step, when the loss or gradient is not finite.

    Args:
      loss: scalar float tensor, the loss of the step about to be applied.
      gradient_norm: scalar float tensor, the global norm of its gradients
        (NaN or infinite when any element is).
      global_step: the global step variable, the number of updates so far.
    Returns:
      An op to put in the control dependencies of the update.
    """
    with tf.name_scope(_GUARD_NAME):
        message = tf.strings.format(
            "the training loss is {} (gradient norm {}) at step {}",
            (loss, gradient_norm, global_step + 1))
        finite = tf.logical_and(tf.math.is_finite(loss), tf.math.is_finite(gradient_norm))
        return tf.Assert(finite, [message])


def as_non_finite_loss_error(error):
    """Translates the guard's failure into a `NonFiniteLossError`, if it is one.

    Args:
      error: a `tf.errors.OpError` raised while training.
    Returns:
      A `NonFiniteLossError` with a message a person can act on, or None when
      `error` does not come from `assert_finite_step`.
    """
    if error.op is None or _GUARD_NAME not in error.op.name:
        return None
    found = re.search(r"assertion failed: \[(.*?)\]", error.message)
    what = found.group(1) if found else error.message.splitlines()[0]
    return NonFiniteLossError(
        "training stopped: %s. The last checkpoint holds the weights before it; "
        "lower train.learning_rate or train.clip_gradient_norm." % what)
