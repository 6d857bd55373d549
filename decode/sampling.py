"""Sampling: independent translations drawn from the model, the decoding options applied.

Each of a sentence's `num_samples` slots extends its own hypothesis by a piece drawn from
softmax(logits / temperature) as restricted by `top_k`, `top_p` and `epsilon`, keyed by the
seed, the sentence's own pieces and the step; scores are untempered, as the beam searches score.
"""

import collections

import numpy as np
import tensorflow.compat.v1 as tf

from decode import beam_search
from decode import scoring as scoring_lib
from seq2seq.common import get_shape

Sampling = collections.namedtuple("Sampling", "temperature top_k top_p seed epsilon",
                                  defaults=(1.0, 0, 1.0, 0, 0.0))
Sampling.__doc__ = """The sampling options (seq2seq/decoding_options.py), each a Python number or
a scalar tensor; top_k 0 and epsilon 0 are off."""


def sentence_keys(source_ids, source_length):
    """[batch, src_time] padded source_ids, [batch] source_length -> [batch] int64 hashes of
    each sentence's own pieces, whatever the padding around it."""
    with tf.name_scope("sentence_keys"):
        inside = tf.sequence_mask(source_length, tf.shape(source_ids)[1])
        pieces = tf.where_v2(inside, tf.strings.as_string(source_ids) + " ", "")
        return tf.strings.to_hash_bucket_fast(tf.strings.reduce_join(pieces, axis=1), 2 ** 62)


def restricted_logits(logits, sampling):
    """[batch, beam, vocab] logits -> logits / temperature, -inf outside the top_k pieces, outside
    the nucleus and where softmax(logits / temperature) < epsilon (measured before top_k and
    top_p: docs/DECODING-NOTES.md), never at the most likely piece. Only a nucleus sorts the
    vocabulary; the top_k need only their k-th best, epsilon the best (tf.cond runs one side)."""
    with tf.name_scope("restrict"):
        tempered = logits / sampling.temperature
        vocab_size = get_shape(logits)[2]
        no_bound = tf.fill(tf.shape(tempered[:, :, :1]), -np.inf)              # [b, k, 1]
        kth_best = tf.cond(tf.convert_to_tensor(sampling.top_k) > 0, lambda: tf.nn.top_k(
            tempered, tf.minimum(sampling.top_k, vocab_size))[0][:, :, -1:], lambda: no_bound)

        def nucleus_lowest():  # [b, k, 1]: the least likely piece of the nucleus
            ranked = tf.sort(tempered, axis=-1, direction="DESCENDING")       # [b, k, v]
            ranked = tf.where_v2(ranked >= kth_best, ranked, -np.inf)
            mass_before = tf.cumsum(tf.nn.softmax(ranked), axis=-1, exclusive=True)
            best = tf.equal(tf.range(vocab_size), 0)  # always in the nucleus
            in_nucleus = (mass_before < sampling.top_p) | best                 # [b, k, v]
            return tf.reduce_min(tf.where_v2(in_nucleus, ranked, np.inf), -1, keepdims=True)
        lowest_kept = tf.cond(tf.convert_to_tensor(sampling.top_p) < 1.0, nucleus_lowest,
                              lambda: no_bound)
        above_epsilon = tf.minimum(  # p >= e: log p >= log e; never above the best piece
            tf.reduce_max(tempered, -1, keepdims=True), tf.reduce_logsumexp(
                tempered, -1, keepdims=True) + tf.log(tf.cast(sampling.epsilon, tempered.dtype)))
        lowest = tf.maximum(tf.maximum(kth_best, lowest_kept), above_epsilon)  # epsilon 0: -inf
        return tf.where_v2(tempered >= lowest, tempered, -np.inf)


def _gumbel_noise(row_seeds, step, shape):
    """Gumbel(0, 1) noise [batch, beam, vocab], each sentence's from its own [2] seed."""
    def draw(seed):
        seed = tf.random.experimental.stateless_fold_in(seed, tf.cast(step, tf.int64))
        return tf.random.stateless_uniform(shape[1:], seed=seed, minval=1e-20, maxval=1.0)
    uniform = tf.map_fn(draw, row_seeds, fn_output_signature=tf.float32)      # [b, k, v]
    return -tf.log(-tf.log(uniform))


def sample_step(update_fn, state, step, end_token_id, scoring, sampling):
    """One step of sampling, as `beam_step` (and a Sampling): every alive slot extends itself by
    the piece it draws (inside a target prefix, the prefix's), keyed by `state.seeds`.

    Returns:
      (the BeamState after the step, None: every slot is its own parent).
    """
    model, logits = beam_search.model_logits(update_fn, state, end_token_id)  # [b, k, v]
    with tf.name_scope("sample_step"):
        allowed = scoring_lib.allowed_logits(logits, step, end_token_id, scoring, state.tokens,
                                             state.target_prefix)
        restricted = restricted_logits(allowed, sampling)                      # [b, k, v]
        noisy = restricted + _gumbel_noise(state.seeds, step, get_shape(logits))
        token_ids = tf.argmax(noisy, axis=-1, output_type=tf.int32)           # [b, k]
        nothing_allowed = tf.equal(tf.reduce_max(restricted, axis=-1), -np.inf)  # [b, k]
        if beam_search.carried(state.max_lengths):  # at its limit a sentence ends
            at_limit = tf.greater_equal(step + 1, state.max_lengths)[:, None]  # [b, 1]
            token_ids = tf.where_v2(at_limit, end_token_id, token_ids)
            nothing_allowed = tf.logical_and(nothing_allowed, tf.logical_not(at_limit))
        token_ids = tf.where_v2(state.finished, end_token_id, token_ids)      # [b, k]
        token_log_probs = tf.gather(tf.nn.log_softmax(logits), token_ids, batch_dims=2)
        log_probs = state.log_probs + tf.where_v2(nothing_allowed, -np.inf, token_log_probs)
        log_probs = tf.where_v2(state.finished, state.log_probs, log_probs)   # [b, k]
        return beam_search.extend(state, model, token_ids, log_probs, step, end_token_id), None


def sample_search(update_fn, initial_state, sequence_length, num_samples, begin_token_id,
                  end_token_id, scoring, sampling, sentence_keys, name="sample", max_lengths=None,
                  source_mask=None, compact=False, target_prefix=None):
    """Draws `num_samples` translations per sentence, best score first: `while_loop_beam_search`'s
    contract (`num_samples` for beam_width, no trace), sentence_keys [batch] int64 the batch's
    `sentence_keys`."""
    with tf.name_scope(name):
        seeds = tf.stack([sentence_keys, tf.fill(tf.shape(sentence_keys),
                                                 tf.cast(sampling.seed, tf.int64))], axis=1)
        state, sequence_length = beam_search.start(
            initial_state, num_samples, begin_token_id, scoring, sequence_length, max_lengths,
            source_mask, target_prefix, all_alive=True)
        return beam_search.search(
            lambda state, step: sample_step(update_fn, state, step, end_token_id, scoring,
                                            sampling),
            state._replace(seeds=seeds), sequence_length, end_token_id, scoring, compact=compact,
            sampling=True)
