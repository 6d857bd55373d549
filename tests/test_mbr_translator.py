"""The mbr decoder through the Translator, against a second path: the sample and while_loop
decoders' own outputs, reranked here with sacrebleu directly."""

import os

import numpy as np
import pytest
from sacrebleu.metrics import BLEU, CHRF

from tests.same_hypotheses import SCORE_TOLERANCE, assert_same_hypotheses, n_best

SAMPLING = {"num_samples": 4, "seed": 7, "temperature": 1.5}


@pytest.fixture(scope="module")
def sources(tiny_config, tiny_data):
    with open(os.path.join(tiny_config["data"]["data_dir"], "dev.src"), encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()][:6]


def expected_utilities(candidates, references, utility="chrf"):
    """Each candidate's mean sentence-level utility against every reference."""
    metric = CHRF() if utility == "chrf" else BLEU(effective_order=True)
    return [np.mean([metric.sentence_score(candidate, [reference]).score
                     for reference in references]) for candidate in candidates]


def assert_reranks(translation, candidates, references, utility="chrf"):
    """`translation` holds `candidates` (Hypotheses) ordered by their expected utility against
    the texts `references`, its best first; its text and score are the best's."""
    expected = expected_utilities([h.text for h in candidates], references, utility)
    got = sorted((c.index, c.text, c.score, c.expected_utility) for c in translation.candidates)
    assert [(index, text) for index, text, _, _ in got] == [
        (index, h.text) for index, h in enumerate(candidates)]
    np.testing.assert_allclose([score for _, _, score, _ in got], [h.score for h in candidates],
                               atol=SCORE_TOLERANCE)
    np.testing.assert_allclose([utility for *_, utility in got], expected, atol=1e-9)
    ranked = [c.expected_utility for c in translation.candidates]
    assert ranked == sorted(ranked, reverse=True)
    best = translation.candidates[0]
    assert (translation.text, translation.score, translation.expected_utility) == (
        best.text, best.score, best.expected_utility)
    assert [h.text for h in translation.n_best] == [c.text for c in translation.candidates][
        :len(translation.n_best)]
    assert np.shape(translation.utilities) == (len(candidates), len(references))
    np.testing.assert_allclose(np.mean(translation.utilities, axis=1), expected, atol=1e-9)


def test_mbr_of_samples_reranks_the_sample_decoders_draws(translator, sources):
    samples = translator.translate(sources, "sample", n_best=4, options=SAMPLING)
    found = translator.translate(sources, "mbr", n_best=2, options=SAMPLING)
    for translation, drawn in zip(found, samples):
        assert_reranks(translation, drawn.n_best, [h.text for h in drawn.n_best])


def test_mbr_of_the_beam_reranks_its_n_best_against_the_samples(translator, sources):
    options = dict(SAMPLING, mbr_candidates="beam", mbr_utility="bleu")
    beams = translator.translate(sources, "while_loop", beam_width=3, n_best=3)
    samples = translator.translate(sources, "sample", n_best=4, options=SAMPLING)
    found = translator.translate(sources, "mbr", beam_width=3, n_best=3, options=options)
    for translation, beam, drawn in zip(found, beams, samples):
        assert_reranks(translation, beam.n_best, [h.text for h in drawn.n_best], "bleu")


def test_mbr_is_reproducible_by_seed_and_independent_of_its_batch(translator, sources):
    together = translator.translate(sources, "mbr", n_best=4, options=SAMPLING)
    alone = [translator.translate([text], "mbr", n_best=4, options=SAMPLING)[0]
             for text in reversed(sources)][::-1]
    assert_same_hypotheses(n_best(together), n_best(alone))
    assert [t.text for t in together] == [t.text for t in alone]
    other_seed = translator.translate(sources, "mbr", n_best=4, options=dict(SAMPLING, seed=8))
    assert n_best(other_seed) != n_best(together)


@pytest.mark.parametrize("kwargs, message", [
    ({"trace": True}, "trace: the mbr decoder keeps no beams to trace"),
    ({"beam_width": 3}, "beam_width is not an option of the mbr decoder with mbr_candidates "
                        "sample (num_samples sets how many translations it draws)"),
    ({"n_best": 5}, "n_best must be an integer in 1..4 (the number of candidates), got 5"),
    ({"options": {"mbr_candidates": "beam"}, "n_best": 4},
     "n_best must be an integer in 1..3 (the number of candidates), got 4"),
    ({"options": {"diverse_beam_groups": 3}},
     "diverse_beam_groups is an option of the while_loop and unrolled decoders, not of mbr"),
])
def test_bad_mbr_arguments_are_refused_naming_them(translator, kwargs, message):
    kwargs.setdefault("options", {})
    with pytest.raises(ValueError) as error:
        translator.translate(["one"], "mbr", **kwargs)
    assert message in str(error.value)
