"""Diverse beam search (decode/diverse.py) against the NumPy reference and what must follow.

Both beam searches (the while_loop with and without compaction) run the toy model against
tests/numpy_beam_search.py's groups; G = 1 must be the plain search, lambda = 0 the plain
search of width k / G in every group, and a strong lambda must part the groups' first tokens.
"""

import functools

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

import numpy_beam_search as reference
from decode import greedy_search, rnn_beam_search, while_loop_beam_search
from decode.scoring import Scoring
from test_beam_search import (BEGIN, END, MIXED_LIMITS, MIXED_ROWS, assert_same_result,
                              path_back, run_reference, run_search)
from toy_decoder import ToyDecoder

SEARCHES = {"unrolled": rnn_beam_search, "while_loop": while_loop_beam_search,
            "compact": functools.partial(while_loop_beam_search, compact=True)}


def diverse(groups, strength, alpha=0.6):
    return Scoring(alpha, diverse_beam_groups=groups, diverse_beam_strength=strength)


@pytest.mark.parametrize("limits", [None, MIXED_LIMITS], ids=["free", "limits"])
@pytest.mark.parametrize("beam_width, groups, strength", [(4, 2, 0.5), (6, 3, 3.0), (3, 3, 1.0)])
@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_matches_numpy_reference(search, beam_width, groups, strength, limits):
    # MIXED_ROWS: rows that never end, end soon or at once: finished hypotheses in the groups.
    toy = ToyDecoder(vocab_size=7, seed=3)
    batch_state = toy.initial_state(MIXED_ROWS)
    actual = run_search(SEARCHES[search], toy, batch_state, 6, beam_width,
                        diverse(groups, strength), max_lengths=limits)
    expected = run_reference(toy, batch_state, 6, beam_width, 0.6, limits, groups=groups,
                             strength=strength)
    assert_same_result(actual, expected)
    for row_scores in actual[1]:  # best first across the groups
        assert (np.diff(row_scores[row_scores > -np.inf]) <= 0).all()


@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_one_group_is_the_plain_search(search):
    toy = ToyDecoder(vocab_size=7, seed=3)
    batch_state = toy.initial_state(MIXED_ROWS)
    plain = run_search(SEARCHES[search], toy, batch_state, 6, 4, 0.6, max_lengths=MIXED_LIMITS)
    one_group = run_search(SEARCHES[search], toy, batch_state, 6, 4, diverse(1, 5.0),
                           max_lengths=MIXED_LIMITS)
    for got, expected in zip(one_group, plain):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_without_strength_every_group_is_the_plain_search_of_its_width(search):
    # lambda = 0: G independent beams of width k / G from the same start, so every
    # hypothesis of the plain reference of that width comes back G times.
    toy = ToyDecoder(vocab_size=7, seed=5)
    batch_state = toy.initial_state(MIXED_ROWS)
    ids, scores, lengths = run_search(SEARCHES[search], toy, batch_state, 6, 6, diverse(3, 0.0))
    expected = run_reference(toy, batch_state, 6, 2, 0.6)
    assert_same_result((ids, scores, lengths),
                       tuple(np.repeat(part, 3, axis=1) for part in expected))


@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_a_strong_penalty_gives_each_group_its_own_first_token(search):
    # G = k: a group is one hypothesis; at the first step group g pays lambda = 100 for each
    # token the groups before it took, so the k first tokens differ (7 tokens for 3 groups).
    toy = ToyDecoder(vocab_size=7, seed=3)
    batch_state = toy.initial_state(MIXED_ROWS)
    ids, scores, _ = run_search(SEARCHES[search], toy, batch_state, 5, 3, diverse(3, 100.0))
    plain_ids, _, _ = run_search(SEARCHES[search], toy, batch_state, 5, 3, 0.6)
    assert all(len(set(row[:, 0])) == 3 for row in ids)
    assert not all(len(set(row[:, 0])) == 3 for row in plain_ids), "the test must be able to fail"
    assert np.isfinite(scores).all()  # the penalty steers, the scores stay the model's


@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_ties_go_as_in_the_numpy_reference(search):
    # Logits of 0 or 1 looked up by (step, previous token): equal scores at every step.
    table = np.random.RandomState(0).randint(2, size=(5, 6, 6)).astype(np.float32)

    def update_fn(state, ids):
        return state + 1, tf.gather_nd(table, tf.stack([state, ids], axis=-1))

    with tf.Graph().as_default():
        outputs = SEARCHES[search](update_fn, tf.zeros([1], tf.int32), 5, 4, BEGIN, END,
                                   diverse(2, 0.3))
        with tf.Session() as session:
            actual = session.run(outputs)
    expected = reference.beam_search(lambda state, token: (state + 1, table[state, token]), 0, 5,
                                     4, BEGIN, END, 0.6, groups=2, strength=0.3)
    assert_same_result(actual, tuple(part[None] for part in expected))


@pytest.mark.parametrize("search", ["unrolled", "compact"])
def test_the_trace_leads_to_the_sorted_results(search):
    toy = ToyDecoder(vocab_size=7, seed=3)
    batch_state = toy.initial_state(MIXED_ROWS)
    with tf.Graph().as_default():
        outputs = SEARCHES[search](toy.update_fn, tf.nest.map_structure(tf.constant, batch_state),
                                   6, 4, BEGIN, END, diverse(2, 2.0), max_lengths=MIXED_LIMITS,
                                   trace=True)
        with tf.Session() as session:
            ids, scores, _, trace = session.run(outputs)
    np.testing.assert_array_equal(trace["scores"][:, -1], scores)
    steps = ids.shape[-1]
    for row in range(len(MIXED_ROWS)):
        for slot in np.flatnonzero(scores[row] > -np.inf):
            path = path_back(trace["parent_ids"][row], slot)
            np.testing.assert_array_equal(trace["token_ids"][row][np.arange(steps), path],
                                          ids[row, slot])


def test_greedy_is_one_group():
    toy = ToyDecoder(seed=3)
    state = toy.initial_state(MIXED_ROWS)
    runs = []
    for scoring in (0.6, diverse(2, 1.0)):
        with tf.Graph().as_default():
            outputs = greedy_search(toy.update_fn, tf.nest.map_structure(tf.constant, state), 6,
                                    BEGIN, END, scoring)
            with tf.Session() as session:
                runs.append(session.run(outputs))
    for got, expected in zip(*runs):
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("search", sorted(SEARCHES))
@pytest.mark.parametrize("groups, strength, message", [
    (3, 0.5, "diverse_beam_groups must be an int >= 1 dividing beam_width 4, got 3"),
    (0, 0.5, "diverse_beam_groups .* got 0"),
    (2.0, 0.5, "diverse_beam_groups .* got 2.0"),
    (2, -0.1, "diverse_beam_strength must be >= 0, got -0.1"),
])
def test_bad_groups_or_strength_raise_when_building(search, groups, strength, message):
    toy = ToyDecoder()
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=message):
            SEARCHES[search](toy.update_fn, tf.nest.map_structure(
                tf.constant, toy.initial_state([0.0])), 4, 4, BEGIN, END, diverse(groups, strength))


def test_a_negative_strength_tensor_fails_when_run():
    toy = ToyDecoder()
    with tf.Graph().as_default():
        strength = tf.placeholder(tf.float32, [])
        outputs = while_loop_beam_search(
            toy.update_fn, tf.nest.map_structure(tf.constant, toy.initial_state([0.0])), 4, 4,
            BEGIN, END, diverse(2, strength))
        with tf.Session() as session:
            session.run(outputs, {strength: 0.5})
            with pytest.raises(tf.errors.InvalidArgumentError, match="diverse_beam_strength"):
                session.run(outputs, {strength: -0.5})
