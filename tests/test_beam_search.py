"""Beam searches against independent references: NumPy, brute force, each other.

The toy model (tests/toy_decoder.py) exists as TensorFlow and as NumPy code;
the TF searches run the first, the NumPy reference and the enumeration the
second.
"""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

import numpy_beam_search as reference
from decode import rnn_beam_search, scoring, while_loop_beam_search
from toy_decoder import ToyDecoder, row_state

SEARCHES = {"unrolled": rnn_beam_search, "while_loop": while_loop_beam_search}
BEGIN, END = 0, 1
# end_bias per batch row: never ends, neutral, ends soon, ends at once.
MIXED_ROWS = [-3.0, 0.0, 0.8, 2.5]


def run_search(search, toy, batch_state, sequence_length, beam_width, alpha, max_lengths=None):
    """Builds `search` over the toy model in a fresh graph and runs it."""
    with tf.Graph().as_default():
        state = tf.nest.map_structure(tf.constant, batch_state)
        outputs = search(toy.update_fn, state, sequence_length, beam_width, BEGIN, END, alpha,
                         max_lengths=max_lengths)
        with tf.Session() as session:
            return session.run(outputs)


def run_reference(toy, batch_state, sequence_length, beam_width, alpha, max_lengths=None):
    rows = [reference.beam_search(toy.numpy_step, row_state(batch_state, row), sequence_length,
                                  beam_width, BEGIN, END, alpha,
                                  max_length=None if max_lengths is None else max_lengths[row])
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
    # 400 tokens: select_best takes each row's best tokens with the chunked top_k.
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
    batch_state = toy.initial_state(MIXED_ROWS)
    together = run_search(SEARCHES[search], toy, batch_state, 6, 3, 0.6)
    for row in range(len(MIXED_ROWS)):
        alone_state = tf.nest.map_structure(lambda x: x[row:row + 1], batch_state)
        ids, scores, lengths = run_search(SEARCHES[search], toy, alone_state, 6, 3, 0.6)
        np.testing.assert_array_equal(ids[0], together[0][row, :, :ids.shape[-1]])
        np.testing.assert_allclose(scores[0], together[1][row], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(lengths[0], together[2][row])


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


def test_select_best_carries_a_finished_hypothesis_once_with_its_score():
    # Beam of 3: slot 0 finished with the best score, slots 1 and 2 alive.
    with tf.Graph().as_default():
        beam = scoring.Beam(log_probs=tf.constant([[-0.1, -1.0, -2.0]]),
                            lengths=tf.constant([[2, 3, 3]]),
                            finished=tf.constant([[True, False, False]]))
        logits = tf.constant([[[9.0, 0.0, 0.0, 0.0],      # finished: ignored
                               [0.0, 0.0, 2.0, 1.0],
                               [0.0, 0.0, 5.0, 0.0]]])
        choice = scoring.select_best(logits, beam, step=3, end_token_id=END, alpha=0.0)
        with tf.Session() as session:
            beam, token_ids, parent_ids = session.run(choice)
    log_softmax_1 = reference.log_softmax([0.0, 0.0, 2.0, 1.0])
    log_softmax_2 = reference.log_softmax([0.0, 0.0, 5.0, 0.0])
    np.testing.assert_array_equal(parent_ids, [[0, 1, 2]])
    np.testing.assert_array_equal(token_ids, [[END, 2, 2]])
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
    batch_state = toy.initial_state(MIXED_ROWS)
    together = run_search(SEARCHES[search], toy, batch_state, 6, 3, 0.6, max_lengths=MIXED_LIMITS)
    # The same sentences with other batch-mates' limits, and each one alone.
    other_limits = [MIXED_LIMITS[0], 6, 6, 6]
    regrouped = run_search(SEARCHES[search], toy, batch_state, 6, 3, 0.6, max_lengths=other_limits)
    np.testing.assert_array_equal(regrouped[0][0, :, :together[0].shape[-1]], together[0][0])
    np.testing.assert_allclose(regrouped[1][0], together[1][0], rtol=1e-5, atol=1e-6)
    for row, limit in enumerate(MIXED_LIMITS):
        alone_state = tf.nest.map_structure(lambda x: x[row:row + 1], batch_state)
        ids, scores, lengths = run_search(SEARCHES[search], toy, alone_state, 6, 3, 0.6,
                                          max_lengths=[limit])
        np.testing.assert_array_equal(ids[0], together[0][row, :, :ids.shape[-1]])
        assert (together[0][row, :, ids.shape[-1]:] == END).all()
        np.testing.assert_allclose(scores[0], together[1][row], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(lengths[0], together[2][row])


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


def test_select_best_ends_alive_hypotheses_at_their_limit_with_the_true_log_prob():
    # Two sentences, same beam of 3 (slot 0 finished, slots 1 and 2 alive),
    # same logits; only the first is at its limit (step 3 chooses token 4).
    with tf.Graph().as_default():
        beam = scoring.Beam(log_probs=tf.constant([[-0.1, -1.0, -2.0]] * 2),
                            lengths=tf.constant([[2, 3, 3]] * 2),
                            finished=tf.constant([[True, False, False]] * 2))
        logits = tf.constant([[[9.0, 0.0, 0.0, 0.0],
                               [0.0, 0.0, 2.0, 1.0],
                               [0.0, 0.0, 5.0, 0.0]]] * 2)
        choice = scoring.select_best(logits, beam, step=3, end_token_id=END, alpha=0.0,
                                     max_lengths=tf.constant([4, 9]))
        with tf.Session() as session:
            beam, token_ids, parent_ids = session.run(choice)
    log_softmax_1 = reference.log_softmax([0.0, 0.0, 2.0, 1.0])
    log_softmax_2 = reference.log_softmax([0.0, 0.0, 5.0, 0.0])
    # At the limit: only end tokens, each with its own log-probability.
    np.testing.assert_array_equal(parent_ids[0], [0, 1, 2])
    np.testing.assert_array_equal(token_ids[0], [END, END, END])
    np.testing.assert_allclose(beam.log_probs[0], [-0.1, -1.0 + log_softmax_1[END],
                                                   -2.0 + log_softmax_2[END]], rtol=1e-6)
    np.testing.assert_array_equal(beam.lengths[0], [2, 4, 4])
    np.testing.assert_array_equal(beam.finished[0], [True, True, True])
    # Below the limit: as without one.
    np.testing.assert_array_equal(token_ids[1], [END, 2, 2])
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
    pytest.param(lambda toy: dict(beam_width=True), "beam_width", id="beam_width=True"),
    pytest.param(lambda toy: dict(sequence_length=0), "sequence_length", id="length=0"),
    pytest.param(lambda toy: dict(sequence_length=2.5), "sequence_length", id="length=2.5"),
    pytest.param(lambda toy: dict(end_token_id=-1), "end_token_id", id="end=-1"),
    pytest.param(lambda toy: dict(end_token_id=toy.vocab_size), "end_token_id", id="end=vocab"),
    pytest.param(lambda toy: dict(initial_state={"rnn": tf.zeros([])}), "initial_state",
                 id="scalar_state"),
    pytest.param(lambda toy: dict(initial_state=()), "initial_state", id="empty_state"),
    pytest.param(lambda toy: dict(initial_state={"rnn": tf.placeholder(tf.float32, None)}),
                 "initial_state", id="state_of_unknown_rank"),
    pytest.param(lambda toy: dict(update_fn=lambda state, ids: (state, tf.zeros([2, 7]))),
                 "logits", id="rank2_logits"),
    pytest.param(lambda toy: dict(update_fn=lambda state, ids: ((state,), tf.zeros([2, 3, 7]))),
                 "structure", id="state_structure_changes"),
    pytest.param(lambda toy: dict(update_fn="not callable"), "update_fn", id="update_fn"),
    pytest.param(lambda toy: dict(max_lengths=[2.0, 3.0]), "max_lengths", id="float_limits"),
    pytest.param(lambda toy: dict(max_lengths=[[2, 3]]), "max_lengths", id="rank2_limits"),
    pytest.param(lambda toy: dict(max_lengths=[2, 3, 4]), "max_lengths", id="limits_for_3_of_2"),
    pytest.param(lambda toy: dict(max_lengths=tf.placeholder(tf.int32, None)), "max_lengths",
                 id="limits_of_unknown_rank"),
])
def test_bad_arguments_raise_value_error_when_building(search, bad_arguments, message):
    """`bad_arguments(toy)` returns the arguments to spoil, built in the test's graph."""
    with tf.Graph().as_default():
        toy, state = _toy_graph_inputs()
        arguments = dict(update_fn=toy.update_fn, initial_state=state, sequence_length=4,
                         beam_width=3, begin_token_id=BEGIN, end_token_id=END)
        arguments.update(bad_arguments(toy))
        with pytest.raises(ValueError, match=message):
            SEARCHES[search](**arguments)


def test_unrolled_search_rejects_a_tensor_sequence_length():
    with tf.Graph().as_default():
        toy, state = _toy_graph_inputs()
        with pytest.raises(ValueError, match="while_loop_beam_search"):
            rnn_beam_search(toy.update_fn, state, tf.constant(4), 3, BEGIN, END)


@pytest.mark.parametrize("sequence_length", [
    lambda: tf.constant([4]), lambda: tf.constant(4.0)])
def test_while_loop_rejects_a_tensor_length_that_is_not_an_int_scalar(sequence_length):
    with tf.Graph().as_default():
        toy, state = _toy_graph_inputs()
        with pytest.raises(ValueError, match="sequence_length"):
            while_loop_beam_search(toy.update_fn, state, sequence_length(), 3, BEGIN, END)


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
