"""The decoding options of DESIGN.md: one set of names, their checks, and which decoder uses each.

The config's `decode` section gives each option's default; a request (`POST /translate`) or
a flag (`decode.translate`, `decode.compare`) overrides it. `resolve` is the one place that
checks a value, so every entry point refuses the same values with the same message.
"""

import json
import numbers

LENGTH_PENALTY_KINDS = ("gnmt", "average", "none")

SCORING_OPTIONS = ("length_penalty", "length_penalty_kind", "coverage_penalty",
                   "no_repeat_ngram_size", "min_length")
SAMPLING_OPTIONS = ("num_samples", "temperature", "top_k", "top_p", "seed")
EXACT_OPTIONS = ("max_expansions",)
OPTIONS = SCORING_OPTIONS + SAMPLING_OPTIONS + EXACT_OPTIONS
SCORE_OPTIONS = ("length_penalty", "length_penalty_kind", "coverage_penalty")  # change a score
HINTS = {
    "length_penalty": "alpha: how much longer translations are favoured (gnmt)",
    "length_penalty_kind": "gnmt: log p / ((5 + length) / 6) ** alpha; average: log p / length; "
                           "none: log p",
    "coverage_penalty": "beta: rewards translations whose attention covers every source piece",
    "no_repeat_ngram_size": "n: no translation holds the same n pieces twice (0: off)",
    "min_length": "pieces before the end token may be chosen",
    "num_samples": "translations drawn per sentence",
    "temperature": "below 1: safer draws; above 1: more varied",
    "top_k": "draw only from the k most likely pieces (0: all)",
    "top_p": "draw only from the smallest set of pieces holding this much probability",
    "seed": "the same seed and sentence give the same samples",
    "max_expansions": "most prefixes the exact search expands before it gives up proving",
}
FLAG_TYPES = {"length_penalty_kind": str, "length_penalty": float, "coverage_penalty": float,
              "temperature": float, "top_p": float}  # the others: int
MAX_SEED = 2 ** 62
MAX_EXPANSIONS = 1000000


def add_flags(parser, names=OPTIONS):
    """Adds a --name flag per decoding option (None when absent: the config's default)."""
    group = parser.add_argument_group("decoding options (default: the model's config)")
    for name in names:
        group.add_argument("--" + name, type=FLAG_TYPES.get(name, int), help=HINTS[name],
                           choices=LENGTH_PENALTY_KINDS if name == "length_penalty_kind" else None)


def from_flags(args, names=OPTIONS):
    """The options given as flags: {name: value or None}."""
    return {name: getattr(args, name) for name in names}


def is_int(value):
    """True for a Python or NumPy integer, False for a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


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


def ranges(decode_params, max_target_length):
    """Each option's allowed values, as /v1/info and the error messages describe them:
    {name: (kind, low, high)} with kind "int", "number" or "choice" (low: the choices)."""
    return {"length_penalty": ("number", 0, None),
            "length_penalty_kind": ("choice", LENGTH_PENALTY_KINDS, None),
            "coverage_penalty": ("number", 0, None),
            "no_repeat_ngram_size": ("int", 0, max_target_length),
            "min_length": ("int", 0, max_target_length),
            "num_samples": ("int", 1, decode_params["max_beam_width"]),
            "temperature": ("number", 0, None),  # > 0
            "top_k": ("int", 0, None),
            "top_p": ("number", 0, 1),  # (0, 1]
            "seed": ("int", -MAX_SEED, MAX_SEED),
            "max_expansions": ("int", 1, MAX_EXPANSIONS)}


def _check(name, value, kind, low, high):
    """None, or what is wrong with `value` for the option `name`."""
    if kind == "choice":
        return None if value in low else "must be one of %s" % ", ".join(low)
    number = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not (is_int(value) if kind == "int" else number):
        return "must be %s" % ("an integer" if kind == "int" else "a number")
    if name in ("temperature", "top_p"):
        return None if 0 < value <= (high or float("inf")) else "must be in (0, %s]" % (
            high or "inf")
    if value < low or (high is not None and value > high):
        return "must be in %s..%s" % (low, high if high is not None else "")
    return None


def resolve(decoder, given, decode_params, max_target_length):
    """Every option of OPTIONS for `decoder` ("score": `Translator.score`'s): `given` (name ->
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
    unused = [name for name in given if (name in SAMPLING_OPTIONS and decoder != "sample")
              or (name in EXACT_OPTIONS and decoder != "exact")]
    if unused:
        raise ValueError("%s is an option of the %s decoder, not of %s" % (
            unused[0], "sample" if unused[0] in SAMPLING_OPTIONS else "exact", decoder))
    limits = ranges(decode_params, max_target_length)
    resolved = {}
    for name in OPTIONS:
        value = given.get(name, decode_params[name])
        problem = _check(name, value, *limits[name])
        if problem:
            raise ValueError("%s %s, got %s" % (name, problem, shown(value)))
        resolved[name] = value
    if decoder == "exact":  # a prefix's coverage term can rise as it grows: no bound holds
        if given.get("coverage_penalty"):
            raise ValueError("coverage_penalty is not an option of the exact decoder, which "
                             "scores without it; use 0")
        resolved["coverage_penalty"] = 0.0
    return resolved
