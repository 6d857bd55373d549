"""The `python -m decode.translate` CLI across its input chunks."""

import numpy as np
import pytest

from decode import translate as translate_cli
from decode.translator import Translator

# Where blank lines go among the dev lines: the first line, both sides of the
# first chunk boundary (a chunk is decode.batch_size lines below), a
# whitespace-only line, and the last line.
BLANKS = {0: "", 31: "", 32: "", 50: "   ", 71: ""}


@pytest.fixture(scope="module")
def translator(tiny_model_dir):
    translator = Translator(tiny_model_dir)
    yield translator
    translator.close()


@pytest.fixture
def input_lines(tiny_data):
    with open(tiny_data.raw_text["dev"][0], encoding="utf-8") as f:
        dev = [line.rstrip("\n") for line in f][:70]
    assert len(dev) == 70 and all(line.strip() for line in dev)
    lines = iter(dev)
    return [BLANKS[index] if index in BLANKS else next(lines)
            for index in range(len(dev) + len(BLANKS))]


@pytest.fixture
def chunk_sizes(monkeypatch, translator):
    """Chunks of decode.batch_size lines (one batch each); records the chunks' sizes."""
    assert translator.config["decode"]["batch_size"] == 32, "BLANKS assumes 32-line chunks"
    monkeypatch.setattr(translate_cli, "BATCHES_PER_CHUNK", 1)
    sizes = []
    real_translate_lines = translate_cli.translate_lines

    def translate_lines(translator, lines, *args):
        sizes.append(len(lines))
        return real_translate_lines(translator, lines, *args)

    monkeypatch.setattr(translate_cli, "translate_lines", translate_lines)
    return sizes


def run(tiny_model_dir, tmp_path, lines, *options):
    source, output = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    assert translate_cli.main(["--model_dir", tiny_model_dir, "--input", str(source),
                               "--output", str(output)] + list(options)) == 0
    text = output.read_text(encoding="utf-8")
    assert text.endswith("\n")
    return text[:-1].split("\n")


def test_one_line_out_per_line_in_and_in_order_across_chunks(
        tiny_model_dir, translator, input_lines, chunk_sizes, tmp_path):
    output = run(tiny_model_dir, tmp_path, input_lines)
    assert chunk_sizes == [32, 32, 11]
    expected = iter(translator.translate([line for line in input_lines if line.strip()]))
    # OUTPUT_FORMAT: one translation per input line, in order; an empty input
    # line gives an empty output line.
    assert output == [next(expected).text if line.strip() else "" for line in input_lines]
    assert next(expected, None) is None


def test_n_best_blocks_in_order_across_chunks(tiny_model_dir, translator, input_lines,
                                              chunk_sizes, tmp_path):
    output = run(tiny_model_dir, tmp_path, input_lines, "--beam_width", "3", "--n_best", "2")
    assert chunk_sizes == [32, 32, 11]
    # OUTPUT_FORMAT: each input line gives N lines "text<TAB>score", best
    # first, followed by one blank line; an empty input line gives just the
    # blank line.
    blocks = [[]]
    for line in output:
        if line:
            blocks[-1].append(line.split("\t"))
        else:
            blocks.append([])
    assert blocks.pop() == [], "the last block is closed by a blank line"
    assert len(blocks) == len(input_lines)
    expected = iter(translator.translate([line for line in input_lines if line.strip()],
                                         beam_width=3, n_best=2))
    for line, rows in zip(input_lines, blocks):
        if not line.strip():
            assert rows == []
            continue
        translation = next(expected)
        assert [text for text, _ in rows] == [h.text for h in translation.n_best]
        np.testing.assert_allclose([float(score) for _, score in rows],
                                   [h.score for h in translation.n_best], atol=1e-5)
    assert next(expected, None) is None
