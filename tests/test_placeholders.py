"""Protected tokens against Babel's python-format checker and Python's own brace parser."""

import string

import pytest
from babel.messages.catalog import PYTHON_FORMAT, Message, TranslationError
from babel.messages.checkers import python_format

from data_pipeline.placeholders import MAX_TOKENS, TOKENS, find, protect, protect_target, restore

# Entries of the pinned wheels' pt_BR catalogs (data_pipeline/catalogs.txt), as written there:
# (package, flag, msgid, msgstr).
KEPT = [
    ("django", "python-format", "Successfully deleted %(count)d %(items)s.",
     "Removido %(count)d %(items)s com sucesso."),
    ("sphinx", "python-format", "'%s' must be '0' or '1', got '%s'",
     "'%s' deve ser '0' ou '1', obteve '%s'"),
    ("sphinx", "python-format", "Total time reading %d file%s: %dm %.3fs",
     "Tempo total da leitura de %d arquivo%s: %dm %.3fs"),
    ("django", "python-format", "Slug %r isn’t registered.", "O Slug %r não está registrado."),
    ("sphinx", "python-format", "apidoc_modules item %i must be a dict",
     "item apidoc_modules %i deve ser um dict"),
    ("weblate", "python-format",
     "Overall, these translations are <strong>%(percent)s%% complete</strong>.",
     "No geral, estas traduções estão <strong>%(percent)s%% concluídas</strong>."),
    ("weblate", "python-format", "Translate %(object)s using %%23Weblate at %(share_url)s!",
     "Traduzir %(object)s usando %%23Weblate em %(share_url)s!"),
    ("django-oscar", "python-format", "%(value)s%% discount on %(range)s",
     "%(value)s%% de desconto em %(range)s"),
    ("pretalx", "python-format", "%(percentage)s %% translated", "%(percentage)s %% traduzido"),
    ("django", "python-format",
     "The admin documentation system requires Python’s <a href=\"%(link)s\">docutils</a> library.",
     "O sistema de documentação de administração exige a biblioteca <a href=\"%(link)s\">docutils"
     "</a> do Python."),
    ("django", "python-brace-format", "Changed {fields} for {name} “{object}”.",
     "Alterado {fields} para {name} “{object}”."),
    ("sphinx", "python-brace-format",
     "inconsistent references in translated message. original: {0}, translated: {1}",
     "referências inconsistentes na mensagem traduzida. original: {0}, traduzida: {1}"),
    ("ckan", "python-brace-format",
     "Viewing datasets of type \"{package_type}\" is not supported ({file_!r}).",
     "Visualizações de conjuntos de dados do tipo \"{package_type}\" não são suportadas ({file_!r})."),
    ("mailman", "python-brace-format", "${person} left ${mlist.fqdn_listname}",
     "${person} deixou ${mlist.fqdn_listname}"),
    ("django", "", "Select this object for an action - {}", "Selecione esse objeto para uma ação - {}"),
    ("indico", "", "The ID of the contribution (optionally padded with zeros, e.g. {id:2} for \"01\" "
     "or {id} for \"1\")", "O ID da contribuição (opcionalmente preenchido com zeros, por exemplo, "
     "{id:2} para \"01\" ou {id} para \"1\")"),
    ("indico", "", "Invalid URI: {}.<br>It must use http or https and may not contain a query string.",
     "URI Inválida: {}. <br>Deve usar http ou https e não pode conter uma string de consulta."),
    ("indico", "", "{link}Click here to refresh{/link} and see the most recent version.",
     "{link}Clique aqui para atualizar{/link} e veja a versão mais recente."),
    ("plone.app.locales", "", "${title} has been reverted to revision ${version}.",
     "${title} foi revertido para a revisão ${version}."),
]
DROPPED = [  # Babel refuses all but the last, which lost its tags (Babel does not look at tags)
    ("apache-superset", "python-format", "%(label)s file", "%(type)s do Arquivo"),
    ("apache-superset", "python-format", "Error: %s", "Erro: %(msg)s"),
    ("apache-superset", "python-format", "Edit %s in modal", "no modal"),
    ("apache-superset", "python-format", "is linked to %s charts that appear on %s dashboards. Are "
     "you sure you want to continue? Deleting the dataset will break those objects.",
     "O conjunto de dados %s é ligado aos %s gráficos que aparecerem em %s painéis. Tem certeza que "
     "você deseja continuar? A eliminação do conjunto de dados irá quebrar esses objetos."),
    ("", "python-format", "%(value)s%% discount", "%(value)s% de desconto"),  # "% d": a directive
    ("wagtail", "python-format", "Started at <b>%(started_at)s</b>", "Iniciado em %(started_at)s"),
]
PROSE = [  # no placeholder: a percent sign before a space, braces doubled
    ("plone.app.locales", "python-format",
     "This option gives you the ability to specify the width of the editor (like 100% or 400px).",
     "Esta opção permite a seleção da largura do editor (como 100% ou 400px)."),
    ("apache-superset", "", "Templated link, it's possible to include {{ metric }} or other values.",
     "Link do modelo, é possível incluir {{ métrica }} ou outros valores."),
    ("", "", "50 % off, {{ and }}, 100 %", "50 % de desconto, {{ e }}, 100 %"),
]
TEXTS = [text for _, _, *pair in KEPT + DROPPED + PROSE for text in pair]


def babel_placeholders(text):
    """The directives Babel's python-format checker reads, "%%" included: it pairs percent signs
    ("%%%" is "%%" and a lone one), though it leaves "%%" out of the comparison."""
    return [match[0] for match in PYTHON_FORMAT.finditer(text)]


def brace_fields(text):
    """The replacement fields Python's str.format sees, each "{name!conversion:spec}"."""
    return ["{%s%s%s}" % (name, "!" + conversion if conversion else "", ":" + spec if spec else "")
            for _, name, spec, conversion in string.Formatter().parse(text) if name is not None]


@pytest.mark.parametrize("text", TEXTS)
def test_protect_then_restore_is_the_identity(text):
    protected, originals = protect(text)
    assert restore(protected, originals) == text
    assert find(protected) == TOKENS[:len(originals)]  # in source order, nothing else left
    assert originals == find(text)


def test_what_babel_and_str_format_take_for_placeholders_is_inside_the_protected_ones():
    for _, flag, *pair in KEPT + DROPPED + PROSE:
        for text in pair:
            protected, originals = protect(text)
            inside = [found for original in originals for found in babel_placeholders(original)]
            # A percent sign before a space is prose here; Babel takes "% o" in "100% or" for one.
            assert babel_placeholders(text) == inside + [
                found for found in babel_placeholders(protected) if found[1] == " "]
            if flag == "python-brace-format":  # ${name} is a {name} to str.format
                inside = [found for original in originals for found in brace_fields(original)]
                assert brace_fields(text) == inside and not brace_fields(protected)
    assert babel_placeholders(PROSE[0][2]) == ["% o"] and not find(PROSE[0][2])


@pytest.mark.parametrize("package, flag, source, target", KEPT)
def test_a_kept_pair_has_the_same_tokens_and_passes_babels_checker(package, flag, source, target):
    protected, originals = protect(source)
    protected_target = protect_target(target, originals)
    assert sorted(find(protected_target)) == sorted(find(protected))
    # What a model would write, its tokens moved: Babel accepts the restored text.
    words = protected_target.split()
    translation = restore(" ".join(words[1:] + words[:1]) if "%(" in source else protected_target,
                          originals)
    python_format(None, Message(source, translation, flags=["python-format"]))
    assert restore(protected_target, originals) == target


@pytest.mark.parametrize("package, flag, source, target", DROPPED)
def test_a_pair_without_exactly_the_sources_placeholders_is_dropped(package, flag, source, target):
    assert protect_target(target, protect(source)[1]) is None
    if "<b>" not in source:
        with pytest.raises(TranslationError):
            python_format(None, Message(source, target, flags=["python-format"]))


def test_a_doubled_percent_sign_is_a_token_so_keep_writes_it_once():
    # With "%%" as text, the lab model filling Weblate's catalog wrote "%(percent)s%%%", which
    # Babel and msgfmt refuse ("%%" and a lone "% d"); keep writes each token exactly once.
    source = KEPT[5][2]
    protected, originals = protect(source)
    assert protected == "Overall, these translations are ｟0｠｟1｠｟2｠ complete｟3｠."
    translation = restore("No geral, estas traduções são ｟0｠｟1｠｟2｠ dentro da todo｟3｠.", originals)
    python_format(None, Message(source, translation, flags=["python-format"]))
    assert translation.count("%") == source.count("%")


def test_targets_take_the_token_of_the_same_placeholder():
    originals = protect("%(a)s sent %s to %(b)s and %s, <b>%(a)s</b>")[1]
    assert protect_target("%s e %s, de %(b)s e %(a)s <b>%(a)s</b>", originals) == \
        "｟1｠ e ｟3｠, de ｟2｠ e ｟0｠ ｟4｠｟5｠｟6｠"
    assert protect_target("%d de %s", protect("%s of %d")[1]) is None  # positional: in order
    assert protect_target("%(a)s %(a)s", protect("%(a)s")[1]) is None  # a multiset
    assert protect_target("%(a)s", protect("%(a)s %(a)s")[1]) is None


def test_restore_repeats_a_repeated_token_and_drops_an_invented_one():
    assert restore("｟0｠ e ｟0｠", ["%(name)s"]) == "%(name)s e %(name)s"
    assert restore("Abrir ｟0｠ ｟3｠ agora ｟1｠", ["%s", "{}"]) == "Abrir %s agora {}"
    assert restore("｟7｠ Abrir｟7｠ ｟7｠.", []) == "Abrir."


def test_more_placeholders_than_tokens_stay_text_and_tokens_typed_in_stay_themselves():
    text = " ".join("%%(n%d)s" % index for index in range(MAX_TOKENS + 2))
    protected, originals = protect(text)
    assert protected.split() == TOKENS + ["%(n16)s", "%(n17)s"] and len(originals) == MAX_TOKENS
    assert protect("a ｟3｠ %s", limit=1) == ("a ｟0｠ %s", ["｟3｠"])
    assert protect("Save %s", limit=0) == ("Save %s", [])
