"""Readers for user corpora (a TSV file or two aligned text files) and the one line splitter.

Strict about encoding, lenient about content (skipped lines are counted); docs/DATA-NOTES.md.
"""

import codecs
import collections
import itertools
import os
import unicodedata

BLANK_LINE, NO_TAB, EMPTY_SIDE = "blank_line", "no_tab", "empty_side"  # why a pair was skipped

Corpus = collections.namedtuple("Corpus", ["pairs", "skipped", "files"])
Corpus.__doc__ = ("pairs: [(source, target)] normalised; skipped: Counter reason -> lines; "
                  "files: paths read.")


class CorpusError(ValueError):
    """A corpus that cannot be used; the message names the file (and line)."""


def normalize(text):
    """`text` in Unicode NFC, trimmed, each inner run of whitespace (line breaks too) one space."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def split_spec(spec):
    """The file paths of a corpus spec, ``"a.tsv"`` or ``"a.src,a.tgt"``; CorpusError otherwise."""
    paths = [path.strip() for path in spec.split(",")]
    if len(paths) > 2 or not all(paths):
        raise CorpusError("a corpus is a TSV file or 'source_file,target_file', got %r" % spec)
    return paths


def read_corpus(spec):
    """Reads ``corpus.tsv`` (``source<TAB>target[<TAB>ignored...]``, the Tatoeba/Anki format) or
    ``source.txt,target.txt`` (aligned by line) into a Corpus; CorpusError names the file and
    line of a problem."""
    paths, skipped, raw_pairs, lines = split_spec(spec), collections.Counter(), [], []
    for path in paths:
        if not os.path.isfile(path):
            relative = "" if os.path.isabs(path) else " (in %s: a config.yaml holds paths as " \
                "typed, relative to where training ran)" % os.getcwd()
            raise CorpusError("corpus file not found: %s%s" % (path, relative))
        lines.append(read_text_lines(path))
    if len(paths) == 1:
        for line in lines[0]:
            if not line.strip():
                skipped[BLANK_LINE] += 1
            elif "\t" not in line:
                skipped[NO_TAB] += 1
            else:
                raw_pairs.append(line.split("\t")[:2])
    elif len(lines[0]) != len(lines[1]):
        raise CorpusError("%s has %d lines but %s has %d: the files must be aligned line by line"
                          % (paths[0], len(lines[0]), paths[1], len(lines[1])))
    else:
        raw_pairs = zip(*lines)
    normalized = [(normalize(source), normalize(target)) for source, target in raw_pairs]
    pairs = [pair for pair in normalized if all(pair)]
    skipped += collections.Counter({EMPTY_SIDE: len(normalized) - len(pairs)})  # none: no entry
    if not pairs:
        raise CorpusError("%s has no usable sentence pair (skipped: %s)"
                          % (spec, format_skipped(skipped) or "nothing, the file is empty"))
    return Corpus(pairs, skipped, paths)


def format_skipped(skipped):
    """``Counter({"no_tab": 2})`` -> ``"no_tab 2"``; "" when nothing was skipped."""
    return ", ".join("%s %d" % (reason, count) for reason, count in sorted(skipped.items())
                     if count)


def read_text_lines(path):
    """The lines of a strictly UTF-8 text file, without line endings, not normalised."""
    with open(path, "rb") as f:
        return list(iter_text_lines(f, path))


def iter_text_lines(stream, name):
    """Yields the lines (LF or CR LF ends them) of a binary stream of UTF-8 text, one at a time.

    Args:
      stream: a binary file object, e.g. ``sys.stdin.buffer``.
      name: what error messages call it: its path, or "standard input".
    Raises:
      CorpusError: a UTF-16 byte-order mark, or an undecodable byte (1-based line and column).
    """
    first = stream.readline()
    if first.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise CorpusError("%s:1: starts with the UTF-16 byte-order mark 0x%02x 0x%02x: the file "
                          "looks like UTF-16; save it as UTF-8" % (name, first[0], first[1]))
    first = first.removeprefix(codecs.BOM_UTF8)
    if not first:
        return
    if not first.endswith(b"\n") and b"\r" in first:  # no LF at all: an old Mac file
        lines = first.removesuffix(b"\r").split(b"\r")
    else:
        lines = itertools.chain([first], iter(stream.readline, b""))
    for number, raw in enumerate(lines, start=1):
        raw = raw.removesuffix(b"\n").removesuffix(b"\r")
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as e:
            column = len(raw[:e.start].decode("utf-8")) + 1  # in characters, as an editor shows it
            raise CorpusError("%s:%d: not valid UTF-8 (byte 0x%02x at column %d)"
                              % (name, number, raw[e.start], column)) from e
