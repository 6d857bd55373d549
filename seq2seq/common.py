"""Shape and gather helpers shared by the model and the decoders.

In the Effective TensorFlow style: tiny functions, one idea each. Every other
module takes these from here rather than writing its own.
"""

import tensorflow.compat.v1 as tf


def get_shape(tensor):
    """Returns the shape as a list, static dimensions as ints, others as scalars.

    Args:
      tensor: any tensor.
    Returns:
      A list with one entry per dimension: a Python int where the dimension is
      known when the graph is built, otherwise a scalar int32 tensor.
    """
    static = tensor.shape.as_list()
    dynamic = tf.unstack(tf.shape(tensor))
    return [s if s is not None else d for s, d in zip(static, dynamic)]


def batch_gather(tensor, indices):
    """Gathers along the second axis, separately for every batch row.

    Args:
      tensor: [batch, n, ...].
      indices: [batch, k] int32, values in [0, n).
    Returns:
      [batch, k, ...] with ``out[b, i] = tensor[b, indices[b, i]]``.
    """
    return tf.gather(tensor, indices, batch_dims=1)


def merge_beams(tensor):
    """[batch, beam, ...] -> [batch * beam, ...]."""
    shape = get_shape(tensor)
    return tf.reshape(tensor, [shape[0] * shape[1]] + shape[2:])


def split_beams(tensor, beam_width):
    """[batch * beam, ...] -> [batch, beam, ...]."""
    shape = get_shape(tensor)
    return tf.reshape(tensor, [-1, beam_width] + shape[1:])


def tile_beams(tensor, beam_width):
    """[batch, ...] -> [batch, beam, ...], every beam a copy of its row."""
    tensor = tf.expand_dims(tensor, 1)
    multiples = [1, beam_width] + [1] * (tensor.shape.ndims - 2)
    return tf.tile(tensor, multiples)


def sequence_mask(lengths, maxlen, dtype=tf.float32):
    """[batch] lengths -> [batch, maxlen] mask, 1 inside the sequence."""
    return tf.sequence_mask(lengths, maxlen, dtype=dtype)


def batch_free_shape_invariants(loop_vars):
    """tf.while_loop shape invariants: every shape fixed except the batch size.

    A loop only needs to know that its variables keep their shapes; leaving the
    first dimension of every non-scalar tensor open lets loop bodies whose
    outputs lose the static batch size (e.g. after a reshape with -1) run.

    Args:
      loop_vars: the nested loop variables (tensors and TensorArrays).
    Returns:
      The matching nested structure of TensorShapes (None for a TensorArray).
    """
    def invariant(var):
        if isinstance(var, tf.TensorArray):
            return None  # the loop infers the invariant of the array's flow
        if var.shape.ndims in (None, 0):
            return var.shape
        return tf.TensorShape([None]).concatenate(var.shape[1:])
    return tf.nest.map_structure(invariant, loop_vars)
