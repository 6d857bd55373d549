"""decode/mbr.py against a brute force: sacrebleu called pair by pair, the argmax by a loop."""

import itertools

import numpy as np
import pytest
import sacrebleu

from decode import mbr
from decode.mbr import mbr_choose, oracle_choice, utility_matrix

POOL = ["o gato está no tapete", "o gato está no tapete", "um gato no tapete",
        "o cão está no tapete", "", "o gato senta no tapete", "um gato no tapete"]
SENTENCE_UTILITY = {"chrf": lambda hyp, ref: sacrebleu.sentence_chrf(hyp, [ref]).score,
                    "bleu": lambda hyp, ref: sacrebleu.sentence_bleu(hyp, [ref]).score}


def brute_force(candidates, scores, references, utility):
    """(chosen index, expected utilities, order best first, the full matrix), pair by pair."""
    matrix = np.array([[SENTENCE_UTILITY[utility](c, r) for r in references] for c in candidates])
    expected = [sum(row) / len(references) for row in matrix]
    best = 0
    for c in range(1, len(candidates)):
        if (expected[c], scores[c]) > (expected[best], scores[best]):
            best = c
    order = sorted(range(len(candidates)), key=lambda c: (-expected[c], -scores[c], c))
    return best, expected, order, matrix


@pytest.mark.parametrize("utility", ["chrf", "bleu"])
@pytest.mark.parametrize("candidates, references", [
    (POOL, POOL),                                    # one pool: samples as candidates
    (POOL[2:5] + ["o gato no tapete"], POOL),        # other candidates (a beam's n-best)
    (["um gato"], ["um gato no tapete"]),            # one of each
])
def test_mbr_equals_the_brute_force(utility, candidates, references):
    scores = [-0.1 * (i % 3) for i in range(len(candidates))]
    result = mbr_choose(candidates, scores, references, utility)
    best, expected, order, matrix = brute_force(candidates, scores, references, utility)
    np.testing.assert_allclose(result.utilities, matrix, atol=1e-9)
    assert result.index == best and result.text == candidates[best]
    assert [c.index for c in result.candidates] == order
    np.testing.assert_allclose([c.expected_utility for c in result.candidates],
                               [expected[c] for c in order], atol=1e-9)
    assert [(c.text, c.score) for c in result.candidates] == [
        (candidates[c], scores[c]) for c in order]
    assert result.expected_utility == result.candidates[0].expected_utility


class TableMetric:
    """A hand-made utility: TABLE[(hyp, ref)]; counts its calls."""
    TABLE = {}
    calls = []

    def sentence_score(self, hyp, refs):
        TableMetric.calls.append((hyp, refs[0]))
        return type("Score", (), {"score": TableMetric.TABLE[hyp, refs[0]]})


@pytest.fixture
def table(monkeypatch):
    monkeypatch.setitem(mbr.UTILITIES, "table", TableMetric)
    TableMetric.calls = []
    return TableMetric.TABLE


def test_ties_go_to_the_higher_model_score_then_the_earlier(table):
    table.update({(c, r): 1.0 if c != "c" else 0.0 for c, r in itertools.product("abc", "abc")})
    assert mbr_choose(list("abc"), [-2.0, -1.0, 0.0], list("abc"), "table").index == 1
    tied = mbr_choose(list("abc"), [-1.0, -1.0, 0.0], list("abc"), "table")
    assert [c.index for c in tied.candidates] == [0, 1, 2]


def test_duplicates_are_scored_once_and_counted_as_often_as_drawn(table):
    # Each text agrees fully with itself, b partly with a and c: drawn a a a b c, a wins by its
    # copies; drawn a b b c, b does.
    table.update({(c, r): 1.0 if c == r else 0.4 if c == "b" else 0.0
                  for c, r in itertools.product("abc", "abc")})
    pool = list("aaabc")
    result = mbr_choose(pool, [0.0] * 5, pool, "table")
    assert sorted(TableMetric.calls) == sorted(itertools.product("abc", "abc"))  # 9, not 25
    np.testing.assert_allclose([c.expected_utility for c in result.candidates],
                               [0.6, 0.6, 0.6, 0.52, 0.2])
    assert result.index == 0 and [c.index for c in result.candidates] == [0, 1, 2, 3, 4]
    assert result.utilities.shape == (5, 5) and result.utilities[3, 4] == 0.4
    other = mbr_choose(list("abc"), [0.0] * 3, list("abbc"), "table")
    assert other.text == "b" and other.expected_utility == pytest.approx(0.7)


def test_an_empty_candidate_scores_zero_and_is_chosen_only_when_all_are_empty():
    result = mbr_choose(["", "um gato"], [0.0, -5.0], ["um gato", "", "um cão"])
    assert result.text == "um gato"
    assert result.candidates[1].text == "" and result.candidates[1].expected_utility == 0.0
    assert mbr_choose(["", ""], [-1.0, 0.0], ["um gato"]).index == 1


def test_bad_arguments_are_errors_that_name_them():
    with pytest.raises(ValueError, match="'meteor'.*chrf, bleu"):
        mbr_choose(["a"], [0.0], ["a"], utility="meteor")
    with pytest.raises(ValueError, match="candidates"):
        mbr_choose(["a", "b"], [0.0], ["a"])
    with pytest.raises(ValueError, match="pseudo-references"):
        mbr_choose(["a"], [0.0], [])


def test_the_oracle_is_the_best_candidate_against_the_reference_first_on_ties():
    reference = "o gato está no tapete"
    chrf = [SENTENCE_UTILITY["chrf"](c, reference) for c in POOL]
    index, utility = oracle_choice(POOL, reference)
    assert index == chrf.index(max(chrf)) == 0 and utility == pytest.approx(max(chrf))
    assert oracle_choice(POOL[2:], reference, "bleu")[0] == int(np.argmax(
        utility_matrix(POOL[2:], [reference], "bleu")[:, 0]))
