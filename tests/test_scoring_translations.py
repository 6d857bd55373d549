"""Decoding options through the Translator and the CLIs, and scoring given translations
(`Translator.score`, `python -m decode.score`) against the searches' own scores."""

import json
import os
import re

import numpy as np
import pytest
from conftest import SHORT_SOURCES

from decode import score as score_cli
from decode import translate as translate_cli
from tests.same_hypotheses import SCORE_TOLERANCE, assert_same_hypotheses, n_best

# An unrolled graph takes seconds to build, and each graph in the translator's session slows every
# later first call: the unrolled searches run last, on SHORT_SOURCES, and the per-decoder test's
# unrolled case (gnmt, average, none, no other option) builds the graphs that the cases None and
# the two kinds reuse.
OPTION_CASES = [None, {"coverage_penalty": 0.4}, {"length_penalty_kind": "average"},
                {"length_penalty_kind": "none"},
                {"length_penalty": 1.0, "min_length": 3, "no_repeat_ngram_size": 2}]


@pytest.fixture(scope="module")
def sources(tiny_config, tiny_data):
    with open(os.path.join(tiny_config["data"]["data_dir"], "dev.src"), encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()][:8]


@pytest.mark.parametrize("options", OPTION_CASES, ids=str)
def test_scoring_a_searchs_output_gives_back_its_score(translator, sources, options):
    source_ids = [translator.tokenize(text) for text in sources]
    for decoder in ("while_loop", "sample"):  # unrolled = while_loop: tested apart
        results = translator.search(source_ids, decoder, options=options)
        score_options = {name: value for name, value in (options or {}).items()
                         if name in ("length_penalty", "length_penalty_kind", "coverage_penalty")}
        for slot in range(2):
            targets = [result.ids[slot] for result in results]
            scored = translator.score_tokens(source_ids, targets, score_options)
            np.testing.assert_allclose([result.scores[slot] for result in results],
                                       [entry["score"] for entry in scored], atol=1e-4)
            for entry, target in zip(scored, targets):
                assert entry["length"] == len(target) + 1
                assert entry["pieces"][-1]["piece"] == "</s>"
                np.testing.assert_allclose(sum(p["log_prob"] for p in entry["pieces"]),
                                           entry["log_prob"], atol=1e-4)


@pytest.mark.parametrize("decoder, options, beam_width, message", [
    ("while_loop", {"coverage_penalty": -0.1}, None, "coverage_penalty must be in 0.."),
    ("while_loop", {"coverage_penalty": "0.2"}, None, "coverage_penalty must be a number"),
    ("while_loop", {"no_repeat_ngram_size": 999}, None, "no_repeat_ngram_size must be in 0..64"),
    ("while_loop", {"length_penalty_kind": "log"}, None, "length_penalty_kind must be one of"),
    ("while_loop", {"temperature": 0.5}, None,
     "temperature is an option of the sample and mbr decoders, not of while_loop"),
    ("sample", {"epsilon": 1.0}, None, "epsilon must be in [0, 1), got 1.0"),
    ("while_loop", {"diverse_beam_groups": 2}, None,
     "diverse_beam_groups must divide beam_width 3, got 2"),
    ("greedy", {"diverse_beam_strength": 1.0}, None,
     "diverse_beam_strength is an option of the while_loop and unrolled decoders, not of greedy"),
    ("mbr", {"mbr_utility": "meteor"}, None, "mbr_utility must be one of chrf, bleu"),
    ("mbr", None, 3, "beam_width is not an option of the mbr decoder with mbr_candidates sample"),
    ("mbr", {"mbr_candidates": "beam", "num_samples": 2}, 9, "beam_width must be an integer in"),
    ("sample", {"top_p": 0.0}, None, "top_p must be in (0, 1]"),
    ("sample", {"temperature": 0}, None, "temperature must be in 1e-06.."),
    ("sample", {"seed": 1.5}, None, "seed must be an integer"),
    ("sample", {"num_samples": 99}, None, "num_samples must be in 1..8"),
    ("sample", None, 4, "beam_width is not an option of the sample decoder"),
    ("greedy", {"bogus": 1}, None, "unknown decoding option \"bogus\""),
])
def test_bad_options_are_refused_naming_the_option(translator, decoder, options, beam_width,
                                                   message):
    with pytest.raises(ValueError) as error:
        translator.translate(["segunda"], decoder, beam_width, options=options)
    assert message in str(error.value)


def test_sample_translations_do_not_depend_on_the_batch(translator, sources):
    options = {"seed": 5, "num_samples": 3, "top_p": 0.9}
    together = translator.translate(sources, "sample", n_best=3, options=options)
    alone = [translator.translate([text], "sample", n_best=3, options=options)[0]
             for text in sources[:4]]
    assert_same_hypotheses(n_best(together[:4]), n_best(alone))
    other_seed = translator.translate(sources, "sample", n_best=3, options=dict(options, seed=6))
    assert [[h.text for h in t.n_best] for t in other_seed] != [
        [h.text for h in t.n_best] for t in together]


def test_score_cli_writes_a_json_line_per_pair(tiny_model_dir, translator, sources, tmp_path,
                                               capsys):
    (tmp_path / "src").write_text("\n".join(sources[:3]) + "\n", encoding="utf-8")
    targets = [t.text for t in translator.translate(sources[:3], "while_loop",
                                                    options={"length_penalty_kind": "average"})]
    (tmp_path / "tgt").write_text("\n".join(targets) + "\n", encoding="utf-8")
    # U+2028 inside a line (and CR LF ends) split lines as decode.translate splits them
    targets[1] = targets[1].replace(" ", "\u2028", 1)
    (tmp_path / "tgt").write_text("\r\n".join(targets) + "\r\n", encoding="utf-8")
    assert score_cli.main(["--model_dir", tiny_model_dir, "--input", str(tmp_path / "src"),
                           "--targets", str(tmp_path / "tgt"), "--output", str(tmp_path / "out"),
                           "--length_penalty_kind", "average"]) == 0
    lines = (tmp_path / "out").read_text(encoding="utf-8").splitlines()
    expected = translator.score(sources[:3], targets, {"length_penalty_kind": "average"})
    assert [json.loads(line) for line in lines] == json.loads(json.dumps(expected))
    for target, refused in (("uma\n", "--input has 3 lines but --targets has 1"),
                            ("a\n\xe9\n", "tgt:2: not valid UTF-8")):
        (tmp_path / "tgt").write_bytes(target.encode("latin-1"))
        assert score_cli.main(["--model_dir", tiny_model_dir, "--input", str(tmp_path / "src"),
                               "--targets", str(tmp_path / "tgt")]) == 2
        assert refused in capsys.readouterr().err
    for flags, refused in ((["--model_dir", str(tmp_path / "none")], "none has no config.yaml"),
                           (["--model_dir", tiny_model_dir, "--hparams", "foo=1"],
                            "unknown key 'foo'")):
        assert score_cli.main(flags + ["--input", str(tmp_path / "src"),
                                       "--targets", str(tmp_path / "src")]) == 2
        assert refused in capsys.readouterr().err


def test_translate_cli_takes_the_options_as_flags(tiny_model_dir, sources, tmp_path, capsys):
    (tmp_path / "src").write_text("\n".join(sources[:3]) + "\n", encoding="utf-8")
    status = translate_cli.main(["--model_dir", tiny_model_dir, "--input", str(tmp_path / "src"),
                                 "--decoder", "sample", "--seed", "3", "--num_samples", "2",
                                 "--n_best", "2", "--output", str(tmp_path / "out")])
    assert status == 0
    assert len((tmp_path / "out").read_text(encoding="utf-8").split("\n\n")) == 4
    status = translate_cli.main(["--model_dir", tiny_model_dir, "--input", str(tmp_path / "src"),
                                 "--coverage_penalty", "-1"])
    assert status == 2
    assert "coverage_penalty must be in 0.." in capsys.readouterr().err


def test_scoring_pieces_refuses_what_no_search_emits(translator):
    pieces = translator.translate(["one"], "greedy")[0].pieces
    assert translator.score(["one"], None, target_pieces=[pieces[:-1]]) == \
        translator.score(["one"], None, target_pieces=[pieces])  # its end token is implied
    for bad, message in [(["▁", "no such piece"], 'target_pieces[0][1] is "no such piece", not a '
                          "piece of the target vocabulary"),
                         (["</s>", "▁"],
                          'target_pieces[0][0] is "</s>", which ends a translation'),
                         ("▁", "target_pieces[0] must be a list of target pieces")]:
        with pytest.raises(ValueError, match=re.escape(message)):
            translator.score(["one"], None, target_pieces=[bad])
    with pytest.raises(ValueError, match="1 sources but 2 target_pieces"):
        translator.score(["one"], None, target_pieces=[pieces, pieces])
    mixed = translator.score(["one", "two"], ["um", ""], target_pieces=[None, pieces])
    alone = translator.score(["one"], ["um"]) + translator.score(["two"], None,
                                                                 target_pieces=[pieces])
    assert [entry["pieces"][-1]["piece"] for entry in mixed] == ["</s>"] * 2
    for got, want in zip(mixed, alone):  # other batch shapes: other rounding
        assert [p["piece"] for p in got["pieces"]] == [p["piece"] for p in want["pieces"]]
        assert got["score"] == pytest.approx(want["score"], abs=SCORE_TOLERANCE)


def test_epsilon_is_fed_and_over_one_half_leaves_the_greedy_piece_alone(translator, sources):
    greedy = translator.translate(sources, "greedy")
    options = {"num_samples": 3, "seed": 2}
    free = translator.translate(sources, "sample", n_best=3, options=options)
    built = len(translator.variants)
    cut = translator.translate(sources, "sample", n_best=3, options=dict(options, epsilon=0.6))
    assert len(translator.variants) == built, "epsilon is fed, not built into the graph"
    # Above 1/2 only the most likely piece has probability >= epsilon: every sample is greedy's.
    assert_same_hypotheses([[(h.text, h.score) for h in t.n_best] for t in cut],
                           [[(g.text, g.score)] * 3 for g in greedy])
    assert [[h.text for h in t.n_best] for t in free] != [[h.text for h in t.n_best] for t in cut]


def test_diverse_groups_shape_the_graph_and_their_strength_is_fed(translator, sources):
    greedy = translator.translate(sources, "greedy")
    groups = {"diverse_beam_groups": 3}
    plain = translator.translate(sources, "while_loop", n_best=3, options=dict(
        groups, diverse_beam_strength=0.0))
    built = len(translator.variants)
    diverse = translator.translate(sources, "while_loop", n_best=3, options=dict(
        groups, diverse_beam_strength=100.0))
    assert len(translator.variants) == built, "the strength is fed"
    # Three groups of width 1 and no penalty: three copies of greedy decoding.
    assert_same_hypotheses([[(h.text, h.score) for h in t.n_best] for t in plain],
                           [[(g.text, g.score)] * 3 for g in greedy])
    # A strong penalty: no group starts with a piece an earlier group took at that step.
    for translation in diverse:
        assert len({h.pieces[0] for h in translation.n_best}) == 3, translation


def test_score_cli_scores_given_pieces(tiny_model_dir, translator, sources, tmp_path):
    found = translator.translate(sources[:3], "sample", options={"temperature": 3.0, "seed": 1})
    (tmp_path / "src").write_text("\n".join(sources[:3]) + "\n", encoding="utf-8")
    (tmp_path / "tgt").write_text("".join(" ".join(t.pieces) + "\n" for t in found),
                                  encoding="utf-8")
    score_cli.main(["--model_dir", tiny_model_dir, "--input", str(tmp_path / "src"),
                    "--targets", str(tmp_path / "tgt"), "--output", str(tmp_path / "out"),
                    "--target_pieces"])
    scored = [json.loads(line) for line in (tmp_path / "out").read_text("utf-8").splitlines()]
    assert [[piece["piece"] for piece in entry["pieces"]] for entry in scored] == [
        t.pieces for t in found]
    np.testing.assert_allclose([entry["score"] for entry in scored], [t.score for t in found],
                               atol=1e-4)


# Every decoder, with options that make its segmentation odd: hot samples often emit a piece
# sequence that is not their text's own segmentation ("▁" then "</s>" is the text "").
DECODER_CASES = [("while_loop", {}), ("greedy", {"coverage_penalty": 0.3}),
                 ("sample", {"temperature": 3.0, "seed": 1}), ("exact", {"max_expansions": 20}),
                 ("mbr", {"temperature": 3.0, "num_samples": 3}),
                 ("mbr", {"mbr_candidates": "beam"}),
                 ("while_loop", {"diverse_beam_groups": 3, "diverse_beam_strength": 2.0}),
                 ("unrolled", {})]  # last: see OPTION_CASES


@pytest.mark.parametrize("decoder, options", DECODER_CASES, ids=str)
def test_scoring_a_searchs_own_pieces_gives_back_its_score(translator, decoder, options):
    sources = SHORT_SOURCES[:4]
    odd = 0
    for kind in ("gnmt", "average", "none"):
        scoring = {"length_penalty_kind": kind,
                   "coverage_penalty": options.get("coverage_penalty")}
        found = translator.translate(sources, decoder, n_best=1 if decoder in ("greedy", "exact")
                                     else 3 if decoder == "mbr" else 2,
                                     options=dict(options, length_penalty_kind=kind))
        for slot in range(len(found[0].n_best)):
            hypotheses = [translation.n_best[slot] for translation in found]
            scored = translator.score(sources, None, scoring,
                                      target_pieces=[h.pieces for h in hypotheses])
            np.testing.assert_allclose([entry["score"] for entry in scored],
                                       [h.score for h in hypotheses], atol=1e-4)
            as_text = translator.score(sources, [h.text for h in hypotheses], scoring)
            for entry, text_entry, hypothesis in zip(scored, as_text, hypotheses):
                assert [piece["piece"] for piece in entry["pieces"]] == hypothesis.pieces
                assert hypothesis.pieces[-1] == "</s>" and entry["length"] == len(hypothesis.pieces)
                odd += [piece["piece"] for piece in text_entry["pieces"]] != hypothesis.pieces
        assert [t.pieces for t in found] == [t.n_best[0].pieces for t in found]
    if decoder in ("sample", "mbr") and options.get("temperature"):
        assert odd, "no hypothesis whose pieces differ from its text's segmentation"


def test_options_change_what_the_searches_return_and_both_searches_agree(translator):
    scores = []
    for options in OPTION_CASES:  # the first: the config's options
        loop = translator.translate(SHORT_SOURCES, "while_loop", n_best=3, options=options)
        unrolled = translator.translate(SHORT_SOURCES, "unrolled", n_best=3, options=options)
        assert_same_hypotheses(n_best(loop), n_best(unrolled))  # the while_loop compacts
        scores.append([t.score for t in loop])
    for options, changed in zip(OPTION_CASES[1:], scores[1:]):
        assert changed != scores[0], options
