"""The decoding lab's families (lab/families.py) and examples (lab/sweep.py): the pure
functions against hand computations and constructed data, the run on the tiny model."""

import collections
import json
import os
import shutil

import numpy as np
import pytest

import sacrebleu
from sacrebleu.metrics import BLEU

from lab import compare, families, lab_report, sweep
from tests.test_compare import assert_table_holds, lab_flags, markdown_tables, tiny_pairs
from seq2seq.model_dir import AVERAGED_RECORD

Output = collections.namedtuple("Output", "text score")  # what the lab reads of a Translation


def test_sentence_kinds_against_constructed_sentences():
    references = ["a casa azul", "a casa azul", "a casa azul", "o gato"]
    narrow = (1, [Output("o gato", -2.0), Output("a casa azul", -3.0), Output("x", -4.0),
                  Output("o gato", -1.0)])
    wide = (16, [Output("o gato", -2.0), Output("a casa", -2.5), Output("a casa azul", -3.5),
                 Output("o gato", -1.0)])
    beam = (4, [Output("o gato", -2.0), Output("a casa", -2.5), Output("x y", -3.0),
                Output("o gato", -1.0)])
    exact = [{"text": "gato", "score": -1.5, "proven": True},         # higher: a search error
             {"text": "", "score": -2.5 + 5e-5, "proven": True},      # within the tolerance
             {"text": "y", "score": -0.5, "proven": False},           # not proven: no error
             {"text": "o gato", "score": -1.0, "proven": True}]
    reference_scores = [-9.0, -2.5 + 5e-5, -2.0, -1.0]
    kinds = sweep.sentence_kinds(references, narrow, wide, beam, exact, reference_scores)
    assert [sorted(found) for found in kinds] == [
        ["search_error"], ["empty_exact_best", "wider_beam_changes", "wider_beam_worse"],
        ["reference_better", "wider_beam_changes"], []]
    chrf = [sacrebleu.sentence_chrf(text, [references[1]]).score for text in ("a casa azul",
                                                                               "a casa")]
    assert chrf[1] < chrf[0]
    assert kinds[1]["wider_beam_worse"] == kinds[1]["wider_beam_changes"] == (
        "width 1 (chrF %.1f): a casa azul / width 16 (chrF %.1f): a casa" % tuple(chrf))
    assert kinds[1]["empty_exact_best"] == (  # one note for the beam's output, exact, reference
        "beam 4 (score -2.500): a casa / exact (score -2.500, proven): (empty) / "
        "reference (score -2.500)")
    assert kinds[0]["search_error"] == (
        "beam 4 (score -2.000): o gato / exact (score -1.500, proven): gato / "
        "reference (score -9.000)")
    assert kinds[2]["reference_better"] == (
        "beam 4 (score -3.000): x y / exact (score -0.500, not proven): y / "
        "reference (score -2.000)")
    # Without the exact search or the references' scores, only the sweep's kinds.
    assert [sorted(found) for found in sweep.sentence_kinds(references, narrow, wide, beam)] == [
        [], ["wider_beam_changes", "wider_beam_worse"], ["wider_beam_changes"], []]


def test_examples_take_the_shortest_sources_of_each_kind():
    sources = ["ccc", "a", "bbbb", "dd", "ee", "f"]
    kinds = [{"search_error": "s0"}, {"search_error": "s1", "reference_better": "r1"},
             {"search_error": "s2"}, {"wider_beam_changes": "w", "wider_beam_worse": "w"},
             {"wider_beam_changes": "w4"}, {}]
    references = [source.upper() for source in sources]
    found = sweep.examples(sources, references, kinds, per_kind=2)
    # search_error: 1 ("a") and 0 ("ccc"); wider_beam_changes: 3 and 4 ("dd", "ee", the
    # earlier first); wider_beam_worse: 3; reference_better: 1. Shortest sources first.
    assert [example["index"] for example in found] == [1, 3, 4, 0]
    assert found[0] == {"index": 1, "source": "a", "reference": "A",
                        "kinds": ["search_error", "reference_better"], "note": "s1; r1"}
    assert found[1]["kinds"] == ["wider_beam_changes", "wider_beam_worse"]
    assert found[1]["note"] == "w", "one note said once"
    assert [example["index"] for example in sweep.examples(sources, references, kinds)] == [
        1, 3, 4, 0, 2], "every sentence of a kind, when fewer than per_kind"
    assert sweep.examples(sources, references, [{}] * len(sources)) == []


def test_n_best_diversity_by_hand_and_against_sentence_bleu():
    # Identical 4-word texts score 100, texts without a shared word 0: the first n-best's
    # six ordered pairs hold two 100s (33.33), the third's two (100); one text: left out.
    n_bests = [["a b c d", "a b c d", "w x y z"], ["one"], ["p q r s", "p q r s"]]
    assert families.n_best_diversity(n_bests) == pytest.approx((200 / 6 + 100) / 2)
    assert families.n_best_diversity([["one"], []]) is None
    texts = ["the cat sat on the mat", "a cat sat on a mat", "the dog sat", "on the mat"]
    bleu = BLEU(effective_order=True)
    pairs = [bleu.sentence_score(texts[i], [texts[j]]).score for i in range(4) for j in range(4)
             if i != j]
    assert families.n_best_diversity([texts]) == pytest.approx(np.mean(pairs))


def test_oracle_bleu_takes_each_sentences_candidate_of_best_chrf():
    references = ["the cat sat on the mat", "a dog ran in the park"]
    pools = [["a cat sat", "the cat sat on the mat", "the mat"],
             ["a dog ran in the park today", "dogs run"]]
    picks = [max(pool, key=lambda text: sacrebleu.sentence_chrf(text, [reference]).score)
             for pool, reference in zip(pools, references)]
    assert picks == ["the cat sat on the mat", "a dog ran in the park today"]
    assert families.oracle_bleu(pools, references) == pytest.approx(
        sacrebleu.corpus_bleu(picks, [references]).score)


def test_best_checkpoints_ranks_the_evaluations_whose_files_remain(tmp_path):
    for step in (100, 200, 300, 400):
        (tmp_path / ("model.ckpt-%d.index" % step)).write_text("")
    evaluations = [{"step": 100, "dev_bleu": 30.0}, {"step": 200, "dev_bleu": 31.0},
                   {"step": 300, "dev_bleu": 31.0}, {"step": 400, "dev_bleu": None},
                   {"step": 500, "dev_bleu": 40.0}]  # 500: deleted by keep_checkpoint_max
    (tmp_path / "training_status.json").write_text(json.dumps({"evaluations": evaluations}))
    assert families.best_checkpoints(str(tmp_path), 2) == [
        str(tmp_path / "model.ckpt-300"), str(tmp_path / "model.ckpt-200")]
    assert families.best_checkpoints(str(tmp_path), 3)[-1] == str(tmp_path / "model.ckpt-100")
    with pytest.raises(ValueError, match="--ensemble_best 4: .* holds 3 evaluated checkpoint"):
        families.best_checkpoints(str(tmp_path), 4)


def family_row(variant, **values):
    row = dict.fromkeys(key for _, key, _ in lab_report.FAMILY_COLUMNS)
    return dict(row, variant=variant, empty_percent=0.0, **values)


def test_the_markdown_report_holds_the_families_and_the_examples():
    rows = [family_row("beam 5", bleu=30.126, chrf=55.5, length_ratio=0.98,
                       sentences_per_second=12.0, speed_vs_beam5=1.0, n_best_diversity=61.25,
                       oracle_bleu=38.2),
            family_row("MBR (chrf, 32 samples, epsilon 0.02)", bleu=31.0, chrf=57.04,
                       length_ratio=1.01, sentences_per_second=1.5, speed_vs_beam5=0.125,
                       p_value_vs_beam5=0.0312, oracle_bleu=45.0, expected_utility_mean=60.04)]
    example = {"index": 7, "source": "Open", "reference": "Abrir", "kinds": ["search_error"],
               "note": "none: beam 4 (score -1.000): Abra / exact (score -0.500, proven): Abrir"}
    report = {"model": {"name": "tiny", "step": 400, "model_dir": "m"}, "families": rows,
              "inputs": {"sentences": 2, "source_tokens": 5, "source": "s", "reference": "r"},
              "examples": [example]}
    markdown = lab_report.markdown(report)
    (table,) = markdown_tables(markdown)
    assert_table_holds(rows, table, [key for _, key, _ in lab_report.FAMILY_COLUMNS])
    assert "- #7 (search_error): `Open` (reference `Abrir`). %s" % example["note"] in markdown


@pytest.mark.parametrize("flags, message", [
    (["--families", "mbr,beam"], "--families: 'beam' is not one of mbr, diverse"),
    (["--ensemble_best", "1"], "--ensemble_best must be at least 2, got 1"),
    (["--markdown", "lab.md"], "--markdown needs the lab (--sweep or the families)"),
    (["--families", "mbr", "--mbr_utility", "ter"], "invalid choice: 'ter'"),
])
def test_bad_family_flags_are_an_error_naming_them(flags, message, capsys):
    with pytest.raises(SystemExit):
        compare.parse_args(["--model_dir", "m"] + flags)
    assert message in capsys.readouterr().err


@pytest.fixture(scope="module")
def test_pairs(tiny_config, tiny_data):
    """The first 4 test sources and references of the tiny corpus."""
    return tiny_pairs(tiny_config, "test", 4)


def test_the_families_on_the_tiny_model(tiny_model_dir, translator, test_pairs, tmp_path):
    sources, references = test_pairs
    report_path, averaged = tmp_path / "report.json", str(tmp_path / "averaged")
    shutil.copytree(tiny_model_dir, averaged)  # named by training.average's record, if any
    with open(os.path.join(averaged, AVERAGED_RECORD), "w", encoding="utf-8") as record:
        json.dump({"checkpoints": ["model.ckpt-390", "model.ckpt-400"]}, record)
    ensemble = "%s+%s" % (tiny_model_dir, tiny_model_dir)
    assert compare.main(lab_flags(tiny_model_dir, tmp_path, sources, references) + [
        "--families", "diverse,mbr", "--mbr_samples", "6", "--compare_models", averaged,
        ensemble, "--json", str(report_path), "--markdown", str(tmp_path / "lab.md")]) == 0
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert "sweep" not in report and "examples" not in report
    beam, _, mbr, single, pair = report["families"]
    assert [row["variant"] for row in report["families"]] == [
        "beam 5", "diverse beam 5 (5 groups, strength 0.5)", "MBR (chrf, 6 samples, epsilon 0.02)",
        "%s (the average of steps 390+400)" % averaged, "%s (steps 400+400)" % ensemble]
    decodings = [("while_loop", 5, None), ("while_loop", 5, families.DIVERSE),
                 ("mbr", None, {"num_samples": 6, "epsilon": 0.02, "mbr_utility": "chrf"})]
    for row, (decoder, width, options) in zip(report["families"], decodings):
        translations = translator.translate(sources, decoder, width, 5 if width else 1,
                                            options=options)
        texts = [t.text for t in translations]
        assert row["bleu"] == pytest.approx(sacrebleu.corpus_bleu(texts, [references]).score)
        assert row["chrf"] == pytest.approx(sacrebleu.corpus_chrf(texts, [references]).score)
        pools = ([[h.text for h in t.n_best] for t in translations] if width else
                 [[c.text for c in t.candidates] for t in translations])
        picks = [max(pool, key=lambda text: (sacrebleu.sentence_chrf(text, [ref]).score,
                                             -pool.index(text)))
                 for pool, ref in zip(pools, references)]
        assert row["oracle_bleu"] == pytest.approx(
            sacrebleu.corpus_bleu(picks, [references]).score)
        if width:
            assert row["n_best_diversity"] == pytest.approx(families.n_best_diversity(pools))
            assert all(len(pool) == 5 for pool in pools)
    assert mbr["expected_utility_mean"] == pytest.approx(np.mean([
        t.expected_utility for t in translator.translate(sources, "mbr", options=decodings[2][2])]))
    # The model itself, alone or as an ensemble of two copies, decodes as beam 5 does; sacrebleu
    # counts no difference as no chance: p = 1 / (1000 resamples + 1).
    for row in (single, pair):
        assert row["bleu"] == pytest.approx(beam["bleu"])
        assert row["p_value_vs_beam5"] == pytest.approx(1 / 1001)
    assert beam["p_value_vs_beam5"] is None and beam["speed_vs_beam5"] == 1.0
    for row in report["families"]:
        assert row["sentences_per_second"] > 0
        assert row["speed_vs_beam5"] == pytest.approx(
            row["sentences_per_second"] / beam["sentences_per_second"])
    (table,) = markdown_tables((tmp_path / "lab.md").read_text(encoding="utf-8"))
    assert_table_holds(report["families"], table, [key for _, key, _ in lab_report.FAMILY_COLUMNS])


def test_the_sweep_gives_examples_of_its_own_sentences(tiny_model_dir, translator, test_pairs,
                                                       tmp_path):
    sources, references = test_pairs
    report_path = tmp_path / "report.json"
    assert compare.main(lab_flags(tiny_model_dir, tmp_path, sources, references) + [
        "--exact", "--max_expansions", "50", "--sweep_beam_widths", "1,3",
        "--normalisations", "none", "--json", str(report_path)]) == 0
    report = json.loads(report_path.read_text(encoding="utf-8"))
    narrow, wide = (translator.translate(sources, "while_loop", width, options={
        "length_penalty_kind": "none"}) for width in (1, 3))
    changed = [index for index in range(len(sources)) if narrow[index].text != wide[index].text]
    assert changed, "the tiny model's widths 1 and 3 differ somewhere"
    for example in report["examples"]:
        index = example["index"]
        assert (example["source"], example["reference"]) == (sources[index], references[index])
        assert ("wider_beam_changes" in example["kinds"]) == (index in changed)
        assert example["note"].startswith("none: ")
    assert {example["index"] for example in report["examples"]} >= set(changed)
    exact = report["exact"][0]["sentences"]
    assert {example["index"] for example in report["examples"]
            if "empty_exact_best" in example["kinds"]} == {
        index for index, best in enumerate(exact) if not best["text"].strip()}
