"""The decode.compare tool on the tiny trained model, and its helpers."""

import copy
import json
import os

import pytest

from decode import compare
from decode.translator import SearchResult

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class FakeDetokenizer:
    """Stands in for a Translator in `agreement`: ids -> text."""

    @staticmethod
    def detokenize(ids):
        return " ".join(map(str, ids))


@pytest.fixture(scope="module")
def short_pairs(tiny_config, tiny_data):
    """Dev pairs with at most 2 source words, so that one small unrolled graph fits them."""
    data_dir = tiny_config["data"]["data_dir"]
    with open(os.path.join(data_dir, "dev.src"), encoding="utf-8") as f:
        sources = f.read().splitlines()
    with open(os.path.join(data_dir, "dev.tgt"), encoding="utf-8") as f:
        targets = f.read().splitlines()
    return [(s, t) for s, t in zip(sources, targets) if len(s.split()) <= 2][:3]


def test_compare_cli_writes_a_json_report_and_a_png(tiny_model_dir, short_pairs, tmp_path,
                                                    capsys):
    source, reference = tmp_path / "in.txt", tmp_path / "ref.txt"
    # A blank line, dropped together with its reference.
    source.write_text("\n".join([short_pairs[0][0], ""] + [s for s, _ in short_pairs[1:]]) + "\n",
                      encoding="utf-8")
    reference.write_text("\n".join([short_pairs[0][1], "-"] + [t for _, t in short_pairs[1:]])
                         + "\n", encoding="utf-8")
    report_path, plot_path = tmp_path / "report.json", tmp_path / "chart.png"
    assert compare.main([
        "--model_dir", tiny_model_dir, "--input", str(source), "--reference", str(reference),
        "--beam_widths", "1", "--runs", "1", "--latency_sentences", "2",
        "--json", str(report_path), "--plot", str(plot_path)]) == 0

    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["model"]["step"] == 200
    assert report["inputs"]["sentences"] == len(short_pairs)
    assert [(row["decoder"], row["beam_width"]) for row in report["results"]] == [
        ("greedy", 1), ("while_loop", 1), ("unrolled", 1)]
    for row in report["results"]:
        assert {key for _, key, _ in compare.STEADY_COLUMNS} <= set(row)
        assert row["first_call_ms"] > 0 and row["steady_ms"] > 0
        assert 0 <= row["bleu"] <= 100
    greedy, while_loop, unrolled = report["results"]
    assert greedy["graphs"] == while_loop["graphs"] == unrolled["graphs"] == 1
    assert unrolled["num_ops"] > while_loop["num_ops"] > greedy["num_ops"] > 0
    assert [(a["variant"], a["against"]) for a in report["agreement"]] == [
        ("greedy@1", "while_loop@1"), ("unrolled@1", "while_loop@1")]
    for row in report["agreement"]:
        assert row["identical_texts_percent"] == 100.0
        assert row["identical_ids_percent"] == 100.0
        assert row["max_score_difference"] <= 1e-5
    assert {(p["decoder"], p["beam_width"]) for p in report["sentence_latency"]} == {
        ("greedy", 1), ("while_loop", 1), ("unrolled", 1)}
    assert len(report["sentence_latency"]) == 3 * 2

    with open(plot_path, "rb") as f:
        assert f.read(len(PNG_MAGIC)) == PNG_MAGIC
    table = capsys.readouterr().out
    assert "steady ms" in table and "same text %" in table


def test_default_inputs_are_the_prepared_test_set(tiny_config, tiny_data, tmp_path):
    source, target = compare.default_input_files(tiny_config)
    assert source == os.path.join(tiny_config["data"]["data_dir"], "test.src")
    assert target == os.path.join(tiny_config["data"]["data_dir"], "test.tgt")
    without_data = copy.deepcopy(tiny_config)
    without_data["data"]["data_dir"] = str(tmp_path)
    with pytest.raises(ValueError, match="pass --input"):
        compare.default_input_files(without_data)


def test_misaligned_references_are_an_error(tiny_model_dir, tmp_path, capsys):
    source, reference = tmp_path / "in.txt", tmp_path / "ref.txt"
    source.write_text("one\ntwo\n", encoding="utf-8")
    reference.write_text("um\n", encoding="utf-8")
    assert compare.main(["--model_dir", tiny_model_dir, "--input", str(source),
                         "--reference", str(reference)]) == 2
    assert "must be aligned" in capsys.readouterr().err


def test_input_that_is_not_utf8_is_an_error_naming_the_file(tiny_model_dir, tmp_path, capsys):
    source = tmp_path / "latin1.txt"
    source.write_bytes(b"caf\xe9\n")
    assert compare.main(["--model_dir", tiny_model_dir, "--input", str(source)]) == 2
    assert "latin1.txt is not UTF-8 text" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--json", "--plot"])
def test_an_output_file_in_a_missing_directory_is_an_error_before_measuring(option, tmp_path,
                                                                            capsys):
    path = str(tmp_path / "missing" / "out")
    with pytest.raises(SystemExit):
        compare.parse_args(["--model_dir", str(tmp_path), option, path])
    assert "%s %s: no such directory" % (option, path) in capsys.readouterr().err


def test_bad_beam_widths_are_an_error(tiny_model_dir, capsys):
    with pytest.raises(SystemExit):
        compare.main(["--model_dir", tiny_model_dir, "--beam_widths", "1,x"])
    assert "--beam_widths must be comma-separated integers" in capsys.readouterr().err
    assert compare.main(["--model_dir", tiny_model_dir, "--beam_widths", "1,99"]) == 2
    assert "beam_width must be an integer in 1..8" in capsys.readouterr().err


def test_agreement_counts_identical_texts_ids_and_the_largest_score_gap():
    results = [SearchResult([[5, 6], [7]], [-1.0, -2.0]), SearchResult([[8]], [-3.0])]
    others = [SearchResult([[5, 6], [9]], [-1.0, -2.5]), SearchResult([[8]], [-3.0])]
    assert compare.agreement(FakeDetokenizer, results, others) == {
        "identical_texts_percent": 100.0, "identical_ids_percent": 50.0,
        "max_score_difference": 0.5}


def test_format_table_aligns_columns_and_prints_missing_values_as_dashes():
    columns = (("name", "name", "%s"), ("ms", "ms", "%.1f"))
    assert compare.format_table([{"name": "greedy", "ms": 1.24}, {"name": "x", "ms": None}],
                                columns).split("\n") == ["name     ms", "greedy  1.2",
                                                         "x         -"]
