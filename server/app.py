"""The Flask application: routes, JSON errors and the access log.

The HTTP API is DESIGN.md's: POST /translate, GET /healthz, GET /v1/info and
GET / (the page). The app holds no global state: everything it needs is made
in :func:`create_app` and captured by the route functions.
"""

import collections
import logging
import os
import time

from flask import Flask, Response, g, jsonify, request
from werkzeug.exceptions import HTTPException

from decode.checks import shown
from server.batcher import MicroBatcher, Unbatched
from server.errors import ApiError, body_over_limit_message, error_response
from server.model_slot import ModelNotReady
from server.validation import DEFAULT_DECODER, TranslateRequestParser, limits_from_config

ACCESS_LOG = logging.getLogger("seq2seq.serve.access")
ERROR_LOG = logging.getLogger("seq2seq.serve")
PAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static", "index.html")
ROUTES = "GET /, GET /healthz, GET /v1/info, POST /translate"
MAX_LOGGED_CHARS = 200
# An HTTP method as a 405 message names it; a longer one is cut short.
MAX_METHOD_CHARS = 20
# The page is self-contained: it may talk to this server and load nothing else.
PAGE_POLICY = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
               "connect-src 'self'; img-src data:")
# The longest source the unrolled decoder serves unless told otherwise (serve.py's
# --warm_up_source_tokens default): its graphs for up to 16 tokens are 5 length
# buckets per beam width, each seconds to build.
DEFAULT_MAX_UNROLLED_TOKENS = 16


def create_app(model, config, max_unrolled_tokens=DEFAULT_MAX_UNROLLED_TOKENS):
    """Builds the application.

    Args:
      model: a server.model_slot.ModelSlot; requests that need the model answer
        503 while it is empty.
      config: the resolved config; the "serve" section sets the limits and the
        batching ("serve.batch_window_ms: 0" turns batching off). The beam
        widths are the translator's (`Translator.beam_widths`).
      max_unrolled_tokens: the longest source, in tokens, the unrolled decoder
        serves (longer ones are a 400). Its graph grows with the length, one
        per length bucket and beam width, each seconds to build under one
        lock and kept for good: unbounded, one client could stall the others
        and grow the graph without end. serve.py passes the length it builds
        the graphs for before it says it is ready.
    Returns:
      A Flask app (a WSGI application).
    """
    app = Flask(__name__, static_folder=None)
    # Waitress (server.graceful_server) refuses larger bodies at the headers
    # already; this is the limit under any other WSGI server too.
    app.config["MAX_CONTENT_LENGTH"] = config["serve"]["max_body_bytes"]
    app.json.sort_keys = False
    app.json.ensure_ascii = False
    limits = limits_from_config(config, max_unrolled_tokens)
    batcher = _make_batcher(model, config["serve"])
    with open(PAGE, encoding="utf-8") as page_file:
        page = page_file.read()

    @app.get("/")
    def index():
        response = Response(page, mimetype="text/html")
        response.headers["Content-Security-Policy"] = PAGE_POLICY
        return response

    @app.get("/healthz")
    def healthz():
        if not model.ready:
            return jsonify(status="loading"), 503
        return jsonify(status="ok")

    @app.get("/v1/info")
    def info():
        translator, examples = model.loaded()
        return jsonify(
            model={"name": translator.model_name, "step": translator.step,
                   "source_vocab_size": translator.source_vocab_size,
                   "target_vocab_size": translator.target_vocab_size},
            decoders=list(translator.decoders),
            defaults={"decoder": DEFAULT_DECODER,
                      "beam_width": translator.check_options(DEFAULT_DECODER), "n_best": 1},
            decoding={"length_penalty": translator.config["decode"]["length_penalty"]},
            limits=_limits_info(limits, translator),
            batching=_batching_info(batcher, config["serve"]),
            examples=examples)

    @app.post("/translate")
    def translate():
        translator = model.get()
        parsed = TranslateRequestParser(limits, translator).parse(
            request.mimetype, request.mimetype_params.get("charset"), request.get_data(cache=False))
        g.sentences = len(parsed.token_ids)
        settings = parsed.settings
        answer = batcher.submit(BatchKey(settings.decoder, settings.beam_width),
                                [(ids, settings.n_best) for ids in parsed.token_ids])
        # Every item of a batch carries the batch's count (see _make_batcher).
        graphs_built = answer.results[0].graphs_built
        return jsonify(
            translations=[_translation_json(result.translation) for result in answer.results],
            decoder=settings.decoder,
            beam_width=settings.beam_width,
            elapsed_ms=round(_elapsed_ms(), 2),
            decode_ms=round(answer.call_seconds * 1000.0, 2),
            graphs_built=graphs_built,
            model={"name": translator.model_name, "step": translator.step})

    _install_error_handlers(app)
    _install_access_log(app)
    return app


# What requests must share to share a batch: n_best is not part of it, as it only
# picks from the same beam (each request's own is applied after the call).
BatchKey = collections.namedtuple("BatchKey", "decoder beam_width")

# What the batcher hands back per item: its translation, and how many decoder
# graphs its batch's model call built (the same for every item of the batch).
ItemResult = collections.namedtuple("ItemResult", "translation graphs_built")


def _make_batcher(model, serve_config):
    """A MicroBatcher over the model, or Unbatched when the window is 0.

    Its items are (source token ids, n_best) pairs, its keys BatchKeys, its
    results ItemResults.
    """

    def run_batch(key, items):
        translator = model.get()
        largest_n_best = max(n_best for _, n_best in items)
        # A graph built on first use (a new beam width, a new unrolled length
        # bucket) takes seconds of this call's time: the answer says so. Per
        # thread, so the builds of batches running meanwhile are not counted.
        with translator.recording_builds() as built:
            translations = translator.translate_tokens(
                [token_ids for token_ids, _ in items], decoder=key.decoder,
                beam_width=key.beam_width, n_best=largest_n_best)
        return [ItemResult(translation._replace(n_best=translation.n_best[:n_best]), len(built))
                for translation, (_, n_best) in zip(translations, items)]

    window_ms = serve_config["batch_window_ms"]
    if window_ms <= 0:
        return Unbatched(run_batch)
    return MicroBatcher(run_batch, window_ms / 1000.0, serve_config["max_batch_sentences"])


def _batching_info(batcher, serve_config):
    """The batching settings, and what the model calls have done since the start."""
    totals = batcher.counts.totals()
    return {"enabled": isinstance(batcher, MicroBatcher),
            "window_ms": serve_config["batch_window_ms"],
            "max_batch_sentences": serve_config["max_batch_sentences"],
            "model_calls": totals["calls"], "sentences": totals["items"],
            "model_call_seconds": round(totals["seconds"], 6)}


def _limits_info(limits, translator):
    """/v1/info's limits: the request limits, and the beam widths the translator accepts."""
    info = limits._asdict()
    info.update(min_beam_width=translator.beam_widths[0],
                max_beam_width=translator.beam_widths[-1],
                max_n_best=translator.beam_widths[-1])
    return info


def _translation_json(translation):
    return {"text": translation.text, "score": float(translation.score),
            "n_best": [{"text": hypothesis.text, "score": float(hypothesis.score)}
                       for hypothesis in translation.n_best]}


def _elapsed_ms():
    return (time.perf_counter() - g.started) * 1000.0


def _install_error_handlers(app):
    """Every failure becomes DESIGN.md's JSON error; internals stay in the log."""

    @app.errorhandler(ApiError)
    def api_error(error):
        return error_response(error.status, error.message)

    @app.errorhandler(ModelNotReady)
    def model_not_ready(error):
        return error_response(503, str(error))

    @app.errorhandler(HTTPException)
    def http_error(error):
        if error.code == 404:
            # Cut short and JSON-quoted: a 5,000-character path gets no 5 KB reply.
            message = "no such path: %s; the paths are %s" % (shown(request.path), ROUTES)
        elif error.code == 405:
            # HEAD and OPTIONS come with every route; name the methods that do something.
            useful = sorted(set(error.valid_methods) - {"HEAD", "OPTIONS"})
            message = "%s is not allowed on %s; use %s" % (
                _method_shown(request.method), request.path, ", ".join(useful))
        elif error.code == 413:
            message = body_over_limit_message(app.config["MAX_CONTENT_LENGTH"])
        else:
            message = error.description
        response = error_response(error.code, message)
        if error.code == 405:
            response.headers["Allow"] = ", ".join(sorted(error.valid_methods))
        return response

    @app.errorhandler(Exception)
    def internal_error(error):
        ERROR_LOG.exception("%s %s failed", _loggable(request.method), _loggable(request.path))
        return error_response(500, "internal error; the server has logged the details")


def _install_access_log(app):
    """One log line per request: method, path, status, milliseconds, sentences."""

    @app.before_request
    def start_clock():
        g.started = time.perf_counter()
        g.sentences = 0

    @app.after_request
    def log_request(response):
        ACCESS_LOG.info("%s %s %d %.1fms sentences=%d", _loggable(request.method),
                        _loggable(request.path), response.status_code, _elapsed_ms(),
                        g.sentences)
        return response


def _method_shown(method):
    """A request's method as a message names it: as it is if a short word, else cut short.

    The path of a 405 is one of the routes, but the method is the client's
    own: a 3,000-character method must not come back whole.
    """
    if len(method) <= MAX_METHOD_CHARS and method.replace("-", "").replace("_", "").isalnum() \
            and method.isascii():
        return method
    return shown(method, MAX_METHOD_CHARS)


def _loggable(text):
    r"""Client text as a log line may hold it: no line breaks or other controls.

    A path's %0A decodes to a line break, which would start a forged log
    line: controls, backslashes and non-ASCII characters are written as
    Python escapes (\n, \\, \xe9), spaces too (as \x20, so that a field
    never splits in two), and the whole is cut to MAX_LOGGED_CHARS.
    """
    text = text.encode("unicode_escape").decode("ascii").replace(" ", "\\x20")
    return text if len(text) <= MAX_LOGGED_CHARS else text[:MAX_LOGGED_CHARS] + "..."
