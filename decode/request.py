"""The DecodeRequest: what to decode, one immutable value validated once where it enters (the
HTTP body, a command's flags, a Python call) and handed down unchanged; the graph cache's key and
the session's feeds derive from it. Its options are seq2seq/decoding_options.py's rows.
"""

import collections
import json
import numbers
import typing

from pydantic import ValidationError, model_validator

from seq2seq.decoding_options import (BEAM_SEARCHES, OPTIONS, SCORE_OPTIONS, DecodingOptions,
                                      Uses, beam_groups_problem, field_problem, takes)

DECODERS = ("while_loop", "unrolled", "greedy", "sample", "exact", "mbr")
UNTRACED = ("sample", "exact", "mbr")  # they keep no beam to trace
COMMON_OPTIONS = tuple(name for name in OPTIONS if takes("greedy", name))  # every search's
WIDTHS = {"greedy": "beam width; greedy decoding keeps one hypothesis", "sample": "number of "
          "samples", "mbr": "number of candidates", "exact": "exact search finds the one best "
          "translation"}  # what bounds n_best
Ids = typing.Tuple[int, ...]

Served = collections.namedtuple(
    "Served", "defaults limits decoders beam_widths default_beam_width can_trace exported")
Served.__doc__ = """What a model serves, the context a DecodeRequest is validated in: the
config's decode section (each option's default), the limits the options' rows name
(seq2seq/decoding_options.py's `limits`), the decoders, the beam widths (a range) and the
default one, whether it traces, whether it is an exported SavedModel."""


class DecodeRequest(DecodingOptions):
    """What to decode: the decoder, beam width, n-best, trace, target prefixes (per sentence the
    target ids its translation starts with; None: none), constraints (per sentence the target
    id sequences each translation contains; None: none) and every decoding option, each given
    or the model's default. Build it with `decode_request`."""
    decoder: typing.Literal[DECODERS] = "while_loop"
    beam_width: int
    n_best: int = 1
    trace: bool = False
    target_prefix: typing.Optional[typing.Tuple[Ids, ...]] = None
    constraints: typing.Annotated[typing.Optional[typing.Tuple[typing.Tuple[Ids, ...], ...]],
                                  Uses(BEAM_SEARCHES)] = None

    @model_validator(mode="before")
    @classmethod
    def _given_over_the_defaults(cls, given, info):
        """The fields given (None: absent) over the model's defaults (an option the decoder does
        not use: off); refuses a decoder the model does not serve, an option it does not use."""
        served = info.context["served"]
        given = {name: value for name, value in given.items() if value is not None}
        decoder = given.setdefault("decoder", "while_loop")
        if decoder not in served.decoders:
            raise ValueError("decoder must be one of %s, got %s"
                             % (", ".join(served.decoders), shown(decoder)))
        unused = [name for name in given if name in OPTIONS + ("constraints",)
                  and not takes(decoder, name, cls.model_fields)
                  and (name, decoder) != ("coverage_penalty", "exact")  # 0 is fine: below
                  and (name != "constraints" or any(given[name]))]  # as are none
        if unused:
            users = [user for user in DECODERS if takes(user, unused[0], cls.model_fields)]
            raise ValueError("%s is an option of the %s decoder%s, not of %s" % (
                unused[0], " and ".join(users), "s" * (len(users) > 1), decoder))
        if decoder == "exact" and given.get("coverage_penalty"):  # a prefix's coverage term
            raise ValueError("coverage_penalty is not an option of the exact decoder, which "
                             "scores without it; use 0")  # can rise as it grows: no bound holds
        samples = decoder == "sample" or decoder == "mbr" and given.get(
            "mbr_candidates", served.defaults["mbr_candidates"]) == "sample"
        if "beam_width" in given and (samples or decoder == "exact"):
            raise ValueError("beam_width is not an option of the %s decoder%s (%s)" % (
                decoder, " with mbr_candidates sample" * (decoder == "mbr"),
                "num_samples sets how many translations it draws" if samples else "it finds the "
                "one best translation, starting from the while_loop search at decode.beam_width "
                "%d" % served.default_beam_width))
        defaults = {name: served.defaults[name] if takes(decoder, name) else field.default
                    for name, field in DecodingOptions.model_fields.items()}
        given.update(per_sentence(given.get("target_prefix"), given.get("constraints")))
        return {**defaults, "beam_width": served.default_beam_width, **given}

    @model_validator(mode="after")
    def _fits_the_model(self, info):
        """Refuses what the model cannot decode: a width it does not serve, an n_best over the
        width, groups that do not divide it, a trace it cannot record, a SavedModel's others."""
        served = info.context["served"]
        changed = [name for name in OPTIONS
                   if takes(self.decoder, name) and getattr(self, name) != served.defaults[name]]
        if served.exported and changed:
            raise ValueError("the exported SavedModel serves the config's decoding options only "
                             "(a checkpoint serves others), got %s %s"
                             % (changed[0], shown(getattr(self, changed[0]))))
        if served.exported and self.beam_width != served.default_beam_width:
            raise ValueError("the exported SavedModel serves only the while_loop decoder at "
                             "beam_width %d (a checkpoint serves the others), got beam_width %s"
                             % (served.default_beam_width, shown(self.beam_width)))
        if self.beam_width not in served.beam_widths:
            raise ValueError("beam_width must be an integer in %d..%d, got %s" % (
                served.beam_widths[0], served.beam_widths[-1], shown(self.beam_width)))
        if not 1 <= self.n_best <= self.width:
            raise ValueError("n_best must be an integer in 1..%d (the %s), got %s" % (
                self.width, WIDTHS.get(self.decoder, "beam width"), shown(self.n_best)))
        if takes(self.decoder, "diverse_beam_groups") and beam_groups_problem(
                self.diverse_beam_groups, self.width):
            raise ValueError(beam_groups_problem(self.diverse_beam_groups, self.width))
        if self.trace and not served.can_trace:
            raise ValueError("trace: this translator serves a SavedModel, which returns no trace "
                             "(a checkpoint does)")
        if self.trace and self.decoder in UNTRACED:
            raise ValueError("trace: the %s decoder keeps no beams to trace; trace a beam search "
                             "or greedy" % self.decoder)
        for name, given in (("target_prefixes", self.target_prefix),
                            ("constraints", self.constraints)):
            if given and served.exported:
                raise ValueError("%s: the exported SavedModel takes none (a checkpoint's "
                                 "decoders do)" % name)
        if self.constraints and self.diverse_beam_groups > 1:
            raise ValueError("constraints cannot be combined with diverse_beam_groups %d: the "
                             "constrained search shares one beam among its banks"
                             % self.diverse_beam_groups)
        for index, constraints in enumerate(self.constraints or ()):
            forced = sum(map(len, constraints)) + len((self.target_prefix or [()] * (
                index + 1))[index])
            if not all(constraints):
                raise ValueError("constraints[%d] holds an empty constraint" % index)
            if forced + 1 > info.context["max_target_length"]:
                raise ValueError("constraints[%d]: its %d pieces, the target prefix's and the end "
                                 "token must fit in max_target_length %d, got %d" % (
                                     index, sum(map(len, constraints)),
                                     info.context["max_target_length"], forced + 1))
        return self

    @property
    def draws_samples(self):
        """Whether the search draws samples (sample, and mbr of samples): num_samples of them."""
        return self.decoder == "sample" or self.decoder == "mbr" and (
            self.mbr_candidates == "sample")

    @property
    def width(self):
        """K, the hypotheses the search keeps."""
        if self.decoder in ("greedy", "exact"):
            return 1
        return self.num_samples if self.draws_samples else self.beam_width

    @property
    def searched_beam_width(self):
        """The beam width an answer reports: None where the search takes none."""
        return None if self.draws_samples or self.decoder == "exact" else self.width

    def used_options(self):
        """{name: value} of the decoding options the decoder uses."""
        return {name: getattr(self, name) for name in OPTIONS if takes(self.decoder, name)}

    def for_call(self, target_prefix=None, n_best=None, constraints=None):
        """This request for one call of sentences it was validated for: their target prefixes and
        constraints (ids, as the fields; none: None) and the n_best it keeps (None: its own)."""
        return self.model_copy(update=dict(per_sentence(target_prefix, constraints),
                                           n_best=n_best or self.n_best))

    def for_sentences(self, indices):
        """This request for the sentences at `indices` of those it was validated for."""
        return self.model_copy(update=per_sentence(*(
            values and [values[index] for index in indices]
            for values in (self.target_prefix, self.constraints))))


def per_sentence(target_prefix, constraints):
    """The per-sentence fields as a DecodeRequest holds them: tuples, or None where no sentence
    has one."""
    return {"target_prefix": tuple(map(tuple, target_prefix)) if any(target_prefix or ()) else None,
            "constraints": tuple(tuple(map(tuple, each)) for each in constraints)
            if any(constraints or ()) else None}


def shown(value):
    """A value as an error message shows it: its JSON (or repr) cut to 40 characters; an integer
    of more than 15 digits described, not written out."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return "an integer of more than 15 digits" if abs(value) >= 10 ** 15 else str(int(value))
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:40] + "..."


def decode_request(served, fields):
    """The DecodeRequest of `fields` (decoder, beam_width, n_best, trace, target_prefix and the
    decoding options; absent or None: the default) for a model serving `served`. ValueError
    names the first bad field, its bounds and the value given."""
    try:
        return DecodeRequest.model_validate(fields, context=dict(served.limits, served=served))
    except ValidationError as error:
        raise ValueError(message(error.errors()[0], served.limits)) from None


def message(error, limits):
    """The message of a pydantic error of a DecodeRequest (one of ValidationError.errors()):
    the field, what it must be (bounds from `limits`) and the value given."""
    if error["type"] == "value_error":  # a rule's own message
        return str(error["ctx"]["error"])
    name = error["loc"][0] + "".join("[%s]" % index for index in error["loc"][1:])
    if error["type"] == "extra_forbidden":
        return "unknown decoding option %s; the options are %s" % (shown(name), ", ".join(OPTIONS))
    return "%s %s, got %s" % (name, field_problem(error, limits), shown(error["input"]))


def score_request(served, options):
    """The DecodeRequest a score is computed under (`options` itself if it is one): `options`
    (name -> value, None: the config's), each one that changes a score, as greedy decoding
    scores; ValueError names a bad one, or a SavedModel's `served`, which cannot score."""
    if served.exported:
        raise ValueError("scoring needs a checkpoint (the exported SavedModel only searches)")
    if isinstance(options, DecodeRequest):
        return options
    other = sorted(name for name, value in (options or {}).items()
                   if value is not None and name not in SCORE_OPTIONS)
    if other:
        raise ValueError("%s does not change a score; the scoring options are %s"
                         % (other[0], ", ".join(SCORE_OPTIONS)))
    return decode_request(served, dict(options or {}, decoder="greedy"))


def add_flags(parser, names=OPTIONS):
    """Adds a --name flag per decoding option of `names` (absent: None, the config's default)."""
    group = parser.add_argument_group("decoding options (default: the model's config)")
    for name in names:
        field = DecodingOptions.model_fields[name]
        literal = typing.get_origin(field.annotation) is typing.Literal
        group.add_argument("--" + name, type=str if literal else field.annotation,
                           help=field.description.replace("%", "%%"),  # argparse formats it
                           choices=typing.get_args(field.annotation) if literal else None)


def flag_values(args, names=OPTIONS):
    """The decoding options given as flags: {name: value or None}."""
    return {name: getattr(args, name) for name in names}
