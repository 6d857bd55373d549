"""The decoding options at the entry points: the flags, a request's values resolved over the
config, and the words of their errors.

Each option's kind, default, allowed values, decoders and hint are declared once, in
seq2seq/decoding_options.py's TABLE (the config reads it there). A request (`POST /translate`)
or a flag (`decode.translate`, `decode.compare`) overrides the config's default; `resolve` is
the one place that checks a value, so every entry point refuses the same values alike.
"""

import json

from decode import DECODERS
from seq2seq.decoding_options import (LENGTH_PENALTY_KINDS, SAMPLERS, TABLE,  # noqa: F401
                                      beam_groups_problem, bounds, is_int, limits, problem)

# Declared for DESIGN.md "More decoding methods", not yet wired into the Translator: no flag,
# request field or /v1/info entry offers them (the config holds them). Wiring one: drop it here.
PENDING = ("diverse_beam_groups", "diverse_beam_strength", "epsilon", "mbr_candidates",
           "mbr_utility")
OPTIONS = tuple(name for name in TABLE if name not in PENDING)
HINTS = {name: TABLE[name].hint for name in OPTIONS}
SCORE_OPTIONS = tuple(name for name in OPTIONS if TABLE[name].changes_score)  # change a score
SAMPLING_OPTIONS = tuple(name for name in OPTIONS if TABLE[name].decoders == SAMPLERS)


def takes_option(decoder, name):
    """Whether `decoder` uses the decoding option `name` (a request giving it otherwise: 400)."""
    return TABLE[name].decoders is None or decoder in TABLE[name].decoders


SCORING_OPTIONS = tuple(name for name in OPTIONS if takes_option("greedy", name))  # every search's


def add_flags(parser, names=OPTIONS):
    """Adds a --name flag per decoding option (None when absent: the config's default)."""
    group = parser.add_argument_group("decoding options (default: the model's config)")
    for name in names:
        option = TABLE[name]
        group.add_argument("--" + name, type={"int": int, "number": float}.get(option.kind, str),
                           help=option.hint, choices=option.low if option.kind == "choice" else None)


def from_flags(args, names=OPTIONS):
    """The options given as flags: {name: value or None}."""
    return {name: getattr(args, name) for name in names}


def shown(value, limit=40):
    """A value as an error message shows it: its JSON (or repr) cut to `limit` characters;
    an integer of more than 15 digits described, not written out."""
    if is_int(value):
        return "an integer of more than 15 digits" if abs(value) >= 10 ** 15 else str(int(value))
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def resolve(decoder, given, decode_params, max_target_length):
    """Every option of TABLE for `decoder` ("score": `Translator.score`'s): `given` (name ->
    value; None: the default) over config["decode"]; max_target_length bounds min_length and
    no_repeat_ngram_size. ValueError names the first unknown, ill-typed, out-of-range or unused
    option."""
    given = given or {}
    scoreless = sorted(name for name, value in given.items()
                       if value is not None and name not in SCORE_OPTIONS)
    if decoder == "score" and scoreless:
        raise ValueError("%s does not change a score; the scoring options are %s"
                         % (scoreless[0], ", ".join(SCORE_OPTIONS)))
    unknown = sorted(set(given) - set(OPTIONS))
    if unknown:
        raise ValueError("unknown decoding option %s; the options are %s"
                         % (shown(unknown[0]), ", ".join(OPTIONS)))
    given = {name: value for name, value in given.items() if value is not None}
    unused = [name for name in given if decoder != "score" and name != "coverage_penalty"
              and not takes_option(decoder, name)]  # exact's coverage_penalty: below
    if unused:
        users = [user for user in DECODERS if takes_option(user, unused[0])]
        raise ValueError("%s is an option of the %s decoder%s, not of %s" % (
            unused[0], " and ".join(users), "s" * (len(users) > 1), decoder))
    named, resolved = limits(decode_params, max_target_length), {}
    for name, option in TABLE.items():
        value = given.get(name, decode_params[name])
        wrong = problem(option, value, named)
        if wrong:
            raise ValueError("%s %s, got %s" % (name, wrong, shown(value)))
        resolved[name] = value
    if decoder == "exact":  # a prefix's coverage term can rise as it grows: no bound holds
        if given.get("coverage_penalty"):
            raise ValueError("coverage_penalty is not an option of the exact decoder, which "
                             "scores without it; use 0")
        resolved["coverage_penalty"] = 0.0
    return resolved


def check_beam_width(decoder, resolved, beam_width):
    """Raises ValueError (naming both) when `decoder` splits its beam into diverse groups and
    resolved["diverse_beam_groups"] does not divide `beam_width`."""
    wrong = takes_option(decoder, "diverse_beam_groups") and beam_groups_problem(
        resolved["diverse_beam_groups"], beam_width)
    if wrong:
        raise ValueError(wrong)
