"""Phrase families: each draws one (English, target) pair from a random.Random.

Locale-generic families take everything from CLDR (Babel) and num2words, so
they work for any target locale both know. The grammar families (noun
phrases, ordinals, weekdays, money in words) need agreement rules and a
lexicon, which exist for Portuguese only (see portuguese.py, lexicon.py).

Every family is compositional: a test sentence is new as a whole, but each of
its parts (a noun, a month, a number word, a frame) is common in training.
"""

import collections
import datetime
import decimal

from babel import Locale
from babel.dates import format_date, format_skeleton, format_time, get_day_names
from babel.numbers import format_currency, get_currency_name, get_currency_precision

from data_pipeline.embedded import lexicon, portuguese
from data_pipeline.embedded.spelling import (
    ENGLISH, capitalize_first, spell_cardinal, spell_ordinal, with_indefinite_article)

Family = collections.namedtuple("Family", ["name", "weight", "generate"])
Family.__doc__ = """A phrase family.

Attributes:
  name: a short identifier, e.g. "dates".
  weight: relative share of the corpus.
  generate: (random.Random, target_locale) -> (english, target).
"""

_FIRST_DAY = datetime.date(1950, 1, 1).toordinal()
_LAST_DAY = datetime.date(2049, 12, 31).toordinal()
# Babel date styles and skeletons: "March 3, 2021", "Wednesday, March 3, 2021",
# "March 3", "March 2021". Not "medium": English "May 3, 2021" is both the
# medium and the long form, which pt_BR tells apart ("3 de mai." / "3 de maio").
_DATE_STYLES = ("long", "full")
_DATE_SKELETONS = ("MMMMd", "yMMMM")
# Share of phrases that appear bare rather than in a sentence frame.
_BARE_SHARE = 0.3


def dates(rng, locale):
    """A calendar date in one of several CLDR formats.

    "March 3, 2021" -> "3 de março de 2021"; "March 1" -> "1º de março" in
    Brazilian Portuguese (see portuguese.first_of_month).
    """
    day = datetime.date.fromordinal(rng.randint(_FIRST_DAY, _LAST_DAY))
    style = rng.choice(_DATE_STYLES + _DATE_SKELETONS)
    if style in _DATE_SKELETONS:
        english, target = (format_skeleton(style, day, locale=loc) for loc in (ENGLISH, locale))
    else:
        english, target = (format_date(day, style, locale=loc) for loc in (ENGLISH, locale))
    english, target = _plain_spaces(english), _plain_spaces(target)
    if day.day == 1:
        target = portuguese.first_of_month(target, locale)
    return english, target


def numbers(rng, locale):
    """A number below a million in words, as many with 1 digit as with 6.

    "one hundred twenty-three" -> "cento e vinte e três".
    """
    digits = rng.randint(1, 6)
    number = rng.randrange(10 ** (digits - 1) if digits > 1 else 0, 10 ** digits)
    return spell_cardinal(number, ENGLISH), spell_cardinal(number, locale)


def money_in_figures(rng, locale):
    """An amount in figures, formatted by CLDR: "$1,234.50" -> "US$ 1.234,50"."""
    code = rng.choice(lexicon.CURRENCIES).code
    amount = _random_amount(rng, with_minor=get_currency_precision(code) > 0)
    return tuple(_plain_spaces(format_currency(amount, code, locale=loc)) for loc in (ENGLISH, locale))


def times(rng, locale):
    """A clock time in CLDR's short format: "3:45 PM" -> "15:45"."""
    moment = datetime.time(rng.randrange(24), rng.randrange(60))
    return tuple(_plain_spaces(format_time(moment, "short", locale=loc)) for loc in (ENGLISH, locale))


def noun_phrases(rng, locale):
    """A noun phrase with determiner, number and adjective, maybe in a sentence.

    "the two red cars" -> "os dois carros vermelhos": the adjective follows
    the noun, and article, number and adjective agree with it.
    """
    noun = rng.choice(lexicon.NOUNS)
    plural = rng.random() < 0.5
    if not plural:
        determiner, count = rng.choice(lexicon.SINGULAR_DETERMINERS), None
    elif rng.random() < 0.15:
        determiner, count = lexicon.SOME, None
    else:
        determiner = rng.choice(lexicon.COUNTING_DETERMINERS)
        wants_count = determiner is lexicon.NONE or rng.random() < 0.6
        count = _random_count(rng) if wants_count else None
    english_count = [spell_cardinal(count, ENGLISH)] if count else []
    portuguese_count = [portuguese.cardinal(count, noun.gender, locale)] if count else []
    return _in_sentence(rng, noun, plural, determiner, english_count, portuguese_count)


def ordinals(rng, locale):
    """An ordinal agreeing with its noun: "the third house" -> "a terceira casa"."""
    noun = rng.choice(lexicon.NOUNS)
    position = rng.randint(1, 100)
    return _in_sentence(rng, noun, False, lexicon.THE,
                        [spell_ordinal(position, ENGLISH)],
                        [portuguese.ordinal(position, noun.gender, locale)])


def weekdays(rng, locale):
    """A day of the week with its preposition, maybe a time, maybe a sentence.

    "next Saturday at 3:45 PM" -> "no próximo sábado às 15:45", "last Monday"
    -> "na segunda-feira passada": article and adjective agree with the day's
    gender, and "last" moves behind it.
    """
    weekday = rng.randrange(7)
    phrase = rng.choice(lexicon.WEEKDAY_PHRASES)
    english_day = get_day_names("wide", locale=ENGLISH)[weekday]
    target_day = get_day_names("wide", locale=locale)[weekday]
    if phrase.plural:
        target_day = portuguese.weekday_plural(target_day)
    gender = portuguese.weekday_gender(weekday)
    english = phrase.english.format(english_day)
    target = (phrase.feminine if gender == "f" else phrase.masculine).format(target_day)
    if rng.random() < 0.5:
        # Hour 0 has no "at" in digits (Portuguese says "à meia-noite").
        moment = datetime.time(rng.randint(1, 23), rng.randrange(60))
        english += " at " + _plain_spaces(format_time(moment, "short", locale=ENGLISH))
        target += " %s %s" % (portuguese.at_time(moment.hour),
                              _plain_spaces(format_time(moment, "short", locale=locale)))
    if rng.random() < _BARE_SHARE:
        return english, target
    english_frame, target_frame = rng.choice(lexicon.WHEN_FRAMES[rng.choice(phrase.tenses)])
    return english_frame.format(english), target_frame.format(target)


def money_in_words(rng, locale):
    """An amount in words with CLDR's currency names in the right plural form.

    "two British pounds" -> "duas libras esterlinas"; "twelve US dollars and
    one cent" -> "doze dólares americanos e um centavo".
    """
    currency = rng.choice(lexicon.CURRENCIES)
    units = int(_random_amount(rng, with_minor=False))
    english = "%s %s" % (spell_cardinal(units, ENGLISH),
                         get_currency_name(currency.code, count=units, locale=ENGLISH))
    target = "%s %s" % (portuguese.cardinal(units, currency.gender, locale),
                        portuguese.currency_name(currency.code, units, locale))
    if currency.english_minor and rng.random() < 0.6:
        cents = rng.randint(1, 99)
        english += " and %s %s" % (spell_cardinal(cents, ENGLISH), currency.english_minor[cents != 1])
        one = Locale.parse(locale).plural_form(cents) == "one"
        target += " e %s %s" % (portuguese.cardinal(cents, "m", locale),
                                currency.portuguese_minor[0 if one else 1])
    if rng.random() < _BARE_SHARE:
        return english, target
    english_frame, target_frame = rng.choice(lexicon.PRICE_FRAMES)
    return english_frame.format(english), target_frame.format(target)


GENERIC_FAMILIES = (
    Family("dates", 3, dates),
    Family("numbers", 2, numbers),
    Family("money_in_figures", 1, money_in_figures),
    Family("times", 1, times),
)
PORTUGUESE_FAMILIES = (
    Family("noun_phrases", 5, noun_phrases),
    Family("ordinals", 2, ordinals),
    Family("weekdays", 2, weekdays),
    Family("money_in_words", 2, money_in_words),
)

ALL_FAMILIES = GENERIC_FAMILIES + PORTUGUESE_FAMILIES


def families_for(locale):
    """The families available for a target locale (grammar ones need a lexicon)."""
    if Locale.parse(locale).language == "pt":
        return GENERIC_FAMILIES + PORTUGUESE_FAMILIES
    return GENERIC_FAMILIES


def _in_sentence(rng, noun, plural, determiner, english_modifiers, portuguese_modifiers):
    """Builds a noun phrase and puts it bare or in a sentence frame.

    Args:
      rng: random.Random.
      noun: a lexicon.Noun.
      plural: whether the phrase is plural.
      determiner: a lexicon.Determiner.
      english_modifiers, portuguese_modifiers: words between the determiner
        and the noun (a number, an ordinal), already agreeing.
    Returns:
      (english, portuguese).
    """
    adjective = rng.choice(lexicon.ADJECTIVES) if rng.random() < 0.7 else None
    english_words = english_modifiers + ([adjective.english] if adjective else [])
    english_words.append(noun.english_plural if plural else noun.english)
    english = " ".join(english_words)
    if determiner is lexicon.A:
        english = with_indefinite_article(english)
    elif determiner.english:
        english = determiner.english + " " + english
    target_words = [portuguese.determiner(determiner, noun.gender)] if determiner.english else []
    target_words += portuguese_modifiers + [noun.plural if plural else noun.singular]
    if adjective:
        target_words.append(portuguese.adjective(adjective, noun.gender, plural))
    target = " ".join(target_words)
    if rng.random() < _BARE_SHARE:
        return english, target
    frame_index = rng.randrange(len(lexicon.NOUN_PHRASE_FRAMES) + 1)
    if frame_index == len(lexicon.NOUN_PHRASE_FRAMES):
        predicate = rng.choice([a for a in lexicon.ADJECTIVES if a is not adjective])
        frame = lexicon.PREDICATE_FRAME
        english_sentence = (frame.english_plural if plural else frame.english).format(
            english, predicate.english)
        target_sentence = (frame.portuguese_plural if plural else frame.portuguese).format(
            target, portuguese.adjective(predicate, noun.gender, plural))
    else:
        frame = lexicon.NOUN_PHRASE_FRAMES[frame_index]
        english_sentence = (frame.english_plural if plural else frame.english).format(english)
        target_sentence = (frame.portuguese_plural if plural else frame.portuguese).format(
            portuguese.with_preposition(frame.preposition, target))
    return capitalize_first(english_sentence), capitalize_first(target_sentence)


def _random_count(rng):
    """Mostly small counts (2-12), sometimes up to 999."""
    return rng.randint(2, 12) if rng.random() < 0.7 else rng.randint(13, 999)


def _random_amount(rng, with_minor):
    """A decimal amount of 1 to 4 integer digits, with cents when `with_minor`."""
    digits = rng.randint(1, 4)
    units = rng.randint(1 if digits == 1 else 10 ** (digits - 1), 10 ** digits - 1)
    cents = rng.randrange(100) if with_minor else 0
    return decimal.Decimal(units) + decimal.Decimal(cents) / 100


def _plain_spaces(text):
    """CLDR separates with no-break spaces (U+00A0, U+202F); plain ones keep the
    reference text equal to what SentencePiece decodes to."""
    return text.replace("\u00a0", " ").replace("\u202f", " ")
