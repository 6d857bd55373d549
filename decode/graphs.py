"""The decoder graphs of an encoded batch: the searches, teacher-forced scoring, their outputs."""

import collections

import numpy as np
import tensorflow.compat.v1 as tf

from data_pipeline.tokenizer import BOS_ID, EOS_ID, PAD_ID
from decode import greedy_search, rnn_beam_search, while_loop_beam_search
from decode import scoring as scoring_lib
from decode.sampling import Sampling, sample_search
from decode.scoring import Scoring, tracks_coverage

UNROLLED_LENGTH_STEP = 8  # the unrolled search is built for lengths rounded up to a multiple
# One sentence's beam, best first, without -inf hypotheses: target id lists (no end token) and
# scores; exact's proven and expansions; mbr's MbrResult (ids and scores: its candidates).
SearchResult = collections.namedtuple("SearchResult", "ids scores proven expansions mbr",
                                      defaults=(None, None, None))


Translation = collections.namedtuple(
    "Translation", "text score n_best unfamiliar trace proven expansions pieces expected_utility "
    "candidates utilities", defaults=(False,) + (None,) * 7)
Translation.__doc__ = """The best's text and score, the n-best `Hypothesis`es, whether the source
is unfamiliar, the docs/API.md trace (or None); exact's proven and expansions; the best's pieces;
mbr's expected utility, candidates and utilities (decode/mbr.py's `mbr_fields`)."""
Hypothesis = collections.namedtuple("Hypothesis", "text score pieces", defaults=(None,))
Hypothesis.__doc__ = """A translation's text, score and target pieces ("</s>" last), which
`Translator.score(..., target_pieces=)` scores to the same score."""


def fields_of(kind, options):
    """A namedtuple `kind` (Scoring, Sampling) of its fields in `options` (else defaults)."""
    return kind(**{name: options[name] for name in kind._fields if name in options})


def output_length_limit(source_length, decode_params, prefix_length=0):
    """The most target tokens (end token included) for a source of `source_length` tokens, in
    float32 as in the graph, raised to hold `prefix_length` forced pieces and the end token."""
    scaled = np.float32(decode_params["max_length_ratio"]) * np.float32(source_length)
    return max(int(np.ceil(scaled)) + decode_params["max_length_extra"], prefix_length + 1)


def output_length_limits(source_length, decode_params):
    """`output_length_limit` in the graph: [batch] int32 source lengths -> [batch] int32."""
    with tf.name_scope("output_length_limits"):
        scaled = tf.ceil(decode_params["max_length_ratio"] * tf.cast(source_length, tf.float32))
        return tf.cast(scaled, tf.int32) + decode_params["max_length_extra"]


def unrolled_length_bucket(max_source_length, decode_params, min_length=0):
    """The unrolled search's steps for a batch's longest source (at least `min_length`)."""
    length = max(output_length_limit(max_source_length, decode_params), min_length)
    return -(-length // UNROLLED_LENGTH_STEP) * UNROLLED_LENGTH_STEP


def search_encoded(model, encoder_output, source_length, decode_params, decoder, beam_width,
                   unrolled_length=None, trace=False, options=None, target_prefix=None,
                   max_lengths=None, constraints=None, protected_ids=None):
    """The n-best translations of an encoded batch, each within its sentence's length limit.

    Args:
      model, encoder_output: a `Seq2SeqModel` and its `encode(..., training=False)`.
      source_length: [batch] int32; decode_params: the config's "decode" dict.
      decoder: one of DECODERS but "exact"; beam_width: K (1 for greedy, the samples for sample).
      unrolled_length: the unrolled search's steps, else None; trace: also return the trace.
      options: decoding options over decode_params' (values or scalar tensors; the kind and n
        Python values); sample also needs "sentence_keys" ([batch] int64, decode/sampling.py).
      target_prefix: None or [batch, P] int32, each sentence's forced first pieces, -1 after.
      max_lengths: None (`output_length_limits`), or [batch] int32 each sentence's limit, which
        must hold its target prefix, its constraints and the end token (`output_length_limit`).
      constraints, protected_ids: the beam searches' (decode/beam_search.py), or None.
    Returns:
      ids [batch, K, time] int32, scores [batch, K] float32 best first, lengths [batch, K]
      int32 counting the end token, and with `trace` the trace dict.
    """
    params = dict(decode_params, **(options or {}))
    scoring = fields_of(Scoring, params)
    coverage = tracks_coverage(scoring)
    scope = "%s_beam%d" % (decoder, beam_width) + (
        "_len%d" % unrolled_length if unrolled_length else "") + ("_trace" if trace else "")
    with tf.name_scope(scope):  # e.g. unrolled_beam4_len24
        if max_lengths is None:
            max_lengths = output_length_limits(source_length, decode_params)    # [batch]
        update_fn, initial_state = model.beam_update_fn(encoder_output, beam_width,
                                                        with_attention=trace or coverage)
        common = dict(max_lengths=max_lengths, target_prefix=target_prefix,
                      source_mask=encoder_output.mask if coverage else None)
        constrained = dict(constraints=constraints, protected_ids=protected_ids)
        if decoder == "unrolled":
            return rnn_beam_search(update_fn, initial_state, unrolled_length, beam_width,
                                   BOS_ID, EOS_ID, scoring, trace=trace, **common, **constrained)
        max_length = tf.reduce_max(max_lengths, name="max_output_length")
        if decoder == "sample":
            return sample_search(update_fn, initial_state, max_length, beam_width, BOS_ID, EOS_ID,
                                 scoring, fields_of(Sampling, params), params["sentence_keys"],
                                 compact=True, **common)
        if decoder == "greedy":
            return greedy_search(update_fn, initial_state, max_length, BOS_ID, EOS_ID, scoring,
                                 trace=trace, compact=True, **common)
        return while_loop_beam_search(update_fn, initial_state, max_length, beam_width, BOS_ID,
                                      EOS_ID, scoring, trace=trace, compact=True, **common,
                                      **constrained)


def score_encoded(model, encoder_output, target_ids, target_length, scoring):
    """Teacher-forced scores of an encoded batch's targets.

    Args:
      model, encoder_output: a `Seq2SeqModel` and its `encode(..., training=False)`.
      target_ids: [batch, tgt_time] int32, the target pieces and the end token, 0-padded.
      target_length: [batch] int32, pieces counting the end token.
      scoring: a decode.scoring.Scoring (its blocking and minimum length unused).
    Returns:
      piece_log_probs [batch, tgt_time] float32 (0 after the end), log_probs, scores [batch].
    """
    with tf.name_scope("score"):
        begin = tf.fill([tf.shape(target_ids)[0], 1], BOS_ID)
        target_input = tf.concat([begin, target_ids[:, :-1]], axis=1)         # [b, t]
        logits, attention = model.teacher_forced_logits(encoder_output, target_input,
                                                        training=False, with_attention=True)
        mask = tf.sequence_mask(target_length, tf.shape(target_ids)[1], dtype=tf.float32)  # [b, t]
        piece_log_probs = mask * tf.gather(tf.nn.log_softmax(logits), target_ids, batch_dims=2)
        log_probs = tf.reduce_sum(piece_log_probs, axis=1)                     # [b]
        coverage = ()
        if tracks_coverage(scoring):  # attention over the target pieces, summed
            coverage = (tf.reduce_sum(attention * mask[..., None], axis=1)
                        + 1.0 - encoder_output.mask)                           # [b, src]
        return piece_log_probs, log_probs, scoring_lib.scores(log_probs, target_length, coverage,
                                                              scoring)


def pad_batch(sequences, pad_id=PAD_ID):
    """Lists of ids -> (ids [batch, max_len] int32 padded with pad_id, lengths [batch] int32)."""
    lengths = np.array([len(sequence) for sequence in sequences], np.int32)
    ids = np.full([len(sequences), lengths.max()], pad_id, np.int32)
    for row, sequence in enumerate(sequences):
        ids[row, :len(sequence)] = sequence
    return ids, lengths


def pad_constraints(constraints):
    """Per sentence a list of constraints (id lists) -> [batch, C, L] int32, -1 padded."""
    count = max(map(len, constraints))
    width = max([len(constraint) for given in constraints for constraint in given] + [0])
    padded = np.full([len(constraints), count, width], -1, np.int32)
    for row, given in enumerate(constraints):
        for index, constraint in enumerate(given):
            padded[row, index, :len(constraint)] = constraint
    return padded


def search_result(ids, scores, lengths):
    """A `SearchResult` from one sentence's ids [K, time], scores [K] and lengths [K]."""
    hypotheses, finite_scores = [], []
    for beam_ids, score, length in zip(ids, scores, lengths):
        if np.isfinite(score):
            tokens = beam_ids[:length].tolist()
            hypotheses.append(tokens[:-1] if tokens and tokens[-1] == EOS_ID else tokens)
            finite_scores.append(float(score))
    return SearchResult(hypotheses, finite_scores)


def sentence_trace(trace, row, source_ids, ids, scores, lengths, tokenizer):
    """docs/API.md's search trace of batch row `row` (source_ids unpadded; its ids [K, time],
    scores [K], lengths [K]) up to the step where every slot has finished."""
    pieces = tokenizer.target_pieces
    finite = np.isfinite(trace["scores"][row])                              # [time, K]
    done = np.all(trace["finished"][row] | ~finite, axis=1)                 # [time]
    steps = int(np.argmax(done)) + 1 if done.any() else len(done)
    return {
        "source_pieces": tokenizer.source_pieces(source_ids),
        "steps": [{"pieces": pieces(trace["token_ids"][row, step]),
                   "parents": trace["parent_ids"][row, step].tolist(),
                   "scores": [float(score) if ok else None for score, ok
                              in zip(trace["scores"][row, step], finite[step])],
                   "finished": trace["finished"][row, step].tolist()}
                  for step in range(steps)],
        "n_best": [{"pieces": pieces(ids[slot, :lengths[slot]]),
                    "attention": trace["attention"][row, slot, :lengths[slot],
                                                    :len(source_ids)].tolist()}
                   for slot in range(len(scores)) if np.isfinite(scores[slot])]}
