"""Greedy decoding: the best token at every step, in a tf.while_loop.

The cheap path for beam width 1: no top_k, no parent pointers, no state
reordering. Same contract and same outputs as a beam search with
`beam_width=1` (a beam of one picks the argmax token, and once finished is
carried over unchanged), with a beam dimension of 1; per-sentence length
limits follow the beam searches' rule, `scoring.end_token_only_at_limits`.
"""

import tensorflow.compat.v1 as tf

from decode import beam_step, checks, scoring
from seq2seq.common import batch_free_shape_invariants


def greedy_search(update_fn, initial_state, sequence_length, begin_token_id, end_token_id,
                  length_penalty=0.0, name="greedy", max_lengths=None):
    """Greedy decoding for recurrent models.

    Args:
      update_fn: `(state, ids) -> (new_state, logits)` as for the beam
        searches; called with a beam dimension of 1.
      initial_state: nested structure of [batch, ...] tensors.
      sequence_length: the most tokens to generate: a Python int >= 1 or a
        scalar int32 tensor, checked to be >= 1 when run.
      begin_token_id: int, the first input token.
      end_token_id: int.
      length_penalty: alpha in ((5 + length) / 6) ** alpha; 0 for none.
      name: name scope.
      max_lengths: None, or [batch] int32, the most tokens of each sentence,
        end token included, as for the beam searches (an extension of their
        contract): at its last allowed step a sentence can only end, with the
        end token's true log-probability.
    Returns:
      (ids, scores, lengths): ids [batch, 1, time] int32, where time is the
      number of steps run (the loop stops once every row has finished);
      scores [batch, 1] float32; lengths [batch, 1] int32 counting the end token.
    Raises:
      ValueError: for bad arguments, when the graph is built.
    """
    with tf.name_scope(name):
        sequence_length = checks.check_sequence_length(sequence_length, allow_tensor=True)
        # The beam searches' start at beam width 1: the same argument checks,
        # and a Beam of one alive hypothesis, scored as they score theirs.
        state, ids, beam, max_lengths = beam_step.start(
            update_fn, initial_state, 1, begin_token_id, end_token_id, max_lengths)
        token_ids = tf.TensorArray(tf.int32, size=0, dynamic_size=True, name="token_ids")

        def not_done(step, state, ids, beam, token_ids):
            del state, ids, token_ids  # unused
            return tf.logical_and(step < sequence_length,
                                  tf.logical_not(tf.reduce_all(beam.finished)))

        def body(step, state, ids, beam, token_ids):
            new_state, logits = update_fn(state, ids)
            checks.check_step_outputs(state, new_state, logits, end_token_id)
            with tf.name_scope("choose"):
                # select_best's arithmetic with one candidate per row: the
                # argmax, the end token at a sentence's limit, and the
                # normaliser of the model's unmasked logits.
                best_logit = tf.reduce_max(logits, axis=-1, keepdims=True)         # [b, 1, 1]
                best = tf.argmax(logits, axis=-1, output_type=tf.int32)[..., None]  # [b, 1, 1]
                best_logit, best = scoring.end_token_only_at_limits(
                    best_logit, best, logits, step, max_lengths, end_token_id)
                best_log_prob = (best_logit
                                 - tf.reduce_logsumexp(logits, axis=-1, keepdims=True))[..., 0]
                ids = tf.where_v2(beam.finished, end_token_id, best[..., 0])         # [b, 1]
                beam = scoring.Beam(
                    log_probs=tf.where_v2(beam.finished, beam.log_probs,
                                          beam.log_probs + best_log_prob),
                    lengths=tf.where_v2(beam.finished, beam.lengths, step + 1),
                    finished=tf.equal(ids, end_token_id))
            return step + 1, new_state, ids, beam, token_ids.write(step, ids)

        loop_vars = (tf.constant(0), state, ids, beam, token_ids)
        _, _, _, beam, token_ids = tf.while_loop(
            not_done, body, loop_vars,
            shape_invariants=batch_free_shape_invariants(loop_vars),
            back_prop=False, name="search")
        ids = tf.transpose(token_ids.stack(), [1, 2, 0])
        return ids, scoring.beam_scores(beam, length_penalty), beam.lengths
