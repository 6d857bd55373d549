"""Beam search and greedy decoding: one scoring step, a Python loop and a tf.while_loop.

Each step extends every alive hypothesis by every token, carries every finished one over
unchanged as its only candidate and keeps the best `beam_width`; the tokens are rebuilt at
the end by following the parent slots back (decode/backtrack.py). tests/numpy_beam_search.py
states the same contract in plain NumPy, one sentence at a time.

Shapes in the comments: b sentences, k slots of a sentence's beam (its width), v target
vocabulary, r = min(k, v) candidates each slot offers, t steps, src source pieces.
"""

import collections
import functools
import numbers

import numpy as np
import tensorflow.compat.v1 as tf

from decode import backtrack, compaction, diverse
from decode import scoring as scoring_lib
from seq2seq.common import batch_free_shape_invariants, batch_gather, get_shape, tile_beams

# Each [batch, beam]; coverage [batch, beam, src] and tokens [batch, beam, time] only where
# an option needs them (decode/scoring.py), else ().
Beam = collections.namedtuple("Beam", ["log_probs", "lengths", "finished", "coverage", "tokens"],
                              defaults=((), ()))


def _check(ok, message, *args):
    if not ok:
        raise ValueError(message % args)


def beam_scores(beam, scoring):
    """The contract's scores [batch, beam] of a Beam under a decode.scoring.Scoring."""
    return scoring_lib.scores(beam.log_probs, beam.lengths, beam.coverage, scoring)


def top_k(values, k):
    """tf.nn.top_k(values, k) over chunks of the last axis: the same values, indices and ties.

    Args:
      values: [..., n] float (n unknown: tf.nn.top_k); k: a Python int <= n, or a tensor.
    Returns:
      (top_values [..., k], top_indices [..., k] int32), best first.
    """
    n = values.shape.as_list()[-1]
    if not isinstance(k, int) or n is None:
        return tf.nn.top_k(values, k)
    if k == 1:  # greedy: the argmax, the first of ties as top_k
        best = tf.argmax(values, -1, output_type=tf.int32)[..., None]
        return tf.reduce_max(values, -1, keepdims=True), best
    sizes = [size for size in range(2, n) if n % size == 0]
    size = min(sizes, key=lambda size: n // size + k * size, default=None)
    if size is None or 4 * (n // size + k * size) > n:
        return tf.nn.top_k(values, k)
    shape, batch_dims = get_shape(values), values.shape.ndims - 1
    chunks = tf.reshape(values, shape[:-1] + [n // size, size])                # [..., chunks, size]
    _, best_chunks = tf.nn.top_k(tf.reduce_max(chunks, axis=-1), k)           # [..., k]
    best_chunks = tf.sort(best_chunks, axis=-1)  # index order keeps tf.nn.top_k's tie order
    candidates = tf.gather(chunks, best_chunks, batch_dims=batch_dims)         # [..., k, size]
    top_values, positions = tf.nn.top_k(tf.reshape(candidates, shape[:-1] + [k * size]), k)
    chunk_ids = tf.gather(best_chunks, positions // size, batch_dims=batch_dims)  # [..., k]
    return top_values, chunk_ids * size + positions % size


def select_best(logits, beam, step, end_token_id, scoring, max_lengths=None, attention=None,
                target_prefix=None):
    """Scores every one-token continuation and keeps the best `beam_width` (WALKTHROUGH 7).

    Args:
      logits: [b, k, v] float32, unnormalised; beam: the Beam before this step.
      step: int or scalar int32 tensor, tokens generated before this step; end_token_id: int.
      scoring: a decode.scoring.Scoring, or GNMT's alpha alone.
      max_lengths: None or [b] int32: at its limit a sentence's hypotheses must end.
      attention: [b, k, src] float32, this step's attention, when the Beam has coverage.
      target_prefix: None or [b, p] int32, pieces then -1: inside its prefix a sentence's
        hypotheses take its next piece, at the piece's own log-probability.
    Returns:
      (beam, token_ids [b, k] int32, parent_ids [b, k] int32), the new Beam best first
      (within each diverse group: decode/diverse.py).
    """
    scoring = scoring_lib.as_scoring(scoring)
    with tf.name_scope("select_best"):
        batch_size, beam_width = get_shape(beam.log_probs)
        vocab_size = get_shape(logits)[2]
        row_width = (tf.minimum(beam_width, vocab_size) if isinstance(vocab_size, tf.Tensor)
                     else min(beam_width, vocab_size))                         # r
        # A slot's log-probability plus each token's log-softmax: the k * v candidates, of which
        # only each slot's r best can reach the best k.
        log_normaliser = tf.reduce_logsumexp(logits, axis=-1, keepdims=True)  # [b, k, 1]
        allowed = scoring_lib.allowed_logits(logits, step, end_token_id, scoring, beam.tokens,
                                             target_prefix)
        row_logits, row_tokens = _end_at_limit(*top_k(allowed, row_width), logits, step,
                                               end_token_id, max_lengths)      # [b, k, r]
        alive_log_probs = beam.log_probs[..., None] + (row_logits - log_normaliser)  # [b, k, r]
        if beam_width == 1:  # greedy: the row's best token is the beam, nothing to rank
            ids = tf.where_v2(beam.finished, end_token_id, row_tokens[..., 0])         # [b, 1]
            log_probs = tf.where_v2(beam.finished, beam.log_probs, alive_log_probs[..., 0])
            return extend(beam, None, ids, log_probs, step, end_token_id, attention), ids, (
                tf.zeros_like(ids))
        log_probs, scores, tokens = _carry_finished(beam, alive_log_probs, row_tokens, step,
                                                    end_token_id, scoring, attention)
        # The best k of the k * r by score (after the length penalty): candidate i extends
        # slot i // r by tokens[i].
        flat = [batch_size, -1]                                                 # [b, k * r]
        if scoring.diverse_beam_groups == 1:
            _, best = tf.nn.top_k(tf.reshape(scores, flat), k=beam_width)      # [b, k]
        else:
            fresh = tf.logical_and(tf.logical_not(beam.finished)[..., None], scores > -np.inf)
            best = diverse.group_best(scores, tf.where_v2(fresh, tokens, -1),
                                      scoring.diverse_beam_groups, scoring.diverse_beam_strength)
        parent_ids = best // row_width                                          # [b, k]
        token_ids = batch_gather(tf.reshape(tokens, flat), best)                # [b, k]
        log_probs = batch_gather(tf.reshape(log_probs, flat), best)             # [b, k]
        return (extend(beam, parent_ids, token_ids, log_probs, step, end_token_id, attention),
                token_ids, parent_ids)


def _end_at_limit(row_logits, row_tokens, logits, step, end_token_id, max_lengths):
    """The candidates [b, k, r]; at a sentence's limit the end token alone, at its own logit."""
    if max_lengths is None:
        return row_logits, row_tokens
    at_limit = tf.greater_equal(step + 1, max_lengths)[:, None, None]          # [b, 1, 1]
    first_slot = tf.equal(tf.range(get_shape(row_tokens)[2]), 0)               # [r]
    only_end = tf.where_v2(first_slot, logits[:, :, end_token_id:end_token_id + 1], -np.inf)
    return (tf.where_v2(at_limit, only_end, row_logits),                      # [b, k, r]
            tf.where_v2(at_limit, end_token_id, row_tokens))


def _carry_finished(beam, alive_log_probs, row_tokens, step, end_token_id, scoring, attention):
    """The candidates' (log_probs, scores, tokens) [b, k, r], a finished slot's only itself."""
    coverage = beam.coverage
    if _tracked(coverage):  # every continuation of a row has the row's attention
        coverage = (coverage + attention)[:, :, None, :]                       # [b, k, 1, src]
    alive_scores = scoring_lib.scores(alive_log_probs, step + 1, coverage, scoring)  # [b, k, r]
    first_slot = tf.equal(tf.range(get_shape(row_tokens)[2]), 0)               # [r]
    finished = beam.finished[..., None]                                        # [b, k, 1]
    carried_log_probs = tf.where_v2(first_slot, beam.log_probs[..., None], -np.inf)  # [b, k, r]
    carried_scores = tf.where_v2(first_slot, beam_scores(beam, scoring)[..., None], -np.inf)
    return (tf.where_v2(finished, carried_log_probs, alive_log_probs),
            tf.where_v2(finished, carried_scores, alive_scores),
            tf.where_v2(finished, end_token_id, row_tokens))


def _tracked(value):
    """Whether a Beam field is carried (a tensor) rather than left out (())."""
    return not isinstance(value, tuple)


def extend(beam, parent_ids, token_ids, log_probs, step, end_token_id, attention):
    """The Beam after every slot took `token_ids` [batch, beam] from its parent slot
    (`parent_ids`, or None for a beam of one), reaching `log_probs` [batch, beam]."""
    def from_parent(values):
        return values if parent_ids is None else batch_gather(values, parent_ids)
    parent_finished = from_parent(beam.finished)                               # [b, k]
    coverage, tokens = beam.coverage, beam.tokens
    if _tracked(coverage):  # a finished hypothesis attends no more
        coverage = from_parent(coverage + tf.where_v2(beam.finished[..., None], 0.0, attention))
    if _tracked(tokens):
        tokens = tf.concat([from_parent(tokens), token_ids[..., None]], axis=2)  # [b, k, t + 1]
    return Beam(log_probs=log_probs,
                lengths=tf.where_v2(parent_finished, from_parent(beam.lengths), step + 1),
                finished=tf.logical_or(tf.equal(token_ids, end_token_id),
                                       tf.equal(log_probs, -np.inf)),
                coverage=coverage, tokens=tokens)


def _start(initial_state, beam_width, begin_token_id, max_lengths, scoring, source_mask,
           target_prefix, sequence_length, all_alive=False):
    """The checked arguments, the tiled state [b, k, ...], the first ids [b, k] and Beam."""
    sequence_length = _checked_length(sequence_length)
    _check(isinstance(beam_width, numbers.Integral) and beam_width >= 1,
           "beam_width must be an int >= 1, got %r", beam_width)
    _check(source_mask is not None or not scoring_lib.tracks_coverage(scoring),
           "a coverage penalty needs the source_mask")
    groups = 1 if all_alive else diverse.checked_groups(scoring, beam_width)  # sampling: 1
    with tf.name_scope("start"):
        state = tf.nest.map_structure(lambda s: tile_beams(tf.convert_to_tensor(s), beam_width),
                                      initial_state)                           # [b, k, ...]
        batch_size = get_shape(tf.nest.flatten(state)[0])[0]
        ids = tf.fill([batch_size, beam_width], begin_token_id)               # [b, k]
        # Each diverse group's first slot starts alive, or every slot: no duplicate first tokens.
        alive = (np.arange(beam_width) % (beam_width // groups) == 0) | all_alive  # [k]
        beam = Beam(log_probs=tf.tile(tf.where_v2(alive, 0.0, -np.inf)[None], [batch_size, 1]),
                    lengths=tf.zeros([batch_size, beam_width], tf.int32),
                    finished=tf.tile(tf.logical_not(alive)[None], [batch_size, 1]),
                    coverage=scoring_lib.initial_coverage(source_mask, beam_width)
                    if scoring_lib.tracks_coverage(scoring) else (),
                    tokens=tf.zeros([batch_size, beam_width, 0], tf.int32)
                    if scoring.no_repeat_ngram_size else ())
    if max_lengths is not None:
        max_lengths = tf.convert_to_tensor(max_lengths)  # one per sentence, never broadcast
        size, shape = max_lengths.shape.num_elements(), max_lengths.shape
        _check(max_lengths.dtype.is_integer and shape.ndims in (None, 1) and (
            None in (size, tf.get_static_value(batch_size)) or size == batch_size),
            "max_lengths must be [batch] integers, got %s %s", max_lengths.dtype.name, shape)
        with tf.name_scope("max_lengths"):
            one_each = tf.debugging.assert_equal(tf.size(max_lengths), batch_size,
                                                 message="max_lengths: one per sentence")
            with tf.control_dependencies([one_each]):
                max_lengths = tf.cast(tf.identity(max_lengths), tf.int32)      # [b]
    if target_prefix is not None:
        target_prefix, prefix_lengths = scoring_lib.checked_prefix(target_prefix, batch_size,
                                                                   sequence_length)  # [b, p], [b]
        if max_lengths is not None:  # room for the prefix and the end token
            max_lengths = tf.maximum(max_lengths, prefix_lengths + 1)
    return sequence_length, state, ids, beam, max_lengths, target_prefix


def _checked_length(sequence_length):
    """sequence_length as a Python int or scalar int32 tensor, >= 1 (a tensor: when run)."""
    if not isinstance(sequence_length, tf.Tensor):
        _check(isinstance(sequence_length, numbers.Integral) and sequence_length >= 1,
               "sequence_length must be an int >= 1 or a tensor, got %r", sequence_length)
        return sequence_length
    sequence_length = tf.cast(sequence_length, tf.int32)
    positive = tf.debugging.assert_positive(sequence_length, message="sequence_length must be >= 1")
    with tf.control_dependencies([positive]):
        return tf.identity(sequence_length)


def _advance(update_fn, state, ids, beam, step, end_token_id, scoring, max_lengths, trace,
             select, tiled_state):
    """One step: the model, `select` (select_best's signature), the state reordered; returns
    (state, beam, record)."""
    new_state, logits = update_fn(state, ids)                                 # [b, k, vocab]
    _check(logits.shape.ndims in (None, 3), "logits must be [batch, beam, vocab]: %s", logits.shape)
    vocab_size = logits.shape.as_list()[-1] if logits.shape.ndims else None  # never ends if out
    _check(0 <= end_token_id < (vocab_size or np.inf), "end_token_id %r outside vocab %s",
           end_token_id, vocab_size)
    beam, token_ids, parent_ids = select(logits, beam, step, end_token_id, scoring, max_lengths,
                                         new_state.get("attention") if _tracked(beam.coverage)
                                         else None)
    if parent_ids is not None and ids.shape[1] != 1:  # a beam of one has only its own parent
        # An entry update_fn handed back as it is in tiled_state is the same in every slot.
        new_state = tf.nest.map_structure(
            lambda new, tiled: new if new is tiled else batch_gather(new, parent_ids),
            new_state, tiled_state)
    record = {"token_ids": token_ids, "parent_ids": parent_ids}               # [b, k] each
    if trace:
        record.update(scores=beam_scores(beam, scoring), finished=beam.finished)
        if isinstance(new_state, dict) and "attention" in new_state:
            record["attention"] = new_state["attention"]                       # [b, k, src]
    return new_state, beam, record


def rnn_beam_search(update_fn, initial_state, sequence_length, beam_width, begin_token_id,
                    end_token_id, length_penalty=0.0, name="rnn", max_lengths=None, trace=False,
                    source_mask=None, target_prefix=None):
    """Beam search unrolled in Python: one graph step per token (docs/API.md's contract).

    Args:
      update_fn: (state nested [batch, beam, ...], ids [batch, beam] int32) -> (new_state,
        logits [batch, beam, vocab]); a coverage penalty needs the state's "attention"
        [batch, beam, src].
      initial_state: nested [batch, ...] tensors, tiled over the beam.
      sequence_length: Python int >= 1, the most tokens; beam_width: Python int >= 1.
      begin_token_id, end_token_id: ints; name: name scope.
      length_penalty: GNMT's alpha, or a decode.scoring.Scoring with every decoding option.
      max_lengths: None or [batch] ints, each sentence's most tokens, end included.
      trace: also return what every step kept (docs/API.md "HTTP API", the trace).
      source_mask: [batch, src] float32, 1 on source pieces: needed by a coverage penalty.
      target_prefix: None or [batch, p] ints, each sentence's forced first pieces padded with
        -1, each taken at its log-probability; a sentence's limit is raised to hold its
        prefix and the end token; sequence_length must exceed every prefix.
    Returns:
      ids [batch, beam, time] int32 (end token repeated after it), scores [batch, beam]
      float32 best first, lengths [batch, beam] int32 (end token counted); with `trace` also
      a dict of [batch, time, beam] "token_ids", "parent_ids" (int32), "scores", "finished"
      after each step, and "attention" [batch, beam, time, src] along each hypothesis when
      the state holds an "attention".
    """
    scoring = scoring_lib.as_scoring(length_penalty)
    with tf.name_scope(name):
        sequence_length, state, ids, beam, max_lengths, target_prefix = _start(
            initial_state, beam_width, begin_token_id, max_lengths, scoring, source_mask,
            target_prefix, sequence_length)
        select = functools.partial(select_best, target_prefix=target_prefix)
        tiled_state, records = state, []
        for step in range(sequence_length):
            with tf.name_scope("step_%d" % step):
                state, beam, record = _advance(update_fn, state, ids, beam, step, end_token_id,
                                               scoring, max_lengths, trace, select, tiled_state)
            ids = record["token_ids"]                                          # [b, k]
            records.append(record)
        history = {key: tf.stack([record[key] for record in records]) for key in records[0]}
        return backtrack.results(history, beam_scores(beam, scoring), beam.lengths,
                                 end_token_id, trace, sort=scoring.diverse_beam_groups > 1)


def while_loop_beam_search(update_fn, initial_state, sequence_length, beam_width,
                           begin_token_id, end_token_id, length_penalty=0.0, name="while_loop",
                           max_lengths=None, trace=False, source_mask=None, compact=False,
                           target_prefix=None):
    """Beam search in a tf.while_loop that stops once every hypothesis has finished.

    Args and Returns as `rnn_beam_search`, but `sequence_length` may also be a scalar int32
    tensor, and time is the number of steps run. `compact`: a sentence's rows leave the loop
    once all its hypotheses have finished (decode/compaction.py); update_fn must then read
    per-sentence values from its state only, never from its closure.
    """
    with tf.name_scope(name):
        return search_loop(update_fn, initial_state, sequence_length, beam_width, begin_token_id,
                           end_token_id, scoring_lib.as_scoring(length_penalty), max_lengths,
                           trace, source_mask, compact=compact, target_prefix=target_prefix)


def search_loop(update_fn, initial_state, sequence_length, width, begin_token_id, end_token_id,
                scoring, max_lengths, trace, source_mask, select=None, sampling=False,
                compact=False, select_args=None, target_prefix=None):
    """The tf.while_loop of `while_loop_beam_search` (Args and Returns as it), choosing each
    step's tokens with `select` (select_best's signature; None: select_best). `sampling`: every
    slot starts alive and keeps its own parent, the results sorted best first. `select_args`:
    {keyword: [batch, ...]}, per-sentence values passed to `select`, the live rows' only."""
    sequence_length, state, ids, beam, max_lengths, target_prefix = _start(
        initial_state, width, begin_token_id, max_lengths, scoring, source_mask, target_prefix,
        sequence_length, all_alive=sampling)
    if target_prefix is not None:  # select's per-sentence values, the live rows' if compact
        select_args = dict(select_args or {}, target_prefix=target_prefix)
    keys = {"token_ids": tf.int32}
    if (width > 1 and not sampling) or trace:  # else every slot is its own parent
        keys["parent_ids"] = tf.int32
    if trace:
        keys.update(scores=tf.float32, finished=tf.bool)
        if isinstance(initial_state, dict) and "attention" in initial_state:
            keys["attention"] = tf.float32
    history = {key: tf.TensorArray(dtype, size=0, dynamic_size=True, name=key)
               for key, dtype in keys.items()}
    batch_size = get_shape(ids)[0]
    # compact: each live row's position in the batch, and the batch's Beam ([batch, beam]).
    batch = (tf.range(batch_size), beam._replace(tokens=())) if compact else ()

    def not_done(step, state, ids, beam, history, batch):
        return tf.logical_and(step < sequence_length, ~tf.reduce_all(beam.finished))

    def body(step, state, ids, beam, history, batch):
        limits, per_sentence = max_lengths, select_args or {}
        if compact:  # the live rows' [live, ...]
            per_sentence = {name: tf.gather(values, batch[0])
                            for name, values in per_sentence.items()}
            limits = None if max_lengths is None else tf.gather(max_lengths, batch[0])
        chosen = functools.partial(select or select_best, **per_sentence)
        state, beam, record = _advance(update_fn, state, ids, beam, step, end_token_id,
                                       scoring, limits, trace, chosen, state)
        ids = record["token_ids"]                                              # [live, k]
        if compact:
            rows, batch_beam = batch
            batch_beam = compaction.scatter_rows(batch_beam, rows, beam._replace(tokens=()))
            record.update(compaction.batch_record(record, rows, batch_size, end_token_id))
            if trace:
                record.update(scores=beam_scores(batch_beam, scoring), finished=batch_beam.finished)
            state, ids, beam, rows = compaction.drop_decided((state, ids, beam, rows), beam)
            batch = (rows, batch_beam)
        history = {key: history[key].write(step, record[key]) for key in history}
        return step + 1, state, ids, beam, history, batch

    loop_vars = (tf.constant(0), state, ids, beam, history, batch)
    invariants = list(batch_free_shape_invariants(loop_vars))
    if _tracked(beam.tokens):  # [batch, beam, time]: grows a piece a step
        invariants[3] = invariants[3]._replace(tokens=tf.TensorShape([None, width, None]))
    _, _, _, beam, history, batch = tf.while_loop(not_done, body, loop_vars,
                                                  shape_invariants=tuple(invariants),
                                                  back_prop=False, name="search")
    history = {key: array.stack() for key, array in history.items()}            # [t, b, k, ...]
    beam = batch[1] if compact else beam
    return backtrack.results(history, beam_scores(beam, scoring), beam.lengths, end_token_id,
                             trace, sort=sampling or scoring.diverse_beam_groups > 1)


def greedy_search(update_fn, initial_state, sequence_length, begin_token_id, end_token_id,
                  length_penalty=0.0, name="greedy", max_lengths=None, trace=False,
                  source_mask=None, compact=False, target_prefix=None):
    """Greedy decoding: `while_loop_beam_search` with a beam of one (Args and Returns as it,
    without `beam_width`; every output's beam dimension is 1)."""
    scoring = scoring_lib.as_scoring(length_penalty)._replace(diverse_beam_groups=1)
    return while_loop_beam_search(update_fn, initial_state, sequence_length, 1, begin_token_id,
                                  end_token_id, scoring, name, max_lengths, trace,
                                  source_mask, compact, target_prefix)
