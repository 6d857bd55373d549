"""The lab.compare tool on the tiny trained model, and its helpers."""

import copy
import json
import os
import re

import numpy as np
import pytest

import sacrebleu
import tensorflow.compat.v1 as tf

from lab import compare, graph_writer, lab_report, sweep
from decode.graphs import SearchResult, unrolled_length_bucket

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class FakeDetokenizer:
    """Stands in for a Translator in `agreement`: ids -> text."""

    @staticmethod
    def detokenize(ids):
        return " ".join(map(str, ids))


@pytest.fixture(scope="module")
def short_pairs(translator, tiny_config, tiny_data):
    """Two or three dev pairs in one unrolled length bucket (one graph), the shortest bucket
    where the model's greedy translations have 4+ words (BLEU needs 4-grams to count)."""
    data_dir = tiny_config["data"]["data_dir"]
    with open(os.path.join(data_dir, "dev.src"), encoding="utf-8") as f:
        sources = f.read().splitlines()
    with open(os.path.join(data_dir, "dev.tgt"), encoding="utf-8") as f:
        targets = f.read().splitlines()
    by_bucket = {}
    for source, target, translation in zip(sources, targets,
                                           translator.translate(sources, "greedy")):
        if len(translation.text.split()) >= 4:
            bucket = unrolled_length_bucket(len(translator.tokenize(source)),
                                            translator.config["decode"])
            by_bucket.setdefault(bucket, []).append((source, target))
    return min((bucket, pairs) for bucket, pairs in by_bucket.items() if len(pairs) >= 2)[1][:3]


def test_compare_cli_writes_a_json_report_and_a_png(tiny_model_dir, translator, short_pairs,
                                                    tmp_path, capsys):
    sources = [source for source, _ in short_pairs]
    # The references are the model's own greedy translations, so that the BLEU
    # of an aligned report is 100 and any shift of the references lowers it
    # (the tiny model's BLEU against the real references is about the same
    # whether they are shifted or not). Stripped, as compare reads them.
    references = [t.text.strip() for t in translator.translate(sources, "greedy")]
    source, reference = tmp_path / "in.txt", tmp_path / "ref.txt"
    # A blank line, dropped together with its reference "-".
    source.write_text("\n".join([sources[0], ""] + sources[1:]) + "\n", encoding="utf-8")
    reference.write_text("\n".join([references[0], "-"] + references[1:]) + "\n",
                         encoding="utf-8")

    kept_sources, token_ids, kept_references = compare.load_inputs(
        translator, str(source), str(reference), 0)
    assert kept_sources == sources
    assert token_ids == [translator.tokenize(sentence) for sentence in sources]
    assert kept_references == references

    report_path, plot_path = tmp_path / "report.json", tmp_path / "chart.png"
    assert compare.main([
        "--model_dir", tiny_model_dir, "--input", str(source), "--reference", str(reference),
        "--beam_widths", "1", "--runs", "1", "--latency_sentences", "2",
        "--json", str(report_path), "--plot", str(plot_path)]) == 0

    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["model"]["step"] == 400
    assert report["inputs"]["sentences"] == len(short_pairs)
    assert report["inputs"]["source_tokens"] == sum(map(len, token_ids))
    assert [(row["decoder"], row["beam_width"]) for row in report["results"]] == [
        ("greedy", 1), ("while_loop", 1), ("unrolled", 1)]
    for row in report["results"]:
        # The while_loop search stands in for the unrolled one, whose graph takes seconds to
        # build: the agreement rows below hold that the two decode alike.
        decoder = {"unrolled": "while_loop"}.get(row["decoder"], row["decoder"])
        texts = [t.text for t in translator.translate(sources, decoder, beam_width=1)]
        assert row["bleu"] == pytest.approx(
            sacrebleu.corpus_bleu(texts, [references]).score, abs=1e-6)
        assert row["mean_output_tokens"] == pytest.approx(np.mean([
            len(result.ids[0]) for result in translator.search(token_ids, decoder, 1)]))
    assert report["results"][0]["bleu"] == pytest.approx(100.0)
    # A shift of the references would show: the check above can fail.
    assert sacrebleu.corpus_bleu(references, [["-"] + references[:-1]]).score < 90
    for row in report["results"]:
        assert {key for _, key, _ in compare.STEADY_COLUMNS} <= set(row)
        assert row["first_call_ms"] > 0 and row["steady_ms"] > 0
    greedy, while_loop, unrolled = report["results"]
    assert greedy["graphs"] == while_loop["graphs"] == unrolled["graphs"] == 1
    assert unrolled["num_ops"] > while_loop["num_ops"] >= greedy["num_ops"] > 0
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
    captured = capsys.readouterr()
    table = captured.out.split("\n")
    assert table[0].endswith(", batch size %d, length penalty %g" % (
        translator.config["decode"]["batch_size"],
        translator.config["decode"]["length_penalty"]))
    assert "first ms (incl. build)" in table[1] and "steady ms" in table[1]
    assert "same text %" in captured.out
    # One line of progress per variant, on stderr.
    progress = [line for line in captured.err.split("\n") if line.startswith("[")]
    assert [line.split(":")[0] for line in progress] == [
        "[1/3] greedy@1", "[2/3] while_loop@1", "[3/3] unrolled@1"]
    assert all(": built 1 graph in " in line and " ms (incl. build), steady " in line
               for line in progress)


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
    assert "latin1.txt:1: not valid UTF-8 (byte 0xe9 at column 4)" in capsys.readouterr().err


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
    rows = [{"name": "greedy", "ms": 1.24}, {"name": "x", "ms": None}]
    assert lab_report.format_table(rows, columns).split("\n") == ["name     ms", "greedy  1.2",
                                                          "x         -"]
    assert lab_report.format_table(rows, columns, markdown=True).split("\n") == [
        "| name | ms |", "| --- | ---: |", "| greedy | 1.2 |", "| x | - |"]


def data_config(data_dir, **files):
    """A config whose data_dir holds the given files (name with "_" for "." -> text)."""
    for name, text in files.items():
        (data_dir / name.replace("_", ".")).write_text(text, encoding="utf-8")
    return {"data": {"data_dir": str(data_dir)}}


def test_default_inputs_fall_back_to_the_dev_set(tmp_path):
    config = data_config(tmp_path, dev_src="a\n", dev_tgt="b\n")
    assert compare.default_input_files(config) == (
        str(tmp_path / "dev.src"), str(tmp_path / "dev.tgt"))


def test_default_inputs_without_a_target_file_have_no_reference(tmp_path):
    config = data_config(tmp_path, dev_src="a\n")
    assert compare.default_input_files(config) == (str(tmp_path / "dev.src"), None)
    # The test set wins, even without its targets: dev.tgt is not test.src's reference.
    data_config(tmp_path, test_src="c\n", dev_tgt="b\n")
    assert compare.default_input_files(config) == (str(tmp_path / "test.src"), None)


class SplitTokenizer:
    """Stands in for a Translator in `load_inputs`: one id per word."""

    @staticmethod
    def tokenize(text):
        return [len(word) for word in text.split()]


def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def test_load_inputs_drops_blank_sources_with_their_references_then_keeps_the_first_n(
        tmp_path, capsys):
    source = write_lines(tmp_path / "in.txt", ["", "a bb", "   ", "ccc", "dddd e", "ff"])
    reference = write_lines(tmp_path / "ref.txt", ["-", "A", "-", "C", "D", "F"])
    assert compare.load_inputs(SplitTokenizer, source, reference, 0) == (
        ["a bb", "ccc", "dddd e", "ff"], [[1, 2], [3], [4, 1], [2]], ["A", "C", "D", "F"])
    assert "in.txt: 2 blank line(s) skipped; the report's indices count the sentences kept" in \
        capsys.readouterr().err
    # max_sentences counts kept sentences, not lines.
    assert compare.load_inputs(SplitTokenizer, source, reference, 2) == (
        ["a bb", "ccc"], [[1, 2], [3]], ["A", "C"])
    assert compare.load_inputs(SplitTokenizer, source, reference, 10) == (
        ["a bb", "ccc", "dddd e", "ff"], [[1, 2], [3], [4, 1], [2]], ["A", "C", "D", "F"])
    assert compare.load_inputs(SplitTokenizer, source, None, 3) == (
        ["a bb", "ccc", "dddd e"], [[1, 2], [3], [4, 1]], None)


def test_load_inputs_with_only_blank_sources_is_an_error(tmp_path):
    source = write_lines(tmp_path / "in.txt", ["", "  "])
    with pytest.raises(ValueError, match="in.txt holds no sentence to translate"):
        compare.load_inputs(SplitTokenizer, source, None, 0)


def test_variants_and_agreement_pairs_without_beam_width_1_have_no_greedy_pair():
    assert compare.variants_to_compare([4, 8]) == ([
        ("greedy", 1), ("while_loop", 4), ("unrolled", 4), ("while_loop", 8), ("unrolled", 8)], [
        (("unrolled", 4), ("while_loop", 4)), (("unrolled", 8), ("while_loop", 8))])
    assert compare.variants_to_compare([1, 4])[1] == [
        (("greedy", 1), ("while_loop", 1)), (("unrolled", 1), ("while_loop", 1)),
        (("unrolled", 4), ("while_loop", 4))]


def test_agreement_when_the_best_texts_differ():
    results = [SearchResult([[5]], [-1.0]), SearchResult([[6, 7]], [-2.0]),
               SearchResult([[8]], [-3.0]), SearchResult([[9]], [-4.0])]
    others = [SearchResult([[5]], [-1.0]), SearchResult([[6]], [-1.5]),
              SearchResult([[8]], [-3.0]), SearchResult([[10]], [-4.25])]
    assert compare.agreement(FakeDetokenizer, results, others) == {
        "identical_texts_percent": 50.0, "identical_ids_percent": 50.0,
        "max_score_difference": 0.5}


class DropsUnknownDetokenizer:
    """Detokenizes id 0 to nothing, as SentencePiece may an unknown piece."""

    @staticmethod
    def detokenize(ids):
        return " ".join(str(i) for i in ids if i)


def test_agreement_compares_texts_not_ids_and_only_the_narrower_beam():
    # Different best ids with the same text; the wider beam's third
    # hypothesis (score far off) is not compared.
    results = [SearchResult([[5, 0], [6]], [-1.0, -2.0])]
    others = [SearchResult([[5], [6], [7]], [-1.0, -2.25, -9.0])]
    assert compare.agreement(DropsUnknownDetokenizer, results, others) == {
        "identical_texts_percent": 100.0, "identical_ids_percent": 0.0,
        "max_score_difference": 0.25}
    assert compare.agreement(DropsUnknownDetokenizer, [SearchResult([[5], [6]], [-1.0, -2.0])],
                             others) == {
        "identical_texts_percent": 100.0, "identical_ids_percent": 100.0,
        "max_score_difference": 0.25}


def test_load_inputs_splits_lines_as_wc_does_inner_cr_and_crlf(tmp_path):
    # `wc -l` says 3 and 3: the CR inside the first source line does not end it.
    source, reference = tmp_path / "in.txt", tmp_path / "ref.txt"
    source.write_bytes(b"a bb\rccc\r\n\r\ndddd\r\n")
    reference.write_bytes(b"A\r\n-\r\nD\r\n")
    assert compare.load_inputs(SplitTokenizer, str(source), str(reference), 0) == (
        ["a bb\rccc", "dddd"], [[1, 2, 3], [4]], ["A", "D"])


def test_progress_line_names_the_variant_its_graphs_and_latencies():
    row = {"decoder": "unrolled", "beam_width": 4, "graphs": 3, "build_seconds": 4.21,
           "first_call_ms": 5123.4, "steady_ms": 8.34}
    assert compare.progress_line(row, 5, 7) == (
        "[5/7] unrolled@4: built 3 graphs in 4.2 s, first call 5123 ms (incl. build), "
        "steady 8.3 ms")
    assert "built 1 graph in" in compare.progress_line(dict(row, graphs=1), 1, 7)



def test_graphs_show_the_unrolled_search_growing_with_the_length(tiny_model_dir, tmp_path, capsys,
                                                                 monkeypatch):
    monkeypatch.setattr(graph_writer, "GRAPH_LENGTHS", (4, 12))  # (8, 32) builds for seconds
    assert compare.main(["--model_dir", tiny_model_dir, "--graphs", str(tmp_path)]) == 0
    op_counts = {}
    for name in os.listdir(tmp_path):
        (events,) = os.listdir(tmp_path / name)
        graph_defs = [event.graph_def for event
                      in tf.train.summary_iterator(str(tmp_path / name / events)) if event.graph_def]
        assert len(graph_defs) == 1
        op_counts[name] = len(tf.GraphDef.FromString(graph_defs[0]).node)
    short, long = ("unrolled_%d_steps" % steps for steps in graph_writer.GRAPH_LENGTHS)
    assert set(op_counts) == {short, long, "while_loop"}
    # One copy of the decoder step per step: the ops beyond the encoder grow with the length.
    assert op_counts[long] - op_counts[short] > 0.5 * op_counts[short]
    assert op_counts["while_loop"] < op_counts[short], "one step, whatever the length"
    assert "%s: %d ops" % (long, op_counts[long]) in capsys.readouterr().out


SWEEP_KEYS = {"decoder", "beam_width", "length_penalty_kind", "length_penalty", "bleu", "chrf",
              "length_ratio", "empty_percent", "mean_score", "sentences_per_second"}


def tiny_pairs(tiny_config, split, count):
    """The first `count` sources and references of the tiny corpus's `split` ("dev", "test")."""
    sides = []
    for suffix in ("src", "tgt"):
        path = os.path.join(tiny_config["data"]["data_dir"], "%s.%s" % (split, suffix))
        with open(path, encoding="utf-8") as f:
            sides.append(f.read().splitlines()[:count])
    return tuple(sides)


@pytest.fixture(scope="module")
def dev_pairs(tiny_config, tiny_data):
    """The first 8 dev sources and references of the tiny corpus."""
    return tiny_pairs(tiny_config, "dev", 8)


SWEEP_ROW = ["decoder", "beam_width", "length_penalty_kind", "length_penalty", "bleu", "chrf",
             "length_ratio", "empty_percent", "mean_score", "sentences_per_second"]


def markdown_tables(text):
    """The tables of a markdown report, in order: each a list of rows of cells (the header and
    its rule left out; a section without a table, as the examples, left out)."""
    tables = []
    for line in text.splitlines():
        if line.startswith("## "):
            tables.append([])
        elif line.startswith("|"):
            tables[-1].append([cell.strip() for cell in line.strip("|").split("|")])
    return [table[2:] for table in tables if table]


def assert_table_holds(rows, table, keys):
    """Each row of a markdown `table` shows its JSON row's values of `keys`, in order: strings
    as they are, numbers rounded as printed, None as "-"."""
    assert len(table) == len(rows)
    for row, cells in zip(rows, table):
        assert len(cells) == len(keys)
        for key, cell in zip(keys, cells):
            if row[key] is None or isinstance(row[key], str):
                assert cell == ("-" if row[key] is None else row[key]), key
            else:
                decimals = len(cell.partition(".")[2])
                assert float(cell) == pytest.approx(row[key], abs=0.5001 * 10 ** -decimals), key


def lab_flags(model_dir, tmp_path, sources, references):
    """compare's flags for these sentences, without the implementation comparison."""
    return ["--model_dir", model_dir, "--input", write_lines(tmp_path / "in.txt", sources),
            "--reference", write_lines(tmp_path / "ref.txt", references),
            "--beam_widths", "none"]


def test_sweep_reports_sacrebleu_on_each_variants_outputs_significance_and_differences(
        tiny_model_dir, translator, dev_pairs, tmp_path, capsys):
    sources, references = dev_pairs
    report_path, plot_path = tmp_path / "report.json", tmp_path / "sweep.png"
    markdown_path = tmp_path / "lab.md"
    assert compare.main(lab_flags(tiny_model_dir, tmp_path, sources, references) + [
        "--sweep", "--sweep_beam_widths", "2,1", "--normalisations", "none,gnmt:0.6",
        "--differ", "beam1/none", "beam2/gnmt:0.6", "--markdown", str(markdown_path),
        "--json", str(report_path), "--sweep_plot", str(plot_path)]) == 0
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert {"results", "agreement", "sentence_latency", "sweep", "significance"} <= set(report)
    assert [(row["beam_width"], row["length_penalty_kind"], row["length_penalty"])
            for row in report["sweep"]] == [(1, "none", 0.0), (2, "none", 0.0),
                                            (1, "gnmt", 0.6), (2, "gnmt", 0.6)]
    outputs = {}
    for row in report["sweep"]:
        assert set(row) == SWEEP_KEYS
        assert row["decoder"] == "while_loop" and row["sentences_per_second"] > 0
        translations = translator.translate(sources, "while_loop", row["beam_width"], options={
            "length_penalty_kind": row["length_penalty_kind"],
            "length_penalty": row["length_penalty"]})
        name = sweep.variant_name("while_loop", row["beam_width"], row["length_penalty_kind"],
                                row["length_penalty"])
        texts = outputs[name] = [t.text for t in translations]
        bleu = sacrebleu.corpus_bleu(texts, [references])
        assert row["bleu"] == pytest.approx(bleu.score, abs=1e-9)
        assert row["chrf"] == pytest.approx(sacrebleu.corpus_chrf(texts, [references]).score)
        assert row["length_ratio"] == pytest.approx(bleu.sys_len / bleu.ref_len)
        assert row["empty_percent"] == 100.0 * sum(not text for text in texts) / len(texts)
        assert row["mean_score"] == pytest.approx(np.mean([t.score for t in translations]))
    assert report["sweep"][0]["bleu"] > 0, "a BLEU of 0 everywhere would test nothing"

    best = max(report["sweep"], key=lambda row: row["bleu"])
    best_name = sweep.variant_name("while_loop", best["beam_width"],
                                 best["length_penalty_kind"], best["length_penalty"])
    assert {row["a"] for row in report["significance"]} == {best_name}
    assert sorted(row["b"] for row in report["significance"]) == sorted(set(outputs) - {best_name})
    for row in report["significance"]:
        assert set(row) == {"a", "b", "bleu_a", "bleu_b", "p_value"}
        assert row["bleu_a"] == pytest.approx(best["bleu"])
        assert row["bleu_b"] == pytest.approx(
            sacrebleu.corpus_bleu(outputs[row["b"]], [references]).score)
        assert 0 <= row["p_value"] <= 1

    a, b = outputs["beam1/none"], outputs["beam2/gnmt:0.6"]
    assert [row["index"] for row in report["differ"]] == [
        index for index in range(len(sources)) if a[index] != b[index]]
    for row in report["differ"]:
        assert (row["a"]["text"], row["b"]["text"]) == (a[row["index"]], b[row["index"]])
        assert row["reference"] == references[row["index"]]
    with open(plot_path, "rb") as f:
        assert f.read(len(PNG_MAGIC)) == PNG_MAGIC
    markdown = markdown_path.read_text(encoding="utf-8")
    assert markdown.startswith("# The decoding lab: %s, step %d\n" % (translator.model_name,
                                                                     translator.step))
    assert "8 sentences" in markdown and "(sweep.png)" in markdown, "the plot beside it"
    assert [line.split(" ")[1] for line in markdown.splitlines() if line.startswith("## ")] == [
        "Sweep:", "Paired"] + ["Sentences"] * bool(report["examples"])
    tables = markdown_tables(markdown)
    assert_table_holds(report["sweep"], tables[0], SWEEP_ROW)
    assert_table_holds(report["significance"], tables[1], ["a", "b", "bleu_a", "bleu_b", "p_value"])
    out = capsys.readouterr().out
    assert "len ratio" in out and "BLEU a" in out
    assert "beam1/none and beam2/gnmt:0.6 differ on %d of 8 sentences" % len(
        report["differ"]) in out


@pytest.mark.parametrize("flags, message", [
    (["--sweep", "--normalisations", "gnmt"], "'gnmt' is not none, average or gnmt:ALPHA"),
    (["--sweep", "--normalisations", "none:1"], "'none:1' is not none, average or gnmt:ALPHA"),
    (["--sweep", "--normalisations", "gnmt:x"], "'gnmt:x' is not none, average or gnmt:ALPHA"),
    (["--sweep", "--sweep_beam_widths", "1,a"], "--sweep_beam_widths must be comma-separated"),
    (["--sweep", "--differ", "beam1/none", "beam8/none"],
     "--differ beam8/none: not a variant of this run (beam1/none beam2/none"),
    (["--differ", "beam1/none", "beam2/none"], "--differ and --sweep_plot need --sweep"),
    (["--sweep_plot", "x.png"], "--differ and --sweep_plot need --sweep"),
    (["--beam_widths", "none", "--plot", "x.png"], "--plot needs the comparison (--beam_widths)"),
    (["--beam_widths", "none"], "--beam_widths none leaves nothing to do"),
    (["--sweep", "--max_expansions", "10"], "--max_expansions needs --exact"),
])
def test_bad_lab_flags_are_an_error_naming_them(flags, message, capsys):
    with pytest.raises(SystemExit):
        compare.parse_args(["--model_dir", "m", "--sweep_beam_widths", "1,2"] + flags)
    assert message in capsys.readouterr().err


def test_the_sweep_needs_references_and_widths_the_lab_can_build(tiny_model_dir, dev_pairs,
                                                                 tmp_path, capsys):
    source = write_lines(tmp_path / "in.txt", dev_pairs[0])
    assert compare.main(["--model_dir", tiny_model_dir, "--input", source, "--sweep"]) == 2
    assert "the lab (--sweep, --exact, --families, --compare_models, --ensemble_best) needs " \
        "references" in capsys.readouterr().err
    assert compare.main(lab_flags(tiny_model_dir, tmp_path, *dev_pairs) + [
        "--sweep", "--sweep_beam_widths", "0,1"]) == 2
    assert "beam_width must be an integer in 1..8, got 0" in capsys.readouterr().err


def test_the_sweep_decodes_with_the_coverage_penalty_and_exact_refuses_one(
        tiny_model_dir, translator, dev_pairs, tmp_path, capsys):
    sources, references = (pairs[:5] for pairs in dev_pairs)
    report_path = tmp_path / "report.json"
    flags = lab_flags(tiny_model_dir, tmp_path, sources, references) + [
        "--sweep", "--sweep_beam_widths", "2", "--normalisations", "none",
        "--coverage_penalty", "0.5"]
    assert compare.main(flags + ["--json", str(report_path)]) == 0
    [row] = json.loads(report_path.read_text(encoding="utf-8"))["sweep"]
    expected = translator.translate(sources, "while_loop", 2, options={
        "length_penalty_kind": "none", "coverage_penalty": 0.5})
    assert row["mean_score"] == pytest.approx(np.mean([t.score for t in expected]), abs=1e-4)
    assert compare.main(flags + ["--exact"]) == 2
    assert "--exact compares the searches under the exact search's objective, which has no " \
        "coverage penalty; pass --coverage_penalty 0" in capsys.readouterr().err


def test_parse_normalisation_and_variant_names():
    assert [sweep.parse_normalisation(text) for text in ("none", " average", "gnmt:1")] == [
        ("none", 0.0), ("average", 0.0), ("gnmt", 1.0)]
    assert sweep.variant_name("while_loop", 4, "gnmt", 0.6) == "beam4/gnmt:0.6"
    assert sweep.variant_name("exact", None, "average", 0.0) == "exact/average"


def test_search_errors_agree_with_rescoring_the_outputs_and_the_exact_best(
        tiny_model_dir, translator, dev_pairs, tmp_path):
    sources, references = (pairs[:5] for pairs in dev_pairs)
    report_path, plot_path = tmp_path / "report.json", tmp_path / "charts" / "lab.png"
    plot_path.parent.mkdir()
    assert compare.main(lab_flags(tiny_model_dir, tmp_path, sources, references) + [
        "--exact", "--max_expansions", "100", "--sweep_beam_widths", "1,2",
        "--normalisations", "none,average", "--json", str(report_path), "--plot", str(plot_path),
        "--markdown", str(tmp_path / "lab.md")]) == 0
    report = json.loads(report_path.read_text(encoding="utf-8"))
    with open(plot_path, "rb") as f:
        assert f.read(len(PNG_MAGIC)) == PNG_MAGIC, "without the comparison, --plot: the sweep"
    markdown = (tmp_path / "lab.md").read_text(encoding="utf-8")
    assert "(charts/lab.png)" in markdown, "the plot's path from the markdown's directory"
    sweep, exact, errors, _ = markdown_tables(markdown)
    assert_table_holds(report["sweep"], sweep, SWEEP_ROW)
    assert_table_holds(report["exact"], exact, [
        "length_penalty_kind", "length_penalty", "proven_percent", "expansions_median",
        "expansions_p95", "seconds_per_proven_sentence", "bleu", "chrf", "length_ratio",
        "empty_best_percent"])
    assert_table_holds(report["search_errors"], errors, [
        "decoder", "beam_width", "length_penalty_kind", "length_penalty", "search_error_percent",
        "reference_better_percent", "empty_output_percent"])
    token_ids = [translator.tokenize(source) for source in sources]
    assert [(run["length_penalty_kind"], run["max_expansions"]) for run in report["exact"]] == [
        ("none", 100), ("average", 100)]
    assert len(report["search_errors"]) == 4
    for run in report["exact"]:
        options = {"length_penalty_kind": run["length_penalty_kind"], "length_penalty": 0.0}
        exact = translator.search(token_ids, "exact", options=dict(options, max_expansions=100))
        assert [(s["proven"], s["expansions"]) for s in run["sentences"]] == [
            (result.proven, result.expansions) for result in exact]
        assert run["proven_percent"] == 100.0 * sum(r.proven for r in exact) / len(exact)
        assert run["expansions_median"] == np.median([r.expansions for r in exact])
        texts = [translator.detokenize(result.ids[0]) for result in exact]
        assert run["bleu"] == pytest.approx(sacrebleu.corpus_bleu(texts, [references]).score)
        assert run["empty_best_percent"] == 100.0 * texts.count("") / len(texts)
        # The second computation: teacher-forced scores of the exact best, each output and
        # the reference, compared here rather than taken from the searches.
        exact_scores = [s["score"] for s in translator.score_tokens(
            token_ids, [result.ids[0] for result in exact], options)]
        reference_scores = [s["score"] for s in translator.score(sources, references, options)]
        for row in report["search_errors"]:
            if row["length_penalty_kind"] != run["length_penalty_kind"]:
                continue
            output = translator.search(token_ids, "while_loop", row["beam_width"], options)
            output_scores = [s["score"] for s in translator.score_tokens(
                token_ids, [result.ids[0] for result in output], options)]
            errors = [exact_score > score + 1e-4 for exact_score, score, result
                      in zip(exact_scores, output_scores, exact) if result.proven]
            assert row["search_error_percent"] == (
                100.0 * sum(errors) / len(errors) if errors else None)
            assert row["reference_better_percent"] == 100.0 * sum(
                reference > score + 1e-4
                for reference, score in zip(reference_scores, output_scores)) / len(sources)
    proven_rows = [row for row in report["search_errors"] if row["search_error_percent"]]
    assert proven_rows, "no search error at all would test little"


def test_the_decoding_options_are_flags_of_the_comparison(tiny_model_dir, translator, short_pairs,
                                                          tmp_path, capsys):
    sources = [source for source, _ in short_pairs]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(sources) + "\n", encoding="utf-8")
    options = {"length_penalty_kind": "average", "no_repeat_ngram_size": 2}
    assert compare.main(["--model_dir", tiny_model_dir, "--input", str(source), "--beam_widths",
                         "4", "--runs", "1", "--latency_sentences", "1", "--json",
                         str(tmp_path / "report.json"), "--length_penalty_kind", "average",
                         "--no_repeat_ngram_size", "2"]) == 0
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert {key: report["options"][key] for key in options} == options
    expected = [t.text for t in translator.translate(sources, "while_loop", 4, options=options)]
    # The comparison decoded with these options: its while_loop row's output lengths are this
    # search's. The unrolled search's side of the pair is its agreement row (asserted below),
    # not built again here: its graph takes seconds.
    found = translator.search([translator.tokenize(s) for s in sources], "while_loop", 4, options)
    assert [translator.detokenize(result.ids[0]) for result in found] == expected
    [row] = [row for row in report["results"] if row["decoder"] == "while_loop"]
    assert row["mean_output_tokens"] == pytest.approx(np.mean([len(r.ids[0]) for r in found]))
    assert report["agreement"][0]["identical_texts_percent"] == 100.0
    assert compare.main(["--model_dir", tiny_model_dir, "--input", str(source),
                         "--coverage_penalty", "-1"]) == 2
    assert "coverage_penalty must be in 0.." in capsys.readouterr().err


PLACEHOLDER = re.compile(r"%\(\w+\)s|%s|\{\w*\}|</?b>")  # this test's own, not the pipeline's


def test_the_placeholder_row_decodes_each_message_free_and_keep(tiny_model_dir, translator,
                                                                tmp_path, capsys):
    sources = ["we need the %(count)s green doors.", "I paid {amount}.", "some new <b>pencils</b>",
               "%s PM", "seven hundred three"]  # the last: no placeholder to keep
    # The references are the model's own translations, so that BLEU is 100 where they agree.
    references = [t.text for t in translator.translate(sources, "while_loop", 5, options={
        "placeholders": "free"})]
    assert all(references), "read_corpus would drop an empty reference"
    messages = write_lines(tmp_path / "messages.tsv", map("\t".join, zip(sources, references)))
    report_path, markdown_path = tmp_path / "report.json", tmp_path / "lab.md"
    assert compare.main(["--model_dir", tiny_model_dir, "--beam_widths", "none", "--placeholders",
                         messages, "--json", str(report_path), "--markdown",
                         str(markdown_path)]) == 0
    report = json.loads(report_path.read_text(encoding="utf-8"))["placeholders"]
    assert (report["source"], report["sentences"], report["beam_width"]) == (messages, 5, 5)
    assert [row["placeholders"] for row in report["modes"]] == ["free", "keep"]
    for row in report["modes"]:
        texts = [t.text for t in translator.translate(sources, "while_loop", 5, options={
            "placeholders": row["placeholders"]})]
        kept = [sorted(PLACEHOLDER.findall(text)) == sorted(PLACEHOLDER.findall(source))
                for source, text in zip(sources, texts)]
        assert row["kept_percent"] == pytest.approx(100.0 * sum(kept) / len(kept))
        bleu = sacrebleu.corpus_bleu(texts, [references])
        assert row["bleu"] == pytest.approx(bleu.score)
        assert row["chrf"] == pytest.approx(sacrebleu.corpus_chrf(texts, [references]).score)
        assert row["length_ratio"] == pytest.approx(bleu.sys_len / bleu.ref_len)
        assert row["sentences_per_second"] > 0
    assert report["modes"][0]["bleu"] == pytest.approx(100.0)
    [test] = report["significance"]
    assert (test["a"], test["b"]) == ("free", "keep")
    assert (test["bleu_a"], test["bleu_b"]) == pytest.approx(
        (report["modes"][0]["bleu"], report["modes"][1]["bleu"]))
    assert 0 < test["p_value"] <= 1
    modes, significance = markdown_tables(markdown_path.read_text(encoding="utf-8"))
    assert_table_holds(report["modes"], modes,
                       [key for _, key, _ in lab_report.PLACEHOLDER_COLUMNS])
    assert_table_holds(report["significance"], significance,
                       ["a", "b", "bleu_a", "bleu_b", "p_value"])
    assert "kept %" in capsys.readouterr().out
    assert compare.main(["--model_dir", tiny_model_dir, "--beam_widths", "none",
                         "--placeholders", str(tmp_path / "missing.tsv")]) == 2
    assert "missing.tsv" in capsys.readouterr().err
