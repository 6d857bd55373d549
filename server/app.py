"""The Flask app of DESIGN.md's HTTP API: routes, request checks, JSON errors, access log."""

import collections
import contextlib
import json
import logging
import os
import threading
import time
import unicodedata

from flask import Flask, Response, g, jsonify, request
from werkzeug.exceptions import HTTPException

from decode.options import OPTIONS, TABLE, bounds, limits, shown, takes_option
from server.batcher import Batcher
from server.training_status import training_report

LOG = logging.getLogger("seq2seq.serve")
ACCESS_LOG = logging.getLogger("seq2seq.serve.access")
PAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static", "index.html")
ROUTES = "GET /, GET /healthz, GET /v1/info, GET /v1/training, POST /translate, POST /score"
# The page is self-contained: it may talk to this server and load nothing else.
PAGE_POLICY = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
               "connect-src 'self'; img-src data:")
CODES = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "payload_too_large",
         415: "unsupported_media_type", 431: "request_header_fields_too_large",
         500: "internal_error", 501: "not_implemented", 503: "unavailable"}
DEFAULT_DECODER = "while_loop"
FIELDS = ("text", "texts", "decoder", "beam_width", "n_best", "trace") + OPTIONS
SCORE_FIELDS = ("source", "target", "pairs") + OPTIONS  # the Translator names the unused options
BEAMLESS_DECODERS = ("sample", "exact")  # no beam: no beam_width, nothing to trace
MAX_SERVED_EXPANSIONS = 20000  # the exact search's cap a request may ask for (SERVING-NOTES.md)
# The optional fields of a type: the exact Python type JSON parses them to, and its name.
TYPED_FIELDS = (("trace", bool, "true or false"), ("beam_width", int, "an integer"),
                ("n_best", int, "an integer"))
DEFAULT_MAX_UNROLLED_TOKENS = 16  # serve.py's --warm_up_source_tokens default
MAX_EXAMPLES = 8
MAX_LOGGED_CHARS = 200
MAX_METHOD_CHARS = 20
MAX_INTEGER_DIGITS = 100  # longer integers read as +-10**100: out of every range alike
ALLOWED_CONTROLS = frozenset("\t\n\r")  # whitespace a pasted paragraph may carry
# A lone surrogate ("\ud800") parses as JSON but cannot be encoded.
REFUSED_CHARACTERS = {"Cc": "the control character", "Cs": "an unpaired surrogate"}

JSON_TYPE_NAMES = {type(None): "null", bool: "a boolean", int: "a number", float: "a number",
                   str: "a string", list: "an array", dict: "an object"}
BODY_OVER_LIMIT = "the body is over the limit of %d bytes"  # also waitress's 413

Limits = collections.namedtuple(
    "Limits", "max_body_bytes max_texts max_chars max_tokens max_unrolled_tokens")
# beam_width: as the Translator takes it (None for sample and exact); options: (name, value)
# pairs of every decoding option the decoder uses, resolved.
BatchKey = collections.namedtuple("BatchKey", "decoder beam_width trace n_best options")
ItemResult = collections.namedtuple("ItemResult", "translation graphs_built step")


class ApiError(Exception):
    """ApiError(status, message): a request the server refuses, and what to send back."""


def error_document(status, message):
    """DESIGN.md's JSON error body for an HTTP status."""
    return {"error": {"code": CODES.get(status, "error"), "message": message}}


class ModelSlot:
    """The translator being served and its page examples; `fill` swaps in another between batches.

    Attributes:
      loaded_at (unix time), previous_step (of the translator replaced, or None) and
      reload_error ({"path", "message", "failed_at"} of the newest model that failed to load
      since the last fill, or None): for /v1/info, set by fill and by serve.py's reloader.
    """

    def __init__(self, translator=None, waiting=lambda: "the model is still loading; retry shortly"):
        """`waiting`: returns the 503 message while no translator is loaded."""
        self._lock = threading.Lock()
        self._loaded = None  # (translator, examples)
        self._batches = collections.Counter()  # translator -> its batches running
        self._waiting = waiting
        self.loaded_at = self.previous_step = self.reload_error = None
        if translator is not None:
            self.fill(translator)

    @property
    def ready(self):
        return self._loaded is not None

    def fill(self, translator):
        """Serves `translator` from the next batch on; the one it replaces is closed once the
        batches running on it are done."""
        loaded = (translator, read_examples(translator.config))
        with self._lock:
            previous, self._loaded = self._loaded, loaded
            self.loaded_at, self.reload_error = time.time(), None
            self.previous_step = previous[0].step if previous else None
            idle = previous is not None and not self._batches[previous[0]]
        if idle:
            previous[0].close()

    def loaded(self):
        """Returns (translator, examples), or raises ApiError 503."""
        loaded = self._loaded
        if loaded is None:
            raise ApiError(503, self._waiting())
        return loaded

    @contextlib.contextmanager
    def holding(self):
        """Yields the translator a batch is to run on, kept open until the block ends."""
        with self._lock:
            translator = self.loaded()[0]
            self._batches[translator] += 1
        try:
            yield translator
        finally:
            with self._lock:
                self._batches[translator] -= 1
                retired = not self._batches[translator] and translator is not self._loaded[0]
                if not self._batches[translator]:
                    del self._batches[translator]
            if retired:
                translator.close()


def read_examples(config, limit=MAX_EXAMPLES):
    """Up to `limit` sentences of data.data_dir/test.src (else dev.src), shortest to longest."""
    configured = (config.get("data") or {}).get("data_dir")
    if not configured:
        LOG.info("no example sentences for the page: the config names no data.data_dir")
        return []
    data_dir = os.path.abspath(configured)
    for name in ("test.src", "dev.src"):
        path = os.path.join(data_dir, name)
        if not os.path.isfile(path):
            continue
        try:
            with open(path, encoding="utf-8") as split_file:  # short chips beside full sentences
                sentences = sorted(filter(None, dict.fromkeys(map(str.strip, split_file))), key=len)
        except (OSError, ValueError) as error:  # ValueError: not UTF-8
            LOG.warning("no example sentences: cannot read %s (%s)", path, error)
            return []
        if not sentences:
            LOG.info("no example sentences for the page: %s holds none", path)
        count = min(limit, len(sentences))
        return [sentences[index * len(sentences) // count] for index in range(count)]
    LOG.info("no example sentences for the page: %s holds no test.src or dev.src%s", data_dir,
             "" if os.path.isabs(configured) else
             " (data.data_dir %s is relative to the working directory)" % json.dumps(configured))
    return []


def decoding_report(translator):
    """/v1/info's `decoding`: per option its default, allowed values, hint and decoders."""
    decode_params = translator.config["decode"]
    named, report = limits(decode_params, translator.config["data"]["max_target_length"]), {}
    for name in OPTIONS:
        option = TABLE[name]
        if option.kind == "choice":
            allowed = {"type": "choice", "choices": list(option.low)}
        else:
            low, high = bounds(option, named)
            allowed = {"type": "integer" if option.kind == "int" else "number", "min": low,
                       "max": high, "exclusive_min": option.open_low,
                       "exclusive_max": option.open_high}
        report[name] = dict(default=decode_params[name], **allowed, hint=option.hint,
                            decoders=[decoder for decoder in translator.decoders
                                      if takes_option(decoder, name)])
    report["max_expansions"]["max"] = served_max_expansions(decode_params)
    return report


def served_max_expansions(decode_params):
    """The most expansions a request may ask of the exact search (at least the default)."""
    return max(MAX_SERVED_EXPANSIONS, decode_params["max_expansions"])


def create_app(model, config, max_unrolled_tokens=DEFAULT_MAX_UNROLLED_TOKENS, model_dir=None):
    """Returns the Flask app serving `model` (a ModelSlot: 503 while empty).

    Args:
      config: the resolved config; its "serve" section sets the limits and the batching.
      max_unrolled_tokens: the longest source, in tokens, the unrolled decoder serves.
      model_dir: where /v1/training reads the trainer's status file (None: no training).
    """
    app = Flask(__name__, static_folder=None)
    serve = config["serve"]
    app.config["MAX_CONTENT_LENGTH"] = serve["max_body_bytes"]
    app.json.sort_keys = False
    app.json.ensure_ascii = False
    limits = Limits(serve["max_body_bytes"], serve["max_texts"], serve["max_chars"],
                    serve["max_tokens"], max_unrolled_tokens)

    def run_batch(key, items):
        with model.holding() as translator, translator.recording_builds() as built:
            translations = translator.translate_tokens(
                [ids for ids, _ in items], decoder=key.decoder, beam_width=key.beam_width,
                n_best=max(n_best for _, n_best in items), trace=key.trace,
                options=dict(key.options))
        return [ItemResult(translation._replace(n_best=translation.n_best[:n_best]), len(built),
                           translator.step)
                for translation, (_, n_best) in zip(translations, items)]

    concurrency = serve["concurrent_batches"] or os.cpu_count() or 1
    batcher = app.extensions["batcher"] = Batcher(
        run_batch, concurrency if serve["batching"] else float("inf"),
        serve["max_batch_sentences"], serve["batch_step_overhead"],
        hold_seconds=serve["batch_hold_ms"] / 1000.0, batch_log=serve["batch_log"])
    with open(PAGE, encoding="utf-8") as page_file:
        page = page_file.read()

    @app.get("/")
    def index():
        response = Response(page, mimetype="text/html")
        response.headers["Content-Security-Policy"] = PAGE_POLICY
        return response

    @app.get("/healthz")
    def healthz():
        return (jsonify(status="ok"), 200) if model.ready else (jsonify(status="loading"), 503)

    @app.get("/v1/info")
    def info():
        translator, examples = model.loaded()
        widths = translator.beam_widths
        totals = batcher.totals()
        return jsonify(
            model={"name": translator.model_name, "step": translator.step,
                   "source_vocab_size": translator.source_vocab_size,
                   "target_vocab_size": translator.target_vocab_size},
            decoders=list(translator.decoders),
            defaults={"decoder": DEFAULT_DECODER,
                      "beam_width": translator.check_options(DEFAULT_DECODER), "n_best": 1},
            decoding=decoding_report(translator),
            limits=dict(limits._asdict(), min_beam_width=widths[0], max_beam_width=widths[-1],
                        max_n_best=widths[-1]),
            tracing=translator.can_trace,  # "trace": true with one text (not a SavedModel)
            batching={"enabled": serve["batching"],
                      "concurrent_batches": batcher.concurrency if serve["batching"] else None,
                      "max_batch_sentences": serve["max_batch_sentences"],
                      "model_calls": totals["calls"], "sentences": totals["items"],
                      "model_call_seconds": round(totals["seconds"], 6),
                      "model_calls_running": totals["running"]},
            examples=examples, loaded_at=model.loaded_at, previous_step=model.previous_step,
            reload_error=model.reload_error)

    @app.get("/v1/training")
    def training():
        serving_step = model.loaded()[0].step if model.ready else None
        return jsonify(training_report(model_dir, serving_step))

    @app.post("/translate")
    def translate():
        translator = model.loaded()[0]
        token_ids, n_best, key = _parse_request(_request_fields(), limits, translator)
        g.sentences = len(token_ids)
        answer = batcher.submit(key, [(ids, n_best) for ids in token_ids],
                                max(map(len, token_ids)))
        translations = []
        for translation, _, _ in answer.results:
            hypotheses = [{"text": hypothesis.text, "score": float(hypothesis.score)}
                          for hypothesis in translation.n_best]
            translations.append({"text": translation.text, "score": float(translation.score),
                                 "n_best": hypotheses,
                                 "unfamiliar": bool(translation.unfamiliar)})
            if translation.proven is not None:
                translations[-1].update(proven=bool(translation.proven),
                                        expansions=int(translation.expansions))
            if translation.trace is not None:
                translations[-1]["trace"] = translation.trace
        return jsonify(
            translations=translations, decoder=key.decoder, beam_width=key.beam_width,
            options=dict(key.options),
            elapsed_ms=round((time.perf_counter() - g.started) * 1000.0, 2),
            decode_ms=round(answer.call_seconds * 1000.0, 2),
            graphs_built=answer.results[0].graphs_built,
            model={"name": translator.model_name, "step": answer.results[0].step})

    @app.post("/score")
    def score():
        sources, targets, target_names, options = _parse_score_request(
            _request_fields(), limits, model.loaded()[0])
        g.sentences = len(sources)
        with model.holding() as translator:
            try:
                scores = translator.score(sources, targets, options)
            except ValueError as error:
                raise ApiError(400, str(error)) from None
        for name, scored in zip(target_names, scores):  # the character limit bounded the work
            if scored["length"] - 1 > limits.max_tokens:
                raise ApiError(400, "%s has %d tokens; the limit is %d"
                               % (name, scored["length"] - 1, limits.max_tokens))
        return jsonify(scores=scores, model={"name": translator.model_name,
                                             "step": translator.step})

    @app.errorhandler(ApiError)
    def api_error(error):
        status, message = error.args
        return jsonify(error_document(status, message)), status

    @app.errorhandler(HTTPException)
    def http_error(error):
        if error.code == 404:
            message = "no such path: %s; the paths are %s" % (shown(request.path), ROUTES)
        elif error.code == 405:
            method = request.method
            if not (len(method) <= MAX_METHOD_CHARS and method.isascii()
                    and method.replace("-", "").replace("_", "").isalnum()):
                method = shown(method, MAX_METHOD_CHARS)
            useful = sorted(set(error.valid_methods) - {"HEAD", "OPTIONS"})
            message = "%s is not allowed on %s; use %s" % (method, request.path, ", ".join(useful))
        elif error.code == 413:
            message = BODY_OVER_LIMIT % app.config["MAX_CONTENT_LENGTH"]
        else:
            message = error.description
        allow = {"Allow": ", ".join(sorted(error.valid_methods))} if error.code == 405 else {}
        return jsonify(error_document(error.code, message)), error.code, allow

    @app.errorhandler(Exception)
    def internal_error(error):
        LOG.exception("%s %s failed", _loggable(request.method), _loggable(request.path))
        return jsonify(error_document(500, "internal error; the server has logged the details")), 500

    @app.before_request
    def start_clock():
        g.started = time.perf_counter()
        g.sentences = 0

    @app.after_request
    def log_request(response):  # one line per request: method, path, status, ms, sentences
        ACCESS_LOG.info("%s %s %d %.1fms sentences=%d", _loggable(request.method),
                        _loggable(request.path), response.status_code,
                        (time.perf_counter() - g.started) * 1000.0, g.sentences)
        return response

    return app


def _request_fields():
    """The JSON object a POST carries, or raises ApiError (415 for another content type)."""
    mimetype, charset = request.mimetype, request.mimetype_params.get("charset")
    if mimetype != "application/json":
        raise ApiError(415, "send the body as JSON with Content-Type: application/json, "
                       "got %s" % (json.dumps(mimetype) if mimetype else "no Content-Type"))
    if charset is not None and charset.lower() not in ("utf-8", "utf8"):
        raise ApiError(415, "the body must be UTF-8, got charset=%s" % charset)
    return _parse_json_object(request.get_data(cache=False))


def _parse_json_object(body):
    """Decodes a UTF-8 JSON object, or raises ApiError naming what is wrong."""

    def reject_constant(name):  # NaN, Infinity: Python's, not JSON
        raise ValueError("%s is not a JSON value" % name)

    def parse_int(text):
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


def _check_known(fields, known):
    """Raises ApiError (400) naming the first of `fields` not in `known`."""
    unknown = sorted(set(fields) - set(known))
    if unknown:
        raise ApiError(400, "unknown field %s; the fields are %s"
                       % (shown(unknown[0]), ", ".join(known)))


def _parse_request(fields, limits, translator):
    """Returns (each text's source token ids, n_best, BatchKey), or raises ApiError (400)."""
    _check_known(fields, FIELDS)
    if ("text" in fields) == ("texts" in fields):
        raise ApiError(400, 'give exactly one of "text" (a string) or "texts" (a list of strings)')
    if "text" in fields:
        named = [("text", fields["text"])]
    else:
        texts = _list_field(fields, "texts", "strings", limits)
        named = [("texts[%d]" % index, text) for index, text in enumerate(texts)]
    token_ids = [_token_ids(name, text, limits, translator) for name, text in named]
    for name, kind, kind_name in TYPED_FIELDS:
        if fields.get(name) is not None and type(fields[name]) is not kind:
            raise ApiError(400, "%s must be %s, got %s" % (name, kind_name, shown(fields[name])))
    trace, beam_width = fields.get("trace"), fields.get("beam_width")
    n_best = 1 if fields.get("n_best") is None else fields["n_best"]
    if trace and len(token_ids) != 1:
        raise ApiError(400, "trace needs exactly one text, got texts with %d" % len(token_ids))
    if trace and not translator.can_trace:
        raise ApiError(400, "trace: this server serves a SavedModel, which returns no trace")
    decoder = DEFAULT_DECODER if fields.get("decoder") is None else fields["decoder"]
    given = {name: fields[name] for name in OPTIONS if name in fields}
    expansions, most_expansions = given.get("max_expansions"), served_max_expansions(
        translator.config["decode"])
    if decoder == "exact" and decoder in translator.decoders and type(expansions) is int and \
            not 1 <= expansions <= most_expansions:
        raise ApiError(400, "max_expansions must be in 1..%d on this server, got %s"
                       % (most_expansions, shown(expansions)))
    try:
        width = translator.check_options(decoder, beam_width, n_best, given)
        options = translator.resolve_options(decoder, given)
    except ValueError as error:
        raise ApiError(400, str(error)) from None
    if trace and decoder in BEAMLESS_DECODERS:
        raise ApiError(400, "trace: the %s decoder keeps no beams to trace; trace a beam search "
                       "or greedy" % decoder)
    if decoder == "unrolled":
        for (name, _), ids in zip(named, token_ids):
            if len(ids) > limits.max_unrolled_tokens:
                raise ApiError(400, "%s has %d tokens; the unrolled decoder's graph grows with "
                               "the length, so it serves up to %d source tokens here; use "
                               "while_loop" % (name, len(ids), limits.max_unrolled_tokens))
    used = tuple((name, options[name]) for name in OPTIONS if takes_option(decoder, name))
    return token_ids, n_best, BatchKey(decoder, None if decoder in BEAMLESS_DECODERS else width,
                                       bool(trace), n_best if trace else None, used)


def _list_field(fields, name, items, limits):
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


def _parse_score_request(fields, limits, translator):
    """Returns (sources, targets, the targets' field names, options), or raises ApiError."""
    _check_known(fields, SCORE_FIELDS)
    if "pairs" in fields:
        if "source" in fields or "target" in fields:
            raise ApiError(400, 'give "source" and "target", or "pairs", not both')
        pairs = _list_field(fields, "pairs", "objects", limits)
        for index, pair in enumerate(pairs):
            if not isinstance(pair, dict) or set(pair) != {"source", "target"}:
                raise ApiError(400, 'pairs[%d] must be an object with "source" and "target", '
                               "got %s" % (index, shown(pair)))
        named = [("pairs[%d]." % index, pair) for index, pair in enumerate(pairs)]
    elif "source" in fields and "target" in fields:
        named = [("", fields)]
    else:
        raise ApiError(400, 'give "source" and "target" (strings), or "pairs" (a list of '
                       '{"source", "target"} objects)')
    for prefix, pair in named:
        _token_ids(prefix + "source", pair["source"], limits, translator)
    sources = [pair["source"].strip() for _, pair in named]
    targets = [_checked_text(prefix + "target", pair["target"], limits, may_be_empty=True)
               for prefix, pair in named]
    options = {name: fields[name] for name in OPTIONS if name in fields}
    return sources, targets, [prefix + "target" for prefix, _ in named], options


def _checked_text(name, text, limits, may_be_empty=False):
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


def _token_ids(name, text, limits, translator):
    """Returns the source token ids of one text, or raises ApiError."""
    token_ids = translator.tokenize(_checked_text(name, text, limits))
    if not token_ids:  # normalisation drops some characters (a zero-width space)
        raise ApiError(400, "%s is empty once tokenized: the tokenizer drops every "
                       "character it has" % name)
    if len(token_ids) > limits.max_tokens:
        raise ApiError(400, "%s has %d tokens; the limit is %d (long words split into "
                       "many tokens)" % (name, len(token_ids), limits.max_tokens))
    return token_ids


def _loggable(text):
    r"""Client text as one log field: escaped (\n, \\, \xe9, spaces as \x20), cut short."""
    text = text.encode("unicode_escape").decode("ascii").replace(" ", "\\x20")
    return text if len(text) <= MAX_LOGGED_CHARS else text[:MAX_LOGGED_CHARS] + "..."
