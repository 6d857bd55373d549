"""Portuguese agreement rules that neither CLDR nor num2words provide.

num2words spells numbers in the masculine only; Portuguese numbers and
ordinals agree in gender with the noun they count ("duas casas", "a terceira
casa"). Prepositions contract with the article that follows them.
"""

import re

from babel import Locale
from babel.numbers import get_currency_name

from data_pipeline.embedded import lexicon
from data_pipeline.embedded.spelling import spell_cardinal, spell_ordinal

# num2words' masculine forms whose feminine differs ("cento" does not: "cento
# e uma casas").
_FEMININE_CARDINAL_WORDS = {
    "um": "uma", "dois": "duas", "duzentos": "duzentas", "trezentos": "trezentas",
    "quatrocentos": "quatrocentas", "quinhentos": "quinhentas", "seiscentos": "seiscentas",
    "setecentos": "setecentas", "oitocentos": "oitocentas", "novecentos": "novecentas",
}
# From a million on, "milhão" is a masculine noun itself ("dois milhões de
# casas"), so the simple word-for-word rule stops there.
_FEMININE_CARDINAL_LIMIT = 10 ** 6


def cardinal(number, gender, locale):
    """Spells `number` agreeing with a noun of `gender` ("m" or "f").

    Args:
      number: an int in [0, 1000000).
      gender: "m" or "f".
      locale: the Portuguese locale for num2words, e.g. "pt_BR".
    Returns:
      e.g. ``cardinal(221, "f", "pt_BR") == "duzentas e vinte e uma"``.
    """
    if not 0 <= number < _FEMININE_CARDINAL_LIMIT:
        raise ValueError("cardinal agreement is defined for 0 <= number < %d, got %d"
                         % (_FEMININE_CARDINAL_LIMIT, number))
    words = spell_cardinal(number, locale).split()
    if gender == "f":
        words = [_FEMININE_CARDINAL_WORDS.get(word, word) for word in words]
    return " ".join(words)


def ordinal(number, gender, locale):
    """Spells an ordinal agreeing in gender: every word's final -o becomes -a.

    ``ordinal(21, "f", "pt_BR") == "vigésima primeira"``.
    """
    words = spell_ordinal(number, locale).split()
    if gender == "f":
        words = [word[:-1] + "a" if word.endswith("o") else word for word in words]
    return " ".join(words)


def adjective(entry, gender, plural):
    """Returns the form of a lexicon.Adjective agreeing in gender and number."""
    if plural:
        return entry.feminine_plural if gender == "f" else entry.masculine_plural
    return entry.feminine if gender == "f" else entry.masculine


def determiner(entry, gender):
    """Returns the form of a lexicon.Determiner agreeing in gender."""
    return entry.feminine if gender == "f" else entry.masculine


def with_preposition(preposition, phrase):
    """Joins a preposition to a phrase, contracting it with the first word.

    ``with_preposition("de", "os dois carros") == "dos dois carros"``; an empty
    preposition returns the phrase unchanged.
    """
    if not preposition:
        return phrase
    if preposition != "de":
        raise ValueError("no contraction rules for the preposition %r" % preposition)
    first, _, rest = phrase.partition(" ")
    contracted = lexicon.DE_CONTRACTIONS.get(first)
    if contracted is None:
        return "de " + phrase
    return contracted + (" " + rest if rest else "")


def weekday_gender(weekday):
    """The gender of a weekday name, Babel's numbering (0 is Monday)."""
    return "m" if weekday in lexicon.MASCULINE_WEEKDAYS else "f"


def weekday_plural(name):
    """Pluralises every part of a weekday name: "segunda-feira" -> "segundas-feiras"."""
    return "-".join(part + "s" for part in name.split("-"))


def at_time(hour):
    """The contraction of "a" + the article before a clock time.

    "a uma hora" is singular ("à 1:30"), every other hour plural ("às 15:45").
    Midnight is "meia-noite", which a digital time does not show, so callers
    leave hour 0 out.
    """
    if hour == 0:
        raise ValueError("'at' before 00:xx reads 'à meia-noite': leave hour 0 out")
    return "à" if hour == 1 else "às"


def first_of_month(date_text, locale):
    """Writes day 1 of a CLDR date as the ordinal "1º" in Brazilian Portuguese.

    CLDR gives "1 de janeiro de 2021" for every Portuguese locale, but Brazil
    writes the first day of a month as an ordinal ("1º de janeiro", as in "1º
    de maio") and Portugal does not. CLDR's "pt" is Brazilian Portuguese.

    Args:
      date_text: a date formatted by Babel for `locale`, on the 1st of a month.
      locale: the target locale.
    Returns:
      The date with "1º" for Brazilian Portuguese, else `date_text` unchanged.
    """
    parsed = Locale.parse(locale)
    if parsed.language != "pt" or parsed.territory not in (None, "BR"):
        return date_text
    return re.sub(r"(?<!\d)1 de ", "1º de ", date_text, count=1)


def currency_name(code, count, locale):
    """The CLDR name of a currency for `count` units, in running-text case.

    CLDR capitalises pt_BR currency names like titles ("Dólares americanos")
    while pt_PT has them in lower case; Portuguese writes common nouns and
    nationality adjectives in lower case, so the first letter is lowered.
    """
    name = get_currency_name(code, count=count, locale=locale)
    return name[:1].lower() + name[1:]
