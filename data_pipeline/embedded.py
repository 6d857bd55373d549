"""The embedded corpus, English -> a CLDR locale: phrase families from CLDR (Babel), num2words
and a hand-written Portuguese lexicon give canonical pairs; `vary` writes each source as people
type it, the target unchanged. Deterministic in the seed; docs/DATA-NOTES.md has the why."""

import collections
import datetime
import decimal
import random
import re

from babel import Locale, UnknownLocaleError
from babel.dates import format_date, format_skeleton, format_time, get_day_names, get_month_names
from babel.numbers import format_currency, format_decimal, get_currency_name, get_currency_precision
from num2words import num2words

from data_pipeline.lexicon import (
    A, ADJECTIVES, COUNTING_DETERMINERS, CURRENCIES, ENGLISH, MASCULINE_WEEKDAYS, NONE, NOUNS,
    SINGULAR_DETERMINERS, SOME, THE, agree, at_time, cardinal, first_of_month, is_portuguese,
    ordinal, spell_cardinal, spell_ordinal, with_indefinite_article, with_preposition)
from seq2seq.config import ConfigError

Example = collections.namedtuple("Example", ["source", "target", "family", "canonical"])
EmbeddedCorpus = collections.namedtuple("EmbeddedCorpus", ["train", "dev", "test"])
# closed: a small finite set (names, numbers to 100): train only, repeated.
Family = collections.namedtuple("Family", "name weight generate closed", defaults=[False])
Frame = collections.namedtuple(
    "Frame", "english english_plural portuguese portuguese_plural preposition", defaults=[""])
NOUN_PHRASE_FRAMES = (
    Frame("I see {}.", "I see {}.", "Eu vejo {}.", "Eu vejo {}."),
    Frame("I bought {}.", "I bought {}.", "Eu comprei {}.", "Eu comprei {}."),
    Frame("We need {}.", "We need {}.", "Nós precisamos {}.", "Nós precisamos {}.", "de"),
    Frame("{} is here.", "{} are here.", "{} está aqui.", "{} estão aqui."),
    Frame("Where is {}?", "Where are {}?", "Onde está {}?", "Onde estão {}?"),
)
PREDICATE_FRAME = Frame("{0} is {1}.", "{0} are {1}.", "{0} é {1}.", "{0} são {1}.")
WeekdayPhrase = collections.namedtuple("WeekdayPhrase", "english masculine feminine plural tenses")
WEEKDAY_PHRASES = (
    WeekdayPhrase("on {}", "no {}", "na {}", False, ("past", "future")),
    WeekdayPhrase("next {}", "no próximo {}", "na próxima {}", False, ("future",)),
    WeekdayPhrase("last {}", "no {} passado", "na {} passada", False, ("past",)),
    WeekdayPhrase("on {}s", "aos {}", "às {}", True, ("habitual",)),
)
WHEN_FRAMES = {
    "past": (("It rained {}.", "Choveu {}."), ("We met {}.", "Nós nos encontramos {}.")),
    "future": (("The meeting is {}.", "A reunião é {}."),
               ("We will travel {}.", "Nós vamos viajar {}.")),
    "habitual": (("I work {}.", "Eu trabalho {}."), ("The store opens {}.", "A loja abre {}.")),
}
PRICE_FRAMES = (("It costs {}.", "Custa {}."), ("I paid {}.", "Eu paguei {}."))
# "{}" is a date; "em" never contracts before a day number or a month name.
DATE_FRAMES = (("The meeting is on {}.", "A reunião é em {}."),
               ("I was born on {}.", "Eu nasci em {}."))
MONTH_FRAMES = (("The meeting is in {}.", "A reunião é em {}."),
                ("I was born in {}.", "Eu nasci em {}."))
# "{at}" is "à" (1 a.m.) or "às"; "{}" the time.
TIME_FRAMES = (("The meeting is at {}.", "A reunião é {at} {}."),
               ("The store opens at {}.", "A loja abre {at} {}."))
_NUMBER_WORD = (r"(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\w+teen|"
                r"twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)")
# British "and": after hundred, and after thousand before a last group below 100.
_BRITISH_AND = re.compile(r"\b(hundred|thousand) (?=%s\b(?:-\w+)?(?! hundred))" % _NUMBER_WORD)
_FIRST_DAY = datetime.date(1950, 1, 1).toordinal()
_LAST_DAY = datetime.date(2049, 12, 31).toordinal()
_BARE_SHARE = 0.3  # phrases bare rather than in a sentence frame
_DATE_FORMS = ("{m} {o}", "{m} {o}, {y}", "the {o} of {m}", "the {w} of {m}", "{d} {m}",
               "{d} {m} {y}")
_MAX_DRAWS_PER_PAIR = 10


def generate(train_size, dev_size, test_size, seed, target_locale):
    """Generates the corpus: dev and test share no canonical source with train or each other.

    Args:
      train_size, dev_size, test_size: pairs per split.
      seed: the same seed gives the same corpus.
      target_locale: a locale Babel and num2words both know, e.g. "pt_BR".
    Returns:
      EmbeddedCorpus(train, dev, test): lists of Example.
    """
    check_locale(target_locale)
    families = families_for(target_locale)
    rng = random.Random(seed)
    held, total = dev_size + test_size, train_size + dev_size + test_size
    by_canonical, closed, targets = {}, [], {}
    for _ in range(_MAX_DRAWS_PER_PAIR * total):
        if len(by_canonical) >= held and len(by_canonical) + len(closed) >= total:
            break
        family = rng.choices(families, [family.weight for family in families])[0]
        canonical, target = family.generate(rng, target_locale)
        if targets.setdefault(canonical, target) != target:
            raise RuntimeError("the generator translates %r both as %r and as %r"
                               % (canonical, targets[canonical], target))
        example = Example(vary(rng, canonical), target, family.name, canonical)
        if family.closed:
            closed.append(example)
        else:
            by_canonical.setdefault(canonical, example)
    if len(by_canonical) + len(closed) < total or len(by_canonical) < held:
        raise ConfigError("the embedded corpus has only %d distinct sentences for %s, %d "
                          "requested: lower data.embedded_*_size"
                          % (len(by_canonical), target_locale, total))
    examples = list(by_canonical.values())
    rng.shuffle(examples)
    train = examples[held:] + closed
    rng.shuffle(train)
    return EmbeddedCorpus(train[:train_size], examples[:dev_size], examples[dev_size:held])


def vary(rng, sentence):
    """A canonical source as people type it: "Twenty-one cars." -> "twenty one cars"."""
    if rng.random() < 0.3:
        sentence = _BRITISH_AND.sub(r"\1 and ", sentence)
    if rng.random() < 0.3:
        sentence = re.sub(r"(?<=[a-z])-(?=[a-z])", " ", sentence)
    if rng.random() < 0.15 and sentence[-1:] in ".?":
        sentence = sentence[:-1]
    if rng.random() < 0.2:
        sentence = sentence[:1].swapcase() + sentence[1:]
    return sentence


def families_for(locale):
    """The families of a target locale: the grammar ones need the Portuguese lexicon."""
    return ALL_FAMILIES if is_portuguese(locale) else GENERIC_FAMILIES


def missing_families(target_locale):
    """The names of the families a target locale lacks a lexicon for."""
    return [family.name for family in ALL_FAMILIES if family not in families_for(target_locale)]


def check_locale(target_locale):
    """Raises ConfigError (a ValueError) unless both Babel and num2words know the locale."""
    try:
        Locale.parse(target_locale)
    except (UnknownLocaleError, ValueError) as e:
        raise ConfigError("data.target_locale %r is not a CLDR locale known to Babel"
                          % target_locale) from e
    try:
        num2words(1, lang=target_locale)
    except NotImplementedError as e:
        raise ConfigError("data.target_locale %r: num2words cannot spell numbers in %r"
                          % (target_locale, target_locale)) from e


# ---- The families: (random.Random, target_locale) -> (english, target).

def names(rng, locale):
    """A weekday or month name or a number up to 100 alone: "Monday" -> "segunda-feira", "21"."""
    kind = rng.randrange(4)
    if kind == 0:
        return _both(locale, _weekday, rng.randrange(7))
    if kind == 1:
        return _both(locale, _month, rng.randint(1, 12))
    number = rng.randint(0, 100)
    if kind == 2:
        return spell_cardinal(number, ENGLISH), spell_cardinal(number, locale)
    return str(number), str(number)


def dates(rng, locale):
    """A date as people write it: "March 3, 2021", "3/3/2021", "the 3rd of March", "March 2021"."""
    day = datetime.date.fromordinal(rng.randint(_FIRST_DAY, _LAST_DAY))
    form = rng.randrange(len(_DATE_FORMS) + 4)
    if form == 2:
        return ("%d/%d/%d" % (day.month, day.day, day.year),
                format_date(day, "dd/MM/yyyy", locale=locale))
    if form == 3:  # the full form, weekday first, stays bare
        english, target = _both(locale, format_date, day, "full")
    elif form == 0 and rng.random() < 0.5:  # "March 3, 2021" (Babel's yMMMMd is "Mar 3, 2021")
        english, target = _both(locale, format_date, day, "long")
    elif form < 2:  # "March 3" or "March 2021"
        english, target = _both(locale, format_skeleton, ("MMMMd", "yMMMM")[form], day)
    else:
        english = _DATE_FORMS[form - 4]
        skeleton = "yMMMMd" if "{y}" in english else "MMMMd"
        target = _plain_spaces(format_skeleton(skeleton, day, locale=locale))
        teens = 10 <= day.day <= 20
        suffix = "th" if teens else {1: "st", 2: "nd", 3: "rd"}.get(day.day % 10, "th")
        english = english.format(m=_month(day.month, ENGLISH), d=day.day, y=day.year,
                                 o="%d%s" % (day.day, suffix), w=spell_ordinal(day.day, ENGLISH))
    if day.day == 1:
        target = first_of_month(target, locale)
    if form != 3 and rng.random() < 0.3:
        return _in_frame(rng, MONTH_FRAMES if form == 1 else DATE_FRAMES, english, target)
    return english, target


def numbers(rng, locale):
    """101..999,999 in words or figures: "one hundred twenty-three" -> "cento e vinte e três"."""
    digits = rng.randint(3, 6)
    number = rng.randrange(max(101, 10 ** (digits - 1)), 10 ** digits)
    if rng.random() < 0.25:
        english = format_decimal(number, locale=ENGLISH) if rng.random() < 0.5 else str(number)
        return english, format_decimal(number, locale=locale)
    return spell_cardinal(number, ENGLISH), spell_cardinal(number, locale)


def money_in_figures(rng, locale):
    """An amount in figures: "$1,234.50", "$1234.50", "$5" -> "US$ 1.234,50"; maybe framed."""
    code = rng.choice(CURRENCIES).code
    with_minor = get_currency_precision(code) > 0 and rng.random() < 0.7
    english, target = _both(locale, format_currency, _random_amount(rng, with_minor), code)
    if not with_minor:
        english, target = re.sub(r"\.00$", "", english), re.sub(r",00$", "", target)
    if rng.random() < 0.3:
        english = english.replace(",", "")
    if rng.random() < 0.3:
        return _in_frame(rng, PRICE_FRAMES, english, target)
    return english, target


def times(rng, locale):
    """A clock time: "3:45 PM", "3:45pm", "3 PM", "15:45" -> "15:45"; maybe framed ("às 15:45")."""
    moment = datetime.time(rng.randrange(24), rng.randrange(60) if rng.random() < 0.7 else 0)
    english, target = _both(locale, format_time, moment, "short")
    form = rng.randrange(4)
    if form == 1:
        english = english.replace(" AM", "am").replace(" PM", "pm")
    elif form == 2 and moment.minute == 0:
        english = english.replace(":00", "")
    elif form == 3:
        english = "%d:%02d" % (moment.hour, moment.minute)
    if moment.hour and is_portuguese(locale) and rng.random() < 0.3:
        return _in_frame(rng, TIME_FRAMES, english, target, at=at_time(moment.hour))
    return english, target


def noun_phrases(rng, locale):
    """A noun phrase, maybe framed: "the two red cars" -> "os dois carros vermelhos"."""
    noun, count = rng.choice(NOUNS), None
    plural = rng.random() < 0.5
    if not plural:
        determiner = rng.choice(SINGULAR_DETERMINERS)
    elif rng.random() < 0.15:
        determiner = SOME
    else:
        determiner = rng.choice(COUNTING_DETERMINERS)
        if determiner is NONE or rng.random() < 0.6:
            count = rng.randint(2, 12) if rng.random() < 0.7 else rng.randint(13, 999)
    if not count:
        english_count, portuguese_count = [], []
    elif rng.random() < 0.2:
        english_count, portuguese_count = [str(count)], [str(count)]
    else:
        english_count = [spell_cardinal(count, ENGLISH)]
        portuguese_count = [cardinal(count, noun.gender, locale)]
    return _in_sentence(rng, noun, plural, determiner, english_count, portuguese_count)


def ordinals(rng, locale):
    """"the third house" -> "a terceira casa"."""
    noun, position = rng.choice(NOUNS), rng.randint(1, 100)
    return _in_sentence(rng, noun, False, THE, [spell_ordinal(position, ENGLISH)],
                        [ordinal(position, noun.gender, locale)])


def weekdays(rng, locale):
    """"next Saturday at 3:45 PM" -> "no próximo sábado às 15:45", "last Monday", "on Mondays"."""
    weekday, phrase = rng.randrange(7), rng.choice(WEEKDAY_PHRASES)
    english_day, target_day = _both(locale, _weekday, weekday)
    if phrase.plural:  # "segunda-feira" -> "segundas-feiras"
        target_day = "-".join(part + "s" for part in target_day.split("-"))
    english = phrase.english.format(english_day)
    target_phrase = phrase.masculine if weekday in MASCULINE_WEEKDAYS else phrase.feminine
    target = target_phrase.format(target_day)
    if rng.random() < 0.5:
        moment = datetime.time(rng.randint(1, 23), rng.randrange(60))
        english_time, target_time = _both(locale, format_time, moment, "short")
        english += " at " + english_time
        target += " %s %s" % (at_time(moment.hour), target_time)
    if rng.random() < _BARE_SHARE:
        return english, target
    return _in_frame(rng, WHEN_FRAMES[rng.choice(phrase.tenses)], english, target)


def money_in_words(rng, locale):
    """"twelve US dollars and one cent" -> "doze dólares americanos e um centavo"; "5 euros"."""
    currency = rng.choice(CURRENCIES)
    units = int(_random_amount(rng, with_minor=False))
    figures = rng.random() < 0.2
    english = "%s %s" % (units if figures else spell_cardinal(units, ENGLISH),
                         get_currency_name(currency.code, count=units, locale=ENGLISH))
    name = get_currency_name(currency.code, count=units, locale=locale)  # "Dólares americanos"
    target = "%s %s" % (units if figures else cardinal(units, currency.gender, locale),
                        name[:1].lower() + name[1:])
    if currency.english_minor and rng.random() < 0.6:
        cents = rng.randint(1, 99)
        english += " and %s %s" % (cents if figures else spell_cardinal(cents, ENGLISH),
                                   currency.english_minor[cents != 1])
        plural_cents = Locale.parse(locale).plural_form(cents) != "one"
        target += " e %s %s" % (cents if figures else cardinal(cents, "m", locale),
                                currency.portuguese_minor[plural_cents])
    if rng.random() < _BARE_SHARE:
        return english, target
    return _in_frame(rng, PRICE_FRAMES, english, target)


GENERIC_FAMILIES = (
    Family("names", 1.5, names, closed=True),
    Family("dates", 4, dates),
    Family("numbers", 2, numbers),
    Family("money_in_figures", 1.5, money_in_figures),
    Family("times", 2, times),
)
ALL_FAMILIES = GENERIC_FAMILIES + (
    Family("noun_phrases", 5, noun_phrases),
    Family("ordinals", 2, ordinals),
    Family("weekdays", 2, weekdays),
    Family("money_in_words", 2, money_in_words),
)


def _in_sentence(rng, noun, plural, determiner, english_modifiers, portuguese_modifiers):
    """The noun phrase (modifiers: a count or an ordinal, agreeing), bare or in a frame."""
    adjective = rng.choice(ADJECTIVES) if rng.random() < 0.7 else None
    english = " ".join(english_modifiers + ([adjective.english] if adjective else [])
                       + [noun.english_plural if plural else noun.english])
    if determiner is A:
        english = with_indefinite_article(english)
    elif determiner.english:
        english = determiner.english + " " + english
    target = " ".join(([agree(determiner, noun.gender)] if determiner.english else [])
                      + portuguese_modifiers + [noun.plural if plural else noun.singular]
                      + ([agree(adjective, noun.gender, plural)] if adjective else []))
    if rng.random() < _BARE_SHARE:
        return english, target
    frame = rng.choice(NOUN_PHRASE_FRAMES + (PREDICATE_FRAME,))
    english_frame = frame.english_plural if plural else frame.english
    target_frame = frame.portuguese_plural if plural else frame.portuguese
    if frame is PREDICATE_FRAME:  # "The car is red.": another adjective, agreeing
        predicate = rng.choice([entry for entry in ADJECTIVES if entry is not adjective])
        english = english_frame.format(english, predicate.english)
        target = target_frame.format(target, agree(predicate, noun.gender, plural))
    else:
        english = english_frame.format(english)
        target = target_frame.format(with_preposition(frame.preposition, target))
    return english[:1].upper() + english[1:], target[:1].upper() + target[1:]


def _in_frame(rng, frames, english, target, **target_fields):
    """The phrase in a sentence frame drawn from `frames`, (english, target) format strings."""
    english_frame, target_frame = rng.choice(frames)
    return english_frame.format(english), target_frame.format(target, **target_fields)


def _both(locale, render, *args):
    """`render(*args, locale=...)` in English and in `locale`, with plain spaces."""
    return tuple(_plain_spaces(render(*args, locale=each)) for each in (ENGLISH, locale))


def _weekday(index, locale):
    return get_day_names("wide", locale=locale)[index]


def _month(number, locale):
    return get_month_names("wide", locale=locale)[number]


def _random_amount(rng, with_minor):
    """A decimal amount of 1 to 4 integer digits, with cents when `with_minor`."""
    digits = rng.randint(1, 4)
    units = rng.randint(1 if digits == 1 else 10 ** (digits - 1), 10 ** digits - 1)
    return decimal.Decimal(units) + (decimal.Decimal(rng.randrange(100)) / 100 if with_minor else 0)


def _plain_spaces(text):
    """CLDR's no-break spaces (U+00A0, U+202F) as plain ones, as SentencePiece decodes them."""
    return text.replace("\u00a0", " ").replace("\u202f", " ")
