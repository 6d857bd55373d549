"""A small hand-written English -> Portuguese lexicon for the phrase families.

Everything that CLDR (Babel) and num2words do not ship: nouns with their
gender, adjectives with their four agreeing forms, determiners, the gender of
currencies and the names of their minor units, and sentence frames. Words are
chosen to be common to Brazilian and European Portuguese, except the minor
currency unit: "centavo" is Brazilian (Portugal says "cêntimo" for the euro).

Genders are "m" and "f".
"""

import collections

Noun = collections.namedtuple("Noun", ["english", "english_plural", "singular", "plural", "gender"])
Adjective = collections.namedtuple(
    "Adjective", ["english", "masculine", "feminine", "masculine_plural", "feminine_plural"])
Determiner = collections.namedtuple("Determiner", ["english", "masculine", "feminine"])
# A sentence frame around a noun phrase; "{}" is the phrase. The verb agrees
# in number, so singular and plural phrases have their own frames. A
# Portuguese preposition before the phrase contracts with its first word.
Frame = collections.namedtuple(
    "Frame", ["english", "english_plural", "portuguese", "portuguese_plural", "preposition"],
    defaults=[""])
Currency = collections.namedtuple("Currency", ["code", "gender", "english_minor", "portuguese_minor"])

NOUNS = (
    Noun("car", "cars", "carro", "carros", "m"),
    Noun("house", "houses", "casa", "casas", "f"),
    Noun("book", "books", "livro", "livros", "m"),
    Noun("door", "doors", "porta", "portas", "f"),
    Noun("table", "tables", "mesa", "mesas", "f"),
    Noun("chair", "chairs", "cadeira", "cadeiras", "f"),
    Noun("window", "windows", "janela", "janelas", "f"),
    Noun("cat", "cats", "gato", "gatos", "m"),
    Noun("horse", "horses", "cavalo", "cavalos", "m"),
    Noun("flower", "flowers", "flor", "flores", "f"),
    Noun("letter", "letters", "carta", "cartas", "f"),
    Noun("shirt", "shirts", "camisa", "camisas", "f"),
    Noun("hat", "hats", "chapéu", "chapéus", "m"),
    Noun("box", "boxes", "caixa", "caixas", "f"),
    Noun("key", "keys", "chave", "chaves", "f"),
    Noun("pen", "pens", "caneta", "canetas", "f"),
    Noun("ball", "balls", "bola", "bolas", "f"),
    Noun("glass", "glasses", "copo", "copos", "m"),
    Noun("bottle", "bottles", "garrafa", "garrafas", "f"),
    Noun("boat", "boats", "barco", "barcos", "m"),
    Noun("bicycle", "bicycles", "bicicleta", "bicicletas", "f"),
    Noun("phone", "phones", "telefone", "telefones", "m"),
    Noun("tree", "trees", "árvore", "árvores", "f"),
    Noun("apple", "apples", "maçã", "maçãs", "f"),
    Noun("pencil", "pencils", "lápis", "lápis", "m"),
    Noun("bed", "beds", "cama", "camas", "f"),
    Noun("shoe", "shoes", "sapato", "sapatos", "m"),
    Noun("clock", "clocks", "relógio", "relógios", "m"),
    Noun("plate", "plates", "prato", "pratos", "m"),
    Noun("bag", "bags", "bolsa", "bolsas", "f"),
)

ADJECTIVES = (
    Adjective("red", "vermelho", "vermelha", "vermelhos", "vermelhas"),
    Adjective("white", "branco", "branca", "brancos", "brancas"),
    Adjective("black", "preto", "preta", "pretos", "pretas"),
    Adjective("yellow", "amarelo", "amarela", "amarelos", "amarelas"),
    Adjective("blue", "azul", "azul", "azuis", "azuis"),
    Adjective("green", "verde", "verde", "verdes", "verdes"),
    Adjective("big", "grande", "grande", "grandes", "grandes"),
    Adjective("small", "pequeno", "pequena", "pequenos", "pequenas"),
    Adjective("new", "novo", "nova", "novos", "novas"),
    Adjective("old", "velho", "velha", "velhos", "velhas"),
    Adjective("beautiful", "bonito", "bonita", "bonitos", "bonitas"),
    Adjective("cheap", "barato", "barata", "baratos", "baratas"),
    Adjective("expensive", "caro", "cara", "caros", "caras"),
    Adjective("empty", "vazio", "vazia", "vazios", "vazias"),
    Adjective("heavy", "pesado", "pesada", "pesados", "pesadas"),
    Adjective("clean", "limpo", "limpa", "limpos", "limpas"),
)

THE = Determiner("the", "o", "a")
THE_PLURAL = Determiner("the", "os", "as")
# "a" becomes "an" before a vowel in English (see spelling.with_indefinite_article).
A = Determiner("a", "um", "uma")
SOME = Determiner("some", "alguns", "algumas")
# No determiner at all: a bare number ("two cars").
NONE = Determiner("", "", "")
SINGULAR_DETERMINERS = (THE, A, Determiner("this", "este", "esta"), Determiner("that", "esse", "essa"))
# Plural determiners that may (NONE: must) be followed by a number.
COUNTING_DETERMINERS = (
    THE_PLURAL, Determiner("these", "estes", "estas"), Determiner("those", "esses", "essas"), NONE)

# "de" contracts with the article and the demonstratives that follow it.
DE_CONTRACTIONS = {
    "o": "do", "a": "da", "os": "dos", "as": "das",
    "este": "deste", "esta": "desta", "estes": "destes", "estas": "destas",
    "esse": "desse", "essa": "dessa", "esses": "desses", "essas": "dessas",
}

NOUN_PHRASE_FRAMES = (
    Frame("I see {}.", "I see {}.", "Eu vejo {}.", "Eu vejo {}."),
    Frame("I bought {}.", "I bought {}.", "Eu comprei {}.", "Eu comprei {}."),
    Frame("We need {}.", "We need {}.", "Nós precisamos {}.", "Nós precisamos {}.", "de"),
    Frame("{} is here.", "{} are here.", "{} está aqui.", "{} estão aqui."),
    Frame("Where is {}?", "Where are {}?", "Onde está {}?", "Onde estão {}?"),
)
# "{0}" is the noun phrase, "{1}" an adjective agreeing with it.
PREDICATE_FRAME = Frame("{0} is {1}.", "{0} are {1}.", "{0} é {1}.", "{0} são {1}.")

# Phrases around a weekday name: English, Portuguese for a masculine and for
# a feminine day, whether the names are plural ("on Mondays"), and the
# tenses of the sentences they fit in.
WeekdayPhrase = collections.namedtuple(
    "WeekdayPhrase", ["english", "masculine", "feminine", "plural", "tenses"])
WEEKDAY_PHRASES = (
    WeekdayPhrase("on {}", "no {}", "na {}", False, ("past", "future")),
    WeekdayPhrase("next {}", "no próximo {}", "na próxima {}", False, ("future",)),
    WeekdayPhrase("last {}", "no {} passado", "na {} passada", False, ("past",)),
    WeekdayPhrase("on {}s", "aos {}", "às {}", True, ("habitual",)),
)

# Sentences around a time expression ("on Monday at 3:45 PM"), by tense.
WHEN_FRAMES = {
    "past": (("It rained {}.", "Choveu {}."), ("We met {}.", "Nós nos encontramos {}.")),
    "future": (("The meeting is {}.", "A reunião é {}."),
               ("We will travel {}.", "Nós vamos viajar {}.")),
    "habitual": (("I work {}.", "Eu trabalho {}."), ("The store opens {}.", "A loja abre {}.")),
}

# Frames around an amount of money.
PRICE_FRAMES = (
    ("It costs {}.", "Custa {}."),
    ("I paid {}.", "Eu paguei {}."),
)

# Currency names come from CLDR; their gender and the minor units do not.
# A currency without minor-unit names is spelled in whole amounts only.
CURRENCIES = (
    Currency("USD", "m", ("cent", "cents"), ("centavo", "centavos")),
    Currency("EUR", "m", ("cent", "cents"), ("centavo", "centavos")),
    Currency("BRL", "m", ("centavo", "centavos"), ("centavo", "centavos")),
    Currency("GBP", "f", None, None),
    Currency("JPY", "m", None, None),
)

# The days of the week, as Babel numbers them (0 is Monday), that are
# masculine in Portuguese; the "-feira" days are feminine.
MASCULINE_WEEKDAYS = (5, 6)
