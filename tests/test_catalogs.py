"""The catalog corpus: filters, the dedup rule, the split, the README, the pinned wheels; no network."""

import hashlib
import itertools
import os
import subprocess
import zipfile

import pytest

from data_pipeline import catalogs
from data_pipeline.catalogs import CatalogError, build_corpus, fetch_wheels, read_pins, split_of
from data_pipeline.placeholders import protect, protect_target

HEADER = ('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n'
          '"PO-Revision-Date: YEAR-MO-DA HO:MI+ZONE\\n"\n"Plural-Forms: nplurals=2; plural=(n > 1);\\n"\n\n')


def quote(text):
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")


def entry(source, target, prefix=""):
    return "%smsgid %s\nmsgstr %s\n\n" % (prefix, quote(source), quote(target))


KEPT = [("Save", "Salvar"), ("Delete this item?", "Excluir este item?"),
        ("Title of the page", "Título da página"), ("Open", "Abrir"), ("Two spaces", "Dois espaços"),
        ("Saved 100% of the files", "100% dos arquivos salvos"),
        ("Hello ｟0｠", "Olá ｟0｠"), ("Page ｟0｠ of ｟1｠", "Página ｟0｠ de ｟1｠"),  # protected tokens
        ("Welcome ｟0｠", "Bem-vindo ｟0｠"), ("Click ｟0｠here｟1｠", "Clique ｟0｠aqui｟1｠"),
        ("｟0｠ sent ｟1｠ to ｟2｠", "｟1｠ enviado por ｟0｠ para ｟2｠"), ("｟0｠｟1｠ done", "｟0｠｟1｠ feito")]
DROPPED = {
    "fuzzy": entry("Cancel", "Cancelar", "#, fuzzy\n"),
    "plural": 'msgid "One file"\nmsgid_plural "%d files"\nmsgstr[0] "Um arquivo"\nmsgstr[1] "%d arquivos"\n\n',
    "untranslated": entry("Close", ""),
    "multi_line": entry("Line one\nline two", "Linha um\nlinha dois"),
    "too_many_placeholders": entry("%s " * 17 + "!", "%s " * 17 + "!"),
    "placeholders_differ": entry("Hi %(name)s", "Oi %(nome)s") + entry("Delete %s of %d", "Excluir %d de %s")
    + entry("Started at <b>%(time)s</b>", "Iniciado às %(time)s") + entry("Welcome", "Bem-vindo {}"),
    "code": entry("Fish &amp; chips", "Peixe &amp; batatas") + entry("Use {{ name }}", "Use {{ nome }}"),
    "url_or_email": entry("See https://example.org", "Veja https://example.org"),
    "identifier": entry("help_title", "Ajuda"),
    "length": entry(" ".join(["word"] * 31), " ".join(["palavra"] * 31)),
    "copy": entry("PDF", "pdf"),
    "not_letters": entry("e.g. 127.0.0.1", "ex. 127.0.0.1"),
}
MAIN_PO = HEADER + "".join(DROPPED.values()) + (
    entry("Save", "Salvar") + entry("Delete this item?", "Excluir este item?")
    + entry("label_title", "Título da página", '#. Default: "Title of the page"\n')
    + entry("Open", "Abrir", 'msgctxt "button"\n') + entry("Two  spaces", " Dois\tespaços ")
    + entry("Saved 100% of the files", "100% dos arquivos salvos")
    + entry("Hello %s", "Olá %s") + entry("Hello %(name)s", "Olá %(name)s")  # one source for the model
    + entry("Page {0} of {1}", "Página {0} de {1}") + entry("Welcome ${user}", "Bem-vindo ${user}")
    + entry("Click <b>here</b>", "Clique <b>aqui</b>")
    + entry("%(a)s sent %s to {b}", "%s enviado por %(a)s para {b}")
    + entry("%(count)s%% done", "%(count)s%% feito") + '#~ msgid "Old"\n#~ msgstr "Velho"\n')


def make_wheel(directory, name, catalogs, version="1.0"):
    """A wheel file holding {language: [po text, ...]} as <name>/locale/<language>/LC_MESSAGES/*.po."""
    path = os.path.join(str(directory), "%s-%s-py3-none-any.whl" % (name, version))
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("%s/__init__.py" % name, "")
        for language, texts in catalogs.items():
            for index, text in enumerate(texts):
                folder = "%s/locale/%s/LC_MESSAGES/" % (name, language)
                wheel.writestr(folder + "domain%d.po" % index, text.encode("utf-8"))
                wheel.writestr(folder + "domain%d.mo" % index, b"not read")
    return path


def read_tsv(out_dir, split):
    with open(os.path.join(str(out_dir), split + ".tsv"), encoding="utf-8") as f:
        return [tuple(line.rstrip("\n").split("\t")) for line in f]


def letters(number):
    """0 -> "a", 26 -> "ba": a word of letters for each number."""
    word = ""
    while True:
        word, number = "abcdefghijklmnopqrstuvwxyz"[number % 26] + word, number // 26
        if not number:
            return word


def protected(pair):
    source, originals = protect(pair[0])
    return source, protect_target(pair[1], originals)


def test_the_filters_keep_one_line_human_translations(tmp_path):
    wheel = make_wheel(tmp_path, "pkg", {"pt_BR": [MAIN_PO], "fr": [HEADER + entry("Save", "Enregistrer")]})
    splits = build_corpus([wheel], "pt_BR", tmp_path / "out", verbose=False)
    assert list(splits) == ["train", "dev", "test", "test-placeholders"]
    for written in (splits, {name: read_tsv(tmp_path / "out", name) for name in splits}):
        assert sorted(itertools.chain(written["train"], written["dev"], written["test"],
                                      map(protected, written["test-placeholders"]))) == sorted(KEPT)
    readme = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    for reason, text in DROPPED.items():
        assert "| %s | %d |" % (reason, text.count("msgid ")) in readme


def test_a_source_keeps_its_most_frequent_target_and_ties_go_to_the_first_wheel(tmp_path):
    a = make_wheel(tmp_path, "a", {"pt_BR": [HEADER + entry("Save", "Salvar") + entry("Open", "Abrir")]})
    b = make_wheel(tmp_path, "b", {"pt-br": [HEADER + entry("Save", "Gravar") + entry("Open", "Abra"),
                                             HEADER + entry("Save", "Gravar")]})
    for order, tie_winner in (([a, b], "Abrir"), ([b, a], "Abra")):
        pairs = dict(itertools.chain(*build_corpus(order, "pt_BR", tmp_path / "out", verbose=False).values()))
        assert pairs == {"Save": "Gravar", "Open": tie_winner}


def test_the_split_is_a_hash_of_the_source_disjoint_deterministic_and_stable(tmp_path):
    def pairs(numbers):
        return [("Word %s here" % letters(k), "Palavra %s aqui" % letters(k)) for k in numbers]
    some, more = pairs(range(0, 3000, 2)), pairs(range(1, 3000, 2))
    variants = [("Save item", "Salvar item"), ("save item:", "salvar item:"), ("Save item.", "Salvar item.")]
    small = make_wheel(tmp_path, "small", {"pt_BR": [HEADER + "".join(entry(*p) for p in some + variants)]})
    extra = make_wheel(tmp_path, "extra", {"pt_BR": [HEADER + "".join(entry(*p) for p in more)]})
    first = build_corpus([small], "pt_BR", tmp_path / "one", verbose=False)
    both = build_corpus([extra, small], "pt_BR", tmp_path / "two", verbose=False)
    split_of = {source: split for split, ps in both.items() for source, _ in ps}
    assert len(split_of) == sum(map(len, both.values())) == 3003  # no source in two splits
    assert all(split_of[source] == split for split, ps in first.items() for source, _ in ps)  # stable
    assert len({split_of[source] for source, _ in variants}) == 1  # case and final punctuation: one split
    for split, share in (("dev", 0.06), ("test", 0.06), ("train", 0.88)):
        assert abs(len(both[split]) / 3003 - share) < 0.02
        # each file in the order of its sources' sha256: the same bytes on any machine
        hashes = [hashlib.sha256(source.encode("utf-8")).hexdigest() for source, _ in read_tsv(tmp_path / "two", split)]
        assert hashes == sorted(hashes)
    again = build_corpus([extra, small], "pt_BR", tmp_path / "again", verbose=False)
    assert again == both
    for name in ("train.tsv", "dev.tsv", "test.tsv", "README.md"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()


def test_test_messages_with_placeholders_have_a_file_of_their_own_as_written(tmp_path):
    # "Open %s in ab" and "Open {} in ab" are one source to the model: one pair, in one split.
    forms = {"printf": ("%s", "%s"), "brace": ("{}", "{}"), "markup": ("<b>", "<b>")}
    wheels = [make_wheel(tmp_path, name, {"pt_BR": [HEADER + "".join(
        entry("Open %s in %s" % (form, letters(k)), "Abrir %s em %s" % (translated, letters(k)))
        + entry("Close %s" % letters(k), "Fechar %s" % letters(k)) for k in range(300))]})
        for name, (form, translated) in forms.items()]
    splits = build_corpus(wheels, "pt_BR", tmp_path / "out", verbose=False)
    assert [len(pairs) for pairs in splits.values()] == [
        len(pairs) for pairs in (read_tsv(tmp_path / "out", name) for name in splits)]
    sources = [source for pairs in splits.values() for source, _ in map(protected, pairs)]
    assert len(sources) == len(set(sources)) == 600
    assert all("%s" in source for source, _ in splits["test-placeholders"])  # the first wheel's
    assert 0 < len(splits["test-placeholders"]) < 40 and all(
        split_of(protected(pair)[0]) == "test" for pair in splits["test-placeholders"])
    assert splits["test"] and all(source.startswith("Close") for source, _ in splits["test"])
    readme = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert "| test-placeholders.tsv | %d | %d |" % ((len(splits["test-placeholders"]),) * 2) in readme


def test_the_readme_names_each_package_version_licence_and_its_pairs(tmp_path):
    a = make_wheel(tmp_path, "alpha.pkg", {"pt_BR": [HEADER + entry("Save", "Salvar") + entry("Open", "Abrir")]},
                   version="2.5")
    b = make_wheel(tmp_path, "beta", {"pt_BR": [HEADER + entry("Save", "Salvar") + entry("Close", "Fechar")]})
    build_corpus([a, b], "pt_BR", tmp_path / "out", licences={"alpha-pkg": "MIT", "beta": "GPL-2.0"},
                 verbose=False)
    rows = {line.split(" | ")[0].strip("| "): line.strip("| ").split(" | ")
            for line in (tmp_path / "out" / "README.md").read_text(encoding="utf-8").splitlines()}
    assert rows["alpha.pkg"][1:3] == ["2.5", "MIT"] and rows["alpha.pkg"][-3:] == ["2", "2", "2"]
    assert rows["beta"][1:3] == ["1.0", "GPL-2.0"] and rows["beta"][-3:] == ["2", "2", "1"]  # "Save" was alpha's
    assert sum(int(rows[name + ".tsv"][1]) for name in ("train", "dev", "test", "test-placeholders")) == 3


def test_a_language_without_catalogs_is_an_error_naming_those_there_are(tmp_path):
    wheel = make_wheel(tmp_path, "pkg", {"fr": [HEADER + entry("Save", "Enregistrer")], "de": [HEADER]})
    with pytest.raises(CatalogError, match=r"no xx catalog .* 1 wheels; their languages: de fr$"):
        build_corpus([wheel], "xx", tmp_path / "out", verbose=False)
    assert not (tmp_path / "out").exists()


def pins_file(tmp_path, wheels, sha256=None, name="pins.txt"):
    path = tmp_path / name
    lines = ["# a comment", ""] + ["%s==1.0 --hash=sha256:%s # Project %s | MIT" % (
        os.path.basename(w).split("-")[0].replace("_", "-"), sha256 or hashlib.sha256(
            open(w, "rb").read()).hexdigest(), k) for k, w in enumerate(wheels)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def test_pinned_wheels_in_the_cache_are_checked_and_not_downloaded_again(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    cache.mkdir()
    wheels = [make_wheel(cache, name, {"pt_BR": [HEADER + entry("Save", "Salvar")]}) for name in ("zeta_pkg", "alpha")]
    monkeypatch.setattr(subprocess, "run", lambda *args, **kwargs: pytest.fail("pip ran"))
    pins = pins_file(tmp_path, wheels)
    assert [pin.name for pin in read_pins(pins)] == ["zeta-pkg", "alpha"]
    assert fetch_wheels(pins, str(cache)) == wheels  # in pin order
    with pytest.raises(CatalogError, match=r"zeta_pkg-1.0-py3-none-any.whl has sha256 [0-9a-f]{64} but "
                                           r".*bad.txt pins 0{64}: remove the file"):
        fetch_wheels(pins_file(tmp_path, wheels, sha256="0" * 64, name="bad.txt"), str(cache))
    assert all(os.path.isfile(w) for w in wheels)  # nothing the user has is lost
    catalogs.main(["--target", "pt_BR", "--out", str(tmp_path / "out"), "--pins", pins, "--cache", str(cache)])
    assert "| zeta_pkg | 1.0 | MIT |" in (tmp_path / "out" / "README.md").read_text(encoding="utf-8")


def test_a_missing_wheel_is_fetched_by_pip_with_the_hashes_required(tmp_path, monkeypatch):
    wheel = make_wheel(tmp_path, "pkg", {"pt_BR": [HEADER]})
    commands = []
    monkeypatch.setattr(subprocess, "run", lambda command: commands.append(command) or subprocess.CompletedProcess(
        command, 1))
    pins = pins_file(tmp_path, [wheel])
    with pytest.raises(CatalogError, match="pip could not download the wheels pinned in .*pins.txt"):
        fetch_wheels(pins, str(tmp_path / "empty"), python="/venv/python")
    assert commands == [["/venv/python", "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                         "--require-hashes", "-r", pins, "-d", str(tmp_path / "empty")]]


def test_pins_files_are_read_strictly(tmp_path):
    assert len(read_pins()) >= 9 and all(pin.licence and pin.project for pin in read_pins())  # the project's
    bad = tmp_path / "bad.txt"
    bad.write_text("# pins\ndjango==5.2 # no hash | BSD\n", encoding="utf-8")
    with pytest.raises(CatalogError, match=r"bad.txt:2: not 'name==version --hash=sha256:HEX"):
        read_pins(str(bad))
