"""The decoding options at the entry points: flags, values resolved over the config, errors.

Each option is declared once, in seq2seq/decoding_options.py's TABLE; `resolve` is the one
place that checks a value, so every entry point refuses the same values alike.
"""

import json

from decode import DECODERS
from seq2seq.decoding_options import (LENGTH_PENALTY_KINDS, SAMPLERS, TABLE,  # noqa: F401
                                      beam_groups_problem, bounds, is_int, limits, problem)

OPTIONS = tuple(TABLE)
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
        choices = option.low if option.kind == "choice" else None
        group.add_argument("--" + name, type={"int": int, "number": float}.get(option.kind, str),
                           help=option.hint, choices=choices)


def from_flags(args, names=OPTIONS):
    """The options given as flags: {name: value or None}."""
    return {name: getattr(args, name) for name in names}


def shown(value, limit=40):
    """A value as an error message shows it: its JSON (or repr) cut to `limit` characters; an
    integer of more than 15 digits described, not written out."""
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
    if not takes_option(decoder, "diverse_beam_groups"):  # it decodes as one group
        resolved["diverse_beam_groups"] = 1
    return resolved


def draws_samples(decoder, resolved):
    """Whether `decoder` under `resolved` options decodes its samples (sample, and mbr whose
    candidates are its samples): it then takes num_samples, not a beam_width."""
    return decoder == "sample" or decoder == "mbr" and resolved["mbr_candidates"] == "sample"


def decode_width(decoder, beam_width, n_best, resolved, beam_widths, default_beam_width):
    """The width `decoder` decodes at: 1 for greedy and exact, num_samples for sample and mbr
    of samples, else `beam_width` (None: `default_beam_width`; else one of `beam_widths`;
    sample, exact and mbr of samples take none). n_best: 1..width; resolved: `resolve`'s.
    ValueError names the first bad one, its allowed values and the value."""
    samples = draws_samples(decoder, resolved)
    if beam_width is not None and (samples or decoder == "exact"):
        raise ValueError("beam_width is not an option of the %s decoder%s (%s)" % (
            decoder, " with mbr_candidates sample" * (decoder == "mbr"),
            "num_samples sets how many translations it draws" if samples else "it finds the one "
            "best translation, starting from the while_loop search at decode.beam_width %d"
            % default_beam_width))
    if beam_width is None:
        beam_width = default_beam_width
    elif not is_int(beam_width) or beam_width not in beam_widths:
        raise ValueError("beam_width must be an integer in %d..%d, got %s"
                         % (beam_widths[0], beam_widths[-1], shown(beam_width)))
    width = 1 if decoder in ("greedy", "exact") else resolved["num_samples"] if samples else (
        beam_width)
    if not is_int(n_best) or not 1 <= n_best <= width:
        raise ValueError("n_best must be an integer in 1..%d (the %s), got %s" % (
            width, {"greedy": "beam width; greedy decoding keeps one hypothesis",
                    "sample": "number of samples", "mbr": "number of candidates",
                    "exact": "exact search finds the one best translation"}.get(
                        decoder, "beam width"), shown(n_best)))
    check_beam_width(decoder, resolved, width)
    return int(width)


def check_beam_width(decoder, resolved, beam_width):
    """Raises ValueError (naming both) when `decoder` splits its beam into diverse groups and
    resolved["diverse_beam_groups"] does not divide `beam_width`."""
    wrong = takes_option(decoder, "diverse_beam_groups") and beam_groups_problem(
        resolved["diverse_beam_groups"], beam_width)
    if wrong:
        raise ValueError(wrong)
