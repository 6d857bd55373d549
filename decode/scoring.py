"""How a hypothesis is scored and which pieces it may take next, alike in every decoder:

    score = log p / normaliser(length) + beta * sum_src log(min(attention received, 1))

Repetition blocking and the minimum length remove candidates (-inf) before the search ranks them.
"""

import collections

import numpy as np
import tensorflow.compat.v1 as tf

from seq2seq.common import get_shape
from seq2seq.decoding_options import LENGTH_PENALTY_KINDS

MIN_COVERAGE = 1e-10  # the attention a piece never attended to counts as (log 0: -inf)

Scoring = collections.namedtuple(
    "Scoring", "length_penalty length_penalty_kind coverage_penalty no_repeat_ngram_size "
    "min_length diverse_beam_groups diverse_beam_strength",
    defaults=(0.0, "gnmt", 0.0, 0, 0, 1, 0.5))
Scoring.__doc__ = """A search's scoring options (docs/API.md, "Decoding options"): the kind,
no_repeat_ngram_size and diverse_beam_groups are Python values (they shape the graph), the others
numbers or scalar tensors; diverse_beam_strength steers the groups' ranking, never a score."""


def as_scoring(scoring):
    """A Scoring, or a float: GNMT's alpha with every other option off."""
    return scoring if isinstance(scoring, Scoring) else Scoring(length_penalty=scoring)


def tracks_coverage(scoring):
    """Whether the search carries the attention received: beta a tensor, or a float > 0."""
    return isinstance(scoring.coverage_penalty, tf.Tensor) or scoring.coverage_penalty > 0


def length_normaliser(lengths, scoring):
    """What a log-probability is divided by: [...] int lengths -> [...] float32."""
    lengths = tf.cast(lengths, tf.float32)
    if scoring.length_penalty_kind == "gnmt":
        return tf.pow((5.0 + lengths) / 6.0, scoring.length_penalty)
    if scoring.length_penalty_kind == "average":
        return tf.maximum(lengths, 1.0)
    if scoring.length_penalty_kind == "none":
        return tf.ones_like(lengths)
    raise ValueError("length_penalty_kind must be one of %s, got %r"
                     % (", ".join(LENGTH_PENALTY_KINDS), scoring.length_penalty_kind))


def scores(log_probs, lengths, coverage, scoring):
    """The score above: [...] log_probs and lengths, [..., src] coverage (padding 1; () when not
    tracked) -> [...] float32."""
    normalised = log_probs / length_normaliser(lengths, scoring)
    if isinstance(coverage, tuple):
        return normalised
    received = tf.clip_by_value(coverage, MIN_COVERAGE, 1.0)
    return normalised + scoring.coverage_penalty * tf.reduce_sum(tf.log(received), axis=-1)


def repeated_ngram_mask(tokens, n, vocab_size):
    """Which next pieces would repeat an n-gram: those that followed an earlier occurrence of
    the hypothesis's last n - 1 pieces.

    tokens: [batch, beam, time] int32 pieces so far; n: Python int >= 1; vocab_size: int or
    scalar tensor. Returns [batch, beam, vocab] bool, True where the piece is blocked.
    """
    with tf.name_scope("repeated_ngrams"):
        time = get_shape(tokens)[2]
        # n - 1 pieces of -1 in front: every position has a full window, and -1 matches no piece.
        padded = tf.pad(tokens, [[0, 0], [0, 0], [n - 1, 0]], constant_values=-1)
        follows_suffix = tf.ones_like(tokens, tf.bool)                          # [b, k, t]
        for i in range(n - 1):  # window j's i-th piece against the suffix's i-th piece
            follows_suffix &= tf.equal(padded[:, :, i:i + time],
                                       padded[:, :, time + i:time + i + 1])
        return vocab_mask(tf.where_v2(follows_suffix, tokens, -1), vocab_size)


def vocab_mask(ids, vocab_size):
    """[b, k, m] piece ids (-1: none) -> [b, k, vocab] bool, True on each (no [b, k, m, vocab])."""
    batch_size, beam_width, _ = get_shape(ids)
    cells = batch_size * beam_width * vocab_size
    rows = tf.reshape(tf.range(batch_size * beam_width) * vocab_size, [batch_size, beam_width, 1])
    at = tf.where_v2(ids >= 0, rows + ids, cells)                   # -1: a spare cell past the end
    counts = tf.math.unsorted_segment_sum(tf.ones_like(at), at, cells + 1)
    return tf.reshape(counts[:-1] > 0, [batch_size, beam_width, vocab_size])


def checked_pieces(values, name, axes, batch_size, limits, too_long):
    """Per sentence, rows of target pieces padded with -1 (a target prefix [batch, p], constraints
    [batch, C, L]) as int32, and each row's length [batch, ...] int32, checked (the dtype and rank
    when built, the rest when run): a row per sentence, piece ids >= 0 then -1, and a sentence's
    pieces, summed, fewer than `limits` (an int, a scalar or [batch]; else the `too_long` error).
    `name` names the values in the errors, `axes` their axes."""
    pieces = tf.convert_to_tensor(values)
    if not (pieces.dtype.is_integer and pieces.shape.ndims in (None, len(axes))):
        raise ValueError("%s must be [%s] integers padded with -1, got %s %s"
                         % (name, ", ".join(axes), pieces.dtype.name, pieces.shape))
    with tf.name_scope(name):
        pieces = tf.cast(pieces, tf.int32)
        lengths = tf.reduce_sum(tf.cast(pieces >= 0, tf.int32), axis=-1)       # [batch, ...]
        inside = tf.sequence_mask(lengths, tf.shape(pieces)[-1])
        well_formed = tf.reduce_all(tf.where_v2(inside, pieces >= 0, tf.equal(pieces, -1)))
        total = tf.reduce_sum(tf.reshape(lengths, [tf.shape(pieces)[0], -1]), axis=1)  # [batch]
        checks = [tf.debugging.assert_equal(tf.shape(pieces)[0], batch_size,
                                            message=name + ": one row per sentence"),
                  tf.debugging.assert_equal(well_formed, True,
                                            message=name + ": piece ids >= 0, then -1"),
                  tf.debugging.assert_less(total, limits, message=name + ": " + too_long)]
        with tf.control_dependencies(checks):
            return tf.identity(pieces), tf.identity(lengths)


def allowed_logits(logits, step, end_token_id, scoring, tokens=(), target_prefix=()):
    """[batch, beam, vocab] logits, -inf where the options forbid a piece (the end token before
    min_length, a piece repeating an n-gram) and, inside a forced prefix, on all but its next
    piece (at its own logit, whatever the options say). step: pieces so far (int or scalar
    tensor); tokens: [batch, beam, step] int32; target_prefix: () or [batch, p] int32, -1 padded."""
    with tf.name_scope("allowed"):
        model_logits, vocab_size = logits, get_shape(logits)[2]
        if scoring.no_repeat_ngram_size:
            blocked = repeated_ngram_mask(tokens, scoring.no_repeat_ngram_size, vocab_size)
            logits = tf.where_v2(blocked, -np.inf, logits)
        if isinstance(scoring.min_length, tf.Tensor) or scoring.min_length > 0:
            too_short = tf.logical_and(tf.equal(tf.range(vocab_size), end_token_id),
                                       step < scoring.min_length)              # [vocab]
            logits = tf.where_v2(too_short, -np.inf, logits)
        if not isinstance(target_prefix, tuple):
            in_vocab = tf.debugging.assert_less(target_prefix, vocab_size, message="target_prefix: "
                                                "piece ids must be < the vocabulary size")
            with tf.control_dependencies([in_vocab]):  # past the prefix: -1, no piece forced
                padded = tf.pad(target_prefix, [[0, 0], [0, 1]], constant_values=-1)
            forced = padded[:, tf.minimum(step, tf.shape(target_prefix)[1])][:, None, None]
            logits = force_pieces(logits, model_logits, forced, vocab_size)    # [b, k, vocab]
        return logits


def force_pieces(logits, model_logits, forced_ids, vocab_size):
    """`logits` where `forced_ids` (a target prefix's next piece, broadcast over the last axis;
    -1: none) is >= 0: -inf on every piece but that one, which keeps its `model_logits` value."""
    is_forced = tf.equal(tf.range(vocab_size), forced_ids)
    return tf.where_v2(forced_ids >= 0, tf.where_v2(is_forced, model_logits, -np.inf), logits)
