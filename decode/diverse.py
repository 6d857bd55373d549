"""Diverse beam search (Vijayakumar et al. 2018; fairseq's Hamming diversity): k slots as G
groups of k / G; group g ranks its candidates by score minus lambda times the hypotheses of
groups 0..g-1 that took the same token at this step. The penalty only ranks (choices:
docs/DECODING-NOTES.md). Shapes as in decode/beam_search.py."""

import numbers

import tensorflow.compat.v1 as tf

from seq2seq.common import batch_gather, get_shape


def checked_groups(scoring, beam_width):
    """scoring.diverse_beam_groups, checked against the beam (ValueError naming both) and
    against a negative strength (a Python number here, a tensor when run)."""
    groups, strength = scoring.diverse_beam_groups, scoring.diverse_beam_strength
    if not (isinstance(groups, numbers.Integral) and groups >= 1 and beam_width % groups == 0):
        raise ValueError("diverse_beam_groups must be an int >= 1 dividing beam_width %r, got %r"
                         % (beam_width, groups))
    if isinstance(strength, numbers.Number) and not strength >= 0:
        raise ValueError("diverse_beam_strength must be >= 0, got %r" % (strength,))
    return groups


def group_best(scores, tokens, groups, strength):
    """Each group's best k / G candidates, group after group.

    Args:
      scores: [b, k, r] float32, the candidates' scores.
      tokens: [b, k, r] int32, the token each candidate takes; -1 for those neither penalised
        nor counted (a carried finished hypothesis, an impossible one).
      groups: G, a Python int dividing k; strength: lambda, a float or scalar tensor.
    Returns:
      [b, k] int32 indices into the flat [k * r] candidates: group g's best in its slots
      g * k / G .. (g + 1) * k / G - 1, best first (by the penalised score).
    """
    batch_size, beam_width, row_width = get_shape(scores)
    width = beam_width // groups                                               # k / G
    with tf.name_scope("diverse_groups"):
        if isinstance(strength, tf.Tensor):  # a number was checked when the search was built
            non_negative = tf.debugging.assert_non_negative(
                strength, message="diverse_beam_strength must be >= 0")
            with tf.control_dependencies([non_negative]):
                strength = tf.identity(tf.cast(strength, tf.float32))
        best, taken = [], []  # each group's [b, k / G]: its kept candidates, their tokens
        for group in range(groups):
            slots = slice(group * width, (group + 1) * width)
            group_scores, group_tokens = scores[:, slots], tokens[:, slots]    # [b, k / G, r]
            if taken:  # how often each candidate's token was taken by the groups before
                same = tf.equal(group_tokens[..., None], tf.concat(taken, 1)[:, None, None])
                times = tf.reduce_sum(tf.cast(same, tf.float32), axis=-1)      # [b, k / G, r]
                group_scores -= tf.where_v2(group_tokens >= 0, strength * times, 0.0)
            _, top = tf.nn.top_k(tf.reshape(group_scores, [batch_size, -1]), k=width)  # [b, k/G]
            taken.append(batch_gather(tf.reshape(group_tokens, [batch_size, -1]), top))
            best.append(top + group * width * row_width)
        return tf.concat(best, axis=1)                                          # [b, k]
