"""The embedded corpus: determinism, disjoint splits, families, agreement."""

import re

import pytest

from data_pipeline import embedded
from data_pipeline.embedded import lexicon, portuguese
from data_pipeline.embedded.families import Family
from data_pipeline.embedded.spelling import spell_cardinal, spell_ordinal, with_indefinite_article

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


# ---------------------------------------------------------------------------
# Translations checked against hand-written Brazilian Portuguese.
#
# The tables and rules below are written independently of lexicon.py and
# portuguese.py (and of num2words for Portuguese): a wrong lexicon form, a
# gender swap or a wrong agreement rule in the generator makes the generated
# target differ from them.

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
    total = current = 0
    for word in text.split():
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
        modifier = pt_cardinal(count, gender)
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
MONEY_PHRASE = re.compile(r"([a-z -]+?) (%s)(?: and ([a-z -]+) (\w+))?" % "|".join(
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
    portuguese = "%s %s" % (pt_cardinal(units, gender), singular if units == 1 else plural)
    if cents_words:
        cents = english_number(cents_words)
        assert english_minor and minor == english_minor[cents != 1], "English minor unit"
        portuguese += " e %s %s" % (pt_cardinal(cents, "m"), "centavo" if cents == 1 else "centavos")
    return portuguese_frame.format(portuguese)


def _mismatches(examples, translate):
    """[(source, generated target, hand translation or the parse error)]."""
    wrong = []
    for example in examples:
        try:
            expected = translate(example.source)
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
    ("the three new chairs", "as três cadeiras novas"),
    ("Where are the two heavy houses?", "Onde estão as duas casas pesadas?"),
    ("I see the two hats.", "Eu vejo os dois chapéus."),
    ("We need two small keys.", "Nós precisamos de duas chaves pequenas."),
    ("We need the eight cheap flowers.", "Nós precisamos das oito flores baratas."),
    ("We need the small boxes.", "Nós precisamos das caixas pequenas."),
    ("Those two empty tables are red.", "Essas duas mesas vazias são vermelhas."),
    ("Those glasses are blue.", "Esses copos são azuis."),
    ("some blue bags", "algumas bolsas azuis"),
    ("I bought some blue pencils.", "Eu comprei alguns lápis azuis."),
    ("Where are five hundred fifty-one blue doors?",
     "Onde estão quinhentas e cinquenta e uma portas azuis?"),
    ("I see the two hundred fifty-one cheap windows.",
     "Eu vejo as duzentas e cinquenta e uma janelas baratas."),
    ("We need these two hundred expensive houses.", "Nós precisamos destas duzentas casas caras."),
    ("We need the six hundred twenty-one new boats.",
     "Nós precisamos dos seiscentos e vinte e um barcos novos."),
    ("I bought the one hundred cheap keys.", "Eu comprei as cem chaves baratas."),
    ("This cheap flower is empty.", "Esta flor barata é vazia."),
    ("We need that clean apple.", "Nós precisamos dessa maçã limpa."),
    # "an" before a vowel sound; Portuguese "de um" stays apart.
    ("Where is an apple?", "Onde está uma maçã?"),
    ("an old pen", "uma caneta velha"),
    ("We need an expensive hat.", "Nós precisamos de um chapéu caro."),
    ("Where is a yellow horse?", "Onde está um cavalo amarelo?"),
    ("A big letter is heavy.", "Uma carta grande é pesada."),
    # Ordinals agree in gender, every word of them.
    ("the first window", "a primeira janela"),
    ("the second expensive ball", "a segunda bola cara"),
    ("the third white hat", "o terceiro chapéu branco"),
    ("the twenty-first old table", "a vigésima primeira mesa velha"),
    ("the twenty-first glass", "o vigésimo primeiro copo"),
    ("We need the eleventh ball.", "Nós precisamos da décima primeira bola."),
    ("We need the eighty-eighth blue horse.", "Nós precisamos do octogésimo oitavo cavalo azul."),
    ("The sixty-fourth clean apple is blue.", "A sexagésima quarta maçã limpa é azul."),
    ("the one hundredth beautiful horse", "o centésimo cavalo bonito"),
    # Weekdays: no/na, próximo/próxima, passado/passada, aos/às, à 1h / às 13h.
    ("on Mondays", "às segundas-feiras"),
    ("on Saturdays at 6:39 PM", "aos sábados às 18:39"),
    ("I work on Sundays at 12:36 PM.", "Eu trabalho aos domingos às 12:36."),
    ("next Saturday", "no próximo sábado"),
    ("next Sunday at 1:59 AM", "no próximo domingo à 01:59"),
    ("The meeting is next Wednesday at 1:04 PM.", "A reunião é na próxima quarta-feira às 13:04."),
    ("The meeting is on Thursday at 1:46 AM.", "A reunião é na quinta-feira à 01:46."),
    ("on Sunday at 2:39 PM", "no domingo às 14:39"),
    ("last Monday", "na segunda-feira passada"),
    ("last Saturday", "no sábado passado"),
    ("We met last Thursday at 12:45 PM.", "Nós nos encontramos na quinta-feira passada às 12:45."),
    # Money in words: currency gender and number, cent/centavo by number.
    ("one British pound", "uma libra esterlina"),
    ("two British pounds", "duas libras esterlinas"),
    ("twenty-one British pounds", "vinte e uma libras esterlinas"),
    ("five thousand ninety-one British pounds", "cinco mil e noventa e uma libras esterlinas"),
    ("It costs one thousand eight hundred seventy-four British pounds.",
     "Custa mil oitocentas e setenta e quatro libras esterlinas."),
    ("one US dollar", "um dólar americano"),
    ("ten euros and one cent", "dez euros e um centavo"),
    ("I paid twenty-one US dollars and fifty-four cents.",
     "Eu paguei vinte e um dólares americanos e cinquenta e quatro centavos."),
    ("I paid three Brazilian reals and eighty-one centavos.",
     "Eu paguei três reais brasileiros e oitenta e um centavos."),
    ("one thousand two hundred forty-one Japanese yen", "mil duzentos e quarenta e um ienes japoneses"),
]


@pytest.mark.parametrize("source, target", EXACT_TRANSLATIONS)
def test_exact_translations(large_corpus, source, target):
    by_source = {example.source: example.target for example in large_corpus}
    assert source in by_source, "the generator no longer produces %r: pick another pair" % source
    assert by_source[source] == target


def test_noun_phrases_and_ordinals_match_the_hand_translation(large_corpus):
    examples = _family(large_corpus, "noun_phrases", "ordinals")
    assert _mismatches(examples, translate_noun_phrase_sentence)[:10] == []
    assert len(examples) > 7000
    # Every determiner, both genders and both numbers were among them.
    first_words = {re.sub(r"[^\w ]", "", example.source).split()[0].lower() for example in examples}
    assert {"the", "a", "an", "this", "that", "these", "those", "some", "two"} <= first_words


def test_ordinals_cover_every_position_in_both_genders(large_corpus):
    seen = set()
    for example in _family(large_corpus, "ordinals"):
        words = re.findall(r"[\w-]+", example.source.lower())
        noun = next(index for index, word in enumerate(words) if word in PT_NOUNS)
        ordinal = [word for word in words[words.index("the") + 1:noun] if word not in PT_ADJECTIVES]
        seen.add((english_ordinal(" ".join(ordinal)), PT_NOUNS[words[noun]][3]))
    assert {position for position, _ in seen} == set(range(1, 101))
    assert {(1, "m"), (1, "f"), (21, "m"), (21, "f"), (100, "m"), (100, "f")} <= seen


def test_weekdays_match_the_hand_translation(large_corpus):
    examples = _family(large_corpus, "weekdays")
    assert _mismatches(examples, translate_weekday)[:10] == []
    assert len(examples) > 1500
    sources = " | ".join(example.source for example in examples)
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
    assert _mismatches(_family(large_corpus, "numbers"),
                       lambda english: pt_cardinal(english_number(english)) if english != "zero"
                       else "zero")[:10] == []


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


@pytest.mark.xfail(strict=True, reason="documented limit of spelling.with_indefinite_article: it goes by "
                                       "the first letter, so a silent h or a /ju/ u is wrong; no lexicon "
                                       "word is affected (see the test above)")
@pytest.mark.parametrize("phrase, expected", [("hour", "an hour"), ("unit", "a unit")])
def test_indefinite_article_goes_by_letters_not_sounds(phrase, expected):
    assert with_indefinite_article(phrase) == expected
