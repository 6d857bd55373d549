"""Lexically constrained beam search: every returned hypothesis contains every constraint.

Dynamic beam allocation (Post & Vilar 2018) vectorised as Hu et al. (2019) do, in the pieces
decode/beam_search.py's step calls; how and why: docs/DECODING-NOTES.md, "Constrained beam
search"; the same search in NumPy: tests/numpy_constrained_search.py.

Shapes: b sentences, k slots, v vocabulary, n candidates a slot, P protected pieces, C
constraints and M pieces a constraint (each one more than given, so neither axis is empty).
"""

import collections

import numpy as np
import tensorflow.compat.v1 as tf

from decode import scoring
from seq2seq.common import batch_gather, get_shape

Constraints = collections.namedtuple("Constraints", "pieces lengths fallbacks protected")
Constraints.__doc__ = """A batch's constraints, fixed for a search: pieces [b, C, M] int32 (-1
after each), lengths [b, C] int32, fallbacks [b, C, M, M] bool (`_fallbacks`), protected
[b, P] int32 (-1 padded; () when no sentence keeps its protected pieces)."""


def start(constraints, max_lengths, beam_width, protected_ids=None):
    """The checked Constraints and each slot's first progress.

    Args:
      constraints: [b, C, L] ints, a row per constraint: its pieces, then -1 (all -1: none).
      max_lengths: [b] int32, each sentence's most tokens, the end token included.
      beam_width: Python int.
      protected_ids: None or [b, P] ints, -1 padded: the pieces a sentence in keep mode may
        take only as its single-piece constraints, so each exactly once (`blocked`).
    Returns:
      (Constraints, progress [b, k, C] int32: zeros, so the empty constraints are met).
    """
    pieces, _ = scoring.checked_pieces(
        constraints, "constraints", ("batch", "constraints", "pieces"), tf.size(max_lengths),
        max_lengths, "a sentence's pieces and the end token must fit in its limit")
    with tf.name_scope("constraints"):
        pieces = tf.pad(pieces, [[0, 0], [0, 1], [0, 1]], constant_values=-1)  # [b, C, M]
        lengths = tf.reduce_sum(tf.cast(pieces >= 0, tf.int32), axis=2)           # [b, C]
        protected = () if protected_ids is None else tf.cast(protected_ids, tf.int32)
        progress = tf.tile(tf.zeros_like(lengths)[:, None], [1, beam_width, 1])   # [b, k, C]
        return Constraints(pieces, lengths, _fallbacks(pieces), protected), progress


def _fallbacks(pieces):
    """Where a match goes on: Knuth-Morris-Pratt's failure function as a table.

    [b, C, M] int32 -> [b, C, M, M] bool, True at [p, j] where a constraint's first p pieces end
    with its first j (j <= p): after p matched pieces, a piece equal to piece j makes a match of
    j + 1. j = p extends the match, j = 0 starts afresh, 0 < j < p restarts inside it ("a a b"
    after "a a": a third "a" leaves a match of two).
    """
    size = tf.shape(pieces)[2]
    p, j, i = tf.range(size)[:, None, None], tf.range(size)[None, :, None], tf.range(size)
    shifted = tf.gather(pieces, tf.clip_by_value(p - j + i, 0, size - 1), axis=2)  # [b, C, M, M, M]
    same = tf.logical_or(tf.equal(shifted, pieces[:, :, None, None, :]), i >= j)  # piece p - j + i
    return tf.logical_and(tf.reduce_all(same, axis=-1), (j <= p)[..., 0])


def unmet(constraints, progress):
    """[b, k] bool: the slot's hypothesis has a constraint to meet (progress [b, k, C])."""
    return tf.reduce_any(progress < constraints.lengths[:, None], axis=-1)


def blocked(constraints, progress, vocab_size, end_token_id):
    """[b, k, v] bool, the pieces a slot may not take: the end token while a constraint is
    unmet and, in keep mode, every protected piece but its unmet single-piece constraints'."""
    is_end = tf.equal(tf.range(vocab_size), end_token_id)                          # [v]
    blocked_pieces = tf.logical_and(is_end, unmet(constraints, progress)[..., None])  # [b, k, v]
    if isinstance(constraints.protected, tuple):
        return blocked_pieces
    single = tf.logical_and(tf.equal(constraints.lengths, 1)[:, None], tf.equal(progress, 0))
    wanted = tf.where_v2(single, constraints.pieces[:, None, :, 0], -1)             # [b, k, C]
    still_wanted = tf.reduce_any(tf.equal(wanted[..., None],                         # [b, k, P]
                                          constraints.protected[:, None, None]), axis=2)
    closed = tf.where_v2(still_wanted, -1, constraints.protected[:, None])         # [b, k, P]
    return tf.logical_or(blocked_pieces, scoring.vocab_mask(closed, vocab_size))


def with_next_pieces(row_logits, row_tokens, allowed, constraints, progress):
    """DBA's extra candidates: after each slot's best pieces (row_logits and row_tokens [b, k,
    r]), each unmet constraint's next piece at its `allowed` logit ([b, k, v], -inf where not
    allowed); where met, or offered already, the slot's best piece at -inf.

    Returns (logits [b, k, r + C] float32, tokens [b, k, r + C] int32).
    """
    next_pieces = tf.transpose(tf.gather(constraints.pieces, tf.transpose(progress, [0, 2, 1]),
                                         axis=2, batch_dims=2), [0, 2, 1])  # [b, k, C]; met: -1
    count = get_shape(progress)[2]
    earlier = tf.range(count)[None, :] < tf.range(count)[:, None]                 # [C, C]
    offered = tf.logical_or(
        tf.reduce_any(tf.equal(next_pieces[..., None], row_tokens[:, :, None]), axis=-1),
        tf.reduce_any(tf.equal(next_pieces[..., None], next_pieces[:, :, None]) & earlier, -1))
    fresh = tf.logical_and(next_pieces >= 0, tf.logical_not(offered))              # [b, k, C]
    tokens = tf.where_v2(fresh, next_pieces, row_tokens[..., :1])
    logits = tf.where_v2(fresh, tf.gather(allowed, tokens, batch_dims=2), -np.inf)
    return tf.concat([row_logits, logits], axis=2), tf.concat([row_tokens, tokens], axis=2)


def advance(constraints, progress, tokens):
    """Each slot's progress [b, k, C] after each of `tokens` [b, k, n] -> [b, k, n, C] int32:
    the longest match each piece makes, or the constraint's length if met already."""
    goes_on = tf.gather(constraints.fallbacks, tf.transpose(progress, [0, 2, 1]), axis=2,
                        batch_dims=2)                                              # [b, C, k, M]
    goes_on = tf.transpose(goes_on, [0, 2, 1, 3])[:, :, None]                      # [b, k, 1, C, M]
    equal = tf.equal(constraints.pieces[:, None, None], tokens[..., None, None])   # [b, k, n, C, M]
    matches = tf.where_v2(goes_on & equal, tf.range(1, get_shape(constraints.pieces)[2] + 1), 0)
    met = tf.equal(progress, constraints.lengths[:, None])[:, :, None]             # [b, k, 1, C]
    return tf.where_v2(met, progress[:, :, None], tf.reduce_max(matches, axis=-1))


def choose(scores, tokens, constraints, progress, end_token_id, beam_width):
    """DBA's k of a sentence's candidates, and their progress.

    Args:
      scores: [b, k, n] float32 (-inf: none); tokens: [b, k, n] int32; progress: [b, k, C]
        int32, before the step; end_token_id: int; beam_width: Python int.
    Returns:
      (best [b, k] int32: candidate i extends slot i // n, progress [b, k, C] after each).
    """
    batch_size = get_shape(scores)[0]
    after = advance(constraints, progress, tokens)                                 # [b, k, n, C]
    met = tf.equal(after, constraints.lengths[:, None, None])
    # A bank: the pieces of the met constraints plus the longest match of an unmet one.
    banks = (tf.reduce_sum(tf.where_v2(met, after, 0), axis=-1)
             + tf.reduce_max(tf.where_v2(met, 0, after), axis=-1))                 # [b, k, n]
    full = tf.reduce_sum(constraints.lengths, axis=1)[:, None, None]               # [b, 1, 1]
    # Once a candidate ends with all met, the worse ones of lower banks cannot beat it (alpha 0).
    done = tf.logical_and(tf.equal(tokens, end_token_id), tf.equal(banks, full))
    best_done = tf.reduce_max(tf.where_v2(done, scores, -np.inf), axis=[1, 2], keepdims=True)
    scores = tf.where_v2(tf.logical_and(banks < full, scores < best_done), -np.inf, scores)
    best = _round_robin(tf.reshape(scores, [batch_size, -1]), tf.reshape(banks, [batch_size, -1]),
                        beam_width)                                                # [b, k]
    return best, batch_gather(tf.reshape(after, [batch_size, -1, get_shape(after)[3]]), best)


def _round_robin(scores, banks, beam_width):
    """Each bank's best, from the highest bank down, then each bank's second, ... (ties: the
    earlier): [b, N] float32 scores (-inf: none, taken last) and int32 banks -> [b, k] indices."""
    index = tf.range(get_shape(scores)[1])                                         # [N]
    possible = scores > -np.inf
    # A candidate's rank in its bank, in O(N log N): sorted by score (ties: the earlier), then
    # stably by bank, a candidate's place less its bank's first place (-inf ones come last).
    by_score = tf.argsort(scores, axis=1, direction="DESCENDING", stable=True)     # [b, N]
    grouped = tf.gather(by_score, tf.argsort(tf.gather(banks, by_score, batch_dims=1), axis=1,
                                             stable=True), batch_dims=1)           # [b, N]
    grouped_banks = tf.gather(banks, grouped, batch_dims=1)                        # ascending
    places = index - tf.searchsorted(grouped_banks, grouped_banks, side="left")    # [b, N]
    rank = tf.gather(places, tf.argsort(grouped, axis=1), batch_dims=1)            # [b, N]
    num_banks = tf.reduce_max(banks) + 1
    order = tf.where_v2(possible, rank * num_banks + (num_banks - 1 - banks),
                        tf.size(index) * num_banks + index)
    return tf.nn.top_k(-order, k=beam_width)[1]
