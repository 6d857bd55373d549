"""The words of the embedded corpus: numbers spelled out (num2words), a hand-written Portuguese
lexicon, and the Portuguese agreement that CLDR and num2words lack; docs/DATA-NOTES.md."""

import collections
import re

from babel import Locale
from num2words import num2words

ENGLISH = "en"
Noun = collections.namedtuple("Noun", "english english_plural singular plural gender")
Adjective = collections.namedtuple(
    "Adjective", "english masculine feminine masculine_plural feminine_plural")
Determiner = collections.namedtuple("Determiner", "english masculine feminine")
Currency = collections.namedtuple("Currency", "code gender english_minor portuguese_minor")

# The hand-written lexicon: words common to Brazilian and European Portuguese.
NOUNS = tuple(Noun(*entry.split()) for entry in (
    "car cars carro carros m", "house houses casa casas f", "book books livro livros m",
    "door doors porta portas f", "table tables mesa mesas f", "chair chairs cadeira cadeiras f",
    "window windows janela janelas f", "cat cats gato gatos m", "horse horses cavalo cavalos m",
    "flower flowers flor flores f", "letter letters carta cartas f",
    "shirt shirts camisa camisas f", "hat hats chapéu chapéus m", "box boxes caixa caixas f",
    "key keys chave chaves f", "pen pens caneta canetas f", "ball balls bola bolas f",
    "glass glasses copo copos m", "bottle bottles garrafa garrafas f", "boat boats barco barcos m",
    "bicycle bicycles bicicleta bicicletas f", "phone phones telefone telefones m",
    "tree trees árvore árvores f", "apple apples maçã maçãs f", "pencil pencils lápis lápis m",
    "bed beds cama camas f", "shoe shoes sapato sapatos m", "clock clocks relógio relógios m",
    "plate plates prato pratos m", "bag bags bolsa bolsas f"))
ADJECTIVES = tuple(Adjective(*entry.split()) for entry in (
    "red vermelho vermelha vermelhos vermelhas", "white branco branca brancos brancas",
    "black preto preta pretos pretas", "yellow amarelo amarela amarelos amarelas",
    "blue azul azul azuis azuis", "green verde verde verdes verdes",
    "big grande grande grandes grandes", "small pequeno pequena pequenos pequenas",
    "new novo nova novos novas", "old velho velha velhos velhas",
    "beautiful bonito bonita bonitos bonitas", "cheap barato barata baratos baratas",
    "expensive caro cara caros caras", "empty vazio vazia vazios vazias",
    "heavy pesado pesada pesados pesadas", "clean limpo limpa limpos limpas"))
THE, A = Determiner("the", "o", "a"), Determiner("a", "um", "uma")
SOME, NONE = Determiner("some", "alguns", "algumas"), Determiner("", "", "")
SINGULAR_DETERMINERS = (THE, A, Determiner("this", "este", "esta"),
                        Determiner("that", "esse", "essa"))
COUNTING_DETERMINERS = (Determiner("the", "os", "as"), Determiner("these", "estes", "estas"),
                        Determiner("those", "esses", "essas"), NONE)  # NONE: a count must follow
DE_CONTRACTIONS = dict(pair.split(":") for pair in (
    "o:do a:da os:dos as:das este:deste esta:desta estes:destes estas:destas "
    "esse:desse essa:dessa esses:desses essas:dessas").split())
CURRENCIES = (
    Currency("USD", "m", ("cent", "cents"), ("centavo", "centavos")),
    Currency("EUR", "m", ("cent", "cents"), ("centavo", "centavos")),
    Currency("BRL", "m", ("centavo", "centavos"), ("centavo", "centavos")),
    Currency("GBP", "f", None, None),
    Currency("JPY", "m", None, None),
)
MASCULINE_WEEKDAYS = (5, 6)  # Babel's numbering (0 is Monday): sábado, domingo
FEMININE_CARDINAL_WORDS = dict(pair.split(":") for pair in (
    "um:uma dois:duas duzentos:duzentas trezentos:trezentas quatrocentos:quatrocentas "
    "quinhentos:quinhentas seiscentos:seiscentas setecentos:setecentas oitocentos:oitocentas "
    "novecentos:novecentas").split())


# ---- Spelling: numbers in words, the US English way (no "and", no commas).

def spell_cardinal(number, lang):
    """``spell_cardinal(123, "en") == "one hundred twenty-three"`` ("cento e vinte e três")."""
    words = num2words(number, lang=lang).replace(",", "").split()
    return " ".join(word for word in words if lang != ENGLISH or word != "and")


def spell_ordinal(number, lang):
    """``spell_ordinal(21, "en") == "twenty-first"`` (masculine where it matters)."""
    return " ".join(num2words(number, lang=lang, to="ordinal").replace(",", "").split())


def with_indefinite_article(phrase):
    """"a" or "an" by the first letter: right for every lexicon word (not "hour", "unit")."""
    return ("an " if phrase[:1] in "aeiou" else "a ") + phrase


# ---- Portuguese agreement that CLDR and num2words lack.

def cardinal(number, gender, locale):
    """A number in [0, 1000000) agreeing with a noun: (221, "f") -> "duzentas e vinte e uma"."""
    if not 0 <= number < 10 ** 6:  # from a million on, "milhão" is a noun of its own
        raise ValueError("cardinal agreement is defined for 0 <= number < 1000000, got %d" % number)
    words = spell_cardinal(number, locale).split()
    if gender == "f":
        words = [FEMININE_CARDINAL_WORDS.get(word, word) for word in words]
    return " ".join(words)


def ordinal(number, gender, locale):
    """Every word's final -o becomes -a in the feminine: (21, "f") -> "vigésima primeira"."""
    words = spell_ordinal(number, locale).split()
    if gender == "f":
        words = [word[:-1] + "a" if word.endswith("o") else word for word in words]
    return " ".join(words)


def agree(entry, gender, plural=False):
    """The form of an Adjective (or Determiner) agreeing with a noun."""
    if plural:
        return entry.feminine_plural if gender == "f" else entry.masculine_plural
    return entry.feminine if gender == "f" else entry.masculine


def with_preposition(preposition, phrase):
    """("de", "os dois carros") -> "dos dois carros"; "" leaves the phrase as it is."""
    if not preposition:
        return phrase
    first, _, rest = phrase.partition(" ")
    contracted = DE_CONTRACTIONS.get(first)
    return "de " + phrase if contracted is None else contracted + (" " + rest if rest else "")


def at_time(hour):
    """"à" before 1 o'clock ("à 01:30"), "às" before the others (hour 0: "à meia-noite")."""
    return "à" if hour == 1 else "às"


def is_portuguese(locale):
    """Whether the hand-written lexicon is in the language of `locale`."""
    return Locale.parse(locale).language == "pt"


def first_of_month(date_text, locale):
    """Brazil writes day 1 as "1º" ("1º de maio"); CLDR and Portugal write "1"."""
    parsed = Locale.parse(locale)
    if parsed.language != "pt" or parsed.territory not in (None, "BR"):
        return date_text
    return re.sub(r"(?<!\d)1 de ", "1º de ", date_text, count=1)
