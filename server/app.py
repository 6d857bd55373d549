"""The Flask app of docs/API.md's HTTP API: its routes, their answers, JSON errors, access log."""

import collections
import logging
import os
import pathlib
import re
import time

from flask import Flask, g, jsonify, request
from werkzeug.exceptions import HTTPException

from decode.request import DecodeRequest, shown
from seq2seq.decoding_options import OPTIONS, DecodingOptions, describe, takes, uses
from server.batcher import Batcher
from server.libretranslate import libretranslate_api
from server.request_checks import (BODY_OVER_LIMIT, ApiError, Limits, error_document,
                                   named_texts, parse_score_request, parse_translate_request,
                                   request_fields, served_here)
from server.training_status import training_report

LOG = logging.getLogger("seq2seq.serve")
ACCESS_LOG = logging.getLogger("seq2seq.serve.access")
PAGE = pathlib.Path(__file__).parent / "static" / "index.html"
# The page is self-contained: it may talk to this server and load nothing else.
PAGE_POLICY = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
               "connect-src 'self'; img-src data:")
DEFAULT_MAX_UNROLLED_TOKENS = 16  # serve.py's --warm_up_source_tokens default
MAX_LOGGED_CHARS = 200
MAX_METHOD_CHARS = 20
# A text's Translation, the graphs its model call built, and the model step that made it.
ItemResult = collections.namedtuple("ItemResult", "translation graphs_built step")


def decoding_report(served):
    """/v1/info's `decoding`: per option (seq2seq/decoding_options.py's rows) its default,
    allowed values, hint, the decoders served that use it and whether it changes a score."""
    return {name: dict(default=served.defaults[name], **describe(name, served.limits),
                       hint=DecodingOptions.model_fields[name].description,
                       decoders=[decoder for decoder in served.decoders if takes(decoder, name)],
                       changes_score=uses(name).changes_score) for name in OPTIONS}


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
        """Translates a batch's items: requests alike but for prefixes, constraints and n_best."""
        with model.holding() as translator, translator.recording_builds() as built:
            translations = translator.translate_tokens(
                [item.ids for item in items], key.for_call(
                    [item.prefix_ids for item in items], max(item.n_best for item in items),
                    [item.constraint_ids for item in items]),
                originals=[item.originals for item in items])
        return [ItemResult(translation._replace(n_best=translation.n_best[:item.n_best]),
                           len(built), translator.step)
                for translation, item in zip(translations, items)]

    concurrency = serve["concurrent_batches"] or os.cpu_count() or 1
    batcher = app.extensions["batcher"] = Batcher(
        run_batch, concurrency if serve["batching"] else float("inf"),
        serve["max_batch_sentences"], serve["batch_step_overhead"],
        hold_seconds=serve["batch_hold_ms"] / 1000.0, batch_log=serve["batch_log"])
    page = PAGE.read_text(encoding="utf-8")

    def translate_texts(translator, named, fields):
        """POST /translate's translations by `translator` of the texts `named` ([(name, text)])
        under its other `fields`: (the batcher's Answer, the call's DecodeRequest), or ApiError."""
        items, wanted = parse_translate_request(named, fields, limits, translator)
        g.sentences = len(items)
        key = wanted.for_call(n_best=wanted.n_best if wanted.trace else 1)  # a call keeps the most
        return batcher.submit(key, items, max(len(item.ids) for item in items)), key

    @app.get("/")
    def index():
        return page, {"Content-Security-Policy": PAGE_POLICY}

    @app.get("/healthz")
    def healthz():
        return (jsonify(status="ok"), 200) if model.ready else (jsonify(status="loading"), 503)

    @app.get("/v1/info")
    def info():
        translator, examples, lab_examples = model.loaded()
        widths = translator.beam_widths
        totals = batcher.totals()
        return jsonify(
            model=dict(served_model(translator), source_vocab_size=translator.source_vocab_size,
                       target_vocab_size=translator.target_vocab_size,
                       protected_tokens=translator.protected_tokens),
            decoders=list(translator.decoders),
            defaults={"decoder": DecodeRequest.model_fields["decoder"].default,
                      "beam_width": translator.default_beam_width, "n_best": 1},
            decoding=decoding_report(served_here(translator)),
            limits=dict(limits._asdict(), min_beam_width=widths[0], max_beam_width=widths[-1],
                        max_n_best=widths[-1]),
            tracing=translator.can_trace,  # "trace": true with one text (not a SavedModel)
            batching={"enabled": serve["batching"],
                      "concurrent_batches": batcher.concurrency if serve["batching"] else None,
                      "max_batch_sentences": serve["max_batch_sentences"],
                      "model_calls": totals["calls"], "sentences": totals["items"],
                      "model_call_seconds": round(totals["seconds"], 6),
                      "model_calls_running": totals["running"]},
            examples=examples, lab_examples=lab_examples, loaded_at=model.loaded_at,
            previous_step=model.previous_step, reload_error=model.reload_error)

    @app.get("/v1/training")
    def training():
        serving_step = model.loaded().translator.step if model.ready else None
        return jsonify(training_report(model_dir, serving_step))

    @app.post("/translate")
    def translate():
        translator, fields = model.loaded().translator, request_fields()
        answer, key = translate_texts(translator, named_texts(fields, limits), fields)
        return jsonify(
            translations=[translation_answer(result.translation, key.draws_samples)
                          for result in answer.results],  # mbr: candidates = samples
            decoder=key.decoder, beam_width=key.searched_beam_width, options=key.used_options(),
            elapsed_ms=round((time.perf_counter() - g.started) * 1000.0, 2),
            decode_ms=round(answer.call_seconds * 1000.0, 2),
            graphs_built=answer.results[0].graphs_built,
            model=dict(served_model(translator), step=answer.results[0].step))

    @app.post("/score")
    def score():
        source_ids, target_ids, wanted = parse_score_request(
            request_fields(), limits, model.loaded().translator)
        g.sentences = len(source_ids)
        with model.holding() as translator:
            scores = translator.score_tokens(source_ids, target_ids, wanted)
        return jsonify(scores=scores, model=served_model(translator))

    app.register_blueprint(libretranslate_api(model, translate_texts, limits.max_texts),
                           url_prefix="/libretranslate")

    def error_response(status, message, headers=None):
        """An error's JSON answer: LibreTranslate's shape under its routes, else docs/API.md's."""
        document = error_document(status, message, request.blueprint == "libretranslate")
        return jsonify(document), status, headers or {}

    @app.errorhandler(ApiError)
    def api_error(error):
        return error_response(*error.args)

    @app.errorhandler(HTTPException)
    def http_error(error):
        message, headers = error.description, {}
        if error.code == 404:
            message = "no such path: %s; the paths are %s" % (shown(request.path), ", ".join(
                "%s %s" % ("/".join(sorted(rule.methods - {"HEAD", "OPTIONS"})), rule)
                for rule in app.url_map.iter_rules()))
        elif error.code == 405:
            method = request.method
            if not re.fullmatch(r"[A-Za-z0-9_-]{1,%d}" % MAX_METHOD_CHARS, method):
                method = shown(method)
            useful = sorted(set(error.valid_methods) - {"HEAD", "OPTIONS"})
            message = "%s is not allowed on %s; use %s" % (method, request.path, ", ".join(useful))
            headers = {"Allow": ", ".join(sorted(error.valid_methods))}
        elif error.code == 413:
            message = BODY_OVER_LIMIT % app.config["MAX_CONTENT_LENGTH"]
        return error_response(error.code, message, headers)

    @app.errorhandler(Exception)
    def internal_error(error):
        LOG.exception("%s %s failed", _loggable(request.method), _loggable(request.path))
        return error_response(500, "internal error; the server has logged the details")

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


def served_model(translator):
    """An answer's `model`: the name and step (an ensemble's first model's) and, for an
    ensemble, each member's name and step."""
    served = {"name": translator.model_name, "step": translator.step}
    if len(translator.members) > 1:
        served["members"] = [dict(member) for member in translator.members]
    return served


def _hypothesis(hypothesis):
    return {"text": hypothesis.text, "score": float(hypothesis.score),
            "pieces": list(hypothesis.pieces)}


def translation_answer(translation, pooled):
    """A Translation as docs/API.md's JSON; MBR's `utilities`: a row per candidate, a column per
    pseudo-reference, both in `candidates`' order if `pooled` (else the columns as drawn)."""
    answer = dict(_hypothesis(translation), unfamiliar=bool(translation.unfamiliar),
                  n_best=[_hypothesis(hypothesis) for hypothesis in translation.n_best])
    if translation.proven is not None:
        answer.update(proven=bool(translation.proven), expansions=int(translation.expansions))
    if translation.expected_utility is not None:
        order = [candidate.index for candidate in translation.candidates]
        columns = order if pooled else range(len(translation.utilities[0]))
        answer["expected_utility"] = float(translation.expected_utility)
        answer["candidates"] = [{"text": candidate.text, "score": float(candidate.score),
                                 "expected_utility": float(candidate.expected_utility)}
                                for candidate in translation.candidates]
        answer["utilities"] = [[round(float(translation.utilities[row][column]), 2)
                                for column in columns] for row in order]
    if translation.trace is not None:
        answer["trace"] = translation.trace
    return answer


def _loggable(text):
    r"""Client text as one log field: escaped (\n, \\, \xe9, spaces as \x20), cut short."""
    text = text.encode("unicode_escape").decode("ascii").replace(" ", "\\x20")
    return text if len(text) <= MAX_LOGGED_CHARS else text[:MAX_LOGGED_CHARS] + "..."
