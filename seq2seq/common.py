"""Shape and gather helpers shared by the model and the decoders."""

import tensorflow.compat.v1 as tf


def get_shape(tensor, first=0):
    """The shape from axis `first` on as a list: ints where known when the graph is built, else
    scalar tensors (read from the running graph only when some axis needs it)."""
    static = tensor.shape.as_list()
    if None not in static[first:]:
        return static[first:]
    dynamic = tf.unstack(tf.shape(tensor))
    return [s if s is not None else d for s, d in zip(static, dynamic)][first:]


def batch_gather(tensor, indices):
    """tensor [batch, n, ...], indices [batch, k] -> [batch, k, ...]: tensor[b, indices[b, i]]."""
    return tf.gather(tensor, indices, batch_dims=1)


def merge_beams(tensor):
    """[batch, beam, ...] -> [batch * beam, ...]."""
    return tf.reshape(tensor, [-1] + get_shape(tensor, 2))


def split_beams(tensor, beam_width):
    """[batch * beam, ...] -> [batch, beam, ...]."""
    return tf.reshape(tensor, [-1, beam_width] + get_shape(tensor, 1))


def tile_beams(tensor, beam_width):
    """[batch, ...] -> [batch, beam, ...], every beam a copy of its row."""
    tensor = tf.expand_dims(tensor, 1)
    return tf.tile(tensor, [1, beam_width] + [1] * (tensor.shape.ndims - 2))


def batch_free_shape_invariants(loop_vars):
    """tf.while_loop shape invariants for nested loop_vars: all fixed but the batch size."""
    def invariant(var):
        if isinstance(var, tf.TensorArray):
            return None
        if var.shape.ndims in (None, 0):
            return var.shape
        return tf.TensorShape([None]).concatenate(var.shape[1:])
    return tf.nest.map_structure(invariant, loop_vars)
