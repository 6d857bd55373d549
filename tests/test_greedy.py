"""Greedy decoding against a NumPy greedy decoder and against beam width 1."""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

import numpy_beam_search as reference
from decode import greedy_search, rnn_beam_search, while_loop_beam_search
from same_hypotheses import assert_same_hypotheses, hypotheses
from toy_decoder import ToyDecoder, row_state

BEGIN, END = 0, 1
# end_bias per batch row: never ends, neutral, ends soon, ends at once.
MIXED_ROWS = [-3.0, 0.0, 0.8, 2.5]


def run(decoder, toy, batch_state, sequence_length, *args, **kwargs):
    """Builds `decoder` over the toy model in a fresh graph and runs it."""
    with tf.Graph().as_default():
        state = tf.nest.map_structure(tf.constant, batch_state)
        outputs = decoder(toy.update_fn, state, sequence_length, *args, **kwargs)
        with tf.Session() as session:
            return session.run(outputs)


def run_greedy(toy, batch_state, sequence_length, alpha, max_lengths=None):
    return run(greedy_search, toy, batch_state, sequence_length, BEGIN, END, alpha,
               max_lengths=max_lengths)


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_matches_numpy_greedy(alpha):
    toy = ToyDecoder(seed=3)
    batch_state = toy.initial_state(MIXED_ROWS)
    ids, scores, lengths = run_greedy(toy, batch_state, 6, alpha)
    assert ids.shape[:2] == (4, 1) and scores.shape == lengths.shape == (4, 1)
    for row in range(len(MIXED_ROWS)):
        expected_ids, expected_score, expected_length = reference.greedy(
            toy.numpy_step, row_state(batch_state, row), 6, BEGIN, END, alpha)
        np.testing.assert_array_equal(ids[row, 0], expected_ids[:ids.shape[-1]])
        assert (expected_ids[ids.shape[-1]:] == END).all()
        np.testing.assert_allclose(scores[row, 0], expected_score, rtol=1e-5, atol=1e-5)
        assert lengths[row, 0] == expected_length


# Per-sentence limits for MIXED_ROWS (+ two rows): the row that never ends is
# cut off at 3, the neutral one may take a single token.
MIXED_LIMITS = [3, 1, 5, 2, 4, 6]


@pytest.mark.parametrize("max_lengths", [None, MIXED_LIMITS], ids=["no_limits", "limits"])
@pytest.mark.parametrize("alpha", [0.0, 0.6])
@pytest.mark.parametrize("beam_search", [rnn_beam_search, while_loop_beam_search],
                         ids=["unrolled", "while_loop"])
def test_equals_beam_width_one(beam_search, alpha, max_lengths):
    toy = ToyDecoder(vocab_size=9, hidden_size=6, seed=12)
    batch_state = toy.initial_state(MIXED_ROWS + [0.4, -1.0])
    ids, scores, lengths = run_greedy(toy, batch_state, 7, alpha, max_lengths=max_lengths)
    beam_ids, beam_scores, beam_lengths = run(beam_search, toy, batch_state, 7, 1, BEGIN, END,
                                              alpha, max_lengths=max_lengths)
    assert_same_hypotheses(hypotheses(ids, scores, lengths),
                           hypotheses(beam_ids, beam_scores, beam_lengths))
    assert (beam_ids[..., ids.shape[-1]:] == END).all()



@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_matches_numpy_greedy_with_per_sentence_limits(alpha):
    toy = ToyDecoder(seed=3)
    batch_state = toy.initial_state(MIXED_ROWS + [0.4, -1.0])
    ids, scores, lengths = run_greedy(toy, batch_state, 5, alpha, max_lengths=MIXED_LIMITS)
    for row, limit in enumerate(MIXED_LIMITS):
        expected_ids, expected_score, expected_length = reference.greedy(
            toy.numpy_step, row_state(batch_state, row), 5, BEGIN, END, alpha, max_length=limit)
        np.testing.assert_array_equal(ids[row, 0], expected_ids[:ids.shape[-1]])
        assert (expected_ids[ids.shape[-1]:] == END).all()
        np.testing.assert_allclose(scores[row, 0], expected_score, rtol=1e-5, atol=1e-5)
        assert lengths[row, 0] == expected_length <= limit
    assert lengths[0, 0] == MIXED_LIMITS[0], "the row that never ends must be cut off"


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_a_translation_cut_off_at_its_limit_pays_for_its_end_token(alpha):
    # The beam searches' constant model: p = [.05, .6, .05, .3], end token 3.
    # Limit 2: greedy takes 1, then the forced end token, which still costs
    # ln .3; a free end token would leave the score at ln .6.
    probs = np.array([0.05, 0.6, 0.05, 0.3])

    def update_fn(state, ids):
        return state, tf.zeros_like(ids, tf.float32)[..., None] + np.log(probs).astype(np.float32)

    with tf.Graph().as_default():
        outputs = greedy_search(update_fn, tf.zeros([1, 1]), 5, BEGIN, 3, alpha, max_lengths=[2])
        with tf.Session() as session:
            ids, scores, lengths = session.run(outputs)
    np.testing.assert_array_equal(ids, [[[1, 3]]])
    np.testing.assert_array_equal(lengths, [[2]])
    np.testing.assert_allclose(scores, [[np.log(0.6 * 0.3) / reference.length_penalty(2, alpha)]],
                               rtol=1e-6)


def test_stops_once_every_row_finished():
    toy = ToyDecoder(seed=4)
    ids, _, lengths = run_greedy(toy, toy.initial_state([3.0, 4.0]), 20, 0.0)
    assert ids.shape[-1] == lengths.max() < 20
    assert (ids[np.arange(2), 0, lengths[:, 0] - 1] == END).all()


def test_takes_a_tensor_sequence_length():
    toy = ToyDecoder(seed=6)
    batch_state = toy.initial_state([-3.0, 0.5])
    with tf.Graph().as_default():
        max_length = tf.placeholder(tf.int32, [])
        outputs = greedy_search(toy.update_fn, tf.nest.map_structure(tf.constant, batch_state),
                                max_length, BEGIN, END)
        with tf.Session() as session:
            from_tensor = session.run(outputs, {max_length: 5})
    for got, expected in zip(from_tensor, run_greedy(toy, batch_state, 5, 0.0)):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("length", [0, -2])
def test_rejects_a_tensor_length_below_one_when_run(length):
    toy = ToyDecoder()
    with tf.Graph().as_default():
        max_length = tf.placeholder(tf.int32, [])
        outputs = greedy_search(toy.update_fn,
                                tf.nest.map_structure(tf.constant, toy.initial_state([0.0])),
                                max_length, BEGIN, END)
        with tf.Session() as session:
            with pytest.raises(tf.errors.InvalidArgumentError, match="sequence_length must be >= 1"):
                session.run(outputs, {max_length: length})


@pytest.mark.parametrize("bad_arguments, message", [
    pytest.param(dict(sequence_length=0), "sequence_length", id="length=0"),
    pytest.param(dict(sequence_length=3.0), "sequence_length", id="length=3.0"),
    pytest.param(dict(end_token_id=7), "end_token_id", id="end=vocab"),
    pytest.param(dict(update_fn=lambda state, ids: (state, tf.zeros([2, 7]))), "logits",
                 id="rank2_logits"),
    pytest.param(dict(max_lengths=[2.5, 3.0]), "max_lengths", id="float_limits"),
    pytest.param(dict(max_lengths=[3]), "max_lengths", id="limits_for_1_of_2"),
])
def test_bad_arguments_raise_value_error_when_building(bad_arguments, message):
    with tf.Graph().as_default():
        toy = ToyDecoder()
        arguments = dict(update_fn=toy.update_fn, sequence_length=4, begin_token_id=BEGIN,
                         end_token_id=END,
                         initial_state=tf.nest.map_structure(tf.constant, toy.initial_state([0.0, 1.0])))
        arguments.update(bad_arguments)
        with pytest.raises(ValueError, match=message):
            greedy_search(**arguments)
