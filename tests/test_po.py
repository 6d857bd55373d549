"""`python -m decode.po`: a catalog filled by the tiny model, read back with Babel's own reader."""

import ast
import os
import re
import shutil
import subprocess
import sys

import pytest
from babel.messages.pofile import read_po

from decode import po

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

HEADER = r"""# Portuguese translations for a demo.
# Copyright (C) YEAR THE PACKAGE'S COPYRIGHT HOLDER
#
msgid ""
msgstr ""
"Project-Id-Version: demo 1.0\n"
"POT-Creation-Date: 2024-01-01 00:00+0000\n"
"PO-Revision-Date: YEAR-MO-DA HO:MI+ZONE\n"
"Language: pt_BR\n"
"MIME-Version: 1.0\n"
"Content-Type: text/plain; charset=UTF-8\n"
"Content-Transfer-Encoding: 8bit\n"
"Plural-Forms: nplurals=2; plural=(n > 1);\n"
"X-Generator: a text editor\n"
"""
TRANSLATED = r"""# A translator's note.
#. An extracted comment.
#: app.py:10
msgid "the cats"
msgstr "os gatos"
"""
FUZZY = r"""# The source changed.
#, fuzzy
#| msgid "the dogs"
msgid "some new pencils"
msgstr "os cães"
"""
TRANSLATED_PLURAL = r"""#, python-format
msgid "%d pencil"
msgid_plural "%d pencils"
msgstr[0] "%d lápis"
msgstr[1] "%d lápis"
"""
OBSOLETE = r"""#~ msgid "the cars"
#~ msgstr "os carros"
"""
UNTRANSLATED = r"""# A translator's note, kept.
#. An extracted comment longer than the 76 columns that Babel's writer would wrap a comment to.
#: app.py:20
#, python-format
msgid "I bought %s white cars."
msgstr ""
""", r"""#: app.py:30 app.py:31
#, python-format
msgid "%(count)d white car"
msgid_plural "%(count)d white cars"
msgstr[0] ""
msgstr[1] ""
""", r"""#| msgid "June"
msgctxt "a month"
msgid ""
"June "
"2009"
msgstr ""
"""
KEPT = (HEADER, TRANSLATED, FUZZY, TRANSLATED_PLURAL, OBSOLETE)
CATALOG = "\n".join((HEADER, TRANSLATED, UNTRANSLATED[0], UNTRANSLATED[1], FUZZY,
                     UNTRANSLATED[2], TRANSLATED_PLURAL, OBSOLETE))


class Recording:
    """The tiny Translator, keeping each text decode.po has it translate: {text: translation};
    `replace`: {text: the translation to give instead}."""

    def __init__(self, translator):
        self.translator, self.found, self.replace = translator, {}, {}

    def __getattr__(self, name):
        return getattr(self.translator, name)

    def translate(self, texts):
        translations = [translation._replace(text=self.replace.get(text, translation.text))
                        for text, translation in zip(texts, self.translator.translate(texts))]
        self.found.update(zip(texts, (translation.text for translation in translations)))
        return translations


@pytest.fixture
def recording(translator, monkeypatch):
    recording = Recording(translator)
    monkeypatch.setattr("decode.translator.Translator", lambda model_dir: recording)
    return recording


@pytest.fixture
def fill(tmp_path, recording, capsys):
    """Runs decode.po's main on a catalog text -> (output text, stderr lines)."""
    def run(text, *flags):
        source, output = tmp_path / "in.po", tmp_path / "out.po"
        source.write_text(text, encoding="utf-8")
        assert po.main(["--model_dir", "tiny", "--input", str(source), "--output", str(output),
                        "--no_progress", *flags]) == 0
        return output.read_text(encoding="utf-8"), capsys.readouterr().err.splitlines()
    return run


def read(text, tmp_path):
    """Babel's Catalog of `text`."""
    path = tmp_path / "read.po"
    path.write_text(text, encoding="utf-8")
    with open(path, "rb") as file:
        return read_po(file, abort_invalid=True)


def key(message):
    return message.id, message.context


def heads(text):
    """Each entry's lines before its msgstrs, but the machine translation's comment, the fuzzy flag
    and a flags line holding it only."""
    return [[line.replace("#, fuzzy,", "#,") for line in block.split("\nmsgstr")[0].split("\n")
             if not line.startswith("# machine translation") and line != "#, fuzzy"]
            for block in text.split("\n\n")]


def msgfmt_errors(text, tmp_path, *flags):
    """msgfmt --check-format's complaints about `text` (none: msgfmt reads it, and the formats of
    the entries it uses agree; fuzzy entries are drafts it leaves out, unless --use-fuzzy)."""
    path = tmp_path / "check.po"
    path.write_text(text, encoding="utf-8")
    done = subprocess.run(["msgfmt", "--check-format", "-o", os.devnull, str(path), *flags],
                          capture_output=True, text=True)
    return done.stderr


def assert_filled(message, source, recording):
    """`message` is `source` filled: pt_BR's form 0 (n = 0, 1) from msgid, 1 from msgid_plural."""
    assert message.fuzzy and message.flags == source.flags | {"fuzzy"}
    assert message.user_comments == [  # Babel reads "#|" (the msgid translated before) as one
        "machine translation: model %s, step %d" % (recording.model_name, recording.step)] + [
        c for c in source.user_comments if "machine" not in c]
    assert (message.locations, message.auto_comments) == (source.locations, source.auto_comments)
    texts = message.id if message.pluralizable else [message.id]
    strings = message.string if message.pluralizable else (message.string,)
    assert strings == tuple(recording.found[text] for text in texts)


def test_fills_the_untranslated_and_leaves_every_other_line(fill, recording, tmp_path):
    recording.replace["I bought %s white cars."] = "Comprei carros brancos."  # without its %s
    recording.replace["June 2009"] = (  # quoted, escaped, wrapped: read back as it was
        'Junho de 2009, "entre aspas", \\ e \\n: mais longo que uma linha inteira de msgstr')
    text, stderr = fill(CATALOG)
    before, after = read(CATALOG, tmp_path), read(text, tmp_path)
    assert [(m.id, m.context) for m in after] == [(m.id, m.context) for m in before]
    assert after.mime_headers == before.mime_headers and list(after.obsolete) == ["the cars"]
    assert text.startswith(HEADER) and all(block in text for block in KEPT)  # byte for byte
    filled = {key(m) for m in list(before)[1:] if not any(m.string)}
    assert len(filled) == 3 and len(recording.found) == 4  # a plural entry has two texts
    for source, message in zip(list(before)[1:], list(after)[1:]):
        if key(source) in filled:
            assert_filled(message, source, recording)
        else:
            assert (message.string, message.flags, message.user_comments, message.previous_id) == (
                source.string, source.flags, source.user_comments, source.previous_id)
    # The entries listed as failing Babel's checkers are those Babel's own check finds.
    failing = [m.id for m in list(after)[1:] if key(m) in filled and m.check(after)]
    assert "I bought %s white cars." in failing
    lines = text.split("\n")
    reported = [re.match(r".*:(\d+): (.*?): ", line).groups() for line in stderr[:-1]]
    assert [ast.literal_eval(found) for _, found in reported] == failing
    assert all(lines[int(number) - 1].startswith("# machine translation") for number, _ in reported)
    assert stderr[-1] == "%s: 3 filled, 1 skipped, %d failing Babel's format checks" % (
        tmp_path / "out.po", len(failing))
    assert heads(text) == heads(CATALOG)  # "#|", msgctxt, msgid: each line as it was
    if shutil.which("msgfmt"):  # gettext's own reader and checks, its order of lines included
        assert msgfmt_errors(text, tmp_path) == ""
        assert "%s:%d: number of format specifications" % (  # reading the filled msgstrs
            tmp_path / "check.po", lines.index('msgstr "Comprei carros brancos."') + 1
        ) in msgfmt_errors(text, tmp_path, "--use-fuzzy")


def test_include_fuzzy_translates_them_again_once(fill, recording, tmp_path):
    text, stderr = fill(CATALOG, "--include_fuzzy")
    assert stderr[-1].split(": ")[1].startswith("4 filled, 0 skipped")
    recording.step += 1  # a later checkpoint: each machine translation's comment replaced
    again, _ = fill(text, "--include_fuzzy")
    before, after = read(CATALOG, tmp_path), read(again, tmp_path)
    for source, message in zip(list(before)[1:], list(after)[1:]):
        if source.fuzzy or not any(source.string):
            assert_filled(message, source, recording)
        else:
            assert message.string == source.string and not message.fuzzy
    assert all(block in again for block in (HEADER, TRANSLATED, TRANSLATED_PLURAL, OBSOLETE))
    assert heads(again) == heads(CATALOG) and '#| msgid "the dogs"' in again  # kept as written
    if shutil.which("msgfmt"):
        assert msgfmt_errors(again, tmp_path) == ""


@pytest.mark.parametrize("text, line, says", [
    ('msgid "a"\nmsgstr "b"\n\nmsgfoo "c"\n', 4, 'not a keyword and a quoted string: msgfoo "c"'),
    ('msgid "a"\nmsgstr "b\n\nmsgid "c"\nmsgstr ""\n', 2, "not a keyword and a quoted string"),
    ('msgid "a"\nmsgstr "b"\n# a comment\n"c"\n', 4, 'Got line starting with " but not in'),
    ('msgid "a"\n\nmsgid "b"\nmsgstr "c"\n', 1, "msgid without msgstr"),
    (HEADER.replace("nplurals=2; plural=(n > 1)", "nplurals=1; plural=0") + "\n"
     + TRANSLATED_PLURAL, 17, "more translations than num_plurals"),
    (HEADER.replace("UTF-8", "ISO-8859-1"), None, "charset is iso-8859-1"),
    (b'msgid "a"\nmsgstr "\xe9"\n', 2, "not UTF-8"),
    (None, None, "No such file"),
])
def test_a_catalog_that_cannot_be_read_is_refused(text, line, says, tmp_path, capsys):
    source, output = tmp_path / "bad.po", tmp_path / "out.po"
    if text is not None:
        source.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    output.write_text("kept", encoding="utf-8")
    assert po.main(["--model_dir", "unused", "--input", str(source), "--output", str(output)]) == 2
    stderr = capsys.readouterr().err
    assert stderr.count("\n") == 1 and says in stderr, stderr
    assert stderr.startswith("error: ") and str(source) + (":%d: " % line if line else "") in stderr
    assert output.read_text(encoding="utf-8") == "kept"
    assert sorted(os.listdir(tmp_path)) == ["bad.po", "out.po"][text is None:]  # no temporary


@pytest.mark.parametrize("header, forms", [
    ("Language: pt_BR", "singular plural"),  # n > 1: 0 and 1 take form 0
    ("Plural-Forms: nplurals=1; plural=0;", "plural"),
    ("Language: ja", "plural"),  # Babel's rule for the language: one form
    ("Language: ru", "singular plural plural"),  # 1, 21, 31... take form 0
    ("Plural-Forms: nplurals=6; plural=n==0 ? 0 : n==1 ? 1 : n==2 ? 2 : "  # Arabic
     "n%100>=3 && n%100<=10 ? 3 : n%100>=11 ? 4 : 5;", "plural singular plural plural plural "
                                                       "plural"),
])
def test_each_plural_form_translates_what_gettext_selects_it_for(header, forms, tmp_path):
    path = tmp_path / "plural.po"
    path.write_text('msgid ""\nmsgstr "%s\\n"\n\nmsgid "singular"\nmsgid_plural "plural"\n'
                    'msgstr[0] ""\n' % header, encoding="utf-8")
    _, catalog, singular = po.read_catalog(str(path))
    assert po.sources(list(catalog)[1], singular) == forms.split()


def test_the_command_line_fills_a_catalog_in_place(tiny_model_dir, fill, tmp_path):
    in_process, _ = fill(CATALOG)  # the fixture's Translator: the same model, the same floats
    path = tmp_path / "messages.po"
    path.write_text(CATALOG, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "decode.po", "--model_dir", tiny_model_dir, "--input", str(path),
         "--output", str(path)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1].startswith("%s: 3 filled, 1 skipped" % path)
    assert "translating" not in done.stderr  # no progress bar: stderr is not a terminal
    assert path.read_text(encoding="utf-8") == in_process
    assert sorted(os.listdir(tmp_path)) == ["in.po", "messages.po", "out.po"]
