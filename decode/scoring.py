"""How a hypothesis is scored and which pieces it may take next, alike in every decoder:

    score = log p / normaliser(length) + beta * sum_src log(min(attention received, 1))

Repetition blocking and the minimum length remove candidates (-inf) before the search ranks them.
"""

import collections

import numpy as np
import tensorflow.compat.v1 as tf

from seq2seq.decoding_options import LENGTH_PENALTY_KINDS
from seq2seq.common import get_shape

MIN_COVERAGE = 1e-10  # the attention a piece never attended to counts as (log 0: -inf)

Scoring = collections.namedtuple(
    "Scoring", "length_penalty length_penalty_kind coverage_penalty no_repeat_ngram_size "
    "min_length diverse_beam_groups diverse_beam_strength",
    defaults=(0.0, "gnmt", 0.0, 0, 0, 1, 0.5))
Scoring.__doc__ = """A search's scoring options: alpha, the normalisation kind (Python str), beta
(coverage is tracked only when `tracks_coverage`), n of repetition blocking (Python int, 0: off),
the minimum length, the beam searches' diverse groups G (Python int dividing the beam; 1: plain)
and their strength lambda >= 0 (it steers the ranking, never a score). The others: a number or
scalar tensor."""


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
    """The score above: [...] log_probs and lengths, [..., src] coverage (attention received,
    padding 1; () when not tracked) -> [...] float32."""
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
        batch_size, beam_width, time = get_shape(tokens)
        # n - 1 pieces of -1 in front: every position has a full window, and -1 matches no piece.
        padded = tf.pad(tokens, [[0, 0], [0, 0], [n - 1, 0]], constant_values=-1)
        follows_suffix = tf.ones([batch_size, beam_width, time], tf.bool)    # [b, k, t]
        for i in range(n - 1):  # window j's i-th piece against the suffix's i-th piece
            follows_suffix &= tf.equal(padded[:, :, i:i + time],
                                       padded[:, :, time + i:time + i + 1])
        rows = tf.range(batch_size * beam_width)[:, None] * vocab_size       # [b * k, 1]
        positions = rows + tf.reshape(tokens, [batch_size * beam_width, -1])  # [b * k, t]
        counts = tf.math.unsorted_segment_sum(
            tf.reshape(tf.cast(follows_suffix, tf.int32), [-1]), tf.reshape(positions, [-1]),
            batch_size * beam_width * vocab_size)
        return tf.reshape(counts > 0, [batch_size, beam_width, vocab_size])


def checked_prefix(target_prefix, batch_size, sequence_length):
    """A forced target prefix as [batch, p] int32 and its lengths [batch] int32, checked (the
    dtype and rank when built, the rest when run): a row per sentence, piece ids >= 0 then -1
    padding, every prefix shorter than sequence_length (int or scalar tensor)."""
    prefix = tf.convert_to_tensor(target_prefix)
    if not (prefix.dtype.is_integer and prefix.shape.ndims in (None, 2)):
        raise ValueError("target_prefix must be [batch, pieces] integers padded with -1, got %s %s"
                         % (prefix.dtype.name, prefix.shape))
    with tf.name_scope("target_prefix"):
        prefix = tf.cast(prefix, tf.int32)
        lengths = tf.reduce_sum(tf.cast(prefix >= 0, tf.int32), axis=1)        # [batch]
        inside = tf.sequence_mask(lengths, tf.shape(prefix)[1])                # [batch, p]
        well_formed = tf.reduce_all(tf.where_v2(inside, prefix >= 0, tf.equal(prefix, -1)))
        checks = [tf.debugging.assert_equal(tf.shape(prefix)[0], batch_size,
                                            message="target_prefix: one row per sentence"),
                  tf.debugging.assert_equal(well_formed, True,
                                            message="target_prefix: piece ids >= 0, then -1"),
                  tf.debugging.assert_less(lengths, sequence_length, message="target_prefix: "
                                           "sequence_length must exceed every prefix (room for "
                                           "the end token)")]
        with tf.control_dependencies(checks):
            return tf.identity(prefix), tf.identity(lengths)


def allowed_logits(logits, step, end_token_id, scoring, tokens=(), target_prefix=()):
    """[batch, beam, vocab] logits with -inf where the options forbid a piece (the end token
    before min_length, a piece that repeats an n-gram) and, inside a sentence's forced prefix,
    on every piece but the prefix's next (that one at its own logit, whatever the options say);
    otherwise the same tensor. step: pieces so far (int or scalar tensor); tokens: [batch,
    beam, step] int32, for blocking; target_prefix: () or [batch, p] int32, -1 padded."""
    with tf.name_scope("allowed"):
        model_logits = logits
        if scoring.no_repeat_ngram_size:
            blocked = repeated_ngram_mask(tokens, scoring.no_repeat_ngram_size,
                                          get_shape(logits)[2])
            logits = tf.where_v2(blocked, -np.inf, logits)
        if isinstance(scoring.min_length, tf.Tensor) or scoring.min_length > 0:
            is_end = tf.equal(tf.range(get_shape(logits)[2]), end_token_id)    # [vocab]
            too_short = tf.logical_and(is_end, step < scoring.min_length)
            logits = tf.where_v2(too_short, -np.inf, logits)
        if not isinstance(target_prefix, tuple):
            vocab_size = get_shape(logits)[2]
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
