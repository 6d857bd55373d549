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
- ties go to the lower (beam, token) index, as ``tf.nn.top_k`` orders them;
- optionally, a sentence may have its own length limit (``max_lengths``): at
  its last allowed step its alive hypotheses' only candidate is the end token,
  scored with its true log-probability (see `end_token_only_at_limits`).

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


def end_token_only_at_limits(row_logits, row_tokens, logits, step, max_lengths, end_token_id):
    """Makes the end token the only candidate of every hypothesis at its sentence's limit.

    fairseq's rule at its max length, applied after normalisation: at the last
    step a sentence allows (step + 1 >= max_lengths[b]) every token but the
    end token is removed, and the end token keeps its own logit. The caller
    normalises with the logsumexp of the model's unmasked logits, so the end
    token is scored with its true log-probability, as the contract's score
    requires; masking the logits before normalising would give it
    log-probability 0, a free end token for exactly the hypotheses the limit
    cuts off.

    Works on each row's best candidates, after the per-row top-k and before
    the beam-wide one, rather than on the [batch, beam, vocab] logits: the
    same choice (at its limit a row's one possible candidate is the end token,
    the rest are -inf), without a select over the whole vocabulary, which
    costs 0.2 ms of CPU per step at batch 32, beam 5, vocab 4000, where the
    whole scoring step costs 1.2 ms.

    Args:
      row_logits: [batch, beam, r] float32, each row's best logits, best first.
      row_tokens: [batch, beam, r] int32, their tokens.
      logits: [batch, beam, vocab] float32, the model's logits.
      step: int or scalar int32 tensor, tokens generated before this step.
      max_lengths: [batch] int32, the most tokens per sentence counting the
        end token (below 1 acts as 1), or None for no limit.
      end_token_id: int.
    Returns:
      (row_logits, row_tokens), [batch, beam, r]: unchanged in the sentences
      below their limit; in the others the end token's logit and id in the
      first slot, then -inf (impossible candidates, token `end_token_id`).
    """
    if max_lengths is None:
        return row_logits, row_tokens
    with tf.name_scope("end_token_only_at_limits"):
        at_limit = tf.greater_equal(step + 1, max_lengths)[:, None, None]     # [b, 1, 1]
        end_logits = logits[:, :, end_token_id:end_token_id + 1]              # [b, k, 1]
        first_slot = tf.equal(tf.range(get_shape(row_logits)[2]), 0)          # [r]
        only_end = tf.where_v2(first_slot, end_logits, -np.inf)               # [b, k, r]
        return (tf.where_v2(at_limit, only_end, row_logits),
                tf.where_v2(at_limit, end_token_id, row_tokens))


def select_best(logits, beam, step, end_token_id, alpha, max_lengths=None):
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
      max_lengths: optional [batch] int32, the most tokens of each sentence,
        end token included: at a sentence's last allowed step its alive
        hypotheses can only end, with the end token's true log-probability
        (see `end_token_only_at_limits`). None: no limit but the search's.
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

        # The normaliser of the model's own distribution, before any limit
        # removes tokens: a forced end token still costs -log p(end).
        log_normaliser = tf.reduce_logsumexp(logits, axis=-1, keepdims=True)
        row_logits, row_tokens = top_k.top_k(logits, row_width)               # [b, k, r]
        row_logits, row_tokens = end_token_only_at_limits(
            row_logits, row_tokens, logits, step, max_lengths, end_token_id)
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
