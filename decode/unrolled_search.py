"""Beam search unrolled with a Python loop, in the Effective TensorFlow style.

The graph holds one copy of the step per generated token: simple to read in
TensorBoard and to debug, but its size and build time grow with
`sequence_length`, which must therefore be a Python int. See
`while_loop_search` for the constant-size graph with the same results.
"""

import tensorflow.compat.v1 as tf

from decode import beam_step, checks, results


def rnn_beam_search(update_fn, initial_state, sequence_length, beam_width,
                    begin_token_id, end_token_id, length_penalty=0.0, name="rnn",
                    max_lengths=None):
    """Beam search for recurrent models, one graph step per token.

    The decoder contract (DESIGN.md), extended by the optional `max_lengths`.

    Args:
      update_fn: `(state, ids) -> (new_state, logits)`: `state` a nested
        structure of [batch, beam, ...] tensors, `ids` [batch, beam] int32 (the
        previous tokens), `logits` [batch, beam, vocab]. Called once per step, so
        it should be a `tf.make_template` to share its variables.
      initial_state: nested structure of [batch, ...] tensors, tiled over beams.
      sequence_length: Python int >= 1, the most tokens to generate; every
        step is built and run.
      beam_width: Python int >= 1.
      begin_token_id: int, the first input token.
      end_token_id: int.
      length_penalty: alpha in ((5 + length) / 6) ** alpha; 0 for none.
      name: name scope.
      max_lengths: an extension of the contract: None (the default: no limit
        but `sequence_length`), or [batch] int32 (a tensor or array), the
        most tokens of each sentence, end token included. At a sentence's
        last allowed step its alive hypotheses can only end, and the end token
        is scored with its true log-probability (`scoring.select_best`). Steps
        beyond a batch's longest limit change nothing, so `sequence_length`
        may round it up (see `length_limits.unrolled_length_bucket`).
    Returns:
      (ids, scores, lengths): ids [batch, beam, sequence_length] int32 without
      the begin token, end token included where emitted and repeated after it;
      scores [batch, beam] float32, best first, the sum of the tokens'
      log-probabilities divided by the length penalty; lengths [batch, beam]
      int32 counting the end token.
    Raises:
      ValueError: for bad arguments, when the graph is built.
    """
    sequence_length = checks.check_sequence_length(sequence_length, allow_tensor=False)
    with tf.name_scope(name):
        state, ids, beam, max_lengths = beam_step.start(
            update_fn, initial_state, beam_width, begin_token_id, end_token_id, max_lengths)
        token_ids, parent_ids = [], []
        for step in range(sequence_length):
            with tf.name_scope("step_%d" % step):
                state, choice = beam_step.advance(update_fn, state, ids, beam, step,
                                                  end_token_id, length_penalty, max_lengths)
            ids, beam = choice.token_ids, choice.beam
            token_ids.append(choice.token_ids)
            parent_ids.append(choice.parent_ids)
        return results.beam_search_results(tf.stack(token_ids), tf.stack(parent_ids), beam,
                                           end_token_id, length_penalty)
