"""Readers for user corpora: a TSV file or two aligned plain-text files.

Both readers are strict about encoding (UTF-8, an undecodable byte is an error
naming file and line; a UTF-16 file is an error saying so) and lenient about
content: a blank line, a line without a tab or a pair with an empty side is
skipped and *counted*, never silently dropped. Lines end at LF (CR LF counts as
LF), as for Moses, fairseq and sacreBLEU, so that line numbers agree with
`wc -l` and editors. Text is normalised to Unicode NFC and trimmed, inner
whitespace runs to one space.

`read_text_lines` and `iter_text_lines` split any text into lines the same
way, for the tools that read plain text (`decode.translate`, `decode.compare`).
"""

import collections
import itertools
import os
import unicodedata

# Why a pair was skipped. prepare decides more after encoding: "too_long",
# and "empty_side" again for a side that encodes to no piece at all; and
# "source_in_dev_test" for train pairs repeating a source carved out for
# dev or test.
#
# A blank (or whitespace-only) TSV line is counted apart from "no_tab", so
# that "no_tab" points at real format problems (a space-separated file, say).
# In two aligned files a blank line is an "empty_side": its pair is still one
# line of each file.
BLANK_LINE = "blank_line"
NO_TAB = "no_tab"
EMPTY_SIDE = "empty_side"

UTF8_BOM = b"\xef\xbb\xbf"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")  # little-, big-endian (also UTF-32 LE's start)

Corpus = collections.namedtuple("Corpus", ["pairs", "skipped", "files"])
Corpus.__doc__ = """Sentence pairs read from one corpus spec.

Attributes:
  pairs: list of (source, target) str tuples, normalised, in file order.
  skipped: collections.Counter, reason -> number of lines skipped.
  files: the paths read, in order.
"""


class CorpusError(ValueError):
    """A corpus that cannot be used; the message names the file (and line)."""


def normalize(text):
    """Returns `text` in Unicode NFC, trimmed, each inner run of whitespace one space.

    Collapsing also turns the line separators that can sit inside a line
    (CR, U+2028, U+0085, form feed...) into spaces, so that each sentence stays
    one line of dev.src and dev.tgt for every reader; the tokenizer sees one
    space there anyway.
    """
    return " ".join(unicodedata.normalize("NFC", text).split())


def split_spec(spec):
    """Returns the file paths of a corpus spec: ``"a.tsv"`` or ``"a.src,a.tgt"``.

    Raises:
      CorpusError: if the spec is empty or names more than two files.
    """
    paths = [path.strip() for path in spec.split(",")] if spec else []
    if not paths or len(paths) > 2 or not all(paths):
        raise CorpusError("a corpus is a TSV file or 'source_file,target_file', got %r" % spec)
    return paths


def read_corpus(spec):
    """Reads a TSV file or two aligned files, as given by `spec`.

    Args:
      spec: ``"corpus.tsv"`` (``source<TAB>target[<TAB>ignored...]``) or
        ``"source.txt,target.txt"`` (one sentence per line, aligned by line).
    Returns:
      A Corpus.
    Raises:
      CorpusError: a missing file, an undecodable byte, files of different
        lengths, or no usable pair at all.
    """
    paths = split_spec(spec)
    if len(paths) == 1:
        corpus = read_tsv(paths[0])
    else:
        corpus = read_parallel(*paths)
    if not corpus.pairs:
        raise CorpusError("%s has no usable sentence pair (skipped: %s)"
                          % (spec, format_skipped(corpus.skipped) or "nothing, the file is empty"))
    return corpus


def read_tsv(path):
    """Reads ``source<TAB>target`` lines; further columns are ignored.

    This is the Tatoeba/Anki export format, whose third column holds the
    attribution. Blank or whitespace-only lines count as "blank_line", other
    lines without a tab as "no_tab".
    """
    pairs, skipped = [], collections.Counter()
    for line in _read_lines(path):
        if not line.strip():  # whitespace-only: the whitespace normalize() collapses
            skipped[BLANK_LINE] += 1
            continue
        if "\t" not in line:
            skipped[NO_TAB] += 1
            continue
        source, target = line.split("\t")[:2]
        _keep_pair(normalize(source), normalize(target), pairs, skipped)
    return Corpus(pairs, skipped, [path])


def read_parallel(source_path, target_path):
    """Reads two files whose lines are translations of each other.

    A pair with a blank side (a blank line in either file) counts as
    "empty_side"; the files must have the same number of lines.
    """
    source_lines = list(_read_lines(source_path))
    target_lines = list(_read_lines(target_path))
    if len(source_lines) != len(target_lines):
        raise CorpusError("%s has %d lines but %s has %d: the files must be aligned line by line"
                          % (source_path, len(source_lines), target_path, len(target_lines)))
    pairs, skipped = [], collections.Counter()
    for source, target in zip(source_lines, target_lines):
        _keep_pair(normalize(source), normalize(target), pairs, skipped)
    return Corpus(pairs, skipped, [source_path, target_path])


def format_skipped(skipped):
    """``Counter({"no_tab": 2})`` -> ``"no_tab 2"``; empty when nothing was skipped."""
    return ", ".join("%s %d" % (reason, count) for reason, count in sorted(skipped.items()) if count)


def _keep_pair(source, target, pairs, skipped):
    if source and target:
        pairs.append((source, target))
    else:
        skipped[EMPTY_SIDE] += 1


def read_text_lines(path):
    """Returns the lines of a strictly UTF-8 text file, without their line endings.

    The one way the tools split text into lines: the corpus readers here,
    `decode.translate` and `decode.compare` all count lines as `wc -l` does
    (see `iter_text_lines`), so that output lines and references stay aligned
    with the input lines. The lines are not normalised (see `normalize`).

    Raises:
      OSError: the file cannot be opened.
      CorpusError: it starts with a UTF-16 byte-order mark, or has an
        undecodable byte (named by file, 1-based line and column).
    """
    with open(path, "rb") as f:
        return list(iter_text_lines(f, path))


def iter_text_lines(stream, name):
    """Yields every line of a binary stream of strictly UTF-8 text, without its line ending.

    Lines end at LF only, as for Moses, fairseq, sacreBLEU and `wc -l`; one CR
    before the LF (a Windows file) is part of the line ending. A stream with CR
    and no LF at all (an old Mac file) has its lines ended by CR instead:
    read at LF it would be one line.

    A CR inside a line, like the other separators Python's str.splitlines()
    would break at (U+000B, U+000C, U+001C-U+001E, U+0085, U+2028, U+2029),
    stays in the line: it is whitespace, which normalize() turns into one space.
    That loses no text and keeps the line numbering of every other tool
    (ending the line there would cut a sentence pair in two, and shift every
    later line of one of two aligned files). Raising an error instead would
    reject files those tools read fine, e.g. spreadsheet exports with a line
    break inside a cell.

    A leading UTF-8 byte-order mark (which some Windows editors write) is not
    part of the text, nor of the column reported for an undecodable byte.

    Lines are read one at a time, so a long stream is not held in memory (but
    for a CR-only one), and a line typed at a terminal comes out when typed.

    Args:
      stream: a binary file object, e.g. ``open(path, "rb")`` or ``sys.stdin.buffer``.
      name: what error messages call it: its path, or "standard input".
    Raises:
      CorpusError: the stream starts with a UTF-16 byte-order mark, or has an
        undecodable byte (named by 1-based line and column).
    """
    first = stream.readline()
    if first.startswith(UTF16_BOMS):
        raise CorpusError("%s:1: starts with the UTF-16 byte-order mark 0x%02x 0x%02x: the file "
                          "looks like UTF-16; save it as UTF-8" % (name, first[0], first[1]))
    if first.startswith(UTF8_BOM):
        first = first[len(UTF8_BOM):]
    if not first:
        return  # empty
    if not first.endswith(b"\n") and b"\r" in first:
        # The first line reached the end of the stream: there is no LF at all.
        lines = first.split(b"\r")
        if lines[-1] == b"":
            lines.pop()  # after the last CR
    else:
        # readline() returns b"" only at the end, and a line without LF only last.
        lines = itertools.chain([first], iter(stream.readline, b""))
    for number, raw in enumerate(lines, start=1):
        if raw.endswith(b"\n"):
            raw = raw[:-1]
        if raw.endswith(b"\r"):
            raw = raw[:-1]  # CR LF
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            # The column in characters, as an editor shows it, not in bytes.
            column = len(raw[:e.start].decode("utf-8")) + 1
            raise CorpusError("%s:%d: not valid UTF-8 (byte 0x%02x at column %d)"
                              % (name, number, raw[e.start], column)) from e
        yield line


def _read_lines(path):
    """Yields the lines of a corpus file (see `iter_text_lines`).

    Raises:
      CorpusError: the file is missing, or as `iter_text_lines`.
    """
    if not os.path.isfile(path):
        raise CorpusError("corpus file not found: %s" % path)
    with open(path, "rb") as f:
        yield from iter_text_lines(f, path)
