"""Beam searches against independent references: NumPy, brute force, each other.

The toy model (tests/toy_decoder.py) exists as TensorFlow and as NumPy code;
the TF searches run the first, the NumPy reference and the enumeration the
second.
"""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

import numpy_beam_search as reference
from decode import beam_search, greedy_search, rnn_beam_search, while_loop_beam_search
from decode.scoring import Scoring
from same_hypotheses import assert_same_hypotheses, hypotheses, trace_steps
from toy_decoder import ToyDecoder, row_state

SEARCHES = {"unrolled": rnn_beam_search, "while_loop": while_loop_beam_search}
BEGIN, END = 0, 1
# end_bias per batch row: never ends, neutral, ends soon, ends at once.
MIXED_ROWS = [-3.0, 0.0, 0.8, 2.5]
ALL_ROWS = list(range(len(MIXED_ROWS)))


def run_search(search, toy, batch_state, sequence_length, beam_width, alpha, max_lengths=None):
    """Builds `search` over the toy model in a fresh graph and runs it."""
    with tf.Graph().as_default():
        state = tf.nest.map_structure(tf.constant, batch_state)
        outputs = search(toy.update_fn, state, sequence_length, beam_width, BEGIN, END, alpha,
                         max_lengths=max_lengths)
        with tf.Session() as session:
            return session.run(outputs)


def run_fed(search, update_fn, batch_state, runs, sequence_length, beam_width, **kwargs):
    """Builds `search` (SEARCHES' arguments, alpha 0.6) once over a state fed at any batch size
    and runs it on each (rows, max_lengths or None) of `runs`: those rows of `batch_state` with
    those limits. A batch and its sentences alone share the graph, which is the costly part."""
    with tf.Graph().as_default():
        state = tf.nest.map_structure(
            lambda value: tf.placeholder(value.dtype, (None,) + value.shape[1:]), batch_state)
        limits = None if runs[0][1] is None else tf.placeholder(tf.int32, [None])
        outputs = search(update_fn, state, sequence_length, beam_width, BEGIN, END, 0.6,
                         max_lengths=limits, **kwargs)
        with tf.Session() as session:
            results = []
            for rows, max_lengths in runs:
                feeds = dict(zip(tf.nest.flatten(state),
                                 [value[rows] for value in tf.nest.flatten(batch_state)]))
                if limits is not None:
                    feeds[limits] = max_lengths
                results.append(session.run(outputs, feeds))
            return results


def each_alone(limits=None):
    """run_fed's runs of each row of MIXED_ROWS alone, with its limit of `limits` if any."""
    return [([row], None if limits is None else [limits[row]]) for row in ALL_ROWS]


def run_reference(toy, batch_state, sequence_length, beam_width, alpha, max_lengths=None,
                  **options):
    """The NumPy reference row by row; `options`: its keyword arguments (groups, ...)."""
    rows = [reference.beam_search(toy.numpy_step, row_state(batch_state, row), sequence_length,
                                  beam_width, BEGIN, END, alpha,
                                  max_length=None if max_lengths is None else max_lengths[row],
                                  **options)
            for row in range(len(batch_state["rnn"]))]
    return tuple(np.stack(parts) for parts in zip(*rows))


def assert_same_result(actual, expected):
    """Equal ids, lengths and scores; `actual` may stop early (fewer time steps)."""
    ids, scores, lengths = actual
    expected_ids, expected_scores, expected_lengths = expected
    steps = ids.shape[-1]
    np.testing.assert_array_equal(ids, expected_ids[..., :steps])
    assert (expected_ids[..., steps:] == END).all()
    np.testing.assert_array_equal(lengths, expected_lengths)
    np.testing.assert_allclose(scores, expected_scores, rtol=1e-5, atol=1e-5)


def assert_well_formed(ids, scores, lengths):
    """Best first; distinct hypotheses; end token last and repeated after it."""
    steps = ids.shape[-1]
    for row_ids, row_scores, row_lengths in zip(ids, scores, lengths):
        possible = row_scores > -np.inf
        assert list(possible) == sorted(possible, reverse=True)
        assert (np.diff(row_scores[possible]) <= 0).all()
        hypotheses = {tuple(h) for h in row_ids[possible]}
        assert len(hypotheses) == possible.sum(), "a hypothesis appears twice"
        for hypothesis, length in zip(row_ids[possible], row_lengths[possible]):
            assert END not in hypothesis[:length - 1]
            assert (hypothesis[length:] == END).all()
            assert hypothesis[length - 1] == END or length == steps


@pytest.mark.parametrize("sequence_length", [1, 6])
@pytest.mark.parametrize("beam_width", [3, 9])  # 9 > vocab: fewer tokens than beams per row
@pytest.mark.parametrize("alpha", [0.0, 0.6])
@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_matches_numpy_reference(search, alpha, beam_width, sequence_length):
    toy = ToyDecoder(vocab_size=7, seed=3)
    batch_state = toy.initial_state(MIXED_ROWS)
    actual = run_search(SEARCHES[search], toy, batch_state, sequence_length, beam_width, alpha)
    assert_same_result(actual, run_reference(toy, batch_state, sequence_length, beam_width, alpha))
    assert_well_formed(*actual)


@pytest.mark.parametrize("beam_width", [2, 5])
@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_ties_go_to_the_lower_beam_and_token_as_in_the_numpy_reference(search, beam_width):
    # Logits of 0 or 1 looked up by (step, previous token): ties at every step.
    table = np.random.RandomState(0).randint(2, size=(5, 6, 6)).astype(np.float32)

    def update_fn(state, ids):
        return state + 1, tf.gather_nd(table, tf.stack([state, ids], axis=-1))

    def numpy_step(state, token):
        return state + 1, table[state, token]

    with tf.Graph().as_default():
        outputs = SEARCHES[search](update_fn, tf.zeros([1], tf.int32), 5, beam_width, BEGIN, END,
                                   0.6)
        with tf.Session() as session:
            actual = session.run(outputs)
    expected = reference.beam_search(numpy_step, 0, 5, beam_width, BEGIN, END, 0.6)
    assert_same_result(actual, tuple(part[None] for part in expected))


@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_matches_numpy_reference_over_a_vocabulary_long_enough_to_chunk(search):
    # 400 tokens: beam_step takes each slot's best tokens with the chunked top_k.
    toy = ToyDecoder(vocab_size=400, hidden_size=6, seed=9, logit_scale=1.0)
    batch_state = toy.initial_state([-3.0, 0.5])
    actual = run_search(SEARCHES[search], toy, batch_state, 5, 3, 0.6)
    assert_same_result(actual, run_reference(toy, batch_state, 5, 3, 0.6))


@pytest.mark.parametrize("alpha", [0.0, 1.0])
@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_exhaustive_beam_finds_every_sequence_in_order(search, alpha):
    # Vocab 4 (begin, end and two others), 3 tokens: 1 + 3 + 9 sequences end
    # with the end token and 27 do not, 40 in all; a beam of 40 never prunes.
    toy = ToyDecoder(vocab_size=4, seed=5, logit_scale=1.0)
    batch_state = toy.initial_state([0.0, 1.0])
    ids, scores, lengths = run_search(SEARCHES[search], toy, batch_state, 3, 40, alpha)
    for row in range(2):
        expected = reference.enumerate_sequences(toy.numpy_step, row_state(batch_state, row), 3,
                                                 4, BEGIN, END, alpha)
        assert len(expected) == 40
        np.testing.assert_array_equal(ids[row], [e[0] for e in expected])
        np.testing.assert_allclose(scores[row], [e[1] for e in expected], rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(lengths[row], [e[2] for e in expected])


def test_unrolled_equals_while_loop():
    toy = ToyDecoder(vocab_size=11, hidden_size=8, seed=7)
    batch_state = toy.initial_state([-1.0, 0.3, 0.5, 1.0, 0.2])
    unrolled = run_search(rnn_beam_search, toy, batch_state, 8, 4, 0.6)
    while_loop = run_search(while_loop_beam_search, toy, batch_state, 8, 4, 0.6)
    assert_same_result(while_loop, unrolled)


@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_sentence_alone_equals_sentence_in_batch(search):
    toy = ToyDecoder(seed=11)
    together, *alone = run_fed(SEARCHES[search], toy.update_fn, toy.initial_state(MIXED_ROWS),
                               [(ALL_ROWS, None)] + each_alone(), 6, 3)
    assert_same_hypotheses([hypotheses(*run)[0] for run in alone], hypotheses(*together))


@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_finished_hypotheses_neither_grow_nor_repeat(search):
    # The end token is likely from the first step: a beam search that expanded
    # finished hypotheses into vocab-many copies would fill the beam with them.
    toy = ToyDecoder(seed=2)
    batch_state = toy.initial_state([2.0, 3.0])
    ids, scores, lengths = run_search(SEARCHES[search], toy, batch_state, 6, 4, 0.0)
    assert (lengths < 6).any()
    assert_well_formed(ids, scores, lengths)


def test_while_loop_stops_once_every_hypothesis_finished():
    toy = ToyDecoder(seed=4)
    batch_state = toy.initial_state([3.0, 4.0, 3.5])
    early = run_search(while_loop_beam_search, toy, batch_state, 20, 3, 0.6)
    assert early[0].shape[-1] < 20
    assert early[0].shape[-1] == early[2].max()
    assert_same_result(early, run_search(rnn_beam_search, toy, batch_state, 20, 3, 0.6))


def test_while_loop_takes_a_tensor_sequence_length():
    toy = ToyDecoder(seed=6)
    batch_state = toy.initial_state([-3.0, 0.5])
    with tf.Graph().as_default():
        source_length = tf.placeholder(tf.int32, [None])
        max_length = 2 * tf.reduce_max(source_length) + 1
        outputs = while_loop_beam_search(toy.update_fn, tf.nest.map_structure(tf.constant, batch_state),
                                         max_length, 3, BEGIN, END, 0.6)
        with tf.Session() as session:
            from_tensor = session.run(outputs, {source_length: [1, 3]})
    assert from_tensor[0].shape[-1] <= 7
    assert_same_result(from_tensor, run_reference(toy, batch_state, 7, 3, 0.6))


@pytest.mark.parametrize("length", [0, -2])
def test_while_loop_rejects_a_tensor_length_below_one_when_run(length):
    toy = ToyDecoder()
    with tf.Graph().as_default():
        max_length = tf.placeholder(tf.int32, [])
        outputs = while_loop_beam_search(toy.update_fn,
                                         tf.nest.map_structure(tf.constant, toy.initial_state([0.0])),
                                         max_length, 3, BEGIN, END)
        with tf.Session() as session:
            with pytest.raises(tf.errors.InvalidArgumentError, match="sequence_length must be >= 1"):
                session.run(outputs, {max_length: length})


@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_impossible_hypotheses_fill_the_beam_canonically(search):
    # Vocab 3 and 2 tokens give 1 + 2 + 4 = 7 possible outputs for 9 beams.
    toy = ToyDecoder(vocab_size=3, seed=8)
    ids, scores, lengths = run_search(SEARCHES[search], toy, toy.initial_state([0.0]), 2, 9, 0.0)
    assert np.isfinite(scores[0, :7]).all()
    assert (scores[0, 7:] == -np.inf).all()
    assert (ids[0, 7:] == END).all() and (lengths[0, 7:] == 0).all()
    assert_well_formed(ids, scores, lengths)


def test_while_loop_graph_size_does_not_grow_with_length():
    toy = ToyDecoder()

    def op_count(search, sequence_length):
        with tf.Graph().as_default() as graph:
            state = tf.nest.map_structure(tf.constant, toy.initial_state([0.0]))
            search(toy.update_fn, state, sequence_length, 3, BEGIN, END, 0.6)
            return len(graph.get_operations())

    assert op_count(while_loop_beam_search, 5) == op_count(while_loop_beam_search, 50)
    assert op_count(rnn_beam_search, 5) < op_count(rnn_beam_search, 10)


@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_update_fn_without_static_shapes(search):
    toy = ToyDecoder(seed=13)

    def shapeless_update_fn(state, ids):
        new_state, logits = toy.update_fn(state, ids)
        hide = lambda tensor: tf.reshape(tensor, tf.shape(tensor))  # noqa: E731
        return tf.nest.map_structure(hide, new_state), hide(logits)

    batch_state = toy.initial_state(MIXED_ROWS)
    with tf.Graph().as_default():
        outputs = SEARCHES[search](shapeless_update_fn, tf.nest.map_structure(tf.constant, batch_state),
                                   5, 3, BEGIN, END, 0.6)
        with tf.Session() as session:
            actual = session.run(outputs)
    assert_same_result(actual, run_reference(toy, batch_state, 5, 3, 0.6))


@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_state_that_update_fn_hands_back_unchanged_is_never_reordered(search):
    # As the model's encoder memory: tiled, the same in every slot, so no gather is built for it.
    toy = ToyDecoder()

    def gathers(extra):
        with tf.Graph().as_default() as graph:
            state = tf.nest.map_structure(tf.constant, dict(toy.initial_state([0.0, 1.0]), **extra))

            def update_fn(state, ids):
                new_state, logits = toy.update_fn(state, ids)
                return dict(new_state, **{key: state[key] for key in extra}), logits
            SEARCHES[search](update_fn, state, 4, 3, BEGIN, END)
            return sum(op.type == "GatherV2" for op in graph.get_operations())

    assert gathers({"memory": np.zeros([2, 5, 6], np.float32)}) == gathers({})


def test_template_update_fn_shares_its_variables_across_steps():
    def step(state, ids):
        weights = tf.get_variable("weights", [4, 4])
        new_state = (tf.tanh(tf.einsum("bkh,hg->bkg", state[0], weights)), state[1])
        return new_state, tf.one_hot(ids, 4) + new_state[0]

    with tf.Graph().as_default():
        update_fn = tf.make_template("toy_step", step)
        initial_state = (tf.ones([2, 4]), tf.zeros([2, 3]))  # a tuple state works too
        rnn_beam_search(update_fn, initial_state, 4, 2, BEGIN, END)
        while_loop_beam_search(update_fn, initial_state, 4, 2, BEGIN, END)
        assert len(tf.global_variables()) == 1


def run_step(logits, log_probs, lengths, finished, max_lengths=()):
    """beam_step at step 3 on a model that gives `logits` [b, k, v] whatever it is fed:
    (the BeamState after it, parent_ids)."""
    with tf.Graph().as_default():
        state = beam_search.BeamState(
            log_probs=tf.constant(log_probs), lengths=tf.constant(lengths),
            finished=tf.constant(finished), ids=tf.zeros_like(lengths),
            max_lengths=tf.constant(max_lengths) if len(max_lengths) else ())
        step = beam_search.beam_step(lambda model, ids: (model, tf.constant(logits)), state, 3,
                                     END, Scoring())
        with tf.Session() as session:
            return session.run(step)


def test_beam_step_carries_a_finished_hypothesis_once_with_its_score():
    # Beam of 3: slot 0 finished with the best score, slots 1 and 2 alive.
    beam, parent_ids = run_step([[[9.0, 0.0, 0.0, 0.0],      # finished: ignored
                                  [0.0, 0.0, 2.0, 1.0],
                                  [0.0, 0.0, 5.0, 0.0]]],
                                [[-0.1, -1.0, -2.0]], [[2, 3, 3]], [[True, False, False]])
    log_softmax_1 = reference.log_softmax([0.0, 0.0, 2.0, 1.0])
    log_softmax_2 = reference.log_softmax([0.0, 0.0, 5.0, 0.0])
    np.testing.assert_array_equal(parent_ids, [[0, 1, 2]])
    np.testing.assert_array_equal(beam.ids, [[END, 2, 2]])
    np.testing.assert_allclose(beam.log_probs, [[-0.1, -1.0 + log_softmax_1[2],
                                                 -2.0 + log_softmax_2[2]]], rtol=1e-6)
    np.testing.assert_array_equal(beam.lengths, [[2, 4, 4]])
    np.testing.assert_array_equal(beam.finished, [[True, False, False]])


# The reviewer's constant model: the same distribution at every step, whatever
# came before. Token 3 ends; the best single token (1) is not the end token.
CONSTANT_PROBS = np.array([0.05, 0.6, 0.05, 0.3])
CONSTANT_END = 3


def constant_update_fn(state, ids):
    logits = tf.zeros_like(ids, tf.float32)[..., None] + np.log(CONSTANT_PROBS).astype(np.float32)
    return state, logits


@pytest.mark.parametrize("alpha", [0.0, 0.6])
@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_a_hypothesis_cut_off_at_its_limit_pays_for_its_end_token(search, alpha):
    # Limit 2, beam 2. After [1] the end token is forced; it must still cost
    # ln p(end) = ln .3, so [1, end] scores ln .6 + ln .3 = -1.71 and ranks
    # below [end] at ln .3 = -1.20. A free forced end token would score
    # [1, end] at ln .6 = -0.51, first.
    with tf.Graph().as_default():
        outputs = SEARCHES[search](constant_update_fn, tf.zeros([1, 1]), 5, 2, BEGIN,
                                   CONSTANT_END, alpha, max_lengths=[2])
        with tf.Session() as session:
            ids, scores, lengths = session.run(outputs)
    log_p = np.log(CONSTANT_PROBS)
    np.testing.assert_array_equal(ids[0, :, :2], [[CONSTANT_END, CONSTANT_END], [1, CONSTANT_END]])
    assert (ids[0, :, 2:] == CONSTANT_END).all()
    np.testing.assert_array_equal(lengths, [[1, 2]])
    np.testing.assert_allclose(scores, [[log_p[3] / reference.length_penalty(1, alpha),
                                         (log_p[1] + log_p[3]) / reference.length_penalty(2, alpha)]],
                               rtol=1e-6)


# Per-sentence limits for MIXED_ROWS: the row that never ends is cut off at 3,
# the neutral one may take a single token, the others 5 and 2.
MIXED_LIMITS = [3, 1, 5, 2]


@pytest.mark.parametrize("sequence_length", [4, 6])  # 4: row 2's limit is beyond the search's
@pytest.mark.parametrize("beam_width", [3, 9])
@pytest.mark.parametrize("alpha", [0.0, 0.6])
@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_matches_numpy_reference_with_per_sentence_limits(search, alpha, beam_width,
                                                          sequence_length):
    toy = ToyDecoder(vocab_size=7, seed=3)
    batch_state = toy.initial_state(MIXED_ROWS)
    actual = run_search(SEARCHES[search], toy, batch_state, sequence_length, beam_width, alpha,
                        max_lengths=MIXED_LIMITS)
    expected = run_reference(toy, batch_state, sequence_length, beam_width, alpha, MIXED_LIMITS)
    assert_same_result(actual, expected)
    assert_well_formed(*actual)
    ids, scores, lengths = actual
    for row, limit in enumerate(MIXED_LIMITS):
        possible = scores[row] > -np.inf
        assert (lengths[row][possible] <= limit).all()
        if limit <= sequence_length:
            # Every hypothesis ended, the ones cut off at the limit included.
            assert (ids[row, possible, lengths[row][possible] - 1] == END).all()
    # The row that never ends by itself was cut off: its limit decided.
    assert (lengths[0][scores[0] > -np.inf] == MIXED_LIMITS[0]).all()


@pytest.mark.parametrize("alpha", [0.0, 1.0])
@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_exhaustive_beam_with_limits_finds_every_allowed_sequence_in_order(search, alpha):
    # Vocab 4, 3 tokens. Limit 2: 1 + 3 sequences; limit 3: 1 + 3 + 9, all
    # ended; limit 5 is beyond the search's 3 tokens: all 40 outputs. The
    # forced end tokens are scored by the brute force as any other token.
    toy = ToyDecoder(vocab_size=4, seed=5, logit_scale=1.0)
    batch_state = toy.initial_state([-1.0, 0.0, 1.0])
    limits = [2, 3, 5]
    ids, scores, lengths = run_search(SEARCHES[search], toy, batch_state, 3, 40, alpha,
                                      max_lengths=np.array(limits, np.int64))
    for row, limit in enumerate(limits):
        expected = reference.enumerate_sequences(toy.numpy_step, row_state(batch_state, row), 3,
                                                 4, BEGIN, END, alpha, max_length=limit)
        count = len(expected)
        assert count == {2: 4, 3: 13, 5: 40}[limit]
        np.testing.assert_array_equal(ids[row, :count], [e[0] for e in expected])
        np.testing.assert_allclose(scores[row, :count], [e[1] for e in expected],
                                   rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(lengths[row, :count], [e[2] for e in expected])
        assert (scores[row, count:] == -np.inf).all() and (lengths[row, count:] == 0).all()


@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_a_sentences_limit_does_not_depend_on_its_batch_mates(search):
    toy = ToyDecoder(seed=11)
    # The same sentences with other batch-mates' limits, and each one alone.
    other_limits = [MIXED_LIMITS[0], 6, 6, 6]
    together, regrouped, *alone = run_fed(
        SEARCHES[search], toy.update_fn, toy.initial_state(MIXED_ROWS),
        [(ALL_ROWS, MIXED_LIMITS), (ALL_ROWS, other_limits)] + each_alone(MIXED_LIMITS), 6, 3)
    assert_same_hypotheses(hypotheses(*regrouped)[:1], hypotheses(*together)[:1])
    assert_same_hypotheses([hypotheses(*run)[0] for run in alone], hypotheses(*together))


def test_unrolled_with_extra_steps_equals_while_loop_with_limits():
    # model_search's pattern: the unrolled search built for a rounded-up
    # length, the while_loop bounded by the batch's longest limit (a tensor).
    toy = ToyDecoder(vocab_size=11, hidden_size=8, seed=7)
    batch_state = toy.initial_state([-1.0, 0.3, 0.5, 1.0, -2.0])
    limits = np.array([4, 2, 5, 3, 6], np.int32)
    unrolled = run_search(rnn_beam_search, toy, batch_state, 8, 4, 0.6, max_lengths=limits)
    with tf.Graph().as_default():
        max_lengths = tf.constant(limits)
        outputs = while_loop_beam_search(toy.update_fn, tf.nest.map_structure(tf.constant, batch_state),
                                         tf.reduce_max(max_lengths), 4, BEGIN, END, 0.6,
                                         max_lengths=max_lengths)
        with tf.Session() as session:
            while_loop = session.run(outputs)
    assert while_loop[0].shape[-1] == limits.max()
    assert_same_result(while_loop, unrolled)


def test_beam_step_ends_alive_hypotheses_at_their_limit_with_the_true_log_prob():
    # Two sentences, same beam of 3 (slot 0 finished, slots 1 and 2 alive),
    # same logits; only the first is at its limit (step 3 chooses token 4).
    beam, parent_ids = run_step([[[9.0, 0.0, 0.0, 0.0],
                                  [0.0, 0.0, 2.0, 1.0],
                                  [0.0, 0.0, 5.0, 0.0]]] * 2,
                                [[-0.1, -1.0, -2.0]] * 2, [[2, 3, 3]] * 2,
                                [[True, False, False]] * 2, max_lengths=[4, 9])
    log_softmax_1 = reference.log_softmax([0.0, 0.0, 2.0, 1.0])
    log_softmax_2 = reference.log_softmax([0.0, 0.0, 5.0, 0.0])
    # At the limit: only end tokens, each with its own log-probability.
    np.testing.assert_array_equal(parent_ids[0], [0, 1, 2])
    np.testing.assert_array_equal(beam.ids[0], [END, END, END])
    np.testing.assert_allclose(beam.log_probs[0], [-0.1, -1.0 + log_softmax_1[END],
                                                   -2.0 + log_softmax_2[END]], rtol=1e-6)
    np.testing.assert_array_equal(beam.lengths[0], [2, 4, 4])
    np.testing.assert_array_equal(beam.finished[0], [True, True, True])
    # Below the limit: as without one.
    np.testing.assert_array_equal(beam.ids[1], [END, 2, 2])
    np.testing.assert_allclose(beam.log_probs[1], [-0.1, -1.0 + log_softmax_1[2],
                                                   -2.0 + log_softmax_2[2]], rtol=1e-6)
    np.testing.assert_array_equal(beam.finished[1], [True, False, False])


def _toy_graph_inputs():
    toy = ToyDecoder()
    return toy, tf.nest.map_structure(tf.constant, toy.initial_state([0.0, 1.0]))


@pytest.mark.parametrize("search", sorted(SEARCHES))
@pytest.mark.parametrize("bad_arguments, message", [
    pytest.param(lambda toy: dict(beam_width=0), "beam_width", id="beam_width=0"),
    pytest.param(lambda toy: dict(beam_width=2.0), "beam_width", id="beam_width=2.0"),
    pytest.param(lambda toy: dict(sequence_length=0), "sequence_length", id="length=0"),
    pytest.param(lambda toy: dict(sequence_length=2.5), "sequence_length", id="length=2.5"),
    pytest.param(lambda toy: dict(end_token_id=-1), "end_token_id", id="end=-1"),
    pytest.param(lambda toy: dict(end_token_id=toy.vocab_size), "end_token_id", id="end=vocab"),
    pytest.param(lambda toy: dict(update_fn=lambda state, ids: (state, tf.zeros([2, 7]))),
                 "logits", id="rank2_logits"),
    pytest.param(lambda toy: dict(max_lengths=[2.0, 3.0]), "max_lengths", id="float_limits"),
    pytest.param(lambda toy: dict(max_lengths=[[2, 3]]), "max_lengths", id="rank2_limits"),
    pytest.param(lambda toy: dict(max_lengths=[2, 3, 4]), "max_lengths", id="limits_for_3_of_2"),
])
def test_bad_arguments_raise_value_error_when_building(search, bad_arguments, message):
    """`bad_arguments(toy)` returns the arguments to spoil, built in the test's graph.

    The arguments that would otherwise give a silent wrong answer (a limit
    broadcast over the batch, an end token never matched, logits broadcast
    into the beam); other bad arguments fail in TensorFlow itself.
    """
    with tf.Graph().as_default():
        toy, state = _toy_graph_inputs()
        arguments = dict(update_fn=toy.update_fn, initial_state=state, sequence_length=4,
                         beam_width=3, begin_token_id=BEGIN, end_token_id=END)
        arguments.update(bad_arguments(toy))
        with pytest.raises(ValueError, match=message):
            SEARCHES[search](**arguments)


@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_limits_for_another_batch_size_fail_when_run(search):
    # Batch size known only at run time: a single limit must not broadcast.
    toy = ToyDecoder()
    with tf.Graph().as_default():
        rnn = tf.placeholder(tf.float32, [None, toy.hidden_size])
        state = {"rnn": rnn, "clock": {"steps": tf.zeros_like(rnn[:, 0]),
                                       "end_bias": tf.zeros_like(rnn[:, 0])}}
        outputs = SEARCHES[search](toy.update_fn, state, 4, 3, BEGIN, END, max_lengths=[2])
        with tf.Session() as session:
            session.run(outputs, {rnn: np.zeros([1, toy.hidden_size])})
            with pytest.raises(tf.errors.InvalidArgumentError, match="max_lengths"):
                session.run(outputs, {rnn: np.zeros([2, toy.hidden_size])})


# The trace (trace=True): what every step kept, recorded in the graph.
SOURCE_TIME = 3
DECODERS = {"unrolled": lambda *a, **k: rnn_beam_search(*a, **k),
            "while_loop": lambda *a, **k: while_loop_beam_search(*a, **k),
            "greedy": lambda f, s, n, k, *a, **kw: greedy_search(f, s, n, *a, **kw)}


def attention_update_fn(toy):
    """The toy step, plus an "attention" [batch, beam, src] of 1000 * step + 10 * slot + src:
    the step (1-based) and the slot whose state the step ran on, readable from the values."""
    def update_fn(state, ids):
        new_state, logits = toy.update_fn({"rnn": state["rnn"], "clock": state["clock"]}, ids)
        slots = tf.cast(tf.range(tf.shape(ids)[1]), tf.float32)[None, :, None]   # [1, k, 1]
        source = tf.range(SOURCE_TIME, dtype=tf.float32)                          # [src]
        steps = new_state["clock"]["steps"][..., None]                            # [b, k, 1]
        new_state["attention"] = 1000.0 * steps + 10.0 * slots + source
        return new_state, logits
    return update_fn


def run_traced(decoder, toy, batch_state, sequence_length, beam_width, alpha=0.6,
               max_lengths=None, trace=True, attention=False):
    """Builds `decoder` with trace=`trace` in a fresh graph and runs it."""
    with tf.Graph().as_default():
        state = tf.nest.map_structure(tf.constant, batch_state)
        update_fn = toy.update_fn
        if attention:
            batch_size = len(batch_state["rnn"])
            state["attention"] = tf.zeros([batch_size, SOURCE_TIME])
            update_fn = attention_update_fn(toy)
        outputs = DECODERS[decoder](update_fn, state, sequence_length, beam_width, BEGIN, END,
                                    alpha, max_lengths=max_lengths, trace=trace)
        with tf.Session() as session:
            return session.run(outputs)


def path_back(parent_ids, slot):
    """The slot of every step along the path that ends in `slot` after the last step."""
    slots = [slot]
    for step in range(parent_ids.shape[0] - 1, 0, -1):
        slots.append(parent_ids[step, slots[-1]])
    return slots[::-1]


TRACE_CASES = [pytest.param(decoder, limits, id="%s-%s" % (decoder, "limits" if limits else "free"))
               for decoder in sorted(DECODERS) for limits in (None, MIXED_LIMITS)]


@pytest.mark.parametrize("decoder, max_lengths", TRACE_CASES)
def test_trace_parents_rebuild_every_hypothesis_and_its_score(decoder, max_lengths):
    toy = ToyDecoder(vocab_size=7, seed=3)
    batch_state = toy.initial_state(MIXED_ROWS)
    ids, scores, lengths, trace = run_traced(decoder, toy, batch_state, 6, 3,
                                             max_lengths=max_lengths)
    beam_width = 1 if decoder == "greedy" else 3
    steps = ids.shape[-1]
    for key in ("token_ids", "parent_ids", "scores", "finished"):
        assert trace[key].shape == (len(MIXED_ROWS), steps, beam_width), key
    # The last step's scores are the returned scores, exactly.
    np.testing.assert_array_equal(trace["scores"][:, -1], scores)
    for row in range(len(MIXED_ROWS)):
        for slot in range(beam_width):
            if scores[row, slot] == -np.inf:
                continue
            path = path_back(trace["parent_ids"][row], slot)
            tokens = trace["token_ids"][row][np.arange(steps), path]
            np.testing.assert_array_equal(tokens, ids[row, slot])
            # Finished from its end token on, and only then.
            length = lengths[row, slot]
            ended = ids[row, slot, length - 1] == END
            np.testing.assert_array_equal(trace["finished"][row][np.arange(steps), path],
                                          (np.arange(steps) >= length - 1) & ended)


@pytest.mark.parametrize("decoder, max_lengths", TRACE_CASES)
def test_trace_changes_no_result(decoder, max_lengths):
    toy = ToyDecoder(vocab_size=11, hidden_size=8, seed=7)
    batch_state = toy.initial_state(MIXED_ROWS)
    traced = run_traced(decoder, toy, batch_state, 7, 4, max_lengths=max_lengths)
    plain = run_traced(decoder, toy, batch_state, 7, 4, max_lengths=max_lengths, trace=False)
    assert len(plain) == 3
    for got, expected in zip(traced[:3], plain):
        np.testing.assert_array_equal(got, expected)


def test_unrolled_and_while_loop_traces_agree_on_the_steps_both_ran():
    toy = ToyDecoder(vocab_size=11, hidden_size=8, seed=7)
    batch_state = toy.initial_state([1.0, 2.0, 0.5])
    unrolled = run_traced("unrolled", toy, batch_state, 12, 4, max_lengths=[9, 6, 12])
    while_loop = run_traced("while_loop", toy, batch_state, 12, 4, max_lengths=[9, 6, 12])
    steps = while_loop[3]["token_ids"].shape[1]
    assert steps < 12, "the while_loop should have stopped early"
    assert_same_hypotheses(hypotheses(*while_loop[:3]), hypotheses(*unrolled[:3]),
                           trace_steps(while_loop[3]),
                           [row[:steps] for row in trace_steps(unrolled[3])])


def test_greedy_traces_one_slot_per_step():
    toy = ToyDecoder(seed=3)
    ids, _, _, trace = run_traced("greedy", toy, toy.initial_state(MIXED_ROWS), 6, 1)
    assert trace["token_ids"].shape == (len(MIXED_ROWS), ids.shape[-1], 1)
    np.testing.assert_array_equal(trace["token_ids"][..., 0], ids[:, 0])
    assert (trace["parent_ids"] == 0).all()


@pytest.mark.parametrize("decoder", sorted(DECODERS))
def test_trace_attention_follows_each_hypothesis_back(decoder):
    toy = ToyDecoder(vocab_size=7, seed=3)
    batch_state = toy.initial_state(MIXED_ROWS)
    ids, scores, _, trace = run_traced(decoder, toy, batch_state, 6, 3, attention=True)
    beam_width, steps = ids.shape[1], ids.shape[2]
    assert trace["attention"].shape == (len(MIXED_ROWS), beam_width, steps, SOURCE_TIME)
    for row in range(len(MIXED_ROWS)):
        for slot in range(beam_width):
            path = path_back(trace["parent_ids"][row], slot)
            # Step t ran on the slot that the path's step t extends.
            ran_on = trace["parent_ids"][row][np.arange(steps), path]
            expected = (1000.0 * (np.arange(steps) + 1) + 10.0 * ran_on)[:, None] + np.arange(
                SOURCE_TIME)
            np.testing.assert_array_equal(trace["attention"][row, slot], expected)
    # The attention key changes no result.
    plain = run_traced(decoder, toy, batch_state, 6, 3, trace=False)
    for got, expected in zip((ids, scores), plain):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("decoder", sorted(DECODERS))
def test_a_sentences_trace_does_not_depend_on_its_batch_mates(decoder):
    toy = ToyDecoder(seed=11)
    batch_state = dict(toy.initial_state(MIXED_ROWS),
                       attention=np.zeros([len(MIXED_ROWS), SOURCE_TIME], np.float32))
    together, *alone_runs = run_fed(DECODERS[decoder], attention_update_fn(toy), batch_state,
                                    [(ALL_ROWS, MIXED_LIMITS)] + each_alone(MIXED_LIMITS), 6, 3,
                                    trace=True)
    alone, mine = ([], []), ([], [])  # (hypotheses, trace steps) of each sentence
    for row, (ids, scores, lengths, trace) in enumerate(alone_runs):
        steps = ids.shape[-1]
        alone[0].extend(hypotheses(ids, scores, lengths, trace["attention"]))
        alone[1].extend(trace_steps(trace))
        mine[0].append(hypotheses(*together[:3], together[3]["attention"][:, :, :steps])[row])
        mine[1].append(trace_steps(together[3])[row][:steps])
    assert_same_hypotheses(alone[0], mine[0], alone[1], mine[1])


@pytest.mark.parametrize("trace, arrays", [(False, 2), (True, 5)])
def test_trace_off_records_only_what_backtracking_needs(trace, arrays):
    # trace=False: the two TensorArrays of the tokens and their parents, and no more.
    toy = ToyDecoder()
    with tf.Graph().as_default() as graph:
        state = dict(tf.nest.map_structure(tf.constant, toy.initial_state([0.0])),
                     attention=tf.zeros([1, SOURCE_TIME]))
        outputs = while_loop_beam_search(attention_update_fn(toy), state, 5, 3, BEGIN, END,
                                         trace=trace)
        assert len(outputs) == 3 + trace
        assert sum(op.type == "TensorArrayV3" and "backtrack" not in op.name
                   for op in graph.get_operations()) == arrays


@pytest.mark.parametrize("decoder", sorted(DECODERS))
def test_the_models_attention_trace_is_a_distribution_over_the_source(decoder):
    from seq2seq.config import DEFAULTS
    from seq2seq.model import Seq2SeqModel
    params = dict(DEFAULTS["model"], embedding_size=8, num_units=8, attention="bahdanau",
                  attention_size=8, dropout=0.0)
    source_length = [5, 3]
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        model = Seq2SeqModel(params, 20, 20)
        source_ids = np.random.RandomState(3).randint(4, 20, size=[2, 5]).astype(np.int32)
        encoded = model.encode(tf.constant(source_ids), tf.constant(source_length), training=False)
        outputs = []
        for with_attention in (False, True):
            update_fn, state = model.beam_update_fn(encoded, 3 if decoder != "greedy" else 1,
                                                    with_attention=with_attention)
            outputs.append(DECODERS[decoder](update_fn, state, 6, 3, 2, 3, 0.6, trace=True))
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            plain, traced = session.run(outputs)
    attention = traced[3]["attention"]                                   # [b, k, t, src]
    assert attention.shape == traced[0].shape + (5,)
    for row, length in enumerate(source_length):
        np.testing.assert_allclose(attention[row, :, :, :length].sum(-1), 1.0, rtol=1e-5)
        assert (attention[row, :, :, length:] == 0).all()
    for got, expected in zip(traced[:3], plain[:3]):
        np.testing.assert_array_equal(got, expected)
    assert "attention" not in plain[3]
