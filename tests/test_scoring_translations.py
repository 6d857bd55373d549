"""Decoding options through the Translator and the CLIs, and scoring given translations
(`Translator.score`, `python -m decode.score`) against the searches' own scores."""

import json
import os

import numpy as np
import pytest

from decode import score as score_cli
from decode import translate as translate_cli
from tests.same_hypotheses import assert_same_hypotheses, n_best

OPTION_CASES = [None, {"coverage_penalty": 0.4}, {"length_penalty_kind": "average"},
                {"length_penalty_kind": "none", "no_repeat_ngram_size": 2},
                {"length_penalty": 1.0, "min_length": 3}]


@pytest.fixture(scope="module")
def dev_sources(tiny_config, tiny_data):
    with open(os.path.join(tiny_config["data"]["data_dir"], "dev.src"), encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


@pytest.fixture(scope="module")
def sources(dev_sources):
    return dev_sources[:8]


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


def test_options_change_what_the_searches_return_and_both_searches_agree(translator, dev_sources):
    sources = sorted(dev_sources, key=len)[:8]  # short: the unrolled graphs build faster
    plain = translator.translate(sources, "while_loop", n_best=3)
    for options in OPTION_CASES[1:]:
        loop = translator.translate(sources, "while_loop", n_best=3, options=options)
        unrolled = translator.translate(sources, "unrolled", n_best=3, options=options)
        assert_same_hypotheses(n_best(loop), n_best(unrolled))  # the while_loop compacts
        assert [t.score for t in loop] != [t.score for t in plain], options


@pytest.mark.parametrize("decoder, options, beam_width, message", [
    ("while_loop", {"coverage_penalty": -0.1}, None, "coverage_penalty must be in 0.."),
    ("while_loop", {"coverage_penalty": "0.2"}, None, "coverage_penalty must be a number"),
    ("while_loop", {"no_repeat_ngram_size": 999}, None, "no_repeat_ngram_size must be in 0..64"),
    ("while_loop", {"length_penalty_kind": "log"}, None, "length_penalty_kind must be one of"),
    ("while_loop", {"temperature": 0.5}, None, "temperature is an option of the sample decoder"),
    ("sample", {"top_p": 0.0}, None, "top_p must be in (0, 1]"),
    ("sample", {"temperature": 0}, None, "temperature must be in (0, inf]"),
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
    score_cli.main(["--model_dir", tiny_model_dir, "--input", str(tmp_path / "src"),
                    "--targets", str(tmp_path / "tgt"), "--output", str(tmp_path / "out"),
                    "--length_penalty_kind", "average"])
    lines = (tmp_path / "out").read_text(encoding="utf-8").splitlines()
    expected = translator.score(sources[:3], targets, {"length_penalty_kind": "average"})
    assert [json.loads(line) for line in lines] == json.loads(json.dumps(expected))
    (tmp_path / "tgt").write_text("uma\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        score_cli.main(["--model_dir", tiny_model_dir, "--input", str(tmp_path / "src"),
                        "--targets", str(tmp_path / "tgt")])
    assert "--input has 3 lines but --targets has 1" in capsys.readouterr().err


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
