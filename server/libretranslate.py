"""LibreTranslate's API under /libretranslate/, for the clients that speak it (`libretranslatepy`,
Weblate, SearXNG): its fields, answers and errors, each text translated as POST /translate
translates, so that its checks, limits and batching hold here too (docs/API.md)."""

import html
import re

from babel import Locale
from flask import Blueprint, jsonify, request

from decode.request import shown
from server.request_checks import ApiError, check_count, indexed, request_fields

ENGLISH = {"code": "en", "name": "English"}  # the models here all read English
# Markup kept as it is: comments, script and style elements whole, any other tag.
MARKUP = re.compile(r"(<!--.*?-->|<(?:script|style)\b.*?</(?:script|style)\s*>|<[^>]*>)",
                    re.DOTALL | re.IGNORECASE)
EDGES = re.compile(r"(\s*)(.*?)(\s*)", re.DOTALL)  # a run: its whitespace kept around the text


def libretranslate_api(model, translate_texts, max_texts):
    """The Blueprint of `GET languages` and `POST translate` for `model` (a ModelSlot), to register
    under /libretranslate (server/app.py answers its errors in LibreTranslate's shape).

    Args:
      translate_texts: POST /translate's (server/app.py's `create_app`).
      max_texts: the most texts a request may have translated (after splitting html).
    """
    api = Blueprint("libretranslate", __name__)

    @api.get("/languages")
    def languages():
        return jsonify(served_languages(model.loaded().translator.config))

    @api.post("/translate")
    def translate():
        fields = request_fields() if request.is_json else request.values.to_dict()
        translator = model.loaded().translator
        for name in ("q", "source", "target"):
            if not fields.get(name):
                raise ApiError(400, "Invalid request: missing %s parameter" % name)
        alternatives = _alternatives(fields.get("alternatives", 0), translator.beam_widths[-1])
        source = str(fields["source"])
        _check_pair(source, str(fields["target"]), translator.config)
        text_format = fields.get("format") or "text"
        if text_format not in ("text", "html"):
            raise ApiError(400, "%s format is not supported" % text_format)
        is_html, batch = text_format == "html", isinstance(fields["q"], list)
        named = indexed("q", fields["q"]) if batch else [("q", fields["q"])]
        sources = []  # (q name, text) of every run to translate
        parts = [_split(name, text, is_html, sources) for name, text in named]
        check_count("q", len(sources), "texts to translate", max_texts)
        n_best = 1 if is_html else alternatives + 1  # LibreTranslate has none for html either
        translations = []  # none where q holds only markup and blanks
        if sources:
            widths = {"n_best": n_best, "beam_width": max(translator.default_beam_width, n_best)}
            answer = translate_texts(translator, sources, widths if n_best > 1 else {})[0]
            translations = [result.translation for result in answer.results]
        outputs = [html.escape(translation.text, quote=False) if is_html else translation.text
                   for translation in translations]
        result = {"translatedText": [_filled(each, outputs) for each in parts]}
        if source == "auto":  # nothing to detect: a model reads one language
            result["detectedLanguage"] = [{"confidence": 100.0, "language": "en"}] * len(named)
        if alternatives:
            result["alternatives"] = [[] if is_html else _alternative_texts(each, translations)
                                      for each in parts]
        return jsonify({name: value if batch else value[0] for name, value in result.items()})

    return api


def served_languages(config):
    """LibreTranslate's languages: English, translated into the model's data.target_locale."""
    locale = Locale.parse(config["data"]["target_locale"])
    target = {"code": str(locale).replace("_", "-"), "name": locale.english_name, "targets": []}
    return [dict(ENGLISH, targets=[target["code"]]), target]


def _check_pair(source, target, config):
    """Raises LibreTranslate's ApiError unless the model translates `source` (or "auto") into
    `target`, codes as /languages gives them (any case, "_" for "-")."""
    known = {language["code"].lower(): language for language in served_languages(config)}
    codes = ("en" if source == "auto" else source, target)
    pair = [known.get(code.lower().replace("_", "-")) for code in codes]
    for language, code in zip(pair, codes):
        if language is None:
            raise ApiError(400, "%s is not supported" % code)
    if pair[1]["code"] not in pair[0]["targets"]:
        raise ApiError(400, "%s (%s) is not available as a target language from %s (%s)"
                       % (pair[1]["name"], pair[1]["code"], pair[0]["name"], pair[0]["code"]))


def _alternatives(value, widest_beam):
    """The alternatives asked for, an int in 0..widest_beam - 1 (a form sends a string)."""
    text = str(value)
    if not (text.isascii() and text.isdigit() and int(text) < widest_beam):
        raise ApiError(400, "Invalid request: alternatives must be an integer in 0..%d, got %s"
                       % (widest_beam - 1, shown(value)))
    return int(text)


def _split(name, text, is_html, sources):
    """The parts of a q text: what is kept (markup, blank runs, the whitespace around a run) as
    strings, and for each run to translate its index in `sources`, where (name, run) is added."""
    if not isinstance(text, str):
        raise ApiError(400, "%s must be a string, got %s" % (name, shown(text)))
    parts = []
    for index, run in enumerate(MARKUP.split(text) if is_html else [text]):
        lead, core, trail = EDGES.fullmatch(run).groups()
        if index % 2 or not core:  # re.split puts the markup at odd indexes
            parts.append(run)
        else:
            parts += [lead, len(sources), trail]
            sources.append((name, html.unescape(core) if is_html else core))
    return parts


def _filled(parts, outputs):
    """A q text put back together, `outputs[i]` in place of the run `sources[i]`."""
    return "".join(part if isinstance(part, str) else outputs[part] for part in parts)


def _alternative_texts(parts, translations):
    """A plain q text's alternatives: its n-best after the first, each once, none blank or equal
    to the translation (as LibreTranslate), in the whitespace around the text."""
    if len(parts) == 1:  # blank: nothing was translated
        return []
    lead, run, trail = parts
    texts = [hypothesis.text for hypothesis in translations[run].n_best]
    return [lead + text + trail for index, text in enumerate(texts)
            if index and text.strip() and text not in texts[:index]]
