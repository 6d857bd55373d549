"""Turns a POST /translate body into a checked request, or a clear 4xx error.

Every check names the field and the limit, so a client can fix its request
from the message alone (``texts[2] has 612 characters; the limit is 500``).
The body's shape and JSON types are checked here; the decoding options
(decoder name, beam width and n_best ranges) by the Translator itself
(``check_options``), the one place that knows what its model serves (a
SavedModel offers one decoder at one beam width).

null: the options "decoder", "beam_width" and "n_best" are optional, and
``null`` is the same as leaving one out (its default applies), for all three
alike. "text" and "texts" are not options: null is no text (a 400).

Integers longer than MAX_INTEGER_DIGITS digits are read as +-10**MAX_INTEGER_DIGITS:
out of every range alike, and so refused with the usual out-of-range message
(Python refuses to read integers of over 4,300 digits at all, with a message
about its own settings).
"""

import collections
import json
import unicodedata

from decode.checks import shown
from server.errors import ApiError

DEFAULT_DECODER = "while_loop"
FIELDS = ("text", "texts", "decoder", "beam_width", "n_best")
MAX_INTEGER_DIGITS = 100
# Whitespace a pasted paragraph may carry; every other control character is refused.
ALLOWED_CONTROLS = frozenset("\t\n\r")

# The request limits that do not depend on the model (the beam widths do: the
# Translator's `beam_widths`). max_unrolled_tokens: the unrolled decoder's
# graph grows with the length (one graph per length bucket, seconds to build),
# so it serves sources up to the length its graphs were built for at start.
Limits = collections.namedtuple(
    "Limits", "max_body_bytes max_texts max_chars max_tokens max_unrolled_tokens")

# The decoding settings of a request. Requests with the same decoder and beam
# width can share a batch: n_best only selects from the same beam.
DecodeSettings = collections.namedtuple("DecodeSettings", "decoder beam_width n_best")

# A checked request: each text's source token ids (tokenized once, here) and its settings.
TranslateRequest = collections.namedtuple("TranslateRequest", "token_ids settings")


def limits_from_config(config, max_unrolled_tokens):
    """The request limits of a resolved config's "serve" section, and the unrolled one."""
    serve = config["serve"]
    return Limits(max_body_bytes=serve["max_body_bytes"], max_texts=serve["max_texts"],
                  max_chars=serve["max_chars"], max_tokens=serve["max_tokens"],
                  max_unrolled_tokens=max_unrolled_tokens)


def json_type_name(value):
    """The JSON name of a parsed value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


class TranslateRequestParser:
    """Checks POST /translate bodies against the limits and the model's decoders.

    Args:
      limits: a Limits.
      translator: what translates: its `check_options` (raises ValueError,
        naming the option, for an unknown decoder or a value out of range)
        and `tokenize`.
    """

    def __init__(self, limits, translator):
        self._limits = limits
        self._translator = translator

    def parse(self, mimetype, charset, body):
        """Returns a TranslateRequest, or raises ApiError (400 or 415).

        Args:
          mimetype: the Content-Type without parameters, e.g. "application/json".
          charset: its charset parameter, or None.
          body: the raw request body (bytes), already within max_body_bytes.
        """
        _check_content_type(mimetype, charset)
        fields = _parse_json_object(body)
        unknown = sorted(set(fields) - set(FIELDS))
        if unknown:
            raise ApiError(400, "unknown field %s; the fields are %s"
                           % (shown(unknown[0]), ", ".join(FIELDS)))
        named_texts = _named_texts(fields, self._limits)
        token_ids = [self._check_text(name, text) for name, text in named_texts]
        settings = self._settings(fields)
        if settings.decoder == "unrolled":
            self._check_unrolled_lengths([name for name, _ in named_texts], token_ids)
        return TranslateRequest(token_ids, settings)

    def _check_text(self, name, text):
        """Returns the source token ids of the text, or raises ApiError."""
        if not isinstance(text, str):
            raise ApiError(400, "%s must be a string, got %s" % (name, json_type_name(text)))
        text = text.strip()
        if not text:
            raise ApiError(400, "%s is empty" % name)
        if len(text) > self._limits.max_chars:
            raise ApiError(400, "%s has %d characters; the limit is %d"
                           % (name, len(text), self._limits.max_chars))
        for position, char in enumerate(text):
            category = unicodedata.category(char)
            if category == "Cc" and char not in ALLOWED_CONTROLS:
                raise ApiError(400, "%s contains the control character U+%04X at position %d"
                               % (name, ord(char), position))
            if category == "Cs":
                # A lone "\ud800" escape parses as JSON but is no character:
                # it cannot be encoded for the tokenizer.
                raise ApiError(400, "%s contains an unpaired surrogate U+%04X at position %d"
                               % (name, ord(char), position))
        token_ids = self._translator.tokenize(text)
        if not token_ids:
            # The tokenizer's normalisation drops some characters (a zero-width
            # space, a byte order mark): a text of nothing else cannot be
            # translated, and in a shared batch it would fail its neighbours too.
            raise ApiError(400, "%s is empty once tokenized: the tokenizer drops every "
                           "character it has" % name)
        if len(token_ids) > self._limits.max_tokens:
            raise ApiError(400, "%s has %d tokens; the limit is %d (long words split into "
                           "many tokens)" % (name, len(token_ids), self._limits.max_tokens))
        return token_ids

    def _check_unrolled_lengths(self, names, token_ids):
        limit = self._limits.max_unrolled_tokens
        for name, ids in zip(names, token_ids):
            if len(ids) > limit:
                raise ApiError(400, "%s has %d tokens; the unrolled decoder's graph grows with "
                               "the length, so it serves up to %d source tokens here; use "
                               "while_loop" % (name, len(ids), limit))

    def _settings(self, fields):
        """The decoding settings, the beam width resolved (its default; 1 for greedy).

        Here: that beam_width and n_best are JSON integers (a float or a string
        is refused by name), and null as "leave it out". The translator's
        check_options checks the rest: the decoder (its type too) and the
        values' ranges.
        """
        decoder = fields.get("decoder")
        if decoder is None:
            decoder = DEFAULT_DECODER
        beam_width = _optional_integer(fields, "beam_width")
        n_best = _optional_integer(fields, "n_best")
        if n_best is None:
            n_best = 1
        try:
            beam_width = self._translator.check_options(decoder, beam_width, n_best)
        except ValueError as error:
            raise ApiError(400, str(error)) from None
        return DecodeSettings(decoder, beam_width, n_best)


def _check_content_type(mimetype, charset):
    if mimetype != "application/json":
        raise ApiError(415, "send the body as JSON with Content-Type: application/json, "
                       "got %s" % (json.dumps(mimetype) if mimetype else "no Content-Type"))
    if charset is not None and charset.lower() not in ("utf-8", "utf8"):
        raise ApiError(415, "the body must be UTF-8, got charset=%s" % charset)


def _reject_constant(name):
    raise ValueError("%s is not a JSON value" % name)


def _parse_int(text):
    """A JSON integer; one of over MAX_INTEGER_DIGITS digits as +-10**MAX_INTEGER_DIGITS."""
    digits = text.lstrip("-")
    if len(digits) <= MAX_INTEGER_DIGITS:
        return int(text)
    return (-1 if text.startswith("-") else 1) * 10 ** MAX_INTEGER_DIGITS


def _object_without_repeated_names(pairs):
    """A JSON object as a dict, or ApiError if a name repeats.

    Parsers disagree on which of two equal names wins (Python's json keeps
    the last), so {"text": "a", "text": "b"} has no one meaning: refuse it.
    """
    value = {}
    for name, member in pairs:
        if name in value:
            raise ApiError(400, "the field %s appears twice; give each field once" % shown(name))
        value[name] = member
    return value


def _parse_json_object(body):
    """Decodes a UTF-8 JSON object, or raises ApiError naming what is wrong."""
    if not body.strip():
        raise ApiError(400, 'the body is empty; send a JSON object such as {"text": "Hello"}')
    try:
        document = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ApiError(400, "the body is not valid UTF-8 (byte 0x%02x at offset %d)"
                       % (body[error.start], error.start)) from None
    try:
        # NaN and Infinity are Python's extensions, not JSON.
        value = json.loads(document, parse_constant=_reject_constant, parse_int=_parse_int,
                           object_pairs_hook=_object_without_repeated_names)
    except ValueError as error:
        raise ApiError(400, "the body is not valid JSON: %s" % error) from None
    except RecursionError:
        raise ApiError(400, "the body is not valid JSON: nested too deeply") from None
    if not isinstance(value, dict):
        raise ApiError(400, "the body must be a JSON object, got %s" % json_type_name(value))
    return value


def _named_texts(fields, limits):
    """Returns [(name for messages, value)] from "text" or "texts", checking their shape."""
    if ("text" in fields) == ("texts" in fields):
        raise ApiError(400, 'give exactly one of "text" (a string) or "texts" (a list of strings)')
    if "text" in fields:
        return [("text", fields["text"])]
    texts = fields["texts"]
    if not isinstance(texts, list):
        raise ApiError(400, "texts must be a list of strings, got %s" % json_type_name(texts))
    if not texts:
        raise ApiError(400, "texts is empty")
    if len(texts) > limits.max_texts:
        raise ApiError(400, "texts has %d entries; the limit is %d" % (len(texts), limits.max_texts))
    return [("texts[%d]" % index, text) for index, text in enumerate(texts)]


def _optional_integer(fields, name):
    """Returns fields[name] if it is a JSON integer, None if absent or null, or raises ApiError."""
    value = fields.get(name)
    # bool is an int in Python, but `true` is no beam width.
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ApiError(400, "%s must be an integer, got %s" % (name, shown(value)))
    return value

