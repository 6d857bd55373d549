"""Corpus readers: TSV and aligned files, normalisation, skips and errors."""

import io
import re
import shutil
import subprocess
import unicodedata

import pytest

from data_pipeline.corpus import (CorpusError, format_skipped, iter_text_lines, read_corpus,
                                  read_text_lines)


def write(path, text):
    path.write_bytes(text.encode("utf-8"))
    return str(path)


def test_tsv_ignores_extra_columns_and_normalises(tmp_path):
    decomposed = unicodedata.normalize("NFD", "ação")
    tsv = write(tmp_path / "c.tsv",
                "Go.\tVai.\tCC-BY 2.0 (France) Attribution: tatoeba.org #2877272\n"
                "  action \t %s \n" % decomposed)
    corpus = read_corpus(tsv)
    assert corpus.pairs == [("Go.", "Vai."), ("action", "ação")]
    assert unicodedata.is_normalized("NFC", corpus.pairs[1][1])
    assert not corpus.skipped
    assert corpus.files == [tsv]


def test_a_sentence_stays_one_line_of_the_raw_text(tmp_path):
    tsv = write(tmp_path / "c.tsv", "one\u2028two\tum\x85 dois\x0c\n a  b \tc\u00a0\u00a0d\n")
    assert read_corpus(tsv).pairs == [("one two", "um dois"), ("a b", "c d")]


def test_tsv_counts_blank_lines_lines_without_tab_and_empty_sides(tmp_path):
    tsv = write(tmp_path / "c.tsv",
                "#separator:tab\n"        # Anki's header line: no tab
                "one\tum\n"
                "\tvazio\n"
                "empty\t   \n"
                "\n"
                "three tres\n"            # space-separated: a real format problem
                "two\tdois\n")
    corpus = read_corpus(tsv)
    assert corpus.pairs == [("one", "um"), ("two", "dois")]
    assert corpus.skipped == {"no_tab": 2, "empty_side": 2, "blank_line": 1}
    assert format_skipped(corpus.skipped) == "blank_line 1, empty_side 2, no_tab 2"


def test_whitespace_only_tsv_lines_are_blank_not_missing_a_tab(tmp_path):
    tsv = write(tmp_path / "c.tsv", "one\tum\n\n   \n \t \n\u3000\u2028\r\n\x0c\n")
    assert read_corpus(tsv).skipped == {"blank_line": 5}
    # The reason is named when nothing is left, so a space-separated file
    # still shows as "no_tab" next to its blank lines.
    spaces = write(tmp_path / "spaces.tsv", "one um\n\ntwo dois\n\n")
    with pytest.raises(CorpusError,
                       match=r"no usable sentence pair \(skipped: blank_line 2, no_tab 2\)"):
        read_corpus(spaces)


def test_tsv_byte_order_mark_is_not_text(tmp_path):
    path = tmp_path / "bom.tsv"
    path.write_bytes(b"\xef\xbb\xbfone\tum\n")
    assert read_corpus(str(path)).pairs == [("one", "um")]


def test_byte_order_mark_is_not_a_column(tmp_path):
    path = tmp_path / "bom.tsv"
    path.write_bytes(b"\xef\xbb\xbfab\xff\tum\n")
    with pytest.raises(CorpusError, match=r"bom.tsv:1: not valid UTF-8 \(byte 0xff at column 3\)"):
        read_corpus(str(path))


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_file_is_named_as_such(tmp_path, encoding):
    path = tmp_path / "c.tsv"
    # Every UTF-16 file that starts with a byte-order mark, either endianness.
    path.write_bytes("\ufeffone\tum\n".encode(encoding) if encoding != "utf-16"
                     else "one\tum\n".encode(encoding))
    with pytest.raises(CorpusError, match=r"c.tsv:1: .*looks like UTF-16; save it as UTF-8"):
        read_corpus(str(path))
    source = write(tmp_path / "a.en", "one\n")
    with pytest.raises(CorpusError, match=r"c.tsv:1: .*looks like UTF-16; save it as UTF-8"):
        read_corpus("%s,%s" % (source, path))


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_every_line_ending_ends_a_line(tmp_path, newline):
    tsv = write(tmp_path / "c.tsv", newline.join(["one\tum", "two\tdois", "three\ttrês", ""]))
    assert read_corpus(tsv).pairs == [("one", "um"), ("two", "dois"), ("three", "três")]
    source = write(tmp_path / "a.en", newline.join(["one", "two", ""]))
    target = write(tmp_path / "a.pt", "um\ndois\n")
    assert read_corpus("%s,%s" % (source, target)).pairs == [("one", "um"), ("two", "dois")]


# Separators Python's str.splitlines() breaks at; only LF ends a line.
INNER_SEPARATORS = ["\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("separator", INNER_SEPARATORS)
def test_a_separator_inside_a_tsv_line_is_a_space(tmp_path, separator):
    tsv = write(tmp_path / "c.tsv", "hello world\tolá mundo%scruel\nCR LF\tCR%sLF\r\n"
                % (separator, separator))
    corpus = read_corpus(tsv)
    assert corpus.pairs == [("hello world", "olá mundo cruel"), ("CR LF", "CR LF")]
    assert not corpus.skipped


@pytest.mark.parametrize("separator", INNER_SEPARATORS)
def test_a_separator_inside_a_line_keeps_aligned_files_aligned(tmp_path, separator):
    # `wc -l` says 2 and 2.
    source = write(tmp_path / "a.src", "one%sand a half\ntwo\n" % separator)
    target = write(tmp_path / "a.tgt", "um e meio\ndois\n")
    assert read_corpus("%s,%s" % (source, target)).pairs == [("one and a half", "um e meio"),
                                                             ("two", "dois")]


def test_line_numbers_count_line_feeds_only(tmp_path):
    path = tmp_path / "c.tsv"
    path.write_bytes(b"one\tum\rtwo\tdois\r\nthree\ttr\xeas\r\n")
    with pytest.raises(CorpusError, match=r"c.tsv:2: not valid UTF-8 \(byte 0xea at column 9\)"):
        read_corpus(str(path))


def test_undecodable_byte_names_file_and_line(tmp_path):
    path = tmp_path / "latin1.tsv"
    path.write_bytes("one\tum\ntwo\tdois\nthree\ttrês\n".encode("latin-1"))
    with pytest.raises(CorpusError) as error:
        read_corpus(str(path))
    assert "%s:3: not valid UTF-8 (byte 0xea at column 9)" % path in str(error.value)


def test_undecodable_byte_column_counts_characters(tmp_path):
    path = tmp_path / "mixed.tsv"
    path.write_bytes("ação\t".encode("utf-8") + b"\xff\n")
    with pytest.raises(CorpusError, match=r"mixed.tsv:1: not valid UTF-8 \(byte 0xff at column 6\)"):
        read_corpus(str(path))


def test_parallel_files(tmp_path):
    source = write(tmp_path / "a.en", "one\ntwo\n\nfour\n")
    target = write(tmp_path / "a.pt", "um\ndois\ntrês\nquatro\n")
    corpus = read_corpus("%s,%s" % (source, target))
    assert corpus.pairs == [("one", "um"), ("two", "dois"), ("four", "quatro")]
    assert corpus.skipped == {"empty_side": 1}
    assert corpus.files == [source, target]


def test_parallel_files_of_different_lengths(tmp_path):
    source = write(tmp_path / "a.en", "one\ntwo\nthree\n")
    target = write(tmp_path / "a.pt", "um\ndois\n")
    with pytest.raises(CorpusError, match="a.en has 3 lines but .*a.pt has 2"):
        read_corpus("%s,%s" % (source, target))


def test_undecodable_byte_in_second_parallel_file(tmp_path):
    source = write(tmp_path / "a.en", "one\n")
    target = tmp_path / "a.pt"
    target.write_bytes(b"\xff\n")
    with pytest.raises(CorpusError, match="a.pt:1: not valid UTF-8"):
        read_corpus("%s,%s" % (source, target))


def test_missing_file(tmp_path, monkeypatch):
    missing = str(tmp_path / "nowhere.tsv")
    with pytest.raises(CorpusError, match="corpus file not found: .*nowhere.tsv$"):
        read_corpus(missing)
    monkeypatch.chdir(tmp_path)  # a relative path: where it was looked for
    with pytest.raises(CorpusError, match="not found: nowhere.tsv \\(in %s: a config.yaml holds "
                       "paths as typed" % re.escape(str(tmp_path))):
        read_corpus("nowhere.tsv")


def test_corpus_that_ends_up_empty(tmp_path):
    tsv = write(tmp_path / "c.tsv", "no tab here\n\tno source\n")
    with pytest.raises(CorpusError, match="no usable sentence pair .*empty_side 1, no_tab 1"):
        read_corpus(tsv)
    with pytest.raises(CorpusError, match="the file is empty"):
        read_corpus(write(tmp_path / "empty.tsv", ""))


@pytest.mark.parametrize("spec", ["", "a,b,c", "a,"])
def test_malformed_spec(spec):
    with pytest.raises(CorpusError, match="a TSV file or 'source_file,target_file'"):
        read_corpus(spec)


# Bytes -> the lines every tool reads (as `wc -l` counts them when LF ends them).
TEXT_LINES = [
    (b"one\rtwo\nthree\n", ["one\rtwo", "three"]),
    (b"one\rtwo\r\nthree\r\n", ["one\rtwo", "three"]),
    (b"one\r\n\r\ntwo", ["one", "", "two"]),             # no LF after the last line
    (b"one\ntwo\r", ["one", "two"]),                       # nor here: CR LF cut short
    (b"one\rtwo\r\rthree", ["one", "two", "", "three"]),  # no LF at all: CR ends lines
    (b"one\x0btwo\xe2\x80\xa8three\n", ["one\x0btwo\u2028three"]),
    (b"\xef\xbb\xbfone\n", ["one"]),
    (b"\xef\xbb\xbf", []),
    (b"\n", [""]),
    (b"", []),
]


@pytest.mark.parametrize("data, lines", TEXT_LINES)
def test_read_text_lines_splits_at_line_feeds_as_wc_does(tmp_path, data, lines):
    path = tmp_path / "text.txt"
    path.write_bytes(data)
    assert read_text_lines(str(path)) == lines
    assert list(iter_text_lines(io.BytesIO(data), "standard input")) == lines
    if b"\n" in data and data.endswith(b"\n") and shutil.which("wc"):
        wc = subprocess.run(["wc", "-l", str(path)], capture_output=True, text=True, check=True)
        assert int(wc.stdout.split()[0]) == len(lines)


def test_read_text_lines_errors_name_the_file_and_line(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"one\rtwo\r\ncaf\xe9\r\n")
    with pytest.raises(CorpusError, match=r"latin1.txt:2: not valid UTF-8 \(byte 0xe9 at column 4\)"):
        read_text_lines(str(path))
    path.write_bytes("one\n".encode("utf-16"))
    with pytest.raises(CorpusError, match=r"latin1.txt:1: .*looks like UTF-16"):
        read_text_lines(str(path))
    with pytest.raises(OSError):
        read_text_lines(str(tmp_path / "missing.txt"))


def test_iter_text_lines_reads_a_stream_a_line_at_a_time():
    stream = io.BytesIO(b"one\r\ntwo\n\xff\n")
    lines = iter_text_lines(stream, "standard input")
    assert next(lines) == "one"
    assert stream.tell() == len(b"one\r\n"), "the rest is not read yet"
    assert next(lines) == "two"
    with pytest.raises(CorpusError, match=r"^standard input:3: not valid UTF-8 \(byte 0xff"):
        next(lines)
