"""The decoding options' one table (docs/API.md "Decoding options"): each option's kind, default,
allowed values, decoders and hint, with the checks they imply. It sits below decode/ so that the
config (seq2seq/config.py) reads it too; decode/options.py serves it to flags, requests and page.
"""

import collections
import numbers

Option = collections.namedtuple(
    "Option", "kind default low high decoders hint open_low open_high changes_score",
    defaults=(False, False, False))
Option.__doc__ = """kind: "int", "number" or "choice" (then low holds the choices); low, high:
the bounds (None: none; a str: that entry of `limits`), open_low / open_high: the bound itself
is out; decoders: the decoders that use it (None: every one); changes_score: POST /score takes
it."""

LENGTH_PENALTY_KINDS = ("gnmt", "average", "none")
BEAM_SEARCHES = ("while_loop", "unrolled")
SAMPLERS = ("sample", "mbr")
MAX_SEED = 2 ** 62
FLOAT32_MAX = 3.4028234663852886e38  # a larger number is infinite in the search's float32

TABLE = {
    # The highest bounds keep every score finite in float32 (((5 + 300) / 6) ** 10 is 1e17).
    "length_penalty": Option("number", 0.6, 0, 10, None, "alpha: how much longer translations "
                             "are favoured (gnmt)", changes_score=True),
    "length_penalty_kind": Option("choice", "gnmt", LENGTH_PENALTY_KINDS, None, None,
                                  "gnmt: log p / ((5 + length) / 6) ** alpha; average: log p / "
                                  "length; none: log p", changes_score=True),
    "coverage_penalty": Option("number", 0.0, 0, 10, BEAM_SEARCHES + ("greedy",) + SAMPLERS,
                               "beta: rewards translations whose attention covers every source "
                               "piece", changes_score=True),
    "no_repeat_ngram_size": Option("int", 0, 0, "max_target_length", None,
                                   "n: no translation holds the same n pieces twice (0: off)"),
    "min_length": Option("int", 0, 0, "max_target_length", None,
                         "pieces before the end token may be chosen"),
    "diverse_beam_groups": Option("int", 1, 1, None, BEAM_SEARCHES, "G: the beam splits into G "
                                  "groups, each steered off the earlier groups' pieces (1: off); "
                                  "G divides beam_width"),
    "diverse_beam_strength": Option("number", 0.5, 0, None, BEAM_SEARCHES, "lambda: how strongly "
                                    "a group avoids the pieces earlier groups chose at a step"),
    "num_samples": Option("int", 4, 1, "max_beam_width", SAMPLERS,
                          "translations drawn per sentence"),
    "temperature": Option("number", 1.0, 1e-6, None, SAMPLERS,  # logits / 1e-38 overflow
                          "below 1: safer draws; above 1: more varied"),
    "top_k": Option("int", 0, 0, 2 ** 31 - 1, SAMPLERS,  # fed as int32
                    "draw only from the k most likely pieces (0: all)"),
    "top_p": Option("number", 1.0, 0, 1, SAMPLERS, "draw only from the smallest set of pieces "
                    "holding this much probability", open_low=True),
    "epsilon": Option("number", 0.0, 0, 1, SAMPLERS, "never draw a piece less likely than this "
                      "(0: off)", open_high=True),
    "seed": Option("int", 0, -MAX_SEED, MAX_SEED, SAMPLERS,
                   "the same seed and sentence give the same samples"),
    "max_expansions": Option("int", 2000, 1, 1000000, ("exact",),
                             "most prefixes the exact search expands before it gives up proving"),
    "mbr_candidates": Option("choice", "sample", ("sample", "beam"), None, ("mbr",),
                             "sample: num_samples drawn translations; beam: the beam's n-best"),
    "mbr_utility": Option("choice", "chrf", ("chrf", "bleu"), None, ("mbr",),
                          "how alike two translations are: chrF or sentence BLEU"),
}


def is_int(value):
    """True for a Python or NumPy integer, False for a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def limits(decode_params, max_target_length):
    """The limits a bound may name: data.max_target_length and decode.max_beam_width."""
    return {"max_target_length": max_target_length,
            "max_beam_width": decode_params["max_beam_width"]}


def bounds(option, named):
    """A numeric option's (low, high), named bounds read from `named` (`limits`)."""
    return tuple(named[bound] if isinstance(bound, str) else bound
                 for bound in (option.low, option.high))


def problem(option, value, named):
    """None, or what is wrong with `value` for `option`, e.g. "must be in 0..64"."""
    if option.kind == "choice":
        return None if value in option.low else "must be one of %s" % ", ".join(option.low)
    number = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not (is_int(value) if option.kind == "int" else number):
        return "must be %s" % ("an integer" if option.kind == "int" else "a number")
    if option.kind == "number" and not abs(value) <= FLOAT32_MAX:  # the graphs' float32
        return "must be a finite number of at most %.4g in size" % FLOAT32_MAX
    low, high = bounds(option, named)
    above_low = value > low if option.open_low else value >= low  # NaN is neither
    below_high = high is None or (value < high if option.open_high else value <= high)
    if above_low and below_high:
        return None
    if option.open_low or option.open_high:  # the brackets say which ends are in
        return "must be in %s%s, %s%s" % ("(" if option.open_low else "[", low,
                                          "inf" if high is None else high,
                                          ")" if option.open_high or high is None else "]")
    return "must be in %s..%s" % (low, "" if high is None else high)


def beam_groups_problem(groups, beam_width, prefix=""):
    """None, or why `groups` diverse beam groups cannot split a beam of `beam_width`."""
    if beam_width % groups:
        return "%sdiverse_beam_groups must divide %sbeam_width %d, got %d" % (
            prefix, prefix, beam_width, groups)
    return None
