"""tests/same_hypotheses.py's rule on hand-made decodes: what a float tie excuses and what not."""

import warnings

import numpy as np
import pytest

from tests.same_hypotheses import (SCORE_TOLERANCE, FloatTie, assert_same_hypotheses, hypotheses,
                                   json_trace, trace_steps)

A, B, C, D = (5, 1), (6, 1), (7, 8, 1), (9, 1)
NEAR = SCORE_TOLERANCE / 2


def ranking(*slots):
    return [list(slots)]


def test_equal_hypotheses_within_the_tolerance_agree_without_a_tie():
    with warnings.catch_warnings():
        warnings.simplefilter("error", FloatTie)
        assert assert_same_hypotheses(ranking((A, -1.0), (B, -2.0)),
                                      ranking((A, -1.0 + NEAR), (B, -2.0 - NEAR))) == set()


@pytest.mark.parametrize("got, want", [
    (ranking((A, -1.0), (B, -1.0 - NEAR), (C, -3.0)),
     ranking((B, -1.0), (A, -1.0 - NEAR), (C, -3.0))),                     # a swap
    (ranking((A, -1.0), (B, -2.0)), ranking((A, -1.0), (C, -2.0 + NEAR))),  # the last slot
], ids=["swap", "last slot"])
def test_a_float_tie_excuses_other_hypotheses_and_is_reported(got, want):
    with pytest.warns(FloatTie, match="sentence 0: a float tie at slots"):
        assert assert_same_hypotheses(got, want) == {0}


@pytest.mark.parametrize("got, want, message", [
    (ranking((A, -1.0), (B, -2.0)), ranking((A, -1.0), (B, -2.0 - 3 * SCORE_TOLERANCE)),
     "scores"),
    (ranking((A, -1.0), (B, -2.0), (C, -3.0)), ranking((D, -1.0), (B, -2.0), (C, -3.0)),
     "no float tie explains it"),                                        # not the last slot
    (ranking((A, -1.0), (B, -2.0)), ranking((A, -1.0), (C, -2.5)), "scores"),
    (ranking((A, -1.0)), ranking((A, -1.0), (B, -2.0)), "1 slots, expected 2"),
], ids=["score", "first slot", "last slot, no tie", "slots"])
def test_what_no_float_tie_explains_fails(got, want, message):
    with pytest.raises(AssertionError, match=message):
        assert_same_hypotheses(got, want)


def test_arrays_compare_ids_up_to_their_lengths_and_attention_as_scores():
    ids = np.array([[[5, 1, 1], [6, 7, 1]]])
    scores, lengths = np.array([[-1.0, -2.0]]), np.array([[2, 3]])
    attention = np.ones([1, 2, 3, 4])
    got = hypotheses(ids, scores, lengths, attention)
    assert [slot[0] for slot in got[0]] == [(5, 1), (6, 7, 1)]
    padded_otherwise = np.where(np.arange(3) < lengths[..., None], ids, 9)
    assert_same_hypotheses(got, hypotheses(padded_otherwise, scores + NEAR, lengths,
                                           attention + NEAR))
    with pytest.raises(AssertionError, match="sentence 0, slot 1"):
        assert_same_hypotheses(got, hypotheses(ids, scores, lengths,
                                               attention + np.array([0, 1e-3])[:, None, None]))


def traces(token_ids, parent_ids, scores):
    """A one-sentence trace, as arrays [1, time, beam] and as docs/API.md's JSON."""
    arrays = {"token_ids": np.array([token_ids]), "parent_ids": np.array([parent_ids]),
              "scores": np.array([scores]), "finished": np.zeros([1, len(scores), 2], bool)}
    steps = [{"pieces": list(map(str, t)), "parents": p, "scores": s, "finished": [False] * 2}
             for t, p, s in zip(token_ids, parent_ids, scores)]
    return arrays, {"steps": steps, "n_best": [{"pieces": ["a"], "attention": [[1.0]]}] * 2}


@pytest.mark.parametrize("form", ["arrays", "json"])
def test_a_traced_tie_ends_the_comparison_of_its_sentence(form):
    def steps(*args):
        arrays, json = traces(*args)
        return trace_steps(arrays) if form == "arrays" else [json_trace(json)[0]]
    first = steps([[2, 3], [4, 5], [6, 7]], [[0, 0], [0, 1], [1, 0]],
                  [[-1, -2], [-3, -3 - NEAR], [-5, -6]])
    # Step 1's slots swapped within the tolerance: the steps after it may differ.
    tied = steps([[2, 3], [5, 4], [9, 9]], [[0, 0], [1, 0], [0, 0]],
                 [[-1, -2], [-3, -3 - NEAR], [-7, -8]])
    with pytest.warns(FloatTie, match="sentence 0, step 1"):
        assert assert_same_hypotheses(ranking((A, 0.0)), ranking((B, -5.0)), first, tied) == {0}
    # Step 1's first slot changed with no tie: a failure.
    wrong = steps([[2, 3], [9, 5], [6, 7]], [[0, 0], [0, 1], [1, 0]],
                  [[-1, -2], [-3, -3 - NEAR], [-5, -6]])
    with pytest.raises(AssertionError, match="sentence 0, step 1: slots \\[0\\]"):
        assert_same_hypotheses(ranking((A, 0.0)), ranking((A, 0.0)), first, wrong)
