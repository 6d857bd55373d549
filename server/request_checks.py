"""A request's JSON body read and every field checked, or an ApiError naming the field and why
(docs/API.md); its decoding fields make one DecodeRequest (decode/request.py), which checks them."""

import collections
import json
import unicodedata

from flask import request

from decode.request import decode_request, shown
from seq2seq.decoding_options import OPTIONS, SCORE_OPTIONS

REQUEST_FIELDS = ("decoder", "beam_width", "n_best", "trace") + OPTIONS  # a DecodeRequest's
FIELDS = ("text", "texts") + REQUEST_FIELDS[:4] + ("target_prefix", "constraints") + OPTIONS
SCORE_TEXT_FIELDS = ("source", "target", "target_pieces", "pairs")
PAIR_FIELDS = ({"source", "target"}, {"source", "target_pieces"})
# A field given for every text or one per text: its type for every text, how to say it, and each.
PER_TEXT = {"target_prefix": (str, "a string", "strings"),
            "constraints": (list, "a list of strings", "lists of strings")}
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
# One text of a request: source ids, hypotheses wanted, target prefix ("": none) and its ids,
# constraints and their ids, and the placeholders its translation puts back (`originals`).
Item = collections.namedtuple(
    "Item", "ids n_best prefix prefix_ids constraints constraint_ids originals")


class ApiError(Exception):
    """ApiError(status, message): a request the server refuses, and what to send back."""


def wrong_type(name, expected, value):
    """The ApiError (400) of a field `name` whose JSON `value` is not `expected`."""
    return ApiError(400, "%s must be %s, got %s" % (name, expected, JSON_TYPE_NAMES[type(value)]))


def error_document(status, message, libretranslate=False):
    """docs/API.md's JSON error body for an HTTP status, or LibreTranslate's: {"error": message}."""
    if libretranslate:
        return {"error": message}
    return {"error": {"code": CODES.get(status, "error"), "message": message}}


def check_count(name, count, unit, limit, why=""):
    """Raises ApiError (400) if `name` has more than `limit` `unit`; `why` ends the message."""
    if count > limit:
        raise ApiError(400, "%s has %d %s; the limit is %d%s" % (name, count, unit, limit, why))


def served_here(translator):
    """The translator's `served`, its exact search's max_expansions capped as this server caps it
    (at least the default)."""
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
    body = request.get_data(cache=False)

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
        value = json.loads(body.decode("utf-8"), parse_constant=reject_constant,
                           parse_int=parse_int, object_pairs_hook=object_without_repeated_names)
    except UnicodeDecodeError as error:
        raise ApiError(400, "the body is not valid UTF-8 (byte 0x%02x at offset %d)"
                       % (body[error.start], error.start)) from None
    except ValueError as error:
        raise ApiError(400, "the body is not valid JSON: %s" % error) from None
    except RecursionError:
        raise ApiError(400, "the body is not valid JSON: nested too deeply") from None
    if not isinstance(value, dict):
        raise wrong_type("the body", "a JSON object", value)
    return value


def _check_known(fields, known, listed=None):
    """Raises ApiError (400) naming the first of `fields` not `known`; lists `listed` or `known`."""
    unknown = sorted(set(fields) - set(known))
    if unknown:
        raise ApiError(400, "unknown field %s; the fields are %s"
                       % (shown(unknown[0]), ", ".join(listed or known)))


def indexed(name, values):
    """A list field's values, each with its name: [("name[i]", value)]."""
    return [("%s[%d]" % (name, index), value) for index, value in enumerate(values)]


def named_texts(fields, limits):
    """A POST /translate's texts, each with the name of its field: [(name, text)], or ApiError."""
    _check_known(fields, FIELDS)
    if ("text" in fields) == ("texts" in fields):
        raise ApiError(400, 'give exactly one of "text" (a string) or "texts" (a list of strings)')
    if "text" in fields:
        return [("text", fields["text"])]
    return indexed("texts", list_field(fields, "texts", "strings", limits))


def parse_translate_request(named, fields, limits, translator):
    """Returns (an Item per text, the DecodeRequest) of the texts `named` ([(name, text)]) under
    the other `fields` of a POST /translate, or raises ApiError (400)."""
    token_ids = [_token_ids(name, text, limits, translator) for name, text in named]
    prefixes = _per_text(fields, "target_prefix", len(named),
                         lambda name, prefix: checked_text(name, prefix, limits, True))
    if fields.get("trace") is True and len(token_ids) != 1:
        raise ApiError(400, "trace needs exactly one text, got texts with %d" % len(token_ids))
    prefix_ids = [_ids_within(name, prefix, limits.max_tokens, translator.prefix_ids)
                  if prefix else [] for name, prefix in prefixes]
    constraints = _per_text(fields, "constraints", len(named),
                            lambda name, texts: _constraint_texts(name, texts, limits))
    constraint_ids = [[_ids_within(name, text, limits.max_tokens, translator.constraint_ids)
                       for name, text in given] for _, given in constraints]
    if fields.get("decoder") == "unrolled":
        lengths = [(name, len(ids), "source") for (name, _), ids in zip(named, token_ids)]
        lengths += [(name, len(ids), "prefix") for (name, _), ids in zip(prefixes, prefix_ids)]
        lengths += [(name, sum(map(len, ids)), "constraint")
                    for (name, _), ids in zip(constraints, constraint_ids)]
        for name, length, kind in lengths:
            if length > limits.max_unrolled_tokens:
                raise ApiError(400, "%s has %d tokens; the unrolled decoder's graph grows with "
                               "the length, so it serves up to %d %s tokens here; use "
                               "while_loop" % (name, length, limits.max_unrolled_tokens, kind))
    try:
        wanted = decode_request(served_here(translator), dict(
            {name: fields.get(name) for name in REQUEST_FIELDS}, target_prefix=prefix_ids,
            constraints=constraint_ids))
    except ValueError as error:
        raise ApiError(400, str(error)) from None
    return [Item(token_ids[index], wanted.n_best, prefixes[index][1], prefix_ids[index],
                 [text for _, text in constraints[index][1]], constraint_ids[index],
                 translator.placeholders(named[index][1])) for index in range(len(named))], wanted


def _per_text(fields, name, count, check):
    """A PER_TEXT field as (name, check(name, value)) per text of `count`: the value for every
    text (absent or null: empty), or a list of one per text, or ApiError (400)."""
    value = fields.get(name)
    kind, once, each = PER_TEXT[name]
    if isinstance(value, list) and (kind is str or any(isinstance(entry, list) for entry in value)):
        if len(value) != count:
            raise ApiError(400, "%s has %d entries for %d texts: give one per text"
                           % (name, len(value), count))
        return [(each, check(each, entry)) for each, entry in indexed(name, value)]
    if value is not None and not isinstance(value, kind):
        raise wrong_type(name, "%s (for every text) or a list of %s (one per text)" % (once, each),
                         value)
    return [(name, check(name, kind() if value is None else value))] * count


def _constraint_texts(name, texts, limits):
    """The (name, text) of each constraint a list holds, or ApiError (400)."""
    if not isinstance(texts, list):
        raise wrong_type(name, "a list of strings", texts)
    return [(each, checked_text(each, text, limits)) for each, text in indexed(name, texts)]


def list_field(fields, name, items, limits):
    """fields[name], a non-empty list of at most limits.max_texts `items`, or ApiError (400)."""
    value = fields[name]
    if not isinstance(value, list):
        raise wrong_type(name, "a list of " + items, value)
    if not value:
        raise ApiError(400, "%s is empty" % name)
    check_count(name, len(value), "entries", limits.max_texts)
    return value


def parse_score_request(fields, limits, translator):
    """Returns (source ids, target ids, the DecodeRequest of its options) of a POST /score, or
    raises ApiError; a pair gives a target or its target pieces."""
    _check_known(fields, SCORE_TEXT_FIELDS + OPTIONS, SCORE_TEXT_FIELDS + SCORE_OPTIONS)
    single = {"source", "target", "target_pieces"} & set(fields)
    if "pairs" in fields:
        if single:
            raise ApiError(400, 'give "pairs", or "source" and "target" (or "target_pieces"), '
                           "not both")
        named = [(name + ".", pair) for name, pair
                 in indexed("pairs", list_field(fields, "pairs", "objects", limits))]
        for name, pair in named:
            if not isinstance(pair, dict) or set(pair) not in PAIR_FIELDS:
                raise ApiError(400, '%s must be an object with "source" and "target" (or '
                               '"target_pieces"), got %s' % (name[:-1], shown(pair)))
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
            raise wrong_type(name, "a list of pieces", pair["target_pieces"])
        else:
            target = pair["target_pieces"]
        target_ids.append(_ids_within(name, target, longest, translator.target_ids,
                                      ", the longest translation of a source of %d"
                                      % limits.max_tokens))
    try:
        return source_ids, target_ids, translator.score_request(
            {name: fields[name] for name in OPTIONS if name in fields})
    except ValueError as error:
        raise ApiError(400, str(error)) from None


def checked_text(name, text, limits, may_be_empty=False):
    """Returns a client's text stripped, or raises ApiError: not a string, empty, too long, or
    holding a refused character."""
    if not isinstance(text, str):
        raise wrong_type(name, "a string", text)
    text = text.strip()
    if not text and not may_be_empty:
        raise ApiError(400, "%s is empty" % name)
    check_count(name, len(text), "characters", limits.max_chars)
    for position, char in enumerate(text):
        refused = REFUSED_CHARACTERS.get(unicodedata.category(char))
        if refused and char not in ALLOWED_CONTROLS:
            raise ApiError(400, "%s contains %s U+%04X at position %d"
                           % (name, refused, ord(char), position))
    return text


def _ids_within(name, text, limit, to_ids, why=""):
    """`to_ids(text, name)`, at most `limit` ids (`why` ends that message), or ApiError (400)."""
    try:
        ids = to_ids(text, name)
    except ValueError as error:  # a character or piece the target vocabulary lacks
        raise ApiError(400, str(error)) from None
    check_count(name, len(ids), "tokens", limit, why)
    return ids


def _token_ids(name, text, limits, translator):
    """Returns the source token ids of one text, or raises ApiError."""
    token_ids = _ids_within(name, checked_text(name, text, limits), limits.max_tokens,
                            lambda text, _: translator.tokenize(text),
                            " (long words split into many tokens)")
    if not token_ids:  # normalisation drops some characters (a zero-width space)
        raise ApiError(400, "%s is empty once tokenized: the tokenizer drops every "
                       "character it has" % name)
    return token_ids
