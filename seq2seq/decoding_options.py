"""The decoding options' schema (docs/API.md "Decoding options"): a row per option, its type,
default, bounds, hint and uses; decode/request.py's DecodeRequest adds the decoder, the widths and
the rules across fields. It sits below decode/ so that seq2seq/config.py reads it too.
"""

import collections
import typing

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

LENGTH_PENALTY_KINDS = ("gnmt", "average", "none")
BEAM_SEARCHES = ("while_loop", "unrolled")
SAMPLERS = ("sample", "mbr")
MAX_SEED = 2 ** 62
MAX_EXPANSIONS = 1000000  # the exact search's cap a caller may ask for (a server's is lower)
FLOAT32_MAX = 3.4028234663852886e38  # a larger number is infinite in the search's float32
MUST_BE = {"int_type": "an integer", "float_type": "a number", "bool_type": "true or false",
           "finite_number": "a finite number of at most %.4g in size" % FLOAT32_MAX}

Uses = collections.namedtuple("Uses", "decoders changes_score fed keys_graph at_most",
                              defaults=(None, False, None, False, None))
Uses.__doc__ = """An option's uses: the decoders that take it (None: every one); whether it changes
a score (POST /score takes it); the NumPy dtype it is fed to the graph as (None: not fed);
whether it keys the graph (by its value or, if fed, by whether it is on); the limit bounding it
from above (a key of `limits`)."""


def _float32(value):
    if abs(value) > FLOAT32_MAX:
        raise PydanticCustomError("finite_number", "")
    return value


Float32 = typing.Annotated[float, Field(allow_inf_nan=False), AfterValidator(_float32)]


def row(kind, hint, uses=Uses(), **bounds):
    """An option's type: `kind` within `bounds` (Field's ge, gt, le, lt), its hint and `Uses`."""
    return typing.Annotated[kind, Field(description=hint, **bounds), uses]


class DecodingOptions(BaseModel):
    """The decoding options, each with its default (the config's decode section overrides it),
    validated in a context that holds the `limits` their rows name."""
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    # The highest bounds keep every score finite in float32 (((5 + 300) / 6) ** 10 is 1e17).
    length_penalty: row(Float32, "alpha: how much longer translations are favoured (gnmt)",
                        Uses(changes_score=True, fed="float32"), ge=0, le=10) = 0.6
    length_penalty_kind: row(typing.Literal[LENGTH_PENALTY_KINDS], "gnmt: log p / ((5 + length) "
                             "/ 6) ** alpha; average: log p / length; none: log p",
                             Uses(changes_score=True, keys_graph=True)) = "gnmt"
    coverage_penalty: row(Float32, "beta: rewards translations whose attention covers every "
                          "source piece", Uses(BEAM_SEARCHES + ("greedy",) + SAMPLERS, True,
                                               "float32", True), ge=0, le=10) = 0.0
    no_repeat_ngram_size: row(int, "n: no translation holds the same n pieces twice (0: off)",
                              Uses(keys_graph=True, at_most="max_target_length"), ge=0) = 0
    min_length: row(int, "pieces before the end token may be chosen",
                    Uses(fed="int32", keys_graph=True, at_most="max_target_length"), ge=0) = 0
    diverse_beam_groups: row(int, "G: the beam splits into G groups, each steered off the earlier"
                             " groups' pieces (1: off); G divides beam_width",
                             Uses(BEAM_SEARCHES, keys_graph=True), ge=1) = 1
    diverse_beam_strength: row(Float32, "lambda: how strongly a group avoids the pieces earlier "
                               "groups chose at a step", Uses(BEAM_SEARCHES, fed="float32"),
                               ge=0) = 0.5
    num_samples: row(int, "translations drawn per sentence",
                     Uses(SAMPLERS, at_most="max_beam_width"), ge=1) = 4
    temperature: row(Float32, "below 1: safer draws; above 1: more varied",  # / 1e-38: overflow
                     Uses(SAMPLERS, fed="float32"), ge=1e-6) = 1.0
    top_k: row(int, "draw only from the k most likely pieces (0: all)",
               Uses(SAMPLERS, fed="int32"), ge=0, le=2 ** 31 - 1) = 0
    top_p: row(Float32, "draw only from the smallest set of pieces holding this much "
               "probability", Uses(SAMPLERS, fed="float32"), gt=0, le=1) = 1.0
    epsilon: row(Float32, "never draw a piece less likely than this (0: off)",
                 Uses(SAMPLERS, fed="float32"), ge=0, lt=1) = 0.0
    seed: row(int, "the same seed and sentence give the same samples",
              Uses(SAMPLERS, fed="int64"), ge=-MAX_SEED, le=MAX_SEED) = 0
    max_expansions: row(int, "most prefixes the exact search expands before it gives up proving",
                        Uses(("exact",), at_most="max_expansions"), ge=1) = 2000
    mbr_candidates: row(typing.Literal["sample", "beam"], "sample: num_samples drawn "
                        "translations; beam: the beam's n-best", Uses(("mbr",))) = "sample"
    mbr_utility: row(typing.Literal["chrf", "bleu"], "how alike two translations are: chrF or "
                     "sentence BLEU", Uses(("mbr",))) = "chrf"
    placeholders: row(typing.Literal["keep", "free"], "keep: each placeholder or tag of the "
                      "source (%(name)s, {}, <b>) appears exactly once in every translation; "
                      "free: the model decides (so with diverse_beam_groups)",
                      Uses(BEAM_SEARCHES)) = "keep"

    @field_validator("*")
    @classmethod
    def _within_its_limit(cls, value, info):
        limit = uses(info.field_name).at_most
        if limit and value > info.context[limit]:
            raise PydanticCustomError("less_than_equal", "")
        return value

    def graph_key(self, names=None):
        """The values of the options (of `names`: all) that shape a graph, a fed one as on/off."""
        return tuple(bool(getattr(self, name)) if uses(name).fed else getattr(self, name)
                     for name in names or OPTIONS if uses(name).keys_graph)

    def feeds(self):
        """{name: value} of the options fed to a graph."""
        return {name: getattr(self, name) for name in OPTIONS if uses(name).fed}

    def graph_options(self, fed):
        """Each option as a graph is built with it: its placeholder in `fed` if it is fed (and on,
        if it keys the graph), else its value."""
        return {name: fed[name] if uses(name).fed and (getattr(self, name) or not uses(
            name).keys_graph) else getattr(self, name) for name in OPTIONS}


OPTIONS = tuple(DecodingOptions.model_fields)


def uses(name, fields=None):
    """A field's `Uses` (of `fields`, a model's model_fields: the options'; no such field, none)."""
    field = (fields or DecodingOptions.model_fields).get(name)
    return next(each for each in field.metadata if isinstance(each, Uses)) if field else Uses()


SCORE_OPTIONS = tuple(name for name in OPTIONS if uses(name).changes_score)


def limits(decode_params, max_target_length):
    """The limits an option's `at_most` names: data.max_target_length, decode.max_beam_width and
    the exact search's cap."""
    return {"max_target_length": max_target_length, "max_expansions": MAX_EXPANSIONS,
            "max_beam_width": decode_params["max_beam_width"]}


def takes(decoder, name, fields=None):
    """Whether `decoder` uses the decoding option (or field of `fields`, as `uses`) `name`."""
    return uses(name, fields).decoders is None or decoder in uses(name, fields).decoders


def describe(name, limits):
    """An option's allowed values as GET /v1/info gives them (`limits` names its bounds)."""
    field = DecodingOptions.model_fields[name]
    if typing.get_origin(field.annotation) is typing.Literal:
        return {"type": "choice", "choices": list(typing.get_args(field.annotation))}
    bounds = {key: getattr(each, key) for each in field.metadata
              for key in ("ge", "gt", "le", "lt") if hasattr(each, key)}
    return {"type": "integer" if field.annotation is int else "number",
            "min": bounds.get("ge", bounds.get("gt")), "max": limits[uses(name).at_most]
            if uses(name).at_most else bounds.get("le", bounds.get("lt")),
            "exclusive_min": "gt" in bounds, "exclusive_max": "lt" in bounds}


def field_problem(error, limits):
    """What a pydantic error (one of ValidationError.errors()) of a field says is wrong, e.g.
    "must be in 0..64", its bounds read from `limits`."""
    if error["type"] in MUST_BE:
        return "must be " + MUST_BE[error["type"]]
    allowed = describe(error["loc"][0], limits)
    if error["type"] == "literal_error":
        return "must be one of " + ", ".join(allowed["choices"])
    low, high = allowed["min"], allowed["max"]  # a bound crossed
    if allowed["exclusive_min"] or allowed["exclusive_max"]:  # the brackets say which ends are in
        return "must be in %s%s, %s%s" % ("([" [not allowed["exclusive_min"]], low,
                                          "inf" if high is None else high,
                                          "])" [allowed["exclusive_max"] or high is None])
    return "must be in %s..%s" % (low, "" if high is None else high)


def beam_groups_problem(groups, beam_width, prefix=""):
    """None, or why `groups` diverse beam groups cannot split a beam of `beam_width`."""
    if beam_width % groups:
        return "%sdiverse_beam_groups must divide %sbeam_width %d, got %d" % (
            prefix, prefix, beam_width, groups)
    return None
