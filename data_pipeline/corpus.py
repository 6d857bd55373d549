"""Readers for user corpora: a TSV file or two aligned plain-text files.

Both readers are strict about encoding (UTF-8, an undecodable byte is an error
naming file and line) and lenient about content: a line without a tab or with
an empty side is skipped and *counted*, never silently dropped. Text is
normalised to Unicode NFC and trimmed, inner whitespace runs to one space.
"""

import collections
import os
import unicodedata

# Why a pair was skipped. prepare decides more after encoding: "too_long",
# and "empty_side" again for a side that encodes to no piece at all; and
# "source_in_dev_test" for train pairs repeating a source carved out for
# dev or test.
NO_TAB = "no_tab"
EMPTY_SIDE = "empty_side"

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
    (U+2028, U+0085, form feed...) into spaces, so that each sentence stays
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
    attribution.
    """
    pairs, skipped = [], collections.Counter()
    for line in _read_lines(path):
        if "\t" not in line:
            skipped[NO_TAB] += 1
            continue
        source, target = line.split("\t")[:2]
        _keep_pair(normalize(source), normalize(target), pairs, skipped)
    return Corpus(pairs, skipped, [path])


def read_parallel(source_path, target_path):
    """Reads two files whose lines are translations of each other."""
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


def _read_lines(path):
    """Yields every line of a strictly UTF-8 file, without its line ending.

    Lines end at LF, CR LF or a lone CR (old Mac files), as in Python's text
    mode: splitting at LF alone would read a whole CR file as one line. A
    leading byte-order mark (which some Windows editors write) is not part of
    the text. An undecodable byte is reported with its 1-based line number.
    """
    if not os.path.isfile(path):
        raise CorpusError("corpus file not found: %s" % path)
    with open(path, "rb") as f:
        data = f.read()
    for number, raw in enumerate(data.splitlines(), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            # The column in characters, as an editor shows it, not in bytes.
            column = len(raw[:e.start].decode("utf-8")) + 1
            raise CorpusError("%s:%d: not valid UTF-8 (byte 0x%02x at column %d)"
                              % (path, number, raw[e.start], column)) from e
        yield line.lstrip("\ufeff") if number == 1 else line
