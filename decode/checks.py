"""Argument checks shared by the decoders: bad arguments fail at graph-build time.

Each check raises ValueError with a message naming the argument, instead of
letting a shape error surface later from deep inside the graph or at run time.

`is_int` and `shown` are the server's too (its request checks and messages):
TensorFlow is imported by the checks that need it, when first called, so that
importing this module does not load it (serve.py answers before it has).
"""

import json
import numbers

# The most characters of a value an error message shows.
SHOWN_CHARS = 40


def is_int(value):
    """True for a Python or NumPy integer, False for a bool (which Python counts as one)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def shown(value, limit=SHOWN_CHARS):
    """A value as an error message shows it: its JSON text (or repr), cut short.

    Messages reach HTTP clients and must not echo a whole body back: a text
    is cut to `limit` characters (and "..."). An integer of more than 15
    digits is described, not written out: no option takes one, and Python
    refuses to write out those of over 4,300 digits.
    """
    if is_int(value):
        return "an integer of more than 15 digits" if abs(value) >= 10 ** 15 else str(int(value))
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def check_beam_width(beam_width):
    """Returns `beam_width` if it is a Python int >= 1."""
    if not is_int(beam_width) or beam_width < 1:
        raise ValueError("beam_width must be a Python int >= 1, got %r" % (beam_width,))
    return int(beam_width)


def check_token_ids(begin_token_id, end_token_id):
    """Checks that both token ids are Python ints >= 0."""
    for name, value in (("begin_token_id", begin_token_id), ("end_token_id", end_token_id)):
        if not is_int(value) or value < 0:
            raise ValueError("%s must be a Python int >= 0, got %r" % (name, value))


def check_sequence_length(sequence_length, allow_tensor):
    """Returns the most tokens to generate: a Python int, or an int32 scalar tensor.

    Args:
      sequence_length: a Python int >= 1, or (if `allow_tensor`) a scalar
        integer tensor.
      allow_tensor: False for the unrolled search, whose graph size is the length.
    Returns:
      The Python int, or the tensor as a scalar int32 that fails at run time
      (InvalidArgumentError naming sequence_length) when it is below 1: a loop
      that runs no step would otherwise fail on stacking its empty
      TensorArrays, with an error that names neither the argument nor its value.
    Raises:
      ValueError: for a non-positive or non-integer length, a tensor where a
        Python int is needed, or a tensor that is not an integer scalar.
    """
    import tensorflow.compat.v1 as tf
    if is_int(sequence_length):
        if sequence_length < 1:
            raise ValueError("sequence_length must be >= 1, got %d" % sequence_length)
        return int(sequence_length)
    if not isinstance(sequence_length, (tf.Tensor, tf.Variable)):
        raise ValueError("sequence_length must be a Python int%s, got %r" % (
            " or a scalar int32 tensor" if allow_tensor else "", sequence_length))
    if not allow_tensor:
        raise ValueError("the unrolled search builds one graph step per token, so "
                         "sequence_length must be a Python int, got tensor %s; use "
                         "while_loop_beam_search for a length known only at run time"
                         % sequence_length.name)
    if not sequence_length.dtype.is_integer:
        raise ValueError("sequence_length must be an integer tensor, got %s" % sequence_length.dtype.name)
    if sequence_length.shape.ndims not in (None, 0):
        raise ValueError("sequence_length must be a scalar, got shape %s" % sequence_length.shape)
    with tf.name_scope("check_sequence_length"):
        sequence_length = tf.cast(tf.reshape(sequence_length, []), tf.int32)
        at_least_one = tf.debugging.assert_positive(
            sequence_length, message="sequence_length must be >= 1")
        with tf.control_dependencies([at_least_one]):
            return tf.identity(sequence_length)


def check_initial_state(initial_state):
    """Returns the batch size of a nested state of [batch, ...] tensors.

    Returns:
      The batch size: a Python int if known statically, else a scalar tensor.
    Raises:
      ValueError: if the state holds no tensor, or a tensor without a batch
        dimension or of unknown rank (the beams are tiled in after the batch
        dimension), or tensors whose static batch sizes disagree.
    """
    import tensorflow.compat.v1 as tf
    leaves = [tf.convert_to_tensor(leaf) for leaf in tf.nest.flatten(initial_state)]
    if not leaves:
        raise ValueError("initial_state must hold at least one [batch, ...] tensor")
    for leaf in leaves:
        if leaf.shape.ndims is None:
            raise ValueError("every initial_state tensor must be [batch, ...] of known rank, "
                             "got %s of unknown shape" % leaf.name)
        if leaf.shape.ndims == 0:
            raise ValueError("every initial_state tensor must be [batch, ...], got scalar %s" % leaf.name)
    static_sizes = {leaf.shape.as_list()[0] for leaf in leaves}
    static_sizes.discard(None)
    if len(static_sizes) > 1:
        raise ValueError("initial_state tensors disagree on the batch size: %s" % sorted(static_sizes))
    if static_sizes:
        return static_sizes.pop()
    return tf.shape(leaves[0])[0]


def check_step_outputs(state, new_state, logits, end_token_id):
    """Checks what update_fn returned: the state's structure and rank-3 logits.

    Args:
      state: the state given to update_fn.
      new_state: the state it returned; must have the same nested structure.
      logits: the logits it returned; must be [batch, beam, vocab].
      end_token_id: must be < vocab when vocab is known statically.
    """
    import tensorflow.compat.v1 as tf
    try:
        tf.nest.assert_same_structure(state, new_state)
    except (TypeError, ValueError) as error:
        raise ValueError("update_fn must return a state with the structure of the "
                         "state it was given: %s" % error) from None
    ndims = logits.shape.ndims
    if ndims is not None and ndims != 3:
        raise ValueError("update_fn must return logits shaped [batch, beam, vocab], "
                         "got shape %s" % logits.shape)
    vocab_size = logits.shape.as_list()[-1] if ndims is not None else None
    if vocab_size is not None and end_token_id >= vocab_size:
        raise ValueError("end_token_id %d is outside the vocabulary of %d logits"
                         % (end_token_id, vocab_size))


def check_max_lengths(max_lengths, batch_size):
    """Returns the per-sentence length limits as a [batch] int32 tensor, or None.

    Args:
      max_lengths: None, or a [batch] integer tensor or array: the most tokens
        of each sentence, end token included.
      batch_size: the search's batch size, a Python int or a scalar tensor.
    Returns:
      None, or the limits as [batch] int32. When a batch size is known only at
      run time, the tensor fails when run (InvalidArgumentError naming
      max_lengths) unless it holds one limit per sentence: a single limit
      would otherwise broadcast silently over the whole batch.
    Raises:
      ValueError: for limits that are not integers, not a vector of known
        rank, or whose static size is not the static batch size.
    """
    import tensorflow.compat.v1 as tf
    if max_lengths is None:
        return None
    try:
        max_lengths = tf.convert_to_tensor(max_lengths)
    except (TypeError, ValueError) as error:
        raise ValueError("max_lengths must be a [batch] int32 tensor: %s" % error) from None
    if not max_lengths.dtype.is_integer:
        raise ValueError("max_lengths must be an integer tensor, got %s" % max_lengths.dtype.name)
    if max_lengths.shape.ndims != 1:
        raise ValueError("max_lengths must be shaped [batch], got shape %s" % max_lengths.shape)
    size = max_lengths.shape.as_list()[0]
    if is_int(batch_size) and size is not None:
        if size != batch_size:
            raise ValueError("max_lengths must hold one limit per sentence: got %d for a "
                             "batch of %d" % (size, batch_size))
        return tf.cast(max_lengths, tf.int32)
    with tf.name_scope("check_max_lengths"):
        one_per_sentence = tf.debugging.assert_equal(
            tf.size(max_lengths), batch_size,
            message="max_lengths must hold one limit per sentence of the batch")
        with tf.control_dependencies([one_per_sentence]):
            return tf.cast(tf.identity(max_lengths), tf.int32)
