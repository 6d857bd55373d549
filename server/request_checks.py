"""What a request may hold: its JSON body read and every field checked, or an ApiError saying
which field is wrong and why (docs/API.md, "HTTP API" and "Scoring a translation"); its decoding
fields make one DecodeRequest (decode/request.py)."""

import collections
import json
import unicodedata

from flask import request

from decode.request import decode_request, shown
from seq2seq.decoding_options import OPTIONS, SCORE_OPTIONS

REQUEST_FIELDS = ("decoder", "beam_width", "n_best", "trace") + OPTIONS  # a DecodeRequest's
FIELDS = ("text", "texts") + REQUEST_FIELDS[:4] + ("target_prefix",) + OPTIONS
SCORE_TEXT_FIELDS = ("source", "target", "target_pieces", "pairs")
SCORE_FIELDS = SCORE_TEXT_FIELDS + OPTIONS  # score_request names the options that are no score's
PAIR_FIELDS = ({"source", "target"}, {"source", "target_pieces"})
MAX_SERVED_EXPANSIONS = 20000  # the exact search's cap a request may ask for (SERVING-NOTES.md)
MAX_INTEGER_DIGITS = 100  # longer integers read as +-10**100: out of every range alike
ALLOWED_CONTROLS = frozenset("\t\n\r")  # whitespace a pasted paragraph may carry
REFUSED_CHARACTERS = {"Cc": "the control character", "Cs": "an unpaired surrogate"}
CODES = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "payload_too_large",
         415: "unsupported_media_type", 431: "request_header_fields_too_large",
         500: "internal_error", 501: "not_implemented", 503: "unavailable"}
BODY_OVER_LIMIT = "the body is over the limit of %d bytes"  # also waitress's 413
JSON_TYPE_NAMES = {type(None): "null", bool: "a boolean", int: "a number", float: "a number",
                   str: "a string", list: "an array", dict: "an object"}

Limits = collections.namedtuple("Limits",
                                "max_body_bytes max_texts max_chars max_tokens max_unrolled_tokens")
# One text of a request: source ids, hypotheses wanted, target prefix ("": none) and its ids.
Item = collections.namedtuple("Item", "ids n_best prefix prefix_ids")


class ApiError(Exception):
    """ApiError(status, message): a request the server refuses, and what to send back."""


def error_document(status, message):
    """docs/API.md's JSON error body for an HTTP status."""
    return {"error": {"code": CODES.get(status, "error"), "message": message}}


def served_here(translator):
    """The translator's `served` (decode/request.py), capped as this server caps the exact
    search's max_expansions (at least the default)."""
    served = translator.served
    return served._replace(limits=dict(served.limits, max_expansions=max(
        MAX_SERVED_EXPANSIONS, served.defaults["max_expansions"])))


def request_fields():
    """The JSON object a POST carries, or raises ApiError (415 for another content type)."""
    mimetype, charset = request.mimetype, request.mimetype_params.get("charset")
    if mimetype != "application/json":
        raise ApiError(415, "send the body as JSON with Content-Type: application/json, "
                       "got %s" % (json.dumps(mimetype) if mimetype else "no Content-Type"))
    if charset is not None and charset.lower() not in ("utf-8", "utf8"):
        raise ApiError(415, "the body must be UTF-8, got charset=%s" % charset)
    return parse_json_object(request.get_data(cache=False))


def parse_json_object(body):
    """Decodes a UTF-8 JSON object, or raises ApiError naming what is wrong."""

    def reject_constant(name):  # NaN, Infinity: Python's, not JSON
        raise ValueError("%s is not a JSON value" % name)

    def parse_int(text):  # a huge integer costs nothing to parse
        if len(text.lstrip("-")) <= MAX_INTEGER_DIGITS:
            return int(text)
        return (-1 if text.startswith("-") else 1) * 10 ** MAX_INTEGER_DIGITS

    def object_without_repeated_names(pairs):
        value = {}
        for name, member in pairs:
            if name in value:
                raise ApiError(400, "the field %s appears twice; give each field once"
                               % shown(name))
            value[name] = member
        return value

    if not body.strip():
        raise ApiError(400, 'the body is empty; send a JSON object such as {"text": "Hello"}')
    try:
        document = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ApiError(400, "the body is not valid UTF-8 (byte 0x%02x at offset %d)"
                       % (body[error.start], error.start)) from None
    try:
        value = json.loads(document, parse_constant=reject_constant, parse_int=parse_int,
                           object_pairs_hook=object_without_repeated_names)
    except ValueError as error:
        raise ApiError(400, "the body is not valid JSON: %s" % error) from None
    except RecursionError:
        raise ApiError(400, "the body is not valid JSON: nested too deeply") from None
    if not isinstance(value, dict):
        raise ApiError(400, "the body must be a JSON object, got %s"
                       % JSON_TYPE_NAMES[type(value)])
    return value


def _check_known(fields, known, listed=None):
    """Raises ApiError (400) naming the first of `fields` not in `known`, and `listed` (default
    `known`) as the fields there are."""
    unknown = sorted(set(fields) - set(known))
    if unknown:
        raise ApiError(400, "unknown field %s; the fields are %s"
                       % (shown(unknown[0]), ", ".join(listed or known)))


def parse_translate_request(fields, limits, translator):
    """Returns (an Item per text, the DecodeRequest) of a POST /translate, or raises ApiError
    (400)."""
    _check_known(fields, FIELDS)
    if ("text" in fields) == ("texts" in fields):
        raise ApiError(400, 'give exactly one of "text" (a string) or "texts" (a list of strings)')
    if "text" in fields:
        named = [("text", fields["text"])]
    else:
        texts = list_field(fields, "texts", "strings", limits)
        named = [("texts[%d]" % index, text) for index, text in enumerate(texts)]
    token_ids = [_token_ids(name, text, limits, translator) for name, text in named]
    prefixes, prefix_names = _target_prefixes(fields.get("target_prefix"), len(named), limits)
    if fields.get("trace") is True and len(token_ids) != 1:
        raise ApiError(400, "trace needs exactly one text, got texts with %d" % len(token_ids))
    prefix_ids = [_prefix_ids(name, prefix, limits, translator) if prefix else []
                  for name, prefix in zip(prefix_names, prefixes)]
    if fields.get("decoder") == "unrolled":
        lengths = [(name, len(ids), "source") for (name, _), ids in zip(named, token_ids)]
        lengths += [(name, len(ids), "prefix") for name, ids in zip(prefix_names, prefix_ids)]
        for name, length, kind in lengths:
            if length > limits.max_unrolled_tokens:
                raise ApiError(400, "%s has %d tokens; the unrolled decoder's graph grows with "
                               "the length, so it serves up to %d %s tokens here; use "
                               "while_loop" % (name, length, limits.max_unrolled_tokens, kind))
    try:
        wanted = decode_request(served_here(translator), dict(
            {name: fields.get(name) for name in REQUEST_FIELDS}, target_prefix=prefix_ids))
    except ValueError as error:
        raise ApiError(400, str(error)) from None
    return [Item(ids, wanted.n_best, prefix, ids_forced) for ids, prefix, ids_forced
            in zip(token_ids, prefixes, prefix_ids)], wanted


def _target_prefixes(value, count, limits):
    """A request's target_prefix as one stripped string per text ("": none) and the name of the
    field each came from, or ApiError."""
    if value is None or isinstance(value, str):
        return ([checked_text("target_prefix", value or "", limits, may_be_empty=True)] * count,
                ["target_prefix"] * count)
    if not isinstance(value, list):
        raise ApiError(400, "target_prefix must be a string (for every text) or a list of "
                       "strings (one per text), got %s" % JSON_TYPE_NAMES[type(value)])
    if len(value) != count:
        raise ApiError(400, "target_prefix has %d entries for %d texts: give one per text"
                       % (len(value), count))
    names = ["target_prefix[%d]" % index for index in range(count)]
    return [checked_text(name, prefix, limits, True) for name, prefix in zip(names, value)], names


def list_field(fields, name, items, limits):
    """fields[name], a non-empty list of at most limits.max_texts `items`, or ApiError (400)."""
    value = fields[name]
    if not isinstance(value, list):
        raise ApiError(400, "%s must be a list of %s, got %s"
                       % (name, items, JSON_TYPE_NAMES[type(value)]))
    if not value:
        raise ApiError(400, "%s is empty" % name)
    if len(value) > limits.max_texts:
        raise ApiError(400, "%s has %d entries; the limit is %d"
                       % (name, len(value), limits.max_texts))
    return value


def parse_score_request(fields, limits, translator):
    """Returns (source ids, target ids, the DecodeRequest of its options) of a POST /score, or
    raises ApiError; a pair gives a target or its target pieces."""
    _check_known(fields, SCORE_FIELDS, SCORE_TEXT_FIELDS + SCORE_OPTIONS)
    single = {"source", "target", "target_pieces"} & set(fields)
    if "pairs" in fields:
        if single:
            raise ApiError(400, 'give "pairs", or "source" and "target" (or "target_pieces"), '
                           "not both")
        pairs = list_field(fields, "pairs", "objects", limits)
        for index, pair in enumerate(pairs):
            if not isinstance(pair, dict) or set(pair) not in PAIR_FIELDS:
                raise ApiError(400, 'pairs[%d] must be an object with "source" and "target" (or '
                               '"target_pieces"), got %s' % (index, shown(pair)))
        named = [("pairs[%d]." % index, pair) for index, pair in enumerate(pairs)]
    elif single in PAIR_FIELDS:
        named = [("", fields)]
    elif {"target", "target_pieces"} <= single:
        raise ApiError(400, 'give "target" (a string) or "target_pieces" (a list of pieces), '
                       "not both")
    else:
        raise ApiError(400, 'give "source" and "target" (strings) or "target_pieces" (a list of '
                       'pieces), or "pairs" (a list of {"source", "target"} objects)')
    source_ids = [_token_ids(prefix + "source", pair["source"], limits, translator)
                  for prefix, pair in named]
    from decode.graphs import output_length_limit  # TensorFlow's: loaded with the model
    longest = output_length_limit(limits.max_tokens, translator.config["decode"]) - 1
    target_ids = []  # the character limit bounds the work; any translation /translate gives: in
    for prefix, pair in named:
        name = prefix + ("target" if "target" in pair else "target_pieces")
        if "target" in pair:
            target = checked_text(name, pair["target"], limits, True)
        elif not isinstance(pair["target_pieces"], list):
            raise ApiError(400, "%s must be a list of pieces, got %s"
                           % (name, JSON_TYPE_NAMES[type(pair["target_pieces"])]))
        else:
            target = pair["target_pieces"]
        try:
            target_ids.append(translator.target_ids(target, name))
        except ValueError as error:  # a piece the target vocabulary lacks
            raise ApiError(400, str(error)) from None
        if len(target_ids[-1]) > longest:
            raise ApiError(400, "%s has %d tokens; the limit is %d, the longest translation of a "
                           "source of %d" % (name, len(target_ids[-1]), longest, limits.max_tokens))
    try:
        return source_ids, target_ids, translator.score_request(
            {name: fields[name] for name in OPTIONS if name in fields})
    except ValueError as error:
        raise ApiError(400, str(error)) from None


def checked_text(name, text, limits, may_be_empty=False):
    """Returns a client's text stripped, or raises ApiError: not a string, empty, too long, or
    holding a refused character."""
    if not isinstance(text, str):
        raise ApiError(400, "%s must be a string, got %s" % (name, JSON_TYPE_NAMES[type(text)]))
    text = text.strip()
    if not text and not may_be_empty:
        raise ApiError(400, "%s is empty" % name)
    if len(text) > limits.max_chars:
        raise ApiError(400, "%s has %d characters; the limit is %d"
                       % (name, len(text), limits.max_chars))
    for position, char in enumerate(text):
        refused = REFUSED_CHARACTERS.get(unicodedata.category(char))
        if refused and char not in ALLOWED_CONTROLS:
            raise ApiError(400, "%s contains %s U+%04X at position %d"
                           % (name, refused, ord(char), position))
    return text


def _prefix_ids(name, prefix, limits, translator):
    """Returns the target ids a target prefix forces, or raises ApiError (400): a character the
    target vocabulary lacks, more tokens than a source may have."""
    try:
        ids = translator.prefix_ids(prefix, name)
    except ValueError as error:
        raise ApiError(400, str(error)) from None
    if len(ids) > limits.max_tokens:
        raise ApiError(400, "%s has %d tokens; the limit is %d"
                       % (name, len(ids), limits.max_tokens))
    return ids


def _token_ids(name, text, limits, translator):
    """Returns the source token ids of one text, or raises ApiError."""
    token_ids = translator.tokenize(checked_text(name, text, limits))
    if not token_ids:  # normalisation drops some characters (a zero-width space)
        raise ApiError(400, "%s is empty once tokenized: the tokenizer drops every "
                       "character it has" % name)
    if len(token_ids) > limits.max_tokens:
        raise ApiError(400, "%s has %d tokens; the limit is %d (long words split into "
                       "many tokens)" % (name, len(token_ids), limits.max_tokens))
    return token_ids
