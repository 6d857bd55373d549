"""LibreTranslate's API (/libretranslate/) on a real HTTP server over the tiny model: the real
`libretranslatepy` client and JSON requests, every translation checked against the same server's
POST /translate, every error against LibreTranslate's shape and messages."""

import collections
import concurrent.futures
import contextlib
import html
import json
import threading
import types
import urllib.error
import urllib.parse
import urllib.request

import pytest
from conftest import protecting_model_dir
from libretranslatepy import LibreTranslateAPI

from data_pipeline.placeholders import find
from server.app import create_app
from server.graceful_server import GracefulServer
from server.model_slot import ModelSlot
from tests.test_serve_browser import serving

SENTENCES = ["twenty one", "three hundred and twelve", "nine thousand", "forty two"]
# /languages of a model of the embedded corpus into data.target_locale pt_BR (tiny.yaml's).
LANGUAGES = [{"code": "en", "name": "English", "targets": ["pt-BR"]},
             {"code": "pt-BR", "name": "Portuguese (Brazil)", "targets": []}]


@pytest.fixture(scope="module")
def server(tiny_model_dir):
    from decode.translator import Translator
    translator = Translator(tiny_model_dir)
    serve = translator.config["serve"]
    server = GracefulServer(create_app(ModelSlot(translator), translator.config), "127.0.0.1", 0,
                            threads=12, max_body_bytes=serve["max_body_bytes"])
    thread = threading.Thread(target=server.serve)
    thread.start()
    yield server
    server.request_stop()
    thread.join(timeout=30)
    translator.close()


@pytest.fixture(scope="module")
def limits(server):
    return request(server, "GET", "v1/info")[1]["limits"]


def request(server, method, path, body=None, form=False):
    """(status, JSON answer) of a request with a JSON (or form-encoded) body."""
    data = None if body is None else (urllib.parse.urlencode(body) if form else json.dumps(body))
    headers = {"Content-Type": "application/x-www-form-urlencoded" if form else "application/json"}
    call = urllib.request.Request(server.url + path, method=method, headers=headers,
                                  data=None if data is None else data.encode("utf-8"))
    try:
        with urllib.request.urlopen(call, timeout=60) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def translate(server, body, form=False):
    return request(server, "POST", "libretranslate/translate", body, form)


def reference(server, texts, **fields):
    """POST /translate's translations of `texts`."""
    status, answer = request(server, "POST", "translate", dict(fields, texts=texts))
    assert status == 200, answer
    return answer["translations"]


def assert_error(answer, status, message, expected_status=400):
    """A LibreTranslate error: {"error": message} and its status."""
    assert (status, answer) == (expected_status, {"error": message})


def test_the_libretranslatepy_client_translates_and_lists_the_languages(server):
    client = LibreTranslateAPI(server.url + "libretranslate")  # it sends form-encoded bodies
    expected = [translation["text"] for translation in reference(server, SENTENCES)]
    assert [client.translate(text, "en", "pt-BR") for text in SENTENCES] == expected
    assert all(expected)
    assert client.languages() == LANGUAGES
    with pytest.raises(urllib.error.HTTPError) as refused:
        client.translate(SENTENCES[0], "en", "xx")
    assert_error(json.load(refused.value), refused.value.code, "xx is not supported")


def test_a_string_and_a_list_as_json(server):
    expected = [translation["text"] for translation in reference(server, SENTENCES)]
    status, answer = translate(server, {"q": "  %s\n" % SENTENCES[0], "source": "en",
                                        "target": "pt_br", "api_key": "ignored"})
    assert (status, answer) == (200, {"translatedText": "  %s\n" % expected[0]})
    status, answer = translate(server, {"q": SENTENCES[:2] + ["", " "] + SENTENCES[2:],
                                        "source": "en", "target": "pt-BR", "format": "text"})
    assert (status, answer) == (200, {"translatedText": expected[:2] + ["", " "] + expected[2:]})


def test_alternatives_are_the_n_best_after_the_first(server):
    # alternatives 3: the 4 best of a beam of 4 (wider than tiny.yaml's beam_width, 3)
    best = reference(server, SENTENCES, n_best=4, beam_width=4)
    expected = []
    for translation in best:
        texts = [hypothesis["text"] for hypothesis in translation["n_best"]]
        expected.append([text for index, text in enumerate(texts)
                         if index and text and text not in texts[:index]])
    assert any(expected)
    status, answer = translate(server, {"q": SENTENCES, "source": "en", "target": "pt-BR",
                                        "alternatives": 3})
    assert status == 200
    assert answer == {"translatedText": [translation["text"] for translation in best],
                      "alternatives": expected}
    status, answer = translate(server, {"q": SENTENCES[1], "source": "en", "target": "pt-BR",
                                        "alternatives": "3"}, form=True)
    assert (status, answer) == (200, {"translatedText": best[1]["text"],
                                      "alternatives": expected[1]})


def test_html_keeps_the_markup_and_translates_the_text_between(server):
    template = ('<p class="a&amp;b">%s <b>%s</b></p>\n<!-- <i>one</i> -->'
                '<script>var x = "<b>two</b>";</script><ul><li> %s </li></ul>')
    runs = [SENTENCES[0], SENTENCES[1], SENTENCES[2] + " & <", "&"]
    texts = [html.escape(translation["text"], quote=False)
             for translation in reference(server, runs)]
    status, answer = translate(server, {
        "q": [template % (SENTENCES[0], SENTENCES[1], SENTENCES[2] + " &amp; &lt;"), "<br>",
              "&amp;"], "source": "en", "target": "pt-BR", "format": "html", "alternatives": 2})
    assert status == 200
    assert answer == {"translatedText": [template % tuple(texts[:3]), "<br>", texts[3]],
                      "alternatives": [[], [], []]}


def test_auto_source_answers_the_detected_language(server):
    expected = [translation["text"] for translation in reference(server, SENTENCES[:2])]
    detected = {"confidence": 100.0, "language": "en"}
    status, answer = translate(server, {"q": SENTENCES[0], "source": "auto", "target": "pt-BR"})
    assert (status, answer) == (200, {"translatedText": expected[0], "detectedLanguage": detected})
    status, answer = translate(server, {"q": SENTENCES[:2], "source": "auto", "target": "pt-BR"})
    assert (status, answer) == (200, {"translatedText": expected,
                                      "detectedLanguage": [detected, detected]})


@pytest.mark.parametrize("fields, message", [
    ({"source": "en", "target": "fr"}, "fr is not supported"),
    ({"source": "de", "target": "pt-BR"}, "de is not supported"),
    ({"source": "pt-BR", "target": "en"},
     "English (en) is not available as a target language from Portuguese (Brazil) (pt-BR)"),
    ({"source": "auto", "target": "en"},
     "English (en) is not available as a target language from English (en)"),
    ({"source": "en", "target": ""}, "Invalid request: missing target parameter"),
    ({"source": "en", "target": "pt-BR", "q": []}, "Invalid request: missing q parameter"),
    ({"source": "en", "target": "pt-BR", "format": "xml"}, "xml format is not supported"),
    ({"source": "en", "target": "pt-BR", "q": ["one", 2]}, "q[1] must be a string, got 2"),
    ({"source": "en", "target": "pt-BR", "alternatives": -1},
     "Invalid request: alternatives must be an integer in 0..7, got -1"),
])
def test_what_cannot_be_translated_is_libretranslates_error(server, fields, message):
    status, answer = translate(server, dict({"q": "twenty one"}, **fields))
    assert_error(answer, status, message)


def test_the_servers_limits_hold_and_name_the_q_text(server, limits):
    too_long = "one " * (limits["max_chars"] // 4 + 1)
    over = (len(too_long.strip()), limits["max_chars"])
    cases = [
        ({"q": too_long}, "q has %d characters; the limit is %d" % over),
        ({"q": ["one", "two", too_long]}, "q[2] has %d characters; the limit is %d" % over),
        ({"q": "<b>one</b> %s" % too_long, "format": "html"},
         "q has %d characters; the limit is %d" % over),
        ({"q": ["one"] * (limits["max_texts"] + 1)},
         "q has %d texts to translate; the limit is %d"
         % (limits["max_texts"] + 1, limits["max_texts"])),
        ({"q": "one", "alternatives": limits["max_beam_width"]},
         "Invalid request: alternatives must be an integer in 0..%d, got %d"
         % (limits["max_beam_width"] - 1, limits["max_beam_width"])),
    ]
    for fields, message in cases:
        status, answer = translate(server, dict(fields, source="en", target="pt-BR"))
        assert_error(answer, status, message)


def test_a_body_over_the_limit_is_libretranslates_413(server, limits):
    padding = limits["max_body_bytes"] + 1 - len(json.dumps({"q": ""}))
    status, answer = translate(server, {"q": "x" * padding})
    assert_error(answer, status, "the body is over the limit of %d bytes"
                 % limits["max_body_bytes"], 413)


def test_eight_concurrent_clients_all_answered_through_the_batcher(server):
    expected = [translation["text"] for translation in reference(server, SENTENCES)]
    before = request(server, "GET", "v1/info")[1]["batching"]["sentences"]

    def client_run(index):
        client = LibreTranslateAPI(server.url + "libretranslate/")
        order = SENTENCES[index % 4:] + SENTENCES[:index % 4]
        return [client.translate(text, "en", "pt-BR") for text in order] == \
            expected[index % 4:] + expected[:index % 4]

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert list(pool.map(client_run, range(8))) == [True] * 8
    after = request(server, "GET", "v1/info")[1]["batching"]["sentences"]
    assert after - before == 8 * len(SENTENCES)


@pytest.fixture(scope="module")
def protecting_server(tiny_model_dir, tmp_path_factory):
    """A server of the tiny model told that it has two protected tokens (every vocabulary holds
    ｟0｠ to ｟15｠), as a model trained on software messages has."""
    from decode.translator import Translator
    model_dir = protecting_model_dir(tiny_model_dir, tmp_path_factory.mktemp("protecting"))
    with contextlib.closing(Translator(model_dir)) as translator, serving(translator) as url:
        yield types.SimpleNamespace(url=url)


def test_placeholders_come_back_as_written(protecting_server):
    client = LibreTranslateAPI(protecting_server.url + "libretranslate")
    for text in ("Delete %(name)s?", "<b>twenty one</b>", "{} of %d"):
        translation = client.translate(text, "en", "pt-BR")
        assert collections.Counter(find(translation)) == collections.Counter(find(text)), (
            text, translation)
    status, info = request(protecting_server, "GET", "v1/info")
    assert status == 200 and info["model"]["protected_tokens"] == 2


def test_503_while_no_model_is_loaded(tiny_config):
    client = create_app(ModelSlot(), tiny_config).test_client()
    for response in (client.get("/libretranslate/languages"),
                     client.post("/libretranslate/translate", data={"q": "one"})):
        assert response.status_code == 503
        assert set(response.get_json()) == {"error"}
        assert isinstance(response.get_json()["error"], str)
