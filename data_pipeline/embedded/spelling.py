"""Numbers in words (num2words) and the small orthographic rules around them."""

from num2words import num2words

ENGLISH = "en"


def spell_cardinal(number, lang):
    """Spells a whole number in words, the way running text writes it.

    num2words separates thousands with a comma in some languages ("mil,
    duzentos" in pt_BR, "one thousand, two hundred" in en) and writes the
    British "hundred and one" in English; our English side is the US variant
    (it also formats dates and money with Babel's "en", i.e. en_US), so both
    the commas and the English "and" are dropped.

    Args:
      number: a non-negative int.
      lang: a num2words language code, e.g. "en" or "pt_BR".
    Returns:
      e.g. ``spell_cardinal(123, "en") == "one hundred twenty-three"``.
    """
    return _running_text(num2words(number, lang=lang), lang)


def spell_ordinal(number, lang):
    """Spells an ordinal in words ("twenty-first"), masculine where it matters."""
    return _running_text(num2words(number, lang=lang, to="ordinal"), lang)


def with_indefinite_article(phrase):
    """Prefixes the English "a" or "an", decided by the phrase's first letter.

    Spelling is a sound enough guide for the lexicon's words (no "hour" or
    "unit").
    """
    return ("an " if phrase[:1] in "aeiou" else "a ") + phrase


def capitalize_first(sentence):
    """Upper-cases the first character only ("o carro" -> "O carro")."""
    return sentence[:1].upper() + sentence[1:]


def check_language(lang):
    """Raises ValueError unless num2words can spell numbers in `lang`."""
    try:
        num2words(1, lang=lang)
    except NotImplementedError as e:
        raise ValueError("num2words cannot spell numbers in %r" % lang) from e


def _running_text(words, lang):
    words = words.replace(",", "").split()
    if lang == ENGLISH:
        words = [word for word in words if word != "and"]
    return " ".join(words)
