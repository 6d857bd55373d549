"""Target prefixes through the Translator and `decode.translate --target_prefix`, against second
paths: the same sentences without a prefix, a search's own output forced back, the scoring of
the pieces. The searches' prefix forcing itself: tests/test_target_prefix.py."""

import re

import numpy as np
import pytest
from conftest import SHORT_SOURCES

from decode import translate as translate_cli
from decode.graphs import output_length_limit
from tests.same_hypotheses import SCORE_TOLERANCE, assert_same_hypotheses, n_best

SOURCES = SHORT_SOURCES[:5]  # as "one" below: two unrolled graphs in all, with prefixes and not
DECODERS = [("while_loop", {}), ("unrolled", {}), ("greedy", {}),
            ("sample", {"num_samples": 3, "seed": 4}), ("mbr", {"num_samples": 3}), ("exact", {})]


def pieces_of(translator, text):
    """The target pieces of `text`, as the scoring reads them."""
    return [piece["piece"] for piece in translator.score(["x"], [text])[0]["pieces"][:-1]]


@pytest.mark.parametrize("decoder, options", DECODERS, ids=[d for d, _ in DECODERS])
def test_sentences_without_a_prefix_decode_as_without_prefixes(translator, decoder, options):
    plain = translator.translate(SOURCES, decoder, options=options)
    assert translator.translate(SOURCES, decoder, options=options,
                                target_prefixes=[""] * len(SOURCES)) == plain
    # Batched with a prefixed sentence (another graph): the others as before.
    mixed = translator.translate(SOURCES, decoder, options=options,
                                 target_prefixes=[None, "", "um", None, ""])
    assert_same_hypotheses(n_best(mixed[:2] + mixed[3:]), n_best(plain[:2] + plain[3:]))


@pytest.mark.parametrize("decoder, options", DECODERS, ids=[d for d, _ in DECODERS])
def test_translations_start_with_their_prefix_and_score_as_searched(translator, decoder, options):
    prefixes = ["um", "dois e", "a", "", "Quatro"]
    found = translator.translate(SOURCES, decoder, options=options, target_prefixes=prefixes)
    for translation, prefix in zip(found, prefixes):
        wanted = pieces_of(translator, prefix)
        assert translation.pieces[:len(wanted)] == wanted
        assert translation.text.startswith(prefix)
    scored = translator.score(SOURCES, None, target_pieces=[t.pieces for t in found])
    np.testing.assert_allclose([s["score"] for s in scored], [t.score for t in found], atol=1e-4)


@pytest.mark.parametrize("decoder", ["while_loop", "unrolled", "greedy", "exact"])
def test_a_searchs_own_output_as_prefix_gives_it_back_with_its_score(translator, decoder):
    plain = translator.translate(SOURCES, decoder)
    forced = translator.translate(SOURCES, decoder,
                                  target_prefixes=[t.pieces[:-1] for t in plain])
    assert [t.pieces for t in forced] == [t.pieces for t in plain]
    np.testing.assert_allclose([t.score for t in forced], [t.score for t in plain],
                               atol=SCORE_TOLERANCE)


@pytest.mark.parametrize("decoder", ["while_loop", "unrolled", "greedy", "sample", "exact"])
def test_a_prefix_longer_than_the_length_limit_is_kept_whole(translator, decoder):
    limit = output_length_limit(len(translator.tokenize("one")), translator.config["decode"])
    prefix = (pieces_of(translator, "um dois") * limit)[:limit + 3]
    found = translator.translate(["one"], decoder, target_prefixes=[prefix])[0]
    assert found.pieces == prefix + ["</s>"], "the limit is raised to the prefix and the end"


def test_bad_prefixes_are_refused_naming_them(translator):
    for kwargs, message in [
            ({"target_prefixes": ["um", "dois"]},
             "target_prefixes must be a list of one prefix per sentence (1)"),
            ({"target_prefixes": "um"}, "target_prefixes must be a list of one prefix per"),
            ({"target_prefixes": ["um ß"]},
             'target_prefixes[0] "um \\u00df" holds characters the target vocabulary lacks: ß'),
            ({"target_prefixes": [["▁", "</s>"]]},
             'target_prefixes[0][1] is "</s>", which ends a translation'),
            ({"target_prefixes": [["no such piece"]]},
             'target_prefixes[0][0] is "no such piece", not a piece of the target vocabulary')]:
        with pytest.raises(ValueError, match=re.escape(message)):
            translator.translate(["one"], **kwargs)


def test_translate_cli_takes_a_prefix_per_input_line(translator, tiny_model_dir, tmp_path,
                                                     capsys):
    (tmp_path / "in").write_text("one\n\ntwo\n", encoding="utf-8")
    (tmp_path / "prefixes").write_text("um\nignored\n\n", encoding="utf-8")
    args = ["--model_dir", tiny_model_dir, "--input", str(tmp_path / "in"), "--output",
            str(tmp_path / "out"), "--target_prefix", str(tmp_path / "prefixes")]
    assert translate_cli.main(args) == 0
    expected = translator.translate(["one", "two"], target_prefixes=["um", ""])
    assert (tmp_path / "out").read_text(encoding="utf-8").split("\n") == [
        expected[0].text, "", expected[1].text, ""]
    (tmp_path / "prefixes").write_text("um\n", encoding="utf-8")
    (tmp_path / "out").write_text("kept", encoding="utf-8")
    assert translate_cli.main(args) == 2
    assert "--target_prefix %s has 1 lines but the input has 3" % (tmp_path / "prefixes") in \
        capsys.readouterr().err
    assert (tmp_path / "out").read_text(encoding="utf-8") == "kept", "checked before writing"
    (tmp_path / "prefixes").write_text("um\nignored\num \u00df\n", encoding="utf-8")
    assert translate_cli.main(args) == 2
    assert '%s:3: "um \\u00df" holds characters the target vocabulary lacks: \u00df' % (
        tmp_path / "prefixes") in capsys.readouterr().err, "named by its file and line"
