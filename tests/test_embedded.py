"""The embedded corpus: determinism, disjoint splits, families, agreement."""

import collections
import re

import pytest

from data_pipeline import embedded, lexicon
from data_pipeline.embedded import Family
from data_pipeline.lexicon import spell_cardinal, spell_ordinal, with_indefinite_article

HELD_OUT_FAMILIES = {"dates", "numbers", "money_in_figures", "times",
                     "noun_phrases", "ordinals", "weekdays", "money_in_words"}
ALL_FAMILIES = HELD_OUT_FAMILIES | {"names"}  # names: a closed set, in train only


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
    for key in ("source", "canonical"):
        train, dev, test = ({getattr(example, key) for example in split} for split in corpus)
        assert len(dev) == 200 and len(test) == 200
        assert not train & dev and not train & test and not dev & test
    # Held-out families appear once per canonical sentence; closed ones repeat in train.
    held_out = [example.canonical for example in corpus.train if example.family != "names"]
    assert len(held_out) == len(set(held_out))
    names = collections.Counter(example.canonical for example in corpus.train if example.family == "names")
    assert names["Monday"] > 1 and names["May"] > 1


def test_every_family_is_present_in_every_split(corpus):
    assert {example.family for example in corpus.train} == ALL_FAMILIES
    for split in corpus[1:]:
        assert {example.family for example in split} == HELD_OUT_FAMILIES


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
    assert {example.family for example in corpus.train} == {"names", "dates", "numbers", "money_in_figures",
                                                            "times"}
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
    assert lexicon.cardinal(2, "m", "pt_BR") == "dois"
    assert lexicon.cardinal(2, "f", "pt_BR") == "duas"
    assert lexicon.cardinal(221, "f", "pt_BR") == "duzentas e vinte e uma"
    assert lexicon.cardinal(101, "f", "pt_BR") == "cento e uma"
    assert lexicon.cardinal(21000, "f", "pt_BR") == "vinte e uma mil"
    assert lexicon.ordinal(3, "f", "pt_BR") == "terceira"
    assert lexicon.ordinal(21, "f", "pt_BR") == "vigésima primeira"
    assert lexicon.ordinal(21, "m", "pt_BR") == "vigésimo primeiro"
    with pytest.raises(ValueError, match="1000000"):
        lexicon.cardinal(2_000_000, "f", "pt_BR")


def test_portuguese_contractions_and_weekdays():
    assert lexicon.with_preposition("de", "os dois carros") == "dos dois carros"
    assert lexicon.with_preposition("de", "esta casa") == "desta casa"
    assert lexicon.with_preposition("de", "dois carros") == "de dois carros"
    assert lexicon.with_preposition("", "a casa") == "a casa"
    assert lexicon.at_time(1) == "à" and lexicon.at_time(15) == "às"
    # Weekday plurals and genders, currency names: test_weekdays_match_the_hand_translation,
    # test_money_in_words_matches_the_hand_translation.


def test_the_first_of_a_month_is_an_ordinal_in_brazil_only():
    assert lexicon.first_of_month("sexta-feira, 1 de janeiro de 2021", "pt_BR") == \
        "sexta-feira, 1º de janeiro de 2021"
    assert lexicon.first_of_month("1 de maio", "pt") == "1º de maio"
    assert lexicon.first_of_month("1 de maio", "pt_PT") == "1 de maio"
    assert lexicon.first_of_month("1 de mayo", "es") == "1 de mayo"
    assert lexicon.first_of_month("maio de 2001", "pt_BR") == "maio de 2001"


def test_dates_keep_day_and_year_and_translate_the_month(corpus):
    english_months = ["January", "February", "March", "April", "May", "June", "July",
                      "August", "September", "October", "November", "December"]
    portuguese_months = ["janeiro", "fevereiro", "março", "abril", "maio", "junho", "julho",
                         "agosto", "setembro", "outubro", "novembro", "dezembro"]
    checked = 0
    for example in corpus.train:
        match = re.fullmatch(r"(\w+) (\d+), (\d{4})", example.canonical)
        if match:
            month = portuguese_months[english_months.index(match.group(1))]
            day = "1º" if match.group(2) == "1" else match.group(2)  # Brazil: "1º de maio"
            assert example.target == "%s de %s de %s" % (day, month, match.group(3))
            checked += 1
    assert checked > 20  # one of nine date forms; test_new_forms_match_the_hand_translation checks all


def test_times_become_24_hour_clock(corpus):
    checked = 0
    for example in corpus.train:
        match = re.fullmatch(r"(\d+):(\d\d) (AM|PM)", example.canonical)
        if match:
            hour = int(match.group(1)) % 12 + (12 if match.group(3) == "PM" else 0)
            assert example.target == "%02d:%s" % (hour, match.group(2))
            checked += 1
    assert checked > 20


def test_amounts_in_figures_swap_the_separators(corpus):
    checked = 0
    for example in corpus.train:
        if example.family == "money_in_figures":
            # "$1,234.50" or "$1234.50" -> "US$ 1.234,50"; "$5" -> "US$ 5".
            english_figures = re.sub(r"[^\d.]", "", example.canonical).rstrip(".")
            target_figures = re.sub(r"[^\d.,]", "", example.target).rstrip(".")
            units, _, cents = english_figures.partition(".")
            grouped = "{:,}".format(int(units)).replace(",", ".") + ("," + cents if cents else "")
            assert target_figures == grouped, example
            checked += 1
    assert checked > 20


# ---------------------------------------------------------------------------
# Translations checked against hand-written Brazilian Portuguese.
#
# The tables and rules below are written independently of lexicon.py (and of
# num2words for Portuguese): a wrong lexicon form, a gender swap or a wrong
# agreement rule in the generator makes the generated target differ from them.

# English noun: (English plural, Portuguese singular, Portuguese plural, gender).
PT_NOUNS = {
    "car": ("cars", "carro", "carros", "m"),
    "house": ("houses", "casa", "casas", "f"),
    "book": ("books", "livro", "livros", "m"),
    "door": ("doors", "porta", "portas", "f"),
    "table": ("tables", "mesa", "mesas", "f"),
    "chair": ("chairs", "cadeira", "cadeiras", "f"),
    "window": ("windows", "janela", "janelas", "f"),
    "cat": ("cats", "gato", "gatos", "m"),
    "horse": ("horses", "cavalo", "cavalos", "m"),
    "flower": ("flowers", "flor", "flores", "f"),
    "letter": ("letters", "carta", "cartas", "f"),
    "shirt": ("shirts", "camisa", "camisas", "f"),
    "hat": ("hats", "chapéu", "chapéus", "m"),
    "box": ("boxes", "caixa", "caixas", "f"),
    "key": ("keys", "chave", "chaves", "f"),
    "pen": ("pens", "caneta", "canetas", "f"),
    "ball": ("balls", "bola", "bolas", "f"),
    "glass": ("glasses", "copo", "copos", "m"),
    "bottle": ("bottles", "garrafa", "garrafas", "f"),
    "boat": ("boats", "barco", "barcos", "m"),
    "bicycle": ("bicycles", "bicicleta", "bicicletas", "f"),
    "phone": ("phones", "telefone", "telefones", "m"),
    "tree": ("trees", "árvore", "árvores", "f"),
    "apple": ("apples", "maçã", "maçãs", "f"),
    "pencil": ("pencils", "lápis", "lápis", "m"),  # invariable in number
    "bed": ("beds", "cama", "camas", "f"),
    "shoe": ("shoes", "sapato", "sapatos", "m"),
    "clock": ("clocks", "relógio", "relógios", "m"),
    "plate": ("plates", "prato", "pratos", "m"),
    "bag": ("bags", "bolsa", "bolsas", "f"),
}
PT_NOUNS_BY_PLURAL = {entry[0]: noun for noun, entry in PT_NOUNS.items()}

# English adjective: (masculine, feminine, masculine plural, feminine plural).
PT_ADJECTIVES = {
    "red": ("vermelho", "vermelha", "vermelhos", "vermelhas"),
    "white": ("branco", "branca", "brancos", "brancas"),
    "black": ("preto", "preta", "pretos", "pretas"),
    "yellow": ("amarelo", "amarela", "amarelos", "amarelas"),
    "blue": ("azul", "azul", "azuis", "azuis"),  # -l: plural -is, one form per number
    "green": ("verde", "verde", "verdes", "verdes"),
    "big": ("grande", "grande", "grandes", "grandes"),
    "small": ("pequeno", "pequena", "pequenos", "pequenas"),
    "new": ("novo", "nova", "novos", "novas"),
    "old": ("velho", "velha", "velhos", "velhas"),
    "beautiful": ("bonito", "bonita", "bonitos", "bonitas"),
    "cheap": ("barato", "barata", "baratos", "baratas"),
    "expensive": ("caro", "cara", "caros", "caras"),
    "empty": ("vazio", "vazia", "vazios", "vazias"),
    "heavy": ("pesado", "pesada", "pesados", "pesadas"),
    "clean": ("limpo", "limpa", "limpos", "limpas"),
}

# English determiner: (masculine, feminine, masculine plural, feminine plural);
# None where the English word has no such number. "that"/"those" are the
# Brazilian esse/essa (aquele is also correct, but the corpus needs one choice).
PT_DETERMINERS = {
    "the": ("o", "a", "os", "as"),
    "a": ("um", "uma", None, None),
    "an": ("um", "uma", None, None),
    "this": ("este", "esta", None, None),
    "that": ("esse", "essa", None, None),
    "these": (None, None, "estes", "estas"),
    "those": (None, None, "esses", "essas"),
    "some": (None, None, "alguns", "algumas"),
}
# "de" contracts with the definite article and the demonstratives; written
# Brazilian Portuguese keeps "de um", "de alguns", "de dois" apart.
PT_DE_CONTRACTIONS = {
    "o": "do", "a": "da", "os": "dos", "as": "das",
    "este": "deste", "esta": "desta", "estes": "destes", "estas": "destas",
    "esse": "desse", "essa": "dessa", "esses": "desses", "essas": "dessas",
}
# The words that can follow "a"/"an" and begin with a vowel sound. Every other
# noun and adjective above begins with a consonant sound, including "house",
# "horse", "hat", "heavy" (pronounced h) and "yellow" (/j/).
VOWEL_SOUND_WORDS = {"apple", "old", "expensive", "empty"}

EN_NUMBER_WORDS = dict(
    [(word, value) for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen "
        "fourteen fifteen sixteen seventeen eighteen nineteen".split())]
    + [(word, 10 * value) for value, word in enumerate(
        "twenty thirty forty fifty sixty seventy eighty ninety".split(), start=2)])
EN_ORDINAL_WORDS = dict(
    [(word, value) for value, word in enumerate(
        "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth "
        "thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth".split(),
        start=1)]
    + [(word, 10 * value) for value, word in enumerate(
        "twentieth thirtieth fortieth fiftieth sixtieth seventieth eightieth ninetieth".split(),
        start=2)])

PT_UNITS = "zero um dois três quatro cinco seis sete oito nove dez onze doze treze catorze " \
           "quinze dezesseis dezessete dezoito dezenove".split()  # VOLP has catorze and quatorze
PT_UNITS_FEMININE = ["zero", "uma", "duas"] + PT_UNITS[3:]
PT_TENS = [None, None] + "vinte trinta quarenta cinquenta sessenta setenta oitenta noventa".split()
PT_HUNDREDS = [None] + "cento duzentos trezentos quatrocentos quinhentos seiscentos setecentos " \
                       "oitocentos novecentos".split()
PT_HUNDREDS_FEMININE = [None] + "cento duzentas trezentas quatrocentas quinhentas seiscentas " \
                                "setecentas oitocentas novecentas".split()
PT_ORDINAL_UNITS = [None] + [tuple(pair.split("/")) for pair in (
    "primeiro/primeira segundo/segunda terceiro/terceira quarto/quarta quinto/quinta "
    "sexto/sexta sétimo/sétima oitavo/oitava nono/nona").split()]
PT_ORDINAL_TENS = [None] + [tuple(pair.split("/")) for pair in (
    "décimo/décima vigésimo/vigésima trigésimo/trigésima quadragésimo/quadragésima "
    "quinquagésimo/quinquagésima sexagésimo/sexagésima septuagésimo/septuagésima "
    "octogésimo/octogésima nonagésimo/nonagésima").split()]


def english_number(text):
    """ "three hundred twenty-one" -> 321 (US English, no "and", below a million)."""
    if text.isdigit():
        return int(text)
    total = current = 0
    for word in text.split():
        if word == "and":
            continue
        if word == "hundred":
            current *= 100
        elif word == "thousand":
            total, current = total + current * 1000, 0
        else:
            current += sum(EN_NUMBER_WORDS[part] for part in word.split("-"))
    return total + current


def english_ordinal(text):
    """ "twenty-first" -> 21, "one hundredth" -> 100."""
    if text == "one hundredth":
        return 100
    tens, _, unit = text.rpartition("-")
    return (EN_NUMBER_WORDS[tens] if tens else 0) + EN_ORDINAL_WORDS[unit]


def pt_cardinal(number, gender="m"):
    """A number in [1, 1000000) in Brazilian Portuguese, agreeing with a noun of `gender`.

    The parts of a group are joined by "e" ("cento e vinte e uma"); after "mil"
    an "e" comes only before a last group below 100 or a round hundred ("mil e
    vinte", "mil e cem", but "mil cento e vinte"). The multiplier of "mil"
    agrees with the noun too ("duzentas mil casas", "vinte e uma mil casas").
    """
    thousands, rest = divmod(number, 1000)
    words = []
    if thousands:
        words += ["mil"] if thousands == 1 else [_pt_below_1000(thousands, gender), "mil"]
    if rest:
        if thousands and (rest < 100 or rest % 100 == 0):
            words.append("e")
        words.append(_pt_below_1000(rest, gender))
    return " ".join(words)


def _pt_below_1000(number, gender):
    if number == 100:
        return "cem"
    hundreds, rest = divmod(number, 100)
    parts = [(PT_HUNDREDS_FEMININE if gender == "f" else PT_HUNDREDS)[hundreds]] if hundreds else []
    units = PT_UNITS_FEMININE if gender == "f" else PT_UNITS
    if rest >= 20:
        parts.append(PT_TENS[rest // 10])
        rest %= 10
    if rest:
        parts.append(units[rest])
    return " e ".join(parts)


def pt_ordinal(number, gender):
    """An ordinal in [1, 100] agreeing with its noun: 21, "f" -> "vigésima primeira"."""
    index = 1 if gender == "f" else 0
    if number == 100:
        return ("centésimo", "centésima")[index]
    tens, unit = divmod(number, 10)
    return " ".join(table[n][index] for table, n in ((PT_ORDINAL_TENS, tens), (PT_ORDINAL_UNITS, unit)) if n)


def pt_with_de(phrase):
    first, _, rest = phrase.partition(" ")
    if first in PT_DE_CONTRACTIONS:
        return PT_DE_CONTRACTIONS[first] + (" " + rest if rest else "")
    return "de " + phrase


def translate_noun_phrase(english):
    """Hand translation of an English noun phrase: (Portuguese, gender, plural).

    Raises AssertionError or KeyError for a phrase that is not well formed
    English (wrong "a"/"an", a number with a singular noun, "these car").
    """
    words = english.split()
    noun = words.pop()
    plural = noun in PT_NOUNS_BY_PLURAL
    _, singular, plural_form, gender = PT_NOUNS[PT_NOUNS_BY_PLURAL.get(noun, noun)]
    adjective = words.pop() if words and words[-1] in PT_ADJECTIVES else None
    determiner = words.pop(0) if words and words[0] in PT_DETERMINERS else None
    modifier = None
    if words and determiner == "the" and not plural:
        modifier = pt_ordinal(english_ordinal(" ".join(words)), gender)
    elif words:
        count = english_number(" ".join(words))
        assert count >= 2 and plural, "a count needs a plural noun"
        modifier = words[0] if words[0].isdigit() else pt_cardinal(count, gender)
    else:
        assert determiner, "a bare plural is not generated"
    if determiner in ("a", "an"):
        next_word = english.split()[1]
        assert determiner == ("an" if next_word in VOWEL_SOUND_WORDS else "a"), "a/an"
    index = (2 if plural else 0) + (1 if gender == "f" else 0)
    portuguese_words = []
    if determiner:
        assert PT_DETERMINERS[determiner][index] is not None, "determiner and noun disagree in number"
        portuguese_words.append(PT_DETERMINERS[determiner][index])
    portuguese_words += [modifier] if modifier else []
    portuguese_words.append(plural_form if plural else singular)
    portuguese_words += [PT_ADJECTIVES[adjective][index]] if adjective else []
    return " ".join(portuguese_words), gender, plural


# (English frame, Portuguese frame, plural or None when the frame fits both).
# "{0}" is the noun phrase, "{1}" a predicate adjective.
NOUN_PHRASE_FRAMES = [
    ("I see {0}.", "Eu vejo {0}.", None),
    ("I bought {0}.", "Eu comprei {0}.", None),
    ("We need {0}.", "Nós precisamos {0}.", None),  # precisar de: "{0}" gets "de"
    ("{0} is here.", "{0} está aqui.", False),
    ("{0} are here.", "{0} estão aqui.", True),
    ("Where is {0}?", "Onde está {0}?", False),
    ("Where are {0}?", "Onde estão {0}?", True),
    ("{0} is {1}.", "{0} é {1}.", False),
    ("{0} are {1}.", "{0} são {1}.", True),
]


def _frame_pattern(english_frame):
    return re.escape(english_frame).replace(r"\{0\}", "(.+)").replace(r"\{1\}", r"(\w+)")


def translate_noun_phrase_sentence(english):
    """Hand translation of a noun_phrases or ordinals source, bare or in a frame."""
    for english_frame, portuguese_frame, frame_plural in NOUN_PHRASE_FRAMES:
        match = re.fullmatch(_frame_pattern(english_frame), english)
        if match:
            break
    else:
        return translate_noun_phrase(english)[0]
    phrase = match.group(1)
    if english_frame.startswith("{0}"):
        phrase = phrase[:1].lower() + phrase[1:]
    portuguese, gender, plural = translate_noun_phrase(phrase)
    assert frame_plural in (None, plural), "the verb disagrees with the noun phrase"
    if english_frame.startswith("We need"):
        portuguese = pt_with_de(portuguese)
    predicate = None
    if "{1}" in english_frame:
        predicate = PT_ADJECTIVES[match.group(2)][(2 if plural else 0) + (1 if gender == "f" else 0)]
    sentence = portuguese_frame.format(portuguese, predicate)
    return sentence[:1].upper() + sentence[1:]


PT_DAYS = {  # English: (Portuguese, plural, gender); the "-feira" days are feminine
    "Monday": ("segunda-feira", "segundas-feiras", "f"),
    "Tuesday": ("terça-feira", "terças-feiras", "f"),
    "Wednesday": ("quarta-feira", "quartas-feiras", "f"),
    "Thursday": ("quinta-feira", "quintas-feiras", "f"),
    "Friday": ("sexta-feira", "sextas-feiras", "f"),
    "Saturday": ("sábado", "sábados", "m"),
    "Sunday": ("domingo", "domingos", "m"),
}
# English prefix -> (masculine, feminine, tenses it fits). "em" contracts with
# the article (no, na, nos/aos...); a habitual "on Mondays" is "às segundas-
# feiras", "aos sábados"; "passado" follows the day and agrees with it.
WEEKDAY_KINDS = {
    "on": ("no {}", "na {}", {"past", "future"}),
    "next": ("no próximo {}", "na próxima {}", {"future"}),
    "last": ("no {} passado", "na {} passada", {"past"}),
    "on-plural": ("aos {}", "às {}", {"habitual"}),
}
WHEN_FRAMES = {  # English: (Portuguese, tense)
    "It rained {}.": ("Choveu {}.", "past"),
    "We met {}.": ("Nós nos encontramos {}.", "past"),
    "The meeting is {}.": ("A reunião é {}.", "future"),
    "We will travel {}.": ("Nós vamos viajar {}.", "future"),
    "I work {}.": ("Eu trabalho {}.", "habitual"),
    "The store opens {}.": ("A loja abre {}.", "habitual"),
}
WEEKDAY_PHRASE = re.compile(r"(on|next|last) (%s)(s?)(?: at (\d{1,2}):(\d\d) (AM|PM))?" % "|".join(PT_DAYS))


def translate_weekday(english):
    """Hand translation of a weekdays source, bare or in a frame."""
    tense, portuguese_frame = None, "{}"
    for english_frame, (candidate, frame_tense) in WHEN_FRAMES.items():
        match = re.fullmatch(re.escape(english_frame).replace(r"\{\}", "(.+)"), english)
        if match:
            english, portuguese_frame, tense = match.group(1), candidate, frame_tense
            break
    prefix, day, plural_s, hour, minute, half = re.fullmatch(WEEKDAY_PHRASE, english).groups()
    singular, plural, gender = PT_DAYS[day]
    kind = "on-plural" if plural_s else prefix
    assert not plural_s or prefix == "on", "only 'on Mondays' is plural"
    masculine, feminine, tenses = WEEKDAY_KINDS[kind]
    assert tense is None or tense in tenses, "%r does not fit a %s sentence" % (kind, tense)
    portuguese = (feminine if gender == "f" else masculine).format(plural if plural_s else singular)
    if hour:
        hour = int(hour) % 12 + (12 if half == "PM" else 0)
        assert hour != 0, "'at 12:xx AM' would be 'à meia-noite e ...'"
        # "à uma (hora)", "às duas, às treze...": the article agrees with the hour.
        portuguese += " %s %02d:%s" % ("à" if hour == 1 else "às", hour, minute)
    return portuguese_frame.format(portuguese)


# English singular: (English plural, Portuguese singular, Portuguese plural,
# gender, English minor unit singular/plural or None). The minor unit is
# "centavo(s)" in Brazil, for every currency; it is masculine.
PT_CURRENCIES = {
    "US dollar": ("US dollars", "dólar americano", "dólares americanos", "m", ("cent", "cents")),
    "euro": ("euros", "euro", "euros", "m", ("cent", "cents")),
    "Brazilian real": ("Brazilian reals", "real brasileiro", "reais brasileiros", "m",
                       ("centavo", "centavos")),
    "British pound": ("British pounds", "libra esterlina", "libras esterlinas", "f", None),
    "Japanese yen": ("Japanese yen", "iene japonês", "ienes japoneses", "m", None),
}
PRICE_FRAMES = {"It costs {}.": "Custa {}.", "I paid {}.": "Eu paguei {}."}
MONEY_PHRASE = re.compile(r"([a-z -]+?|\d+) (%s)(?: and ([a-z -]+|\d+) (\w+))?" % "|".join(
    sorted({name for key, entry in PT_CURRENCIES.items() for name in (key, entry[0])}, key=len,
           reverse=True)))


def translate_money(english):
    """Hand translation of a money_in_words source, bare or in a frame."""
    portuguese_frame = "{}"
    for english_frame, candidate in PRICE_FRAMES.items():
        match = re.fullmatch(re.escape(english_frame).replace(r"\{\}", "(.+)"), english)
        if match:
            english, portuguese_frame = match.group(1), candidate
            break
    units_words, name, cents_words, minor = re.fullmatch(MONEY_PHRASE, english).groups()
    units = english_number(units_words)
    key = next(key for key, entry in PT_CURRENCIES.items() if name in (key, entry[0]))
    english_plural, singular, plural, gender, english_minor = PT_CURRENCIES[key]
    assert name == (key if units == 1 else english_plural), "English currency name in the wrong number"
    # Portuguese: singular for one, plural from two on ("vinte e um dólares").
    figures = units_words.isdigit()  # "5 euros" -> "5 euros"
    portuguese = "%s %s" % (units if figures else pt_cardinal(units, gender), singular if units == 1 else plural)
    if cents_words:
        cents = english_number(cents_words)
        assert english_minor and minor == english_minor[cents != 1], "English minor unit"
        portuguese += " e %s %s" % (cents if figures else pt_cardinal(cents, "m"),
                                    "centavo" if cents == 1 else "centavos")
    return portuguese_frame.format(portuguese)


def _mismatches(examples, translate):
    """[(source, generated target, hand translation or the parse error)]."""
    wrong = []
    for example in examples:
        try:
            expected = translate(example.canonical)
        except (AssertionError, KeyError, AttributeError, StopIteration, TypeError) as e:
            wrong.append((example.source, example.target, "%s: %s" % (type(e).__name__, e)))
            continue
        if expected != example.target:
            wrong.append((example.source, example.target, expected))
    return wrong


@pytest.fixture(scope="module")
def large_corpus():
    """20,000 generated pairs (about 2 s): every family with many combinations."""
    return embedded.generate(20000, 0, 0, seed=5, target_locale="pt_BR").train


def _family(examples, *names):
    return [example for example in examples if example.family in names]


def test_hand_written_tables_cover_the_lexicon_and_agree_with_it():
    """A new or changed lexicon word needs a hand-written translation here first."""
    for noun in lexicon.NOUNS:
        assert PT_NOUNS.get(noun.english) == (noun.english_plural, noun.singular, noun.plural,
                                              noun.gender), noun
    for adjective in lexicon.ADJECTIVES:
        assert PT_ADJECTIVES.get(adjective.english) == adjective[1:], adjective
    assert {currency.code for currency in lexicon.CURRENCIES} == {"USD", "EUR", "BRL", "GBP", "JPY"}


EXACT_TRANSLATIONS = [
    # Noun phrases: article, number and adjective agree with the noun.
    ("the two expensive pens", "as duas canetas caras"),
    ("Where are the three hundred ninety-two small apples?", "Onde estão as trezentas e noventa e duas maçãs pequenas?"),
    ("I see the two empty beds.", "Eu vejo as duas camas vazias."),
    ("I see the two white pencils.", "Eu vejo os dois lápis brancos."),
    ("We need two blue boats.", "Nós precisamos de dois barcos azuis."),
    ("We need three cheap flowers.", "Nós precisamos de três flores baratas."),
    ("We need the nine houses.", "Nós precisamos das nove casas."),
    ("We need the eight hundred four old bottles.", "Nós precisamos das oitocentas e quatro garrafas velhas."),
    ("Those three white clocks are here.", "Esses três relógios brancos estão aqui."),
    ("Those two hundred seventy-five heavy tables are red.",
     "Essas duzentas e setenta e cinco mesas pesadas são vermelhas."),
    ("Those windows are black.", "Essas janelas são pretas."),
    ("some old keys", "algumas chaves velhas"),
    ("I bought some cheap pencils.", "Eu comprei alguns lápis baratos."),
    ("these five hundred twenty-one hats", "estes quinhentos e vinte e um chapéus"),
    ("Those three hundred forty-one black balls are big.", "Essas trezentas e quarenta e uma bolas pretas são grandes."),
    ("We need these eight hundred two yellow shoes.", "Nós precisamos destes oitocentos e dois sapatos amarelos."),
    ("We need these seven hundred fifty-four blue houses.",
     "Nós precisamos destas setecentas e cinquenta e quatro casas azuis."),
    ("Where are the one hundred ten black beds?", "Onde estão as cento e dez camas pretas?"),
    ("This heavy table is clean.", "Esta mesa pesada é limpa."),
    ("We need that new glass.", "Nós precisamos desse copo novo."),
    ("We need 4 small boats.", "Nós precisamos de 4 barcos pequenos."),
    # "an" before a vowel sound; Portuguese "de um" stays apart.
    ("Where is an expensive pencil?", "Onde está um lápis caro?"),
    ("an expensive ball", "uma bola cara"),
    ("We need an old window.", "Nós precisamos de uma janela velha."),
    ("Where is a clean hat?", "Onde está um chapéu limpo?"),
    ("A blue bicycle is small.", "Uma bicicleta azul é pequena."),
    # Ordinals agree in gender, every word of them.
    ("the second clean cat", "o segundo gato limpo"),
    ("the third empty horse", "o terceiro cavalo vazio"),
    ("the twenty-first yellow shirt", "a vigésima primeira camisa amarela"),
    ("the twenty-first black pencil", "o vigésimo primeiro lápis preto"),
    ("We need the fifteenth house.", "Nós precisamos da décima quinta casa."),
    ("We need the thirty-eighth green bottle.", "Nós precisamos da trigésima oitava garrafa verde."),
    ("The ninety-fifth empty shoe is cheap.", "O nonagésimo quinto sapato vazio é barato."),
    ("the one hundredth white hat", "o centésimo chapéu branco"),
    # Weekdays: no/na, próximo/próxima, passado/passada, aos/às, à 1h / às 13h.
    ("on Mondays", "às segundas-feiras"),
    ("I work on Saturdays at 12:24 PM.", "Eu trabalho aos sábados às 12:24."),
    ("on Tuesdays at 11:39 PM", "às terças-feiras às 23:39"),
    ("next Saturday", "no próximo sábado"),
    ("next Sunday at 1:18 AM", "no próximo domingo à 01:18"),
    ("The meeting is next Wednesday at 1:56 AM.", "A reunião é na próxima quarta-feira à 01:56."),
    ("The meeting is on Monday at 1:20 AM.", "A reunião é na segunda-feira à 01:20."),
    ("on Saturday at 2:16 PM", "no sábado às 14:16"),
    ("last Monday", "na segunda-feira passada"),
    ("last Saturday", "no sábado passado"),
    ("We met last Sunday at 12:42 PM.", "Nós nos encontramos no domingo passado às 12:42."),
    # Money in words: currency gender and number, cent/centavo by number.
    ("one British pound", "uma libra esterlina"),
    ("two British pounds", "duas libras esterlinas"),
    ("ninety-one British pounds", "noventa e uma libras esterlinas"),
    ("seven thousand thirty-one British pounds", "sete mil e trinta e uma libras esterlinas"),
    ("It costs eight thousand three hundred thirty-two British pounds.",
     "Custa oito mil trezentas e trinta e duas libras esterlinas."),
    ("one US dollar", "um dólar americano"),
    ("nine euros and one cent", "nove euros e um centavo"),
    ("I paid seventy-one US dollars and forty-one cents.",
     "Eu paguei setenta e um dólares americanos e quarenta e um centavos."),
    ("I paid six Brazilian reals and ninety-five centavos.",
     "Eu paguei seis reais brasileiros e noventa e cinco centavos."),
    ("three thousand five hundred Japanese yen", "três mil e quinhentos ienes japoneses"),
]


@pytest.mark.parametrize("source, target", EXACT_TRANSLATIONS)
def test_exact_translations(large_corpus, source, target):
    by_source = {example.canonical: example.target for example in large_corpus}
    assert source in by_source, "the generator no longer produces %r: pick another pair" % source
    assert by_source[source] == target


def test_noun_phrases_and_ordinals_match_the_hand_translation(large_corpus):
    examples = _family(large_corpus, "noun_phrases", "ordinals")
    assert _mismatches(examples, translate_noun_phrase_sentence)[:10] == []
    assert len(examples) > 6000
    # Every determiner, both genders and both numbers were among them.
    first_words = {re.sub(r"[^\w ]", "", example.canonical).split()[0].lower() for example in examples}
    assert {"the", "a", "an", "this", "that", "these", "those", "some", "two"} <= first_words


def test_ordinals_cover_every_position_in_both_genders(large_corpus):
    seen = set()
    for example in _family(large_corpus, "ordinals"):
        words = re.findall(r"[\w-]+", example.canonical.lower())
        noun = next(index for index, word in enumerate(words) if word in PT_NOUNS)
        ordinal = [word for word in words[words.index("the") + 1:noun] if word not in PT_ADJECTIVES]
        seen.add((english_ordinal(" ".join(ordinal)), PT_NOUNS[words[noun]][3]))
    assert {position for position, _ in seen} == set(range(1, 101))
    assert {(1, "m"), (1, "f"), (21, "m"), (21, "f"), (100, "m"), (100, "f")} <= seen


def test_weekdays_match_the_hand_translation(large_corpus):
    examples = _family(large_corpus, "weekdays")
    assert _mismatches(examples, translate_weekday)[:10] == []
    assert len(examples) > 1000
    sources = " | ".join(example.canonical for example in examples)
    for day in PT_DAYS:
        for phrase in ("on %s" % day, "on %ss" % day, "next %s" % day, "last %s" % day):
            assert phrase in sources
    targets = " | ".join(example.target for example in examples)
    assert " à 01:" in targets and " às 13:" in targets


def test_money_in_words_matches_the_hand_translation(large_corpus):
    examples = _family(large_corpus, "money_in_words")
    assert _mismatches(examples, translate_money)[:10] == []
    assert len(examples) > 1500
    targets = " | ".join(example.target for example in examples)
    for piece in ("uma libra esterlina", "um dólar americano", "um euro", "um real brasileiro",
                  "um iene japonês", "e um centavo", "e um centavos", "centas e"):
        assert piece in targets


def test_numbers_match_a_hand_written_speller(large_corpus):
    def translate(english):  # in figures: "12,345" or "12345" -> "12.345"
        if english.replace(",", "").isdigit():
            return "{:,}".format(int(english.replace(",", ""))).replace(",", ".")
        return pt_cardinal(english_number(english))
    assert _mismatches(_family(large_corpus, "numbers"), translate)[:10] == []


def test_hand_written_rules():
    """The hand rules above, on numbers chosen by hand."""
    assert pt_cardinal(1) == "um" and pt_cardinal(2, "f") == "duas"
    assert pt_cardinal(100, "f") == "cem" and pt_cardinal(101, "f") == "cento e uma"
    assert pt_cardinal(1001, "f") == "mil e uma" and pt_cardinal(1100) == "mil e cem"
    assert pt_cardinal(1120) == "mil cento e vinte" and pt_cardinal(2300, "f") == "duas mil e trezentas"
    assert pt_cardinal(21000, "f") == "vinte e uma mil"
    assert pt_cardinal(640021) == "seiscentos e quarenta mil e vinte e um"
    assert pt_ordinal(21, "f") == "vigésima primeira" and pt_ordinal(10, "m") == "décimo"
    assert english_number("six hundred forty thousand twenty-one") == 640021
    assert english_ordinal("forty-third") == 43 and english_ordinal("twelfth") == 12


@pytest.mark.parametrize("phrase, expected", [
    ("apple", "an apple"), ("old car", "an old car"), ("expensive hat", "an expensive hat"),
    ("empty box", "an empty box"), ("house", "a house"), ("heavy bag", "a heavy bag"),
    ("yellow pen", "a yellow pen"), ("big umbrella", "a big umbrella"), ("idea", "an idea"),
])
def test_indefinite_article(phrase, expected):
    assert with_indefinite_article(phrase) == expected


def test_indefinite_article_is_right_for_every_lexicon_word():
    """The code claims spelling is a sound enough guide for the lexicon's words."""
    words = [noun.english for noun in lexicon.NOUNS] + [adjective.english for adjective in lexicon.ADJECTIVES]
    for word in words:
        # VOWEL_SOUND_WORDS was written for the words of the hand tables only.
        assert word in PT_NOUNS or word in PT_ADJECTIVES, "classify %r by its first sound" % word
        expected = "an" if word in VOWEL_SOUND_WORDS else "a"
        assert with_indefinite_article(word) == "%s %s" % (expected, word)


@pytest.mark.xfail(strict=True, reason="documented limit of lexicon.with_indefinite_article: it goes by "
                                       "the first letter, so a silent h or a /ju/ u is wrong; no lexicon "
                                       "word is affected (see the test above)")
@pytest.mark.parametrize("phrase, expected", [("hour", "an hour"), ("unit", "a unit")])
def test_indefinite_article_goes_by_letters_not_sounds(phrase, expected):
    assert with_indefinite_article(phrase) == expected


# ---------------------------------------------------------------------------
# The forms people type (issue 12), against hand-written Brazilian Portuguese.

PT_WEEKDAYS = {day: entry[0] for day, entry in PT_DAYS.items()}
PT_MONTHS = dict(zip(
    "January February March April May June July August September October November December".split(),
    "janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro dezembro".split()))
EN_ORDINAL_SUFFIXES = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}


def translate_name(english):
    """A weekday or month name or a number up to 100 alone."""
    if english.isdigit():
        return english
    return PT_WEEKDAYS.get(english) or PT_MONTHS.get(english) or pt_cardinal(english_number(english)) \
        if english != "zero" else "zero"


def translate_date(english):
    """Hand translation of every written form of a date the generator makes, bare or framed."""
    for english_frame, portuguese_frame in (("The meeting is on {}.", "A reunião é em {}."),
                                            ("I was born on {}.", "Eu nasci em {}."),
                                            ("The meeting is in {}.", "A reunião é em {}."),
                                            ("I was born in {}.", "Eu nasci em {}.")):
        match = re.fullmatch(re.escape(english_frame).replace(r"\{\}", "(.+)"), english)
        if match:
            return portuguese_frame.format(translate_date(match.group(1)))
    numeric = re.fullmatch(r"(\d+)/(\d+)/(\d{4})", english)
    if numeric:  # US month/day/year -> Brazilian dd/mm/yyyy
        return "%02d/%02d/%s" % (int(numeric.group(2)), int(numeric.group(1)), numeric.group(3))
    weekday = None
    if english.split(",")[0] in PT_WEEKDAYS:
        weekday, english = english.split(", ", 1)
    match = (re.fullmatch(r"(?P<m>[A-Z]\w+) (?P<y>\d{4})", english)
             or re.fullmatch(r"(?P<m>[A-Z]\w+) (?P<d>\d+)(?P<s>st|nd|rd|th)?(?:, (?P<y>\d{4}))?", english)
             or re.fullmatch(r"(?P<d>\d+) (?P<m>[A-Z]\w+)(?: (?P<y>\d{4}))?", english)
             or re.fullmatch(r"the (?P<d>\d+)(?P<s>st|nd|rd|th) of (?P<m>[A-Z]\w+)", english)
             or re.fullmatch(r"the (?P<w>[a-z-]+) of (?P<m>[A-Z]\w+)", english))
    parts = match.groupdict()
    if parts.get("w"):
        parts["d"] = str(english_ordinal(parts["w"]))
    if parts.get("s"):
        assert parts["s"] == EN_ORDINAL_SUFFIXES.get(int(parts["d"]), "th"), "English ordinal suffix"
    portuguese = " de ".join(([("1º" if parts["d"] == "1" else parts["d"])] if parts.get("d") else [])
                             + [PT_MONTHS[parts["m"]]] + ([parts["y"]] if parts.get("y") else []))
    return "%s, %s" % (PT_WEEKDAYS[weekday], portuguese) if weekday else portuguese


def translate_time(english):
    """"3:45 PM", "3:45pm", "3 PM", "15:45" -> "15:45"; framed: "A reunião é às 15:45."."""
    for english_frame, portuguese_frame in (("The meeting is at {}.", "A reunião é {} {}."),
                                            ("The store opens at {}.", "A loja abre {} {}.")):
        match = re.fullmatch(re.escape(english_frame).replace(r"\{\}", "(.+)"), english)
        if match:
            clock = translate_time(match.group(1))
            assert clock[:2] != "00", "'at 00:xx' is 'à meia-noite'"
            return portuguese_frame.format("à" if clock[:2] == "01" else "às", clock)
    hour, minute, half = re.fullmatch(r"(\d+)(?::(\d\d))? ?([AP]M|[ap]m)?", english).groups()
    hour = int(hour) % 12 + (12 if half and half.upper() == "PM" else 0) if half else int(hour)
    return "%02d:%s" % (hour, minute or "00")


@pytest.mark.parametrize("family, translate", [("names", translate_name), ("dates", translate_date),
                                               ("times", translate_time)])
def test_new_forms_match_the_hand_translation(large_corpus, family, translate):
    examples = _family(large_corpus, family)
    assert _mismatches(examples, translate)[:10] == []
    assert len(examples) > 500


@pytest.mark.parametrize("source, target", [
    ("Monday", "segunda-feira"), ("May", "maio"), ("twenty-one", "vinte e um"), ("21", "21"),
    ("one hundred", "cem"), ("May 1st", "1º de maio"), ("the 11th of February", "11 de fevereiro"),
    ("the nineteenth of September", "19 de setembro"), ("15 November 2042", "15 de novembro de 2042"),
    ("9/17/2004", "17/09/2004"), ("June 1987", "junho de 1987"),
    ("6 PM", "18:00"), ("8:30pm", "20:30"), ("13:58", "13:58"), ("The meeting is at 1:14 AM.", "A reunião é à 01:14."),
    ("$690", "US$ 690"), ("$5598.03", "US$ 5.598,03"), ("15 euros", "15 euros"), ("I paid $44.", "Eu paguei US$ 44."),
])
def test_forms_people_type(large_corpus, source, target):
    """Canonical forms of the new families; `vary` makes the rest (see the test below)."""
    forms = {example.canonical: example.target for example in large_corpus}
    forms.update((example.source, example.target) for example in large_corpus)
    assert source in forms, "the generator no longer produces %r: pick another pair" % source
    assert forms[source] == target


def loose(sentence):
    """A source with the variations `vary` makes undone, as a reader would undo them."""
    sentence = sentence.lower().rstrip(".?").replace("-", " ")
    return re.sub(r"\b(hundred|thousand) and ", r"\1 ", sentence)


def test_variants_change_the_source_only_as_people_do(large_corpus):
    changed = [example for example in large_corpus if example.source != example.canonical]
    assert 0.25 < len(changed) / len(large_corpus) < 0.7
    assert [(example.source, example.canonical) for example in changed
            if loose(example.source) != loose(example.canonical)] == []
    kinds = collections.Counter()
    for example in changed:
        kinds["case"] += example.source[:1] != example.canonical[:1]
        kinds["no final punctuation"] += example.source[-1:] not in ".?" and example.canonical[-1:] in ".?"
        kinds["space for a hyphen"] += example.canonical.count("-") > example.source.count("-")
        kinds["British and"] += " and " in example.source and " and " not in example.canonical
    assert min(kinds.values()) > 500, kinds
    # The sentence in a variant is still translated by the hand rules (the target is unchanged).
    assert any(example.source.startswith("i see ") and example.source[-1] != "."
               and example.target.startswith("Eu vejo ") and example.target.endswith(".") for example in changed)
