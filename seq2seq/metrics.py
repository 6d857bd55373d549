"""Streaming evaluation metrics: token accuracy, perplexity and corpus BLEU.

Each function returns a `(value, update_op)` pair, the `tf.metrics` contract
that `EstimatorSpec.eval_metric_ops` expects: `update_op` runs once per dev
batch, `value` once at the end of the evaluation.
"""

import numpy as np
import sacrebleu
import tensorflow.compat.v1 as tf


def streaming_token_accuracy(batch_accuracy, num_tokens):
    """The fraction of target tokens whose most likely prediction is right.

    Args:
      batch_accuracy: scalar float32, the accuracy over one batch's tokens
        (`seq2seq.losses.batch_token_accuracy`).
      num_tokens: scalar float32, the tokens it is over; batches are weighted
        by it, so the result is a per-token figure over the whole dev set.
    Returns:
      (accuracy, update_op).
    """
    return tf.metrics.mean(batch_accuracy, weights=num_tokens, name="token_accuracy")


def perplexity(batch_nll, num_tokens):
    """exp of the mean negative log-likelihood per target token.

    Args:
      batch_nll: scalar float32, the mean -log p(reference token) over one
        batch's tokens, without label smoothing so that the figure is
        comparable across configs.
      num_tokens: scalar float32, the tokens it is over (the batch's weight).
    Returns:
      (perplexity, update_op).
    """
    mean_nll, update_op = tf.metrics.mean(batch_nll, weights=num_tokens, name="perplexity")
    return tf.exp(mean_nll), update_op


def ids_to_text(ids, lengths, decode_fn):
    """Detokenises a batch of token id sequences with a Python function.

    Args:
      ids: [batch, time] int32.
      lengths: [batch] int32, the tokens of each row to keep (the end token,
        when counted, is left for `decode_fn` to drop).
      decode_fn: function(list of ints) -> str, e.g. `Tokenizer.decode_target`.
    Returns:
      [batch] string tensor, UTF-8.
    """
    def decode_batch(batch_ids, batch_lengths):
        return np.array([decode_fn(row[:length].tolist()).encode("utf-8")
                         for row, length in zip(batch_ids, batch_lengths)], dtype=object)

    texts = tf.py_func(decode_batch, [ids, lengths], tf.string, stateful=False,
                       name="ids_to_text")
    texts.set_shape([None])
    return texts


def _string_accumulator(name):
    """A local [n] string variable, growing as sentences are appended."""
    return tf.Variable(
        tf.constant([], dtype=tf.string), trainable=False, name=name,
        collections=[tf.GraphKeys.LOCAL_VARIABLES, tf.GraphKeys.METRIC_VARIABLES],
        validate_shape=False)


def _sacrebleu(hypotheses, references):
    """Corpus BLEU of two aligned arrays of UTF-8 bytes, as float32."""
    hypotheses = [h.decode("utf-8") for h in hypotheses]
    references = [r.decode("utf-8") for r in references]
    if not hypotheses:
        return np.float32(0.0)
    return np.float32(sacrebleu.corpus_bleu(hypotheses, [references]).score)


def corpus_bleu(hypotheses_fn, references, max_sentences=0):
    """Corpus BLEU (sacrebleu, 13a tokenisation) of detokenised sentences.

    Hypothesis and reference strings accumulate in two local string variables;
    the value op scores the whole corpus at once, as BLEU must be (it is not an
    average of sentence scores).

    Args:
      hypotheses_fn: function() -> [batch] string tensor, the detokenised
        translations of the current batch. It is called inside a `tf.cond`, so
        the decoding it builds only runs while fewer than `max_sentences`
        sentences have been collected: the rest of the dev set costs no beam
        search.
      references: [batch] string tensor, the detokenised references.
      max_sentences: score at most this many sentences (the first ones seen);
        0 scores them all.
    Returns:
      (bleu, update_op), BLEU on the 0-100 scale.
    """
    with tf.name_scope("bleu"):
        stored_hypotheses = _string_accumulator("hypotheses")
        stored_references = _string_accumulator("references")

        def append():
            hypotheses = tf.concat([stored_hypotheses.value(), hypotheses_fn()], axis=0)
            all_references = tf.concat([stored_references.value(), references], axis=0)
            if max_sentences > 0:
                hypotheses = hypotheses[:max_sentences]
                all_references = all_references[:max_sentences]
            return tf.group(
                tf.assign(stored_hypotheses, hypotheses, validate_shape=False),
                tf.assign(stored_references, all_references, validate_shape=False))

        if max_sentences > 0:
            update_op = tf.cond(tf.size(stored_hypotheses) < max_sentences,
                                append, tf.no_op)
        else:
            update_op = append()
        bleu = tf.py_func(_sacrebleu, [stored_hypotheses, stored_references],
                          tf.float32, name="sacrebleu")
        bleu.set_shape([])
    return bleu, update_op
