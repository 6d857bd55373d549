"""The one beam-search scoring step, shared by the unrolled and while_loop searches.

A beam holds ``beam_width`` hypotheses per batch row, finished and alive side by
side (the GNMT / tfa layout). Each step every alive hypothesis is extended by
every token, every finished hypothesis is carried over unchanged as a single
candidate, and the best ``beam_width`` candidates are kept:

- alive ``h`` extended by token ``v`` scores
  ``(log_probs[h] + log_softmax(logits[h])[v]) / penalty(step + 1)``;
- finished ``h`` has exactly one candidate, itself followed by ``end_token_id``,
  with its score unchanged, so it can neither grow nor crowd the beam with
  copies of itself (the flaw of the Effective TensorFlow cookbook's search);
- ties go to the lower (beam, token) index, as ``tf.nn.top_k`` orders them.

Because finished hypotheses keep their place and score, a beam whose
hypotheses have all finished can never change again: that is what makes the
while_loop search's early stop exact.
"""

import collections

import numpy as np
import tensorflow.compat.v1 as tf

from decode import top_k
from seq2seq.common import batch_gather, get_shape

Beam = collections.namedtuple("Beam", ["log_probs", "lengths", "finished"])
Beam.__doc__ = """The bookkeeping of a beam, all [batch, beam].

Fields:
  log_probs: float32, the sum of the log-probabilities of the tokens so far
    (-inf marks an impossible hypothesis, kept only to fill the beam).
  lengths: int32, tokens so far, counting the end token.
  finished: bool, True once the end token was chosen (or the hypothesis is
    impossible): the hypothesis never changes again.
"""

Choice = collections.namedtuple("Choice", ["beam", "token_ids", "parent_ids"])
Choice.__doc__ = """What one scoring step kept.

Fields:
  beam: the new Beam, best first in every batch row.
  token_ids: [batch, beam] int32, the token each kept hypothesis ends with.
  parent_ids: [batch, beam] int32, the beam index it extends.
"""


def length_penalty(lengths, alpha):
    """GNMT's length penalty ((5 + length) / 6) ** alpha (Wu et al., 2016).

    Args:
      lengths: int32 tensor (any shape) or Python int.
      alpha: float or scalar float32 tensor; 0 disables the penalty.
    Returns:
      float32 tensor shaped like `lengths`.
    """
    with tf.name_scope("length_penalty"):
        return tf.pow((5.0 + tf.cast(lengths, tf.float32)) / 6.0, alpha)


def beam_scores(beam, alpha):
    """The scores the contract defines: log_probs / length_penalty, [batch, beam]."""
    return beam.log_probs / length_penalty(beam.lengths, alpha)


def initial_beam(batch_size, beam_width):
    """The beam before the first step.

    Every beam slot starts from the same begin state. Only slot 0 is alive;
    the others start finished and impossible (log-prob -inf), otherwise the
    first step would pick the same best token `beam_width` times.

    Args:
      batch_size: int or scalar int32 tensor.
      beam_width: int.
    Returns:
      A Beam of [batch, beam] tensors.
    """
    with tf.name_scope("initial_beam"):
        first = tf.equal(tf.range(beam_width), 0)
        log_probs = tf.where_v2(first, 0.0, -np.inf)
        return Beam(log_probs=tf.tile(log_probs[None], [batch_size, 1]),
                    lengths=tf.zeros([batch_size, beam_width], tf.int32),
                    finished=tf.tile(tf.logical_not(first)[None], [batch_size, 1]))


def select_best(logits, beam, step, end_token_id, alpha):
    """Scores every one-token continuation and keeps the best `beam_width`.

    Two stages, for speed, with the same result as one top_k over all
    beam x vocab candidates: first the best `beam_width` tokens of every beam
    row (by the chunked `top_k.top_k`), then the best `beam_width` of those
    beam x beam candidates. Exact because any candidate among the global best
    `beam_width` is also among the best `beam_width` of its own row, and a
    row's order by logit is its order by score. The log-softmax normaliser is
    one logsumexp per row ([batch, beam, 1]); only the beam x beam candidates
    become log-probabilities. At batch 32, beam 5, vocab 4000 this step costs
    1.2 ms of CPU against 2.6 ms for log-softmax and one tf.nn.top_k over
    beam x vocab; nearly all of the gain is the chunked top-k (two stages
    with tf.nn.top_k per row: 2.6-3.0 ms). Measured by bench/decode_speed.py.

    Args:
      logits: [batch, beam, vocab] float32, unnormalised, from update_fn.
      beam: the Beam before this step.
      step: int or scalar int32 tensor, tokens generated before this step.
      end_token_id: int.
      alpha: length penalty weight, float or scalar float32 tensor.
    Returns:
      A Choice: the new Beam, best first, and how it was reached.
    """
    with tf.name_scope("select_best"):
        # The beam's own shape, which the searches keep static, rather than the
        # logits', which an update_fn may have lost.
        batch_size, beam_width = get_shape(beam.log_probs)
        vocab_size = get_shape(logits)[2]
        if isinstance(vocab_size, tf.Tensor):
            row_width = tf.minimum(beam_width, vocab_size)
        else:
            row_width = min(beam_width, vocab_size)

        log_normaliser = tf.reduce_logsumexp(logits, axis=-1, keepdims=True)
        row_logits, row_tokens = top_k.top_k(logits, row_width)               # [b, k, r]
        alive_log_probs = beam.log_probs[..., None] + (row_logits - log_normaliser)
        alive_scores = alive_log_probs / length_penalty(step + 1, alpha)

        # A finished hypothesis is its own only candidate, in its row's first slot.
        finished = beam.finished[..., None]                                   # [b, k, 1]
        first_slot = tf.equal(tf.range(row_width), 0)                        # [r]
        carried_log_probs = tf.where_v2(first_slot, beam.log_probs[..., None], -np.inf)
        carried_scores = tf.where_v2(first_slot, beam_scores(beam, alpha)[..., None], -np.inf)
        log_probs = tf.where_v2(finished, carried_log_probs, alive_log_probs)
        scores = tf.where_v2(finished, carried_scores, alive_scores)
        tokens = tf.where_v2(finished, end_token_id, row_tokens)

        def flatten(candidates):  # [b, k, r] -> [b, k * r]
            return tf.reshape(candidates, [batch_size, -1])

        best_scores, best = tf.nn.top_k(flatten(scores), k=beam_width)        # [b, k]
        parent_ids = best // row_width
        token_ids = batch_gather(flatten(tokens), best)
        parent_finished = batch_gather(beam.finished, parent_ids)
        new_beam = Beam(
            log_probs=batch_gather(flatten(log_probs), best),
            lengths=tf.where_v2(parent_finished, batch_gather(beam.lengths, parent_ids), step + 1),
            finished=tf.logical_or(tf.equal(token_ids, end_token_id),
                                   tf.equal(best_scores, -np.inf)))
        return Choice(beam=new_beam, token_ids=token_ids, parent_ids=parent_ids)
