"""From the choices recorded at every step to the searches' (ids, scores, lengths).

Both beam searches record, per step, only the token each beam slot chose and
the slot it extended; the sequences are rebuilt once, at the end, by walking
those parent pointers back from the last step.
"""

import numpy as np
import tensorflow.compat.v1 as tf

from decode import scoring
from seq2seq.common import batch_gather, get_shape


def backtrack(token_ids, parent_ids):
    """Rebuilds every final hypothesis from the per-step choices.

    Args:
      token_ids: [time, batch, beam] int32, the token each slot chose per step.
      parent_ids: [time, batch, beam] int32, the slot of the previous step it
        extends.
    Returns:
      [batch, beam, time] int32: row [b, k] is the sequence that ends in slot
      k after the last step.
    """
    with tf.name_scope("backtrack"):
        _, batch_size, beam_width = get_shape(token_ids)
        last_slots = tf.tile(tf.range(beam_width)[None], [batch_size, 1])

        def step_back(carry, choices):
            slots, _ = carry
            tokens, parents = choices
            return batch_gather(parents, slots), batch_gather(tokens, slots)

        # The carry is (slots, tokens); only the slots carry over, so the
        # initial tokens are a placeholder of the right shape and type.
        _, ids = tf.scan(step_back, (token_ids, parent_ids),
                         initializer=(last_slots, last_slots),
                         reverse=True, back_prop=False)
        return tf.transpose(ids, [1, 2, 0])


def beam_search_results(token_ids, parent_ids, beam, end_token_id, alpha):
    """The decoder contract's outputs from the recorded choices and last beam.

    Impossible hypotheses (score -inf; only when fewer than `beam_width`
    sequences have non-zero probability) are given ids all `end_token_id` and
    length 0, so that what fills the beam does not depend on how many steps ran.

    Args:
      token_ids: [time, batch, beam] int32.
      parent_ids: [time, batch, beam] int32.
      beam: the scoring.Beam after the last step, best first.
      end_token_id: int.
      alpha: the length penalty weight.
    Returns:
      (ids [batch, beam, time] int32, scores [batch, beam] float32,
       lengths [batch, beam] int32).
    """
    with tf.name_scope("results"):
        scores = scoring.beam_scores(beam, alpha)
        possible = tf.greater(scores, -np.inf)
        ids = tf.where_v2(possible[..., None], backtrack(token_ids, parent_ids), end_token_id)
        lengths = tf.where_v2(possible, beam.lengths, 0)
        return ids, scores, lengths
