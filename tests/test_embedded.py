"""The embedded corpus: determinism, disjoint splits, families, agreement."""

import re

import pytest

from data_pipeline import embedded
from data_pipeline.embedded import lexicon, portuguese
from data_pipeline.embedded.families import Family
from data_pipeline.embedded.spelling import spell_cardinal, spell_ordinal

ALL_FAMILIES = {"dates", "numbers", "money_in_figures", "times",
                "noun_phrases", "ordinals", "weekdays", "money_in_words"}


@pytest.fixture(scope="module")
def corpus():
    return embedded.generate(4000, 200, 200, seed=5, target_locale="pt_BR")


def test_same_seed_same_corpus_other_seed_other_corpus():
    first = embedded.generate(300, 20, 20, seed=7, target_locale="pt_BR")
    assert first == embedded.generate(300, 20, 20, seed=7, target_locale="pt_BR")
    other = embedded.generate(300, 20, 20, seed=8, target_locale="pt_BR")
    assert set(first.train) != set(other.train)


def test_splits_have_the_requested_sizes_and_share_no_source(corpus):
    assert [len(split) for split in corpus] == [4000, 200, 200]
    train, dev, test = ({example.source for example in split} for split in corpus)
    assert len(train) == 4000 and len(dev) == 200 and len(test) == 200
    assert not train & dev and not train & test and not dev & test


def test_every_family_is_present_in_every_split(corpus):
    for split in corpus:
        assert {example.family for example in split} == ALL_FAMILIES


def test_test_words_are_all_seen_in_training(corpus):
    """Test sentences are new combinations of known parts, not new words.

    Figures are left out (SentencePiece splits them into digits) and case is
    ignored (a sentence's first word is capitalised like its source's).
    """
    def words(examples):
        return {word for example in examples
                for word in re.findall(r"[^\W\d_]+", example.target.lower())}
    unseen = words(corpus.test) - words(corpus.train)
    assert not unseen


def test_other_locales_get_the_generic_families():
    corpus = embedded.generate(200, 10, 10, seed=1, target_locale="es")
    assert {example.family for example in corpus.train} == {"dates", "numbers", "money_in_figures", "times"}
    assert embedded.missing_families("es") == ["noun_phrases", "ordinals", "weekdays", "money_in_words"]
    assert embedded.missing_families("pt_PT") == []


@pytest.mark.parametrize("locale, problem", [("xx_YY", "not a CLDR locale"),
                                             ("zh", "num2words cannot spell")])
def test_unknown_locale(locale, problem):
    with pytest.raises(ValueError, match=problem):
        embedded.generate(10, 1, 1, seed=1, target_locale=locale)


def test_more_pairs_than_the_families_can_make(monkeypatch):
    three_sources = Family("three", 1, lambda rng, locale: (str(rng.randrange(3)), "x"))
    monkeypatch.setattr(embedded, "families_for", lambda locale: (three_sources,))
    with pytest.raises(ValueError, match="only 3 distinct sentences .* 5 requested"):
        embedded.generate(3, 1, 1, seed=1, target_locale="pt_BR")


def test_a_source_with_two_translations_is_a_bug(monkeypatch):
    ambiguous = Family("ambiguous", 1, lambda rng, locale: ("same", str(rng.random())))
    monkeypatch.setattr(embedded, "families_for", lambda locale: (ambiguous,))
    with pytest.raises(RuntimeError, match="translates 'same' both as"):
        embedded.generate(2, 0, 0, seed=1, target_locale="pt_BR")


def test_numbers_in_words():
    assert spell_cardinal(123, "en") == "one hundred twenty-three"
    assert spell_cardinal(123, "pt_BR") == "cento e vinte e três"
    assert spell_cardinal(1234, "en") == "one thousand two hundred thirty-four"
    assert spell_cardinal(1234, "pt_BR") == "mil duzentos e trinta e quatro"
    assert spell_ordinal(21, "en") == "twenty-first"


def test_portuguese_numbers_agree_in_gender():
    assert portuguese.cardinal(2, "m", "pt_BR") == "dois"
    assert portuguese.cardinal(2, "f", "pt_BR") == "duas"
    assert portuguese.cardinal(221, "f", "pt_BR") == "duzentas e vinte e uma"
    assert portuguese.cardinal(101, "f", "pt_BR") == "cento e uma"
    assert portuguese.cardinal(21000, "f", "pt_BR") == "vinte e uma mil"
    assert portuguese.ordinal(3, "f", "pt_BR") == "terceira"
    assert portuguese.ordinal(21, "f", "pt_BR") == "vigésima primeira"
    assert portuguese.ordinal(21, "m", "pt_BR") == "vigésimo primeiro"
    with pytest.raises(ValueError, match="1000000"):
        portuguese.cardinal(2_000_000, "f", "pt_BR")


def test_portuguese_contractions_and_weekdays():
    assert portuguese.with_preposition("de", "os dois carros") == "dos dois carros"
    assert portuguese.with_preposition("de", "esta casa") == "desta casa"
    assert portuguese.with_preposition("de", "dois carros") == "de dois carros"
    assert portuguese.with_preposition("", "a casa") == "a casa"
    assert portuguese.weekday_plural("segunda-feira") == "segundas-feiras"
    assert portuguese.weekday_gender(5) == "m" and portuguese.weekday_gender(0) == "f"
    assert portuguese.at_time(1) == "à" and portuguese.at_time(15) == "às"
    assert portuguese.currency_name("USD", 2, "pt_BR") == "dólares americanos"


def test_the_first_of_a_month_is_an_ordinal_in_brazil_only():
    assert portuguese.first_of_month("sexta-feira, 1 de janeiro de 2021", "pt_BR") == \
        "sexta-feira, 1º de janeiro de 2021"
    assert portuguese.first_of_month("1 de maio", "pt") == "1º de maio"
    assert portuguese.first_of_month("1 de maio", "pt_PT") == "1 de maio"
    assert portuguese.first_of_month("1 de mayo", "es") == "1 de mayo"
    assert portuguese.first_of_month("maio de 2001", "pt_BR") == "maio de 2001"


def test_dates_keep_day_and_year_and_translate_the_month(corpus):
    english_months = ["January", "February", "March", "April", "May", "June", "July",
                      "August", "September", "October", "November", "December"]
    portuguese_months = ["janeiro", "fevereiro", "março", "abril", "maio", "junho", "julho",
                         "agosto", "setembro", "outubro", "novembro", "dezembro"]
    checked = 0
    for example in corpus.train:
        match = re.fullmatch(r"(\w+) (\d+), (\d{4})", example.source)
        if match:
            month = portuguese_months[english_months.index(match.group(1))]
            day = "1º" if match.group(2) == "1" else match.group(2)  # Brazil: "1º de maio"
            assert example.target == "%s de %s de %s" % (day, month, match.group(3))
            checked += 1
    assert checked > 50


def test_times_become_24_hour_clock(corpus):
    checked = 0
    for example in corpus.train:
        match = re.fullmatch(r"(\d+):(\d\d) (AM|PM)", example.source)
        if match:
            hour = int(match.group(1)) % 12 + (12 if match.group(3) == "PM" else 0)
            assert example.target == "%02d:%s" % (hour, match.group(2))
            checked += 1
    assert checked > 20


def test_amounts_in_figures_swap_the_separators(corpus):
    checked = 0
    for example in corpus.train:
        if example.family == "money_in_figures":
            english_figures = re.sub(r"[^\d.,]", "", example.source)
            target_figures = re.sub(r"[^\d.,]", "", example.target)
            assert target_figures == english_figures.translate(str.maketrans(",.", ".,"))
            checked += 1
    assert checked > 20


def test_adjectives_agree_with_their_nouns(corpus):
    expected = {}  # English "red cars" -> Portuguese "carros vermelhos"
    for noun in lexicon.NOUNS:
        for adjective in lexicon.ADJECTIVES:
            for plural in (False, True):
                english = "%s %s" % (adjective.english, noun.english_plural if plural else noun.english)
                expected[english] = "%s %s" % (noun.plural if plural else noun.singular,
                                               portuguese.adjective(adjective, noun.gender, plural))
    checked = 0
    for example in corpus.train:
        if example.family in ("noun_phrases", "ordinals"):
            words = re.findall(r"\w+", example.source.lower())
            for bigram in map(" ".join, zip(words, words[1:])):
                if bigram in expected:
                    assert expected[bigram] in example.target, example
                    checked += 1
    assert checked > 500
