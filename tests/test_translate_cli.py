"""The `python -m decode.translate` CLI across its input chunks."""

import io
import os
import subprocess
import sys

import pytest

from decode import translate as translate_cli
from tests.same_hypotheses import assert_same_hypotheses, n_best

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Where blank lines go among the dev lines: the first line, both sides of the
# first chunk boundary (a chunk is decode.batch_size lines below), a
# whitespace-only line, and the last line.
BLANKS = {0: "", 31: "", 32: "", 50: "   ", 71: ""}


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

    def translate_lines(translator, lines, *args, **kwargs):
        sizes.append(len(lines))
        return real_translate_lines(translator, lines, *args, **kwargs)

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
    # Decoded in chunks, against decoded at once: tests/same_hypotheses.py's rule.
    expected = translator.translate([line for line in input_lines if line.strip()],
                                    beam_width=3, n_best=2)
    assert all(rows == [] for line, rows in zip(input_lines, blocks) if not line.strip())
    assert_same_hypotheses([[(text, float(score)) for text, score in rows]
                            for line, rows in zip(input_lines, blocks) if line.strip()],
                           n_best(expected))


def test_lines_end_where_wc_counts_them_inner_cr_and_crlf(tiny_model_dir, translator, tmp_path):
    first, second, third = "hello", "good morning", "thank you"
    # An inner CR stays in its line (a space); CR LF ends one: `wc -l` says 4.
    data = ("%s\r%s\r\n\r\n%s\r\n%s\r\n" % (first, second, third, first)).encode("utf-8")
    source, output = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_bytes(data)
    assert translate_cli.main(["--model_dir", tiny_model_dir, "--input", str(source),
                               "--output", str(output)]) == 0
    lines = output.read_text(encoding="utf-8").split("\n")
    assert lines.pop() == ""
    assert len(lines) == data.count(b"\n") == 4
    expected = [t.text for t in translator.translate(["%s %s" % (first, second), third, first])]
    assert lines == [expected[0], "", expected[1], expected[2]]


def test_standard_input_is_split_as_files_are(tiny_model_dir, translator, tmp_path,
                                              monkeypatch):
    data = "hello\rgood morning\r\nthank you\r\n".encode("utf-8")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    output = tmp_path / "out.txt"
    assert translate_cli.main(["--model_dir", tiny_model_dir, "--output", str(output)]) == 0
    expected = translator.translate(["hello good morning", "thank you"])
    assert output.read_text(encoding="utf-8") == "".join(t.text + "\n" for t in expected)


def test_input_that_is_not_utf8_is_an_error_naming_file_and_line(tiny_model_dir, tmp_path,
                                                                  capsys):
    source = tmp_path / "latin1.txt"
    source.write_bytes(b"hello\r\ncaf\xe9\r\n")
    assert translate_cli.main(["--model_dir", tiny_model_dir, "--input", str(source),
                               "--output", str(tmp_path / "out.txt")]) == 2
    assert "latin1.txt:2: not valid UTF-8 (byte 0xe9 at column 4)" in capsys.readouterr().err


def test_a_bad_line_after_whole_chunks_says_which_lines_were_written(
        tiny_model_dir, translator, input_lines, chunk_sizes, tmp_path, capsys):
    source, output = tmp_path / "in.txt", tmp_path / "out.txt"
    good = [line for line in input_lines if line.strip()][:40]  # a chunk and 8 lines
    source.write_bytes("".join(line + "\n" for line in good).encode("utf-8") + b"caf\xe9\n")
    assert translate_cli.main(["--model_dir", tiny_model_dir, "--input", str(source),
                               "--output", str(output)]) == 2
    assert chunk_sizes == [32]
    assert "in.txt:41: not valid UTF-8 (byte 0xe9 at column 4) (the output holds the first 32 " \
           "lines' translations)" in capsys.readouterr().err
    assert output.read_text(encoding="utf-8").splitlines() == [
        translation.text for translation in translator.translate(good[:32])]


def test_output_and_trace_in_one_file_is_refused(tiny_model_dir, tmp_path, capsys):
    same = str(tmp_path / "out.txt")
    with pytest.raises(SystemExit):
        translate_cli.parse_args(["--model_dir", tiny_model_dir, "--output", same,
                                  "--trace", same])
    assert "--output and --trace are both %s" % same in capsys.readouterr().err


def test_greedy_checks_the_beam_width_as_its_help_says(tiny_model_dir, tmp_path, capsys):
    with pytest.raises(SystemExit):
        translate_cli.parse_args(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "greedy decodes at width 1; the value must still be 1..decode.max_beam_width" in (
        help_text)
    assert 'gives up to N lines "text<TAB>score"' in help_text
    source = tmp_path / "in.txt"
    source.write_text("hello\n", encoding="utf-8")
    assert translate_cli.main(["--model_dir", tiny_model_dir, "--input", str(source),
                               "--decoder", "greedy", "--beam_width", "99"]) == 2
    assert "beam_width must be an integer in 1..8" in capsys.readouterr().err


def run_help(module):
    """Runs `python -m module --help` without TF_CPP_MIN_LOG_LEVEL set.

    Returns:
      (stdout, stderr); stdout ends with "tensorflow imported: True/False".
    """
    script = "\n".join([
        "import runpy, sys",
        "sys.argv = [%r, '--help']" % module,
        "try:",
        "    runpy.run_module(%r, run_name='__main__', alter_sys=True)" % module,
        "except SystemExit as exit:",
        "    assert not exit.code, exit.code",
        "print('tensorflow imported:', 'tensorflow' in sys.modules)",
    ])
    env = dict(os.environ)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)  # conftest sets it
    process = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=120)
    assert process.returncode == 0, process.stderr
    return process.stdout, process.stderr


# lab.compare's --help too: one helper for both CLIs.
CLIS = ["decode.translate", "lab.compare"]


@pytest.mark.parametrize("module", CLIS)
def test_help_imports_no_tensorflow_and_prints_only_the_help(module):
    stdout, stderr = run_help(module)
    assert "usage: python -m %s" % module in stdout
    assert stdout.endswith("tensorflow imported: False\n")
    assert stderr == ""


def test_repeated_model_dirs_decode_as_an_ensemble(tiny_model_dir, translator, tmp_path):
    lines = ["one", "two three", "the cats"]
    output = run(tiny_model_dir, tmp_path, lines, "--model_dir", tiny_model_dir, "--n_best", "2")
    rows = [line.split("\t") for line in output if line]
    # Two copies of a model: the mean of equal log-probabilities, the model's own.
    assert_same_hypotheses([[(text, float(score)) for text, score in rows[i:i + 2]]
                            for i in range(0, len(rows), 2)],
                           n_best(translator.translate(lines, n_best=2)))
