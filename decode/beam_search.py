"""Beam search and greedy decoding: one step, a Python loop of it and a tf.while_loop of it
(docs/WALKTHROUGH.md sections 7 and 8; the same contract in NumPy: tests/numpy_beam_search.py).

Shapes in the comments (also in compaction.py, diverse.py, sampling.py): b sentences (the
undecided ones while compacting), k slots of a sentence's beam (its width), v target
vocabulary, r = min(k, v) candidates a slot offers, t steps, src source pieces, p prefix pieces.
"""

import numbers
from typing import Any, NamedTuple

import numpy as np
import tensorflow.compat.v1 as tf

from decode import backtrack, compaction, diverse
from decode import constraints as constraints_lib
from decode import scoring as scoring_lib
from seq2seq.common import batch_free_shape_invariants, batch_gather, get_shape, tile_beams


class BeamState(NamedTuple):
    """A search between two steps; () in a field no option asks for."""
    log_probs: Any           # [b, k] float32, log P(hypothesis); -inf: the slot holds none
    lengths: Any             # [b, k] int32, its tokens, the end token included
    finished: Any            # [b, k] bool, it took the end token (or the slot holds none)
    coverage: Any = ()       # [b, k, src] float32, attention received, padding 1 (coverage)
    ids: Any = ()            # [b, k] int32, its last token: the model's next input
    model: Any = ()          # nested [b, k, ...], update_fn's state
    tokens: Any = ()         # [b, k, t] int32, its tokens (repetition blocking)
    max_lengths: Any = ()    # [b] int32, a sentence's most tokens, the end token included
    target_prefix: Any = ()  # [b, p] int32, a sentence's forced first pieces, then -1
    seeds: Any = ()          # [b, 2] int64, a sentence's sampling seed (decode/sampling.py)
    constraints: Any = ()    # decode.constraints.Constraints [b, C, ...], a sentence's constraints
    progress: Any = ()       # [b, k, C] int32, its progress on each (decode/constraints.py)
    blocked_ids: Any = ()    # [b, P] int32, -1 padded: pieces no hypothesis takes (keep mode
                             # with no constraint in the batch: the protected pieces)

    def hypotheses(self):
        """The fields that the results and the trace read."""
        return BeamState(self.log_probs, self.lengths, self.finished, self.coverage)


def carried(field):
    """Whether a BeamState field is carried (a tensor) rather than left out (())."""
    return not isinstance(field, tuple)


def _check(ok, message, *args):
    if not ok:
        raise ValueError(message % args)


def beam_step(update_fn, state, step, end_token_id, scoring):
    """One step of the beam search, in docs/WALKTHROUGH.md section 7's order.

    Args:
      update_fn: (model state nested [b, k, ...], ids [b, k]) -> (model state, logits [b, k, v]).
      state: the BeamState before the step; step: int or scalar int32 tensor, the tokens so far.
      end_token_id: int; scoring: a decode.scoring.Scoring.
    Returns:
      (the BeamState after the step, best first (within each diverse group: decode/diverse.py),
      parent_ids [b, k] int32: the slot each slot extends).
    """
    model, logits = model_logits(update_fn, state, end_token_id)               # [b, k, v]
    batch_size, beam_width = get_shape(state.log_probs)
    vocab_size = get_shape(logits)[2]
    row_width = (tf.minimum(beam_width, vocab_size) if isinstance(vocab_size, tf.Tensor)
                 else min(beam_width, vocab_size))                              # r
    # Score the candidates: a slot's log-probability plus each allowed token's log-softmax. Of
    # the k * v only each slot's r best can reach the best k; at its limit a sentence may only
    # end, at the end token's own log-probability.
    log_normaliser = tf.reduce_logsumexp(logits, axis=-1, keepdims=True)      # [b, k, 1]
    allowed = scoring_lib.allowed_logits(logits, step, end_token_id, scoring, state.tokens,
                                         state.target_prefix)                  # [b, k, v]
    constrained = carried(state.progress)
    if constrained:  # the end token waits for the constraints; keep mode's protected pieces
        allowed = tf.where_v2(constraints_lib.blocked(state.constraints, state.progress,
                                                      vocab_size, end_token_id), -np.inf, allowed)
    elif carried(state.blocked_ids):  # and nothing to keep: no protected piece, no banks
        allowed = tf.where_v2(scoring_lib.vocab_mask(state.blocked_ids[:, None], vocab_size),
                              -np.inf, allowed)
    row_logits, row_tokens = top_k(allowed, row_width)                         # [b, k, r]
    if constrained:  # and each unmet constraint's next piece: r becomes r + C
        row_logits, row_tokens = constraints_lib.with_next_pieces(
            row_logits, row_tokens, allowed, state.constraints, state.progress)
        row_width = get_shape(row_tokens)[2]
    first = tf.equal(tf.range(row_width), 0)  # [r]: a slot's best, a finished slot's only
    if carried(state.max_lengths):
        at_limit = tf.greater_equal(step + 1, state.max_lengths)[:, None, None]  # [b, 1, 1]
        only_end = tf.where_v2(first, logits[:, :, end_token_id:end_token_id + 1], -np.inf)
        row_logits = tf.where_v2(at_limit, only_end, row_logits)               # [b, k, r]
        row_tokens = tf.where_v2(at_limit, end_token_id, row_tokens)           # [b, k, r]
    log_probs = state.log_probs[..., None] + (row_logits - log_normaliser)     # [b, k, r]
    if constrained:  # ending with a constraint unmet (at the limit) leaves no hypothesis
        ends_unmet = tf.logical_and(tf.equal(row_tokens, end_token_id), constraints_lib.unmet(
            state.constraints, state.progress)[..., None])
        log_probs = tf.where_v2(ends_unmet, -np.inf, log_probs)                # [b, k, r]
    if beam_width == 1 and not constrained:  # greedy: the slot's best token is the beam
        token_ids = tf.where_v2(state.finished, end_token_id, row_tokens[..., 0])   # [b, 1]
        log_probs = tf.where_v2(state.finished, state.log_probs, log_probs[..., 0])  # [b, 1]
        return (extend(state, model, token_ids, log_probs, step, end_token_id),
                tf.zeros_like(token_ids))
    # Carry the finished: a finished slot's one candidate is itself (its first), unchanged.
    coverage = state.coverage
    if carried(coverage):  # every continuation of a slot has the slot's attention
        coverage = (coverage + model["attention"])[:, :, None, :]              # [b, k, 1, src]
    scores = scoring_lib.scores(log_probs, step + 1, coverage, scoring)        # [b, k, r]
    finished = state.finished[..., None]                                        # [b, k, 1]
    finished_scores = tf.where_v2(first, beam_scores(state, scoring)[..., None], -np.inf)
    scores = tf.where_v2(finished, finished_scores, scores)                    # [b, k, r]
    log_probs = tf.where_v2(finished, tf.where_v2(first, state.log_probs[..., None], -np.inf),
                            log_probs)                                          # [b, k, r]
    tokens = tf.where_v2(finished, end_token_id, row_tokens)                   # [b, k, r]
    # Take the best k of the k * r by score (diverse: each group's best k / G): candidate i
    # extends slot i // r by tokens[i].
    flat = [batch_size, -1]                                                     # [b, k * r]
    progress = state.progress
    if constrained:  # dynamic beam allocation: round-robin over the banks
        best, progress = constraints_lib.choose(scores, tokens, state.constraints,
                                                state.progress, end_token_id, beam_width)
    elif scoring.diverse_beam_groups == 1:
        _, best = tf.nn.top_k(tf.reshape(scores, flat), k=beam_width)          # [b, k]
    else:  # the groups count only the tokens of alive, possible hypotheses
        fresh = tf.logical_and(tf.logical_not(finished), scores > -np.inf)    # [b, k, r]
        best = diverse.group_best(scores, tf.where_v2(fresh, tokens, -1),
                                  scoring.diverse_beam_groups, scoring.diverse_beam_strength)
    parent_ids = best // row_width                                              # [b, k]
    token_ids = batch_gather(tf.reshape(tokens, flat), best)                    # [b, k]
    log_probs = batch_gather(tf.reshape(log_probs, flat), best)                 # [b, k]
    # Extend: the new state, every slot from its parent.
    return (extend(state, model, token_ids, log_probs, step, end_token_id, parent_ids)._replace(
        progress=progress), parent_ids)


def extend(state, model, token_ids, log_probs, step, end_token_id, parent_ids=None):
    """The BeamState after every slot took `token_ids` [b, k] from its parent slot (`parent_ids`
    [b, k]; None: its own), reaching `log_probs` [b, k]; `model`: update_fn's new state."""
    def from_parent(values):
        return values if parent_ids is None else batch_gather(values, parent_ids)
    coverage, tokens = state.coverage, state.tokens
    if carried(coverage):  # a finished hypothesis attends no more
        coverage = from_parent(coverage + tf.where_v2(state.finished[..., None], 0.0,
                                                      model["attention"]))     # [b, k, src]
    if carried(tokens):
        tokens = tf.concat([from_parent(tokens), token_ids[..., None]], axis=2)  # [b, k, t + 1]
    # An entry update_fn hands back as it got it is the same in every slot: never reordered.
    model = tf.nest.map_structure(lambda new, old: new if new is old else from_parent(new),
                                  model, state.model)
    return state._replace(
        log_probs=log_probs, ids=token_ids, model=model, coverage=coverage, tokens=tokens,
        lengths=tf.where_v2(from_parent(state.finished), from_parent(state.lengths), step + 1),
        finished=tf.logical_or(tf.equal(token_ids, end_token_id), tf.equal(log_probs, -np.inf)))


def model_logits(update_fn, state, end_token_id):
    """update_fn on the slots' last tokens: (the model's new state, logits [b, k, v])."""
    model, logits = update_fn(state.model, state.ids)
    _check(logits.shape.ndims in (None, 3), "logits must be [batch, beam, vocab]: %s", logits.shape)
    vocab_size = logits.shape.as_list()[-1] if logits.shape.ndims else None  # never ends if out
    _check(0 <= end_token_id < (vocab_size or np.inf), "end_token_id %r outside vocab %s",
           end_token_id, vocab_size)
    return model, logits


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


def beam_scores(state, scoring):
    """The contract's scores [b, k] of a BeamState under a decode.scoring.Scoring."""
    return scoring_lib.scores(state.log_probs, state.lengths, state.coverage, scoring)


def start(initial_state, beam_width, begin_token_id, scoring, sequence_length, max_lengths=None,
          source_mask=None, target_prefix=None, all_alive=False, constraints=None,
          protected_ids=None):
    """A search's first BeamState [b, k] and its `checked_length`, its arguments checked (as
    rnn_beam_search's); each diverse group's first slot starts alive, or with `all_alive`
    (sampling) every slot, so that no two slots take the same first token."""
    sequence_length = checked_length(sequence_length)
    _check(isinstance(beam_width, numbers.Integral) and beam_width >= 1,
           "beam_width must be an int >= 1, got %r", beam_width)
    _check(source_mask is not None or not scoring_lib.tracks_coverage(scoring),
           "a coverage penalty needs the source_mask")
    groups = 1 if all_alive else diverse.checked_groups(scoring, beam_width)
    with tf.name_scope("start"):
        model = tf.nest.map_structure(lambda s: tile_beams(tf.convert_to_tensor(s), beam_width),
                                      initial_state)                           # [b, k, ...]
        batch_size = get_shape(tf.nest.flatten(model)[0])[0]
        alive = (np.arange(beam_width) % (beam_width // groups) == 0) | all_alive  # [k]
        state = BeamState(
            log_probs=tf.tile(tf.where_v2(alive, 0.0, -np.inf)[None], [batch_size, 1]),
            lengths=tf.zeros([batch_size, beam_width], tf.int32),
            finished=tf.tile(tf.logical_not(alive)[None], [batch_size, 1]),
            coverage=tf.tile((1.0 - tf.cast(source_mask, tf.float32))[:, None, :],
                             [1, beam_width, 1]) if scoring_lib.tracks_coverage(scoring) else (),
            ids=tf.fill([batch_size, beam_width], begin_token_id), model=model,
            tokens=tf.zeros([batch_size, beam_width, 0], tf.int32)
            if scoring.no_repeat_ngram_size else ())
    if max_lengths is not None:
        max_lengths = tf.convert_to_tensor(max_lengths)  # one per sentence, never broadcast
        _check(max_lengths.dtype.is_integer and max_lengths.shape.is_compatible_with(
            [tf.get_static_value(batch_size)]), "max_lengths must be [batch] integers, got %s %s",
            max_lengths.dtype.name, max_lengths.shape)
        with tf.name_scope("max_lengths"):
            one_each = tf.debugging.assert_equal(tf.size(max_lengths), batch_size,
                                                 message="max_lengths: one per sentence")
            with tf.control_dependencies([one_each]):
                state = state._replace(max_lengths=tf.cast(tf.identity(max_lengths), tf.int32))
    if target_prefix is not None:
        target_prefix, prefix_lengths = scoring_lib.checked_pieces(
            target_prefix, "target_prefix", ("batch", "pieces"), batch_size, sequence_length,
            "sequence_length must exceed every prefix (room for the end token)")  # [b, p], [b]
        state = state._replace(target_prefix=target_prefix)
        if carried(state.max_lengths):  # room for the prefix and the end token
            state = state._replace(max_lengths=tf.maximum(state.max_lengths, prefix_lengths + 1))
    if constraints is not None:  # every hypothesis ends by sequence_length: met, or -inf
        _check(groups == 1, "constraints cannot be combined with diverse beam groups")
        limits = (tf.minimum(state.max_lengths, sequence_length) if carried(state.max_lengths)
                  else tf.fill([batch_size], sequence_length))                 # [b]
        checked, progress = constraints_lib.start(constraints, limits, beam_width, protected_ids)
        state = state._replace(constraints=checked, progress=progress, max_lengths=limits)
    elif protected_ids is not None:
        state = state._replace(blocked_ids=tf.cast(protected_ids, tf.int32))
    return state, sequence_length


def checked_length(sequence_length):
    """sequence_length as a Python int or scalar int32 tensor, >= 1 (a tensor: when run)."""
    if not isinstance(sequence_length, tf.Tensor):
        _check(isinstance(sequence_length, numbers.Integral) and sequence_length >= 1,
               "sequence_length must be an int >= 1 or a tensor, got %r", sequence_length)
        return sequence_length
    sequence_length = tf.cast(sequence_length, tf.int32)
    positive = tf.debugging.assert_positive(sequence_length, message="sequence_length must be >= 1")
    with tf.control_dependencies([positive]):
        return tf.identity(sequence_length)


def rnn_beam_search(update_fn, initial_state, sequence_length, beam_width, begin_token_id,
                    end_token_id, length_penalty=0.0, name="rnn", max_lengths=None, trace=False,
                    source_mask=None, target_prefix=None, constraints=None, protected_ids=None):
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
      target_prefix: None or [batch, p] ints, -1 padded: each sentence's forced first pieces,
        shorter than sequence_length (docs/API.md).
      constraints: None or [batch, C, L] ints, -1 padded: each sentence's constraints, each in
        every hypothesis returned, else -inf (docs/DECODING-NOTES.md, "Constrained beam search").
      protected_ids: None or [batch, P] ints, -1 padded: pieces taken only as single-piece
        constraints, each once (keep mode); without constraints, never.
    Returns:
      ids [batch, beam, time] int32 (end token repeated after it), scores [batch, beam]
      float32 best first, lengths [batch, beam] int32 (end token counted); with `trace` also
      a dict of [batch, time, beam] "token_ids", "parent_ids" (int32), "scores", "finished"
      after each step, and "attention" [batch, beam, time, src] along each hypothesis when
      the state holds an "attention".
    """
    scoring = scoring_lib.as_scoring(length_penalty)
    with tf.name_scope(name):
        state, sequence_length = start(
            initial_state, beam_width, begin_token_id, scoring, sequence_length, max_lengths,
            source_mask, target_prefix, constraints=constraints, protected_ids=protected_ids)
        return search(lambda state, step: beam_step(update_fn, state, step, end_token_id, scoring),
                      state, sequence_length, end_token_id, scoring, trace, unrolled=True)


def while_loop_beam_search(update_fn, initial_state, sequence_length, beam_width,
                           begin_token_id, end_token_id, length_penalty=0.0, name="while_loop",
                           max_lengths=None, trace=False, source_mask=None, compact=False,
                           target_prefix=None, constraints=None, protected_ids=None):
    """Beam search in a tf.while_loop that stops once every hypothesis has finished.

    Args and Returns as `rnn_beam_search`, but `sequence_length` may also be a scalar int32
    tensor, and time is the number of steps run. `compact`: a sentence's rows leave the loop
    once all its hypotheses have finished (decode/compaction.py); update_fn must then read
    per-sentence values from its state only, never from its closure.
    """
    scoring = scoring_lib.as_scoring(length_penalty)
    with tf.name_scope(name):
        state, sequence_length = start(
            initial_state, beam_width, begin_token_id, scoring, sequence_length, max_lengths,
            source_mask, target_prefix, constraints=constraints, protected_ids=protected_ids)
        return search(lambda state, step: beam_step(update_fn, state, step, end_token_id, scoring),
                      state, sequence_length, end_token_id, scoring, trace, compact)


def search(step_fn, state, sequence_length, end_token_id, scoring, trace=False, compact=False,
           unrolled=False, sampling=False):
    """`step_fn` from `state` until every hypothesis has finished or `sequence_length` steps
    ran, in a tf.while_loop (or `unrolled`: sequence_length copies of the step); the trace and
    `compact` (decode/compaction.py) wrap each step. Returns as `rnn_beam_search`.

    Args:
      step_fn: (BeamState, step) -> (BeamState, parent_ids [b, k] int32 or, sampling, None).
      state: the first BeamState; sequence_length: `checked_length`'s (unrolled: an int).
      sampling: the slots are independent samples: each its own parent, returned best first.
    """
    keys = {"token_ids": tf.int32}
    if (get_shape(state.ids)[1] > 1 and not sampling) or trace:  # else each its own parent
        keys["parent_ids"] = tf.int32
    if trace:
        keys.update(scores=tf.float32, finished=tf.bool)
        if isinstance(state.model, dict) and "attention" in state.model:
            keys["attention"] = tf.float32

    def advance(step, state, batch):
        """One step and what it leaves for backtracking and the trace (each [b, k, ...])."""
        state, parent_ids = step_fn(state, step)
        record = {"token_ids": state.ids, "parent_ids": parent_ids}
        if "attention" in keys:
            record["attention"] = state.model["attention"]                     # [b, k, src]
        if compact:  # the record for the whole batch; the decided sentences' rows leave
            state, record, batch = compaction.leave(state, record, batch, end_token_id)
        if trace:  # the whole batch's hypotheses, a decided sentence's as it ended
            hypotheses = batch[1] if compact else state
            record.update(scores=beam_scores(hypotheses, scoring), finished=hypotheses.finished)
        return state, batch, {key: record[key] for key in keys}

    batch = compaction.start(state) if compact else ()
    if unrolled:
        records = []
        for step in range(sequence_length):
            with tf.name_scope("step_%d" % step):
                state, batch, record = advance(step, state, batch)
            records.append(record)
        history = {key: tf.stack([record[key] for record in records]) for key in keys}
    else:
        def body(step, state, batch, history):
            state, batch, record = advance(step, state, batch)
            return step + 1, state, batch, {key: history[key].write(step, record[key])
                                            for key in keys}

        history = {key: tf.TensorArray(dtype, size=0, dynamic_size=True, name=key)
                   for key, dtype in keys.items()}
        loop_vars = (tf.constant(0), state, batch, history)
        invariants = list(batch_free_shape_invariants(loop_vars))
        if carried(state.tokens):  # [b, k, t]: grows a piece a step
            invariants[1] = invariants[1]._replace(
                tokens=tf.TensorShape([None, get_shape(state.ids)[1], None]))
        _, state, batch, history = tf.while_loop(
            lambda step, state, *_: tf.logical_and(step < sequence_length,
                                                   ~tf.reduce_all(state.finished)),
            body, loop_vars, shape_invariants=tuple(invariants), back_prop=False, name="search")
        history = {key: array.stack() for key, array in history.items()}       # [t, b, k, ...]
    hypotheses = batch[1] if compact else state
    return backtrack.results(history, beam_scores(hypotheses, scoring), hypotheses.lengths,
                             end_token_id, trace, sort=sampling or carried(state.progress)
                             or scoring.diverse_beam_groups > 1)


def greedy_search(update_fn, initial_state, sequence_length, begin_token_id, end_token_id,
                  length_penalty=0.0, name="greedy", max_lengths=None, trace=False,
                  source_mask=None, compact=False, target_prefix=None):
    """Greedy decoding: `while_loop_beam_search` with a beam of one (Args and Returns as it,
    without `beam_width`; every output's beam dimension is 1)."""
    scoring = scoring_lib.as_scoring(length_penalty)._replace(diverse_beam_groups=1)
    return while_loop_beam_search(update_fn, initial_state, sequence_length, 1, begin_token_id,
                                  end_token_id, scoring, name, max_lengths, trace,
                                  source_mask, compact, target_prefix)
