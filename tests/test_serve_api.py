"""The HTTP API through Flask's test client, with a real tiny model.

Every bad input of the issue has a case: its status, its error code, a piece
of its message, that no internals leak, and that the next valid request is
answered as usual.
"""

import copy
import glob
import json
import logging
import os
import re
import subprocess
import sys

import pytest

from server.app import create_app
from server.model_slot import ModelSlot, read_examples
from tests.same_hypotheses import assert_same_hypotheses, n_best

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="session")
def translator(tiny_model_dir):
    from decode.translator import Translator
    return Translator(tiny_model_dir)


@pytest.fixture(scope="module")
def config(translator):
    return translator.config


@pytest.fixture(scope="module")
def client(translator, config):
    return create_app(ModelSlot(translator), config).test_client()


def assert_error(response, status, code, message_part):
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}
    assert body["error"]["code"] == code
    assert message_part in body["error"]["message"]
    text = response.get_data(as_text=True)
    assert "Traceback" not in text and ".py" not in text
    assert_no_server_path(body["error"]["message"])


def assert_no_server_path(message):
    """No absolute path of this machine's files (a model or export directory, a module)."""
    for path in re.findall(r"/[^\s,;:()'\"]+", message):
        assert not (len(path) > 1 and os.path.exists(path.rstrip("."))), \
            "the message names the server's path %s: %s" % (path, message)


def assert_serves(client):
    response = client.post("/translate", json={"text": "twenty one"})
    assert response.status_code == 200
    assert response.get_json()["translations"][0]["text"]


# --- Valid requests ---------------------------------------------------------------------------

def test_translate_one_text(client, translator, config):
    response = client.post("/translate", json={"text": "  three hundred and twelve  "})
    assert response.status_code == 200
    body = response.get_json()
    assert list(body) == ["translations", "decoder", "beam_width", "options", "elapsed_ms",
                          "decode_ms", "graphs_built", "model"]
    assert body["decoder"] == "while_loop"
    assert body["beam_width"] == config["decode"]["beam_width"]
    assert 0 < body["decode_ms"] <= body["elapsed_ms"]
    assert body["model"] == {"name": translator.model_name, "step": translator.step}
    assert body["options"] == {name: config["decode"][name] for name in (
        "length_penalty", "length_penalty_kind", "coverage_penalty", "no_repeat_ngram_size",
        "min_length", "diverse_beam_groups", "diverse_beam_strength", "placeholders")}, \
        "the options the beam search used: the config's"
    [translation] = body["translations"]
    assert list(translation) == ["text", "score", "pieces", "unfamiliar", "n_best"]
    [expected] = translator.translate(["three hundred and twelve"])
    assert_same_hypotheses(n_best([translation]), n_best([expected]))
    assert translation["n_best"] == [{key: translation[key] for key in ("text", "score", "pieces")}]
    assert translation["pieces"] == expected.pieces


@pytest.mark.parametrize("decoder", ["while_loop", "unrolled"])
def test_translate_texts_with_an_n_best_list(client, decoder):
    texts = ["one", "forty two", "nine thousand"]
    response = client.post("/translate", json={"texts": texts, "decoder": decoder,
                                               "beam_width": 4, "n_best": 3})
    assert response.status_code == 200
    body = response.get_json()
    assert (body["decoder"], body["beam_width"]) == (decoder, 4)
    assert len(body["translations"]) == len(texts)
    for translation in body["translations"]:
        scores = [hypothesis["score"] for hypothesis in translation["n_best"]]
        assert len(scores) == 3 and scores == sorted(scores, reverse=True)
        assert translation["n_best"][0] == {key: translation[key] for key in ("text", "score", "pieces")}


@pytest.mark.parametrize("decoder, body", [
    ("while_loop", {"text": "three hundred and twelve", "beam_width": 3, "n_best": 2}),
    ("unrolled", {"texts": ["forty two"]}),
    ("greedy", {"text": "nine thousand"}),
])
def test_a_traced_request_carries_the_translators_trace_and_the_same_translation(
        client, translator, decoder, body):
    body = dict(body, decoder=decoder)
    plain = client.post("/translate", json=body).get_json()["translations"][0]
    response = client.post("/translate", json=dict(body, trace=True))
    assert response.status_code == 200, response.get_json()
    [traced] = response.get_json()["translations"]
    options = {"decoder": decoder, "beam_width": body.get("beam_width"), "n_best": body.get("n_best", 1)}
    [expected] = translator.translate(body.get("texts") or [body["text"]], trace=True, **options)
    assert traced["trace"] == json.loads(json.dumps(expected.trace)), "the Translator's trace"
    assert {key: value for key, value in traced.items() if key != "trace"} == plain, \
        "tracing never changes the translation"
    assert "trace" not in plain


def test_every_translation_says_whether_its_source_is_unfamiliar(client, translator):
    texts = ["one", "forty two", "Hello, how are you today?", "zzzz qqqq xxxx"]
    response = client.post("/translate", json={"texts": texts})
    assert response.status_code == 200
    flags = [translation["unfamiliar"] for translation in response.get_json()["translations"]]
    assert flags == [translation.unfamiliar for translation in translator.translate(texts)]
    assert all(flag is True or flag is False for flag in flags)


def test_greedy_reports_beam_width_one(client):
    response = client.post("/translate", json={"text": "seven", "decoder": "greedy", "beam_width": 5})
    assert response.status_code == 200
    assert response.get_json()["beam_width"] == 1


def test_null_options_are_the_defaults(client, config):
    # null is the same as leaving an option out, for all three options alike.
    response = client.post("/translate", json={"text": "seven", "decoder": None,
                                               "beam_width": None, "n_best": None})
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert (body["decoder"], body["beam_width"]) == ("while_loop", config["decode"]["beam_width"])
    assert len(body["translations"][0]["n_best"]) == 1


def test_charset_utf8_and_non_ascii_text_are_accepted(client):
    response = client.post("/translate", data=json.dumps({"text": "sete mil e ação"}),
                           content_type="application/json; charset=UTF-8")
    assert response.status_code == 200


def test_info_reports_the_model_and_the_limits(client, translator, config):
    response = client.get("/v1/info")
    assert response.status_code == 200
    info = response.get_json()
    assert info["model"] == {"name": translator.model_name, "step": translator.step,
                             "source_vocab_size": translator.source_vocab_size,
                             "target_vocab_size": translator.target_vocab_size,
                             "protected_tokens": translator.protected_tokens}
    assert info["decoders"] == ["while_loop", "unrolled", "greedy", "sample", "exact", "mbr"]
    assert info["defaults"] == {"decoder": "while_loop",
                                "beam_width": config["decode"]["beam_width"], "n_best": 1}
    assert info["decoding"]["length_penalty"]["default"] == config["decode"]["length_penalty"]
    serve = config["serve"]
    assert info["limits"] == {
        "max_body_bytes": serve["max_body_bytes"], "max_texts": serve["max_texts"],
        "max_chars": serve["max_chars"], "max_tokens": serve["max_tokens"],
        "max_unrolled_tokens": 16, "min_beam_width": 1,
        "max_beam_width": config["decode"]["max_beam_width"],
        "max_n_best": config["decode"]["max_beam_width"]}
    assert list(translator.beam_widths) == list(range(1, config["decode"]["max_beam_width"] + 1))
    batching = dict(info["batching"])
    counts = {name: batching.pop(name)
              for name in ("model_calls", "sentences", "model_call_seconds", "model_calls_running")}
    assert batching == {"enabled": True,
                        "concurrent_batches": serve["concurrent_batches"] or os.cpu_count(),
                        "max_batch_sentences": serve["max_batch_sentences"]}
    assert info["tracing"] is True
    assert counts["model_calls"] <= counts["sentences"]
    assert counts["model_call_seconds"] >= 0.0
    assert counts["model_calls_running"] == 0


def test_info_offers_examples_from_the_shortest_to_the_longest(client, config, tiny_data):
    assert config["data"]["data_dir"] == tiny_data.data_dir
    with open(os.path.join(tiny_data.data_dir, "test.src"), encoding="utf-8") as test_file:
        lines = [line.strip() for line in test_file if line.strip()]
    sentences = sorted(set(lines), key=lambda text: (len(text), lines.index(text)))
    assert len(sentences) > 8
    examples = client.get("/v1/info").get_json()["examples"]
    assert examples == [sentences[index * len(sentences) // 8] for index in range(8)]
    assert len(examples[0]) == min(map(len, lines)), "the page offers a short input..."
    assert len(examples[-1]) >= sorted(map(len, sentences))[len(sentences) * 7 // 8], \
        "...and a long one"


class ConfiguredTranslator:
    """The real translator with another config (another data_dir)."""

    def __init__(self, translator, data_dir):
        self._translator = translator
        self.config = copy.deepcopy(translator.config)
        self.config["data"]["data_dir"] = str(data_dir)

    def __getattr__(self, name):
        return getattr(self._translator, name)


def test_info_without_a_held_out_split_has_no_examples(translator, config, tmp_path):
    client = create_app(ModelSlot(ConfiguredTranslator(translator, tmp_path)), config).test_client()
    response = client.get("/v1/info")
    assert response.status_code == 200
    assert response.get_json()["examples"] == []
    assert_serves(client)


def test_a_relative_data_dir_is_the_working_directorys_like_every_path(
        tmp_path, monkeypatch, caplog):
    # One rule for the whole project: prepare, training and compare resolve a
    # relative data_dir against the working directory, and so do the examples.
    repo = tmp_path / "repo"
    (repo / "data" / "prepared").mkdir(parents=True)
    (repo / "data" / "prepared" / "test.src").write_text("one\ntwo\n", encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(repo)
    assert read_examples({"data": {"data_dir": "data/prepared"}}) == ["one", "two"]
    monkeypatch.chdir(elsewhere)
    assert read_examples({"data": {"data_dir": str(repo / "data" / "prepared")}}) == ["one", "two"]
    with caplog.at_level(logging.INFO, logger="seq2seq.serve"):
        assert read_examples({"data": {"data_dir": "data/prepared"}}) == []
    [record] = caplog.records
    assert record.levelname == "INFO"
    # The log names where it looked, so that a user sees why there are no examples.
    assert str(elsewhere / "data" / "prepared") in record.getMessage()
    assert 'data.data_dir "data/prepared" is relative to the working directory' in \
        record.getMessage()


def test_examples_come_from_dev_src_without_a_test_src_and_skip_empty_lines(tmp_path):
    (tmp_path / "dev.src").write_text("\none\n  \ntwo  \none\n\n", encoding="utf-8")
    assert read_examples({"data": {"data_dir": str(tmp_path)}}) == ["one", "two"]


@pytest.mark.parametrize("model_config",
                         [{}, {"data": {}}, {"data": {"data_dir": "/nonexistent/data"}}],
                         ids=["no data section", "no data_dir", "missing directory"])
def test_no_examples_without_a_data_dir(model_config, caplog):
    with caplog.at_level(logging.INFO, logger="seq2seq.serve"):
        assert read_examples(model_config) == []
    assert [record.levelname for record in caplog.records] == ["INFO"]
    assert "no example sentences" in caplog.text


def test_an_unreadable_split_gives_no_examples(tmp_path, caplog):
    (tmp_path / "test.src").write_bytes(b"caf\xe9\n")
    (tmp_path / "dev.src").write_text("one\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="seq2seq.serve"):
        assert read_examples({"data": {"data_dir": str(tmp_path)}}) == []
    assert "test.src" in caplog.text


def test_healthz(client):
    response = client.get("/healthz")
    assert (response.status_code, response.get_json()) == (200, {"status": "ok"})


def test_the_page_is_self_contained(client):
    response = client.get("/")
    assert response.status_code == 200 and response.mimetype == "text/html"
    page = response.get_data(as_text=True)
    assert "<script" in page and "<style" in page
    loaded = page.replace('"http://www.w3.org/2000/svg"', "")  # a namespace name, never fetched
    assert "http://" not in loaded and "https://" not in loaded, "no CDN: nothing loaded from elsewhere"
    assert "default-src 'none'" in response.headers["Content-Security-Policy"]


def test_one_log_line_per_request(client, caplog):
    with caplog.at_level(logging.INFO, logger="seq2seq.serve.access"):
        client.post("/translate", json={"texts": ["one", "two"]})
        client.get("/nowhere")
    lines = [record.getMessage() for record in caplog.records if record.name == "seq2seq.serve.access"]
    assert len(lines) == 2
    assert lines[0].startswith("POST /translate 200 ") and lines[0].endswith("ms sentences=2")
    assert lines[1].startswith("GET /nowhere 404 ") and lines[1].endswith("ms sentences=0")


def test_a_path_cannot_forge_log_lines_or_a_long_reply(client, caplog):
    forged = "/x%0AGET /translate 200 1.0ms sentences=1%0D%0A"
    with caplog.at_level(logging.INFO, logger="seq2seq.serve.access"):
        response = client.get(forged)
        long_response = client.get("/" + "a" * 5000)
    assert_error(response, 404, "not_found", "no such path")
    assert_error(long_response, 404, "not_found", "no such path")
    assert len(long_response.get_data()) < 500, "the reply does not echo the whole path"
    lines = [record.getMessage() for record in caplog.records if record.name == "seq2seq.serve.access"]
    assert len(lines) == 2
    assert all("\n" not in line and "\r" not in line for line in lines)
    assert lines[0].startswith("GET /x\\nGET\\x20/translate\\x20200") and " 404 " in lines[0]
    assert lines[1].startswith("GET /aaaa") and len(lines[1]) < 300


# --- Bad input: one case per kind ---------------------------------------------------------------

def json_body(value):
    return {"data": json.dumps(value), "content_type": "application/json"}


def raw_body(data):
    return {"data": data, "content_type": "application/json"}


LONG_WORD = "abcdefghijklmnopqrstuvwxyz" * 19  # 494 characters, within the character limit

BAD_REQUESTS = [
    # (case id, request arguments, status, code, part of the message)
    ("invalid json", raw_body('{"text": "one"'), 400, "bad_request", "not valid JSON"),
    ("empty body", raw_body(""), 400, "bad_request", "the body is empty"),
    ("json list", json_body(["one"]), 400, "bad_request", "must be a JSON object, got an array"),
    ("json number", json_body(3), 400, "bad_request", "got a number"),
    ("json null", json_body(None), 400, "bad_request", "got null"),
    ("json string", json_body("one"), 400, "bad_request", "got a string"),
    ("nan", raw_body('{"text": "one", "beam_width": NaN}'), 400, "bad_request", "not valid JSON"),
    ("deep nesting", raw_body("[" * 20000 + "]" * 20000), 400, "bad_request", "nested too deeply"),
    ("no text", json_body({"decoder": "greedy"}), 400, "bad_request", "exactly one of"),
    ("text and texts", json_body({"text": "a", "texts": ["b"]}), 400, "bad_request",
     "exactly one of"),
    ("repeated field", raw_body('{"text": "one", "text": "two"}'), 400, "bad_request",
     'the field "text" appears twice'),
    ("unknown field", json_body({"text": "one", "beam": 4}), 400, "bad_request",
     'unknown field "beam"'),
    ("empty text", json_body({"text": ""}), 400, "bad_request", "text is empty"),
    ("trace with two texts", json_body({"texts": ["one", "two"], "trace": True}), 400,
     "bad_request", "trace needs exactly one text, got texts with 2"),
    ("trace not a boolean", json_body({"text": "one", "trace": "yes"}), 400, "bad_request",
     'trace must be true or false, got "yes"'),
    ("trace a number", json_body({"text": "one", "trace": 1}), 400, "bad_request",
     "trace must be true or false, got 1"),
    ("blank text", json_body({"text": " \t "}), 400, "bad_request", "text is empty"),
    ("text not a string", json_body({"text": 12}), 400, "bad_request",
     "text must be a string, got a number"),
    ("texts not a list", json_body({"texts": "one"}), 400, "bad_request",
     "texts must be a list of strings, got a string"),
    ("texts holds a non-string", json_body({"texts": ["one", None]}), 400, "bad_request",
     "texts[1] must be a string, got null"),
    ("texts holds a list", json_body({"texts": [["one"]]}), 400, "bad_request",
     "texts[0] must be a string, got an array"),
    ("texts empty", json_body({"texts": []}), 400, "bad_request", "texts is empty"),
    ("one of texts empty", json_body({"texts": ["one", "two", ""]}), 400, "bad_request",
     "texts[2] is empty"),
    ("too many texts", json_body({"texts": ["one"] * 33}), 400, "bad_request",
     "texts has 33 entries; the limit is 32"),
    ("too many characters", json_body({"text": "one " * 130}), 400, "bad_request",
     "text has 519 characters; the limit is 500"),
    ("too many tokens", json_body({"text": "a " * 249 + "a"}), 400, "bad_request",
     "tokens; the limit is 128"),
    ("very long word", json_body({"text": LONG_WORD}), 400, "bad_request",
     "tokens; the limit is 128"),
    ("control character", json_body({"texts": ["one", "tw\u0007o"]}), 400, "bad_request",
     "texts[1] contains the control character U+0007 at position 2"),
    ("nul character", json_body({"text": "one\u0000"}), 400, "bad_request", "U+0000"),
    ("unpaired surrogate", raw_body('{"text": "one \\ud800"}'), 400, "bad_request",
     "unpaired surrogate U+D800"),
    ("invalid utf-8", raw_body(b'{"text": "caf\xe9"}'), 400, "bad_request",
     "not valid UTF-8 (byte 0xe9 at offset 13)"),
    ("unknown decoder", json_body({"text": "one", "decoder": "beam"}), 400, "bad_request",
     'decoder must be one of while_loop, unrolled, greedy, sample, exact, mbr, got "beam"'),
    ("decoder not a string", json_body({"text": "one", "decoder": 2}), 400, "bad_request",
     "decoder must be one of"),
    ("beam width zero", json_body({"text": "one", "beam_width": 0}), 400, "bad_request",
     "beam_width must be an integer in 1..8, got 0"),
    ("beam width too large", json_body({"text": "one", "beam_width": 9}), 400, "bad_request",
     "beam_width must be an integer in 1..8, got 9"),
    ("beam width of 5000 digits", raw_body('{"text": "one", "beam_width": %s}' % ("9" * 5000)),
     400, "bad_request", "beam_width must be an integer in 1..8, got an integer of more than 15 digits"),
    ("negative beam width of 5000 digits",
     raw_body('{"text": "one", "beam_width": -%s}' % ("9" * 5000)), 400, "bad_request",
     "beam_width must be an integer in 1..8, got an integer of more than 15 digits"),
    ("n-best of 200 digits", raw_body('{"text": "one", "n_best": %s}' % ("1" * 200)), 400,
     "bad_request", "n_best must be an integer in 1..3 (the beam width), got an integer of more"),
    ("greedy beam width zero", json_body({"text": "one", "decoder": "greedy", "beam_width": 0}),
     400, "bad_request", "beam_width must be an integer in 1..8, got 0"),
    ("greedy beam width too large",
     json_body({"text": "one", "decoder": "greedy", "beam_width": 1000000}), 400, "bad_request",
     "beam_width must be an integer in 1..8, got 1000000"),
    ("long decoder name", json_body({"text": "one", "decoder": "x" * 5000}), 400, "bad_request",
     'decoder must be one of while_loop, unrolled, greedy, sample, exact, mbr, got "xxxx'),
    ("unrolled over its length", json_body({"texts": ["one", "one " * 17], "decoder": "unrolled"}),
     400, "bad_request", "tokens; the unrolled decoder's graph grows with the length, so it "
     "serves up to 16 source tokens here; use while_loop"),
    ("beam width a string", json_body({"text": "one", "beam_width": "4"}), 400, "bad_request",
     'beam_width must be an integer, got "4"'),
    ("beam width a float", json_body({"text": "one", "beam_width": 2.0}), 400, "bad_request",
     "beam_width must be an integer, got 2.0"),
    ("beam width a boolean", json_body({"text": "one", "beam_width": True}), 400, "bad_request",
     "beam_width must be an integer, got true"),
    ("n-best zero", json_body({"text": "one", "n_best": 0}), 400, "bad_request",
     "n_best must be an integer in 1..3 (the beam width), got 0"),
    ("n-best over the beam", json_body({"text": "one", "beam_width": 2, "n_best": 3}), 400,
     "bad_request", "n_best must be an integer in 1..2 (the beam width), got 3"),
    ("n-best with greedy", json_body({"text": "one", "decoder": "greedy", "n_best": 2}), 400,
     "bad_request", "greedy decoding keeps one hypothesis"),
    ("n-best a boolean", json_body({"text": "one", "n_best": False}), 400, "bad_request",
     "n_best must be an integer, got false"),
    ("body over the limit", raw_body(json.dumps({"text": "x" * 70000})), 413, "payload_too_large",
     "over the limit of 65536 bytes"),
    ("text/plain", {"data": '{"text": "one"}', "content_type": "text/plain"}, 415,
     "unsupported_media_type", "Content-Type: application/json"),
    ("form", {"data": {"text": "one"}}, 415, "unsupported_media_type",
     'got "application/x-www-form-urlencoded"'),
    ("no content type", {"data": '{"text": "one"}'}, 415, "unsupported_media_type",
     "got no Content-Type"),
    ("latin-1 charset", {"data": '{"text": "one"}', "content_type": "application/json; charset=latin-1"},
     415, "unsupported_media_type", "must be UTF-8"),
]


@pytest.mark.parametrize("arguments,status,code,message_part",
                         [case[1:] for case in BAD_REQUESTS], ids=[case[0] for case in BAD_REQUESTS])
def test_bad_translate_request(client, arguments, status, code, message_part):
    assert_error(client.post("/translate", **arguments), status, code, message_part)
    assert_serves(client)


@pytest.mark.parametrize("method,path,status,code,message_part", [
    ("GET", "/translate", 405, "method_not_allowed", "GET is not allowed on /translate; use POST"),
    ("PUT", "/healthz", 405, "method_not_allowed", "use GET"),
    ("DELETE", "/v1/info", 405, "method_not_allowed", "use GET"),
    ("GET", "/v2/translate", 404, "not_found", 'no such path: "/v2/translate"'),
    ("POST", "/", 405, "method_not_allowed", "use GET"),
])
def test_bad_method_or_path(client, method, path, status, code, message_part):
    response = client.open(path, method=method)
    assert_error(response, status, code, message_part)
    if status == 405:
        assert response.headers["Allow"], "a 405 names the methods that are allowed"
    assert_serves(client)


def test_a_long_method_gets_no_long_reply(client):
    response = client.open("/translate", method="X" * 3000)
    assert_error(response, 405, "method_not_allowed", "is not allowed on /translate; use POST")
    assert len(response.get_data()) < 500, "the reply does not echo the whole method"
    assert re.match(r'"X+\.\.\. is not allowed', response.get_json()["error"]["message"])


# --- Graphs built on first use ------------------------------------------------------------------

@pytest.fixture(scope="module")
def fresh_client(tiny_model_dir, config):
    """An app over a translator of its own: no graph is built until a request needs it."""
    from decode.translator import Translator
    fresh = Translator(tiny_model_dir)
    yield create_app(ModelSlot(fresh), config).test_client(), fresh
    fresh.close()


def graphs_built(client, **body):
    response = client.post("/translate", json=body)
    assert response.status_code == 200, response.get_json()
    return response.get_json()["graphs_built"]


def test_an_answer_says_how_many_graphs_its_call_built(fresh_client):
    client, translator = fresh_client
    # The first call at a beam width builds its graph: its time is mostly that build.
    assert graphs_built(client, text="one", beam_width=7) == 1
    assert graphs_built(client, text="one", beam_width=7) == 0
    assert graphs_built(client, text="forty two", beam_width=7, n_best=3) == 0, \
        "one while_loop graph serves every length and n_best"
    assert graphs_built(client, text="one", beam_width=6) == 1
    assert graphs_built(client, text="one", decoder="greedy", beam_width=6) == 1
    assert graphs_built(client, text="one", decoder="greedy", beam_width=7) == 0, \
        "greedy has one graph whatever the beam width"
    # The unrolled decoder: one graph per beam width and length bucket.
    short, long = "one", "one two three four five six"
    assert graphs_built(client, text=short, decoder="unrolled", beam_width=7) == 1
    assert graphs_built(client, text=short, decoder="unrolled", beam_width=7) == 0
    assert graphs_built(client, text=long, decoder="unrolled", beam_width=7) == 1
    assert graphs_built(client, texts=[short, long], decoder="unrolled", beam_width=7) == 0
    assert len(translator.variants) == 5



# --- Failures inside the server ----------------------------------------------------------------

class ExplodingTranslator:
    """The real translator, except that the text "boom" makes decoding fail with internals."""

    def __init__(self, translator):
        self._translator = translator
        self._boom = translator.tokenize("boom")

    def __getattr__(self, name):
        return getattr(self._translator, name)

    def translate_tokens(self, token_ids, request, originals=None):
        if self._boom in token_ids:
            raise RuntimeError("failed in /srv/secret/decode/translator.py line 12")
        return self._translator.translate_tokens(token_ids, request, originals=originals)


def test_an_internal_error_is_a_generic_500_and_is_logged(translator, config, caplog):
    client = create_app(ModelSlot(ExplodingTranslator(translator)), config).test_client()
    with caplog.at_level(logging.ERROR, logger="seq2seq.serve"):
        response = client.post("/translate", json={"text": "boom"})
    assert_error(response, 500, "internal_error", "the server has logged the details")
    assert "secret" not in response.get_data(as_text=True)
    # The log has the details: the failed batch and, as its cause, what failed.
    assert "/srv/secret" in caplog.text and "BatchFailed" in caplog.text
    assert_serves(client)


class ZeroWidthSpaceDroppingTranslator:
    """The real translator behind a tokenizer that drops U+200B, as SentencePiece's
    default normalisation (nmt_nfkc) does: a text of zero-width spaces has no tokens."""

    def __init__(self, translator):
        self._translator = translator

    def __getattr__(self, name):
        return getattr(self._translator, name)

    def tokenize(self, text):
        return self._translator.tokenize(text.replace("\u200b", ""))


def test_a_text_without_tokens_is_a_400_not_a_failed_batch(translator, config):
    client = create_app(ModelSlot(ZeroWidthSpaceDroppingTranslator(translator)),
                        config).test_client()
    response = client.post("/translate", json={"texts": ["one", "\u200b \u200b"]})
    assert_error(response, 400, "bad_request", "texts[1] is empty once tokenized")
    assert_serves(client)


def test_503_until_the_model_is_loaded(translator, config):
    slot = ModelSlot()
    client = create_app(slot, config).test_client()
    health = client.get("/healthz")
    assert (health.status_code, health.get_json()) == (503, {"status": "loading"})
    assert_error(client.post("/translate", json={"text": "one"}), 503, "unavailable", "loading")
    assert_error(client.get("/v1/info"), 503, "unavailable", "loading")
    assert client.get("/").status_code == 200, "the page loads and waits for the model"
    slot.fill(translator)
    assert client.get("/healthz").status_code == 200
    assert_serves(client)


def test_a_saved_model_serves_its_one_decoder_and_beam_width(tiny_model_dir, config):
    from decode.translator import Translator
    export_dir = max(glob.glob(os.path.join(tiny_model_dir, "export", "*")))  # the newest
    exported = Translator(tiny_model_dir, export_dir=export_dir)
    client = create_app(ModelSlot(exported), config).test_client()
    info = client.get("/v1/info").get_json()
    assert info["decoders"] == ["while_loop"]
    response = client.post("/translate", json={"texts": ["one", "forty two"], "n_best": 2})
    assert response.status_code == 200
    assert response.get_json()["beam_width"] == info["defaults"]["beam_width"]
    assert response.get_json()["graphs_built"] == 0, "a SavedModel's graph is loaded, never built"
    assert info["tracing"] is False, "the exported graph returns no trace"
    assert_error(client.post("/translate", json={"text": "one", "trace": True}),
                 400, "bad_request", "serves a SavedModel, which returns no trace")
    assert_error(client.post("/translate", json={"text": "one", "decoder": "unrolled"}),
                 400, "bad_request", "decoder must be one of while_loop")
    # What the page sets its beam width field from: the one width the export serves.
    width = info["defaults"]["beam_width"]
    assert (info["limits"]["min_beam_width"], info["limits"]["max_beam_width"],
            info["limits"]["max_n_best"]) == (width, width, width)
    for other_width in (width - 1, width + 1, 100):
        response = client.post("/translate", json={"text": "one", "beam_width": other_width})
        assert_error(response, 400, "bad_request",
                     "serves only the while_loop decoder at beam_width %d" % width)
        message = response.get_json()["error"]["message"]
        assert export_dir not in message and tiny_model_dir not in message
        assert message.endswith("got beam_width %d" % other_width)


def test_the_unrolled_decoder_serves_sources_up_to_its_limit(translator, config):
    six_tokens, ten_tokens = "one two three", "one two three four five"  # as the tokenizer has it
    six, ten = (len(translator.tokenize(text)) for text in (six_tokens, ten_tokens))
    assert six < ten
    client = create_app(ModelSlot(translator), config, max_unrolled_tokens=six).test_client()
    assert client.get("/v1/info").get_json()["limits"]["max_unrolled_tokens"] == six
    response = client.post("/translate", json={"texts": [six_tokens, ten_tokens],
                                               "decoder": "unrolled"})
    assert_error(response, 400, "bad_request",
                 "texts[1] has %d tokens; the unrolled decoder's graph grows with the length, so "
                 "it serves up to %d source tokens here; use while_loop" % (ten, six))
    for decoder in ("while_loop", "greedy"):
        response = client.post("/translate", json={"text": ten_tokens, "decoder": decoder})
        assert response.status_code == 200, "only the unrolled decoder is limited"
    response = client.post("/translate", json={"text": six_tokens, "decoder": "unrolled"})
    assert response.status_code == 200


def test_the_app_imports_no_tensorflow():
    # serve.py answers the page and /healthz (503) while the model loads: what it
    # imports before it listens must not wait seconds for TensorFlow.
    script = "import sys, serve, server.app; print('tensorflow' in sys.modules)"
    process = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True,
                             text=True, timeout=120)
    assert process.returncode == 0, process.stderr
    assert process.stdout == "False\n"
