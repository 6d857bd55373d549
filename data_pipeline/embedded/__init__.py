"""The embedded default corpus: English -> a CLDR locale, generated offline.

Pairs come from phrase families (families.py) built on the data that Babel
(CLDR dates, numbers, currencies) and num2words ship, plus a small hand-written
lexicon for agreement. Generation is deterministic in the seed; pairs are
deduplicated by source before the split, so dev and test share no source
sentence with train.
"""

import collections
import random

from babel import Locale, UnknownLocaleError

from data_pipeline.embedded.families import ALL_FAMILIES, families_for
from data_pipeline.embedded.spelling import check_language
from seq2seq.config import ConfigError

Example = collections.namedtuple("Example", ["source", "target", "family"])
EmbeddedCorpus = collections.namedtuple("EmbeddedCorpus", ["train", "dev", "test"])
EmbeddedCorpus.__doc__ = "Lists of Example, disjoint by source sentence."

# Draws allowed per requested pair before concluding that the families cannot
# produce that many distinct sources.
_MAX_DRAWS_PER_PAIR = 10


def generate(train_size, dev_size, test_size, seed, target_locale):
    """Generates the embedded corpus.

    Args:
      train_size, dev_size, test_size: number of pairs per split.
      seed: the random seed; the same seed gives the same corpus.
      target_locale: a CLDR locale that num2words can spell numbers in,
        e.g. "pt_BR". Locales other than Portuguese get the locale-generic
        families only.
    Returns:
      An EmbeddedCorpus.
    Raises:
      ValueError: an unknown locale, or sizes the families cannot fill.
    """
    check_locale(target_locale)
    families = families_for(target_locale)
    weights = [family.weight for family in families]
    rng = random.Random(seed)
    total = train_size + dev_size + test_size
    by_source, draws = {}, 0
    while len(by_source) < total and draws < _MAX_DRAWS_PER_PAIR * total:
        draws += 1
        family = rng.choices(families, weights)[0]
        source, target = family.generate(rng, target_locale)
        known = by_source.setdefault(source, Example(source, target, family.name))
        if known.target != target:
            raise RuntimeError("the generator translates %r both as %r and as %r"
                               % (source, known.target, target))
    if len(by_source) < total:
        raise ConfigError("the embedded corpus has only %d distinct sentences for %s, %d requested: "
                         "lower data.embedded_*_size" % (len(by_source), target_locale, total))
    examples = list(by_source.values())
    rng.shuffle(examples)
    return EmbeddedCorpus(train=examples[dev_size + test_size:],
                          dev=examples[:dev_size],
                          test=examples[dev_size:dev_size + test_size])


def missing_families(target_locale):
    """The names of the families a target locale lacks a lexicon for."""
    available = families_for(target_locale)
    return [family.name for family in ALL_FAMILIES if family not in available]


def check_locale(target_locale):
    """Raises ConfigError (a ValueError) unless both Babel and num2words know the locale."""
    try:
        Locale.parse(target_locale)
    except (UnknownLocaleError, ValueError) as e:
        raise ConfigError("data.target_locale %r is not a CLDR locale known to Babel"
                          % target_locale) from e
    try:
        check_language(target_locale)
    except ValueError as e:
        raise ConfigError("data.target_locale %r: %s" % (target_locale, e)) from e
