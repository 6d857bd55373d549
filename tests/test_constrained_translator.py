"""Constraints and placeholders through the Translator, the DecodeRequest and the CLI.

decode/constraints.py's search is checked against NumPy and brute force in test_constraints.py;
here the checks are the contract's: every hypothesis returned holds every constraint (its
pieces, as the scoring reads them), keep mode puts back each placeholder of the source exactly
once (data_pipeline/placeholders.py's `find` on the output text), both beam searches agree, and
what cannot be honoured is refused naming itself.
"""

import collections
import re

import pytest
from conftest import protecting_model_dir

from data_pipeline.placeholders import find
from decode import translate as translate_cli
from decode.graphs import output_length_limit
from tests.same_hypotheses import assert_same_hypotheses, n_best

SOURCES = ["one", "two three", "four five six"]


def pieces_of(translator, text):
    """The target pieces of `text`, as the scoring reads them."""
    return [piece["piece"] for piece in translator.score(["x"], [text])[0]["pieces"][:-1]]


def holds(pieces, wanted):
    """Whether `wanted` is a contiguous run of `pieces`."""
    return any(pieces[start:start + len(wanted)] == wanted for start in range(len(pieces)))


@pytest.fixture(scope="module")
def wanted(translator):
    """Per source two constraints the model would not put there by itself: the other sources'
    translations' first words, and a number word."""
    plain = [t.text.split()[0] for t in translator.translate(SOURCES)]
    return [[plain[(index + 1) % len(plain)], "dez"] for index in range(len(SOURCES))]


def test_every_hypothesis_holds_every_constraint_and_both_searches_agree(translator, wanted):
    found = {decoder: translator.translate(SOURCES, decoder, 4, n_best=4, constraints=wanted)
             for decoder in ("while_loop", "unrolled")}
    for translation, constraints in zip(found["while_loop"], wanted):
        assert len(translation.n_best) == 4
        for hypothesis in translation.n_best:
            for constraint in constraints:
                assert holds(hypothesis.pieces, pieces_of(translator, constraint)), (
                    hypothesis.pieces, constraint)
        assert [h.score for h in translation.n_best] == sorted(
            [h.score for h in translation.n_best], reverse=True)
    assert_same_hypotheses(n_best(found["unrolled"]), n_best(found["while_loop"]))
    alone = translator.translate(SOURCES[1:2], "while_loop", 4, n_best=4,
                                 constraints=wanted[1:2])
    assert_same_hypotheses(n_best(alone), n_best(found["while_loop"][1:2]))


def test_sentences_without_constraints_decode_as_without(translator, wanted):
    plain = translator.translate(SOURCES, n_best=3)
    mixed = translator.translate(SOURCES, n_best=3, constraints=[None, wanted[1], []])
    assert_same_hypotheses(n_best(mixed[::2]), n_best(plain[::2]))


def test_constraints_longer_than_the_length_limit_raise_it(translator):
    limit = output_length_limit(len(translator.tokenize("one")), translator.config["decode"])
    long_constraint = (pieces_of(translator, "um dois") * limit)[:limit + 2]
    found = translator.translate(["one"], constraints=[[long_constraint]])[0]
    assert holds(found.pieces, long_constraint) and len(found.pieces) > limit


def test_constraints_that_cannot_be_honoured_are_refused_naming_them(translator):
    too_long = pieces_of(translator, "um") * translator.config["data"]["max_target_length"]
    for decoder in ("greedy", "sample", "exact", "mbr"):
        with pytest.raises(ValueError, match="constraints is an option of the while_loop and "
                                             "unrolled decoders, not of %s" % decoder):
            translator.translate(["one"], decoder, constraints=[["um"]])
        with pytest.raises(ValueError, match="placeholders is an option of the while_loop and "
                                             "unrolled decoders, not of %s" % decoder):
            translator.translate(["one"], decoder, options={"placeholders": "free"})
    for kwargs, message in [
            ({"constraints": [["um"], []]}, "constraints must be a list of one list per "
                                            "sentence (1)"),
            ({"constraints": ["um"]}, "constraints[0] must be a list of constraints, got one "
                                      "string"),
            ({"constraints": [["um", ""]]}, "constraints[0][1] is empty"),
            ({"constraints": [["um \u00df"]]}, 'constraints[0][0] "um \\u00df" holds characters '
                                               "the target vocabulary lacks"),
            ({"constraints": [[too_long]]}, "constraints[0]: its %d pieces, the target "
                                            "prefix's and the end token must fit in "
                                            "max_target_length" % len(too_long)),
            ({"constraints": [["um"]], "beam_width": 4,
              "options": {"diverse_beam_groups": 2}}, "constraints cannot be combined with "
                                                      "diverse_beam_groups 2"),
            ({"options": {"placeholders": "all"}}, "placeholders must be one of keep, free")]:
        with pytest.raises(ValueError, match=re.escape(message)):
            translator.translate(["one"], **kwargs)


@pytest.fixture(scope="module")
def protecting(tiny_model_dir, tmp_path_factory):
    """The tiny model told that it has two protected tokens (every vocabulary holds ｟0｠ to
    ｟15｠), though it never saw one: only keep mode can put them in."""
    from decode.translator import Translator
    translator = Translator(protecting_model_dir(tiny_model_dir,
                                                 tmp_path_factory.mktemp("protecting")))
    yield translator
    translator.close()


def test_keep_mode_puts_back_each_placeholder_of_the_source_exactly_once(protecting):
    texts = ["one %(name)s two {count}", "<b>three</b>", "four %s", "five"]
    assert protecting.protected_tokens == 2
    assert protecting.placeholders(texts[0]) == ["%(name)s", "{count}"]
    for decoder in ("while_loop", "unrolled"):
        kept = protecting.translate(texts, decoder, 3, n_best=3)
        for text, translation in zip(texts, kept):
            for hypothesis in translation.n_best:  # the first two, protected; a third is text
                assert collections.Counter(find(hypothesis.text)) == collections.Counter(
                    find(text)[:2]), (text, hypothesis.text)
    free = protecting.translate(texts, options={"placeholders": "free"})
    assert any(collections.Counter(find(t.text)) != collections.Counter(find(text)[:2])
               for text, t in zip(texts, free)), "the model never learned to keep them"


def test_translate_cli_takes_constraints_per_input_line(translator, tiny_model_dir, tmp_path,
                                                        capsys, wanted):
    (tmp_path / "in").write_text("one\n\ntwo three\n", encoding="utf-8")
    (tmp_path / "constraints").write_text("%s\tdez\nignored\n\n" % wanted[0][0],
                                          encoding="utf-8")
    args = ["--model_dir", tiny_model_dir, "--input", str(tmp_path / "in"), "--output",
            str(tmp_path / "out"), "--constraints", str(tmp_path / "constraints")]
    assert translate_cli.main(args) == 0
    expected = translator.translate(["one", "two three"], constraints=[wanted[0], []])
    assert (tmp_path / "out").read_text(encoding="utf-8").split("\n") == [
        expected[0].text, "", expected[1].text, ""]
    (tmp_path / "constraints").write_text("um\n", encoding="utf-8")
    assert translate_cli.main(args) == 2
    assert "--constraints %s has 1 lines but the input has 3" % (tmp_path / "constraints") in \
        capsys.readouterr().err
    (tmp_path / "constraints").write_text("um\n\n\n", encoding="utf-8")
    assert translate_cli.main(args + ["--decoder", "greedy"]) == 2
    assert "constraints is an option of the while_loop and unrolled decoders, not of greedy" in \
        capsys.readouterr().err


def test_diverse_groups_decode_placeholders_free(protecting):
    texts = ["one %(name)s two {count}", "five"]
    options = {"diverse_beam_groups": 2}
    assert n_best(protecting.translate(texts, beam_width=4, n_best=4, options=options)) == n_best(
        protecting.translate(texts, beam_width=4, n_best=4,
                             options=dict(options, placeholders="free")))
