"""One beam-search step around a model's update_fn, shared by both searches.

The unrolled search calls `advance` in a Python loop, the while_loop search in
the loop body; everything that decides which hypotheses survive is in
`scoring.select_best`, per-sentence length limits included. Greedy decoding
starts with `start` too, at beam width 1.
"""

import tensorflow.compat.v1 as tf

from decode import checks, scoring
from seq2seq.common import batch_gather, tile_beams


def start(update_fn, initial_state, beam_width, begin_token_id, end_token_id, max_lengths=None):
    """Checks the arguments and builds what the first step needs.

    Args:
      update_fn: `(state, ids) -> (new_state, logits)`, see `advance`.
      initial_state: nested structure of [batch, ...] tensors.
      beam_width: Python int >= 1.
      begin_token_id: Python int, the first step's input token.
      end_token_id: Python int.
      max_lengths: None, or [batch] integers, the most tokens of each
        sentence, end token included (see `checks.check_max_lengths`).
    Returns:
      (state, ids, beam, max_lengths): the state tiled to [batch, beam, ...],
      ids [batch, beam] int32 all `begin_token_id`, the scoring.Beam, and
      the checked max_lengths ([batch] int32, or None) for `advance`.
    Raises:
      ValueError: for a bad argument.
    """
    if not callable(update_fn):
        raise ValueError("update_fn must be callable, got %r" % (update_fn,))
    beam_width = checks.check_beam_width(beam_width)
    checks.check_token_ids(begin_token_id, end_token_id)
    batch_size = checks.check_initial_state(initial_state)
    max_lengths = checks.check_max_lengths(max_lengths, batch_size)
    with tf.name_scope("start"):
        state = tf.nest.map_structure(lambda s: tile_beams(tf.convert_to_tensor(s), beam_width),
                                      initial_state)
        ids = tf.fill([batch_size, beam_width], begin_token_id)
        return state, ids, scoring.initial_beam(batch_size, beam_width), max_lengths


def advance(update_fn, state, ids, beam, step, end_token_id, alpha, max_lengths=None):
    """Feeds the last tokens to the model and keeps the best continuations.

    Args:
      update_fn: `(state, ids) -> (new_state, logits)`; `state` nested
        [batch, beam, ...], `ids` [batch, beam] int32, `logits`
        [batch, beam, vocab].
      state: the model state, nested [batch, beam, ...].
      ids: [batch, beam] int32, the tokens chosen by the previous step.
      beam: the scoring.Beam before this step.
      step: int or scalar int32 tensor, tokens generated so far.
      end_token_id: int.
      alpha: length penalty weight.
      max_lengths: None, or [batch] int32, the most tokens of each sentence
        (end token included), as `start` returns it; see
        `scoring.select_best`.
    Returns:
      (state, choice): the new model state reordered to follow the kept
      hypotheses, and the scoring.Choice.
    """
    new_state, logits = update_fn(state, ids)
    checks.check_step_outputs(state, new_state, logits, end_token_id)
    choice = scoring.select_best(logits, beam, step, end_token_id, alpha, max_lengths)
    with tf.name_scope("reorder_state"):
        new_state = tf.nest.map_structure(lambda s: batch_gather(s, choice.parent_ids), new_state)
    return new_state, choice
