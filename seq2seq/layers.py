"""Dense layers and dropout: the small building blocks the model modules share.

`dense` creates its variables with `tf.get_variable`, so it is meant to be
called inside a `tf.make_template` that owns (and shares) them.
"""

import tensorflow.compat.v1 as tf

from seq2seq.common import get_shape


def apply_kernel(inputs, kernel, bias=None, transpose_kernel=False):
    """Multiplies the last axis of `inputs` by `kernel`, for inputs of any rank.

    Rank > 2 inputs are flattened to one 2-D matmul rather than a batched
    matmul: a [batch, time, in] x [in, out] product then runs as one large GEMM.

    Args:
      inputs: [..., in_units].
      kernel: [in_units, out_units], or [out_units, in_units] if `transpose_kernel`
        (e.g. an embedding table used as an output projection, not copied).
      bias: [out_units] or None.
      transpose_kernel: a Python bool.
    Returns:
      [..., out_units].
    """
    if inputs.shape.ndims == 2:
        outputs = tf.matmul(inputs, kernel, transpose_b=transpose_kernel)
        return outputs if bias is None else tf.nn.bias_add(outputs, bias)
    shape = get_shape(inputs)
    outputs = apply_kernel(tf.reshape(inputs, [-1, shape[-1]]), kernel, bias, transpose_kernel)
    return tf.reshape(outputs, shape[:-1] + get_shape(outputs)[-1:])


def dense(inputs, units, use_bias=True):
    """An affine map of the last axis, with `kernel` (Glorot-uniform) and `bias` (zero).

    The variables are created in the current variable scope (the calling
    template's), so one template holds one dense layer.

    Args:
      inputs: [..., in_units], in_units known when the graph is built.
      units: out_units.
      use_bias: whether to add a bias.
    Returns:
      [..., units].
    """
    in_units = inputs.shape.as_list()[-1]
    kernel = tf.get_variable("kernel", [in_units, units],
                             initializer=tf.glorot_uniform_initializer())
    bias = (tf.get_variable("bias", [units], initializer=tf.zeros_initializer())
            if use_bias else None)
    return apply_kernel(inputs, kernel, bias)


def dropout(inputs, rate, training):
    """Inverted dropout when training with rate > 0, the identity otherwise.

    Args:
      inputs: any float tensor.
      rate: the probability of dropping a unit, a Python float in [0, 1).
      training: a Python bool.
    Returns:
      A tensor shaped like `inputs`.
    """
    if not training or rate == 0.0:
        return inputs
    return tf.nn.dropout(inputs, rate=rate)
