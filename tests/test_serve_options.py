"""The decoding options, POST /score and the exact search over HTTP, with the real tiny model.

Every option has a case for a wrong type, a value out of range and a decoder that does not use
it: a 400 whose message names the field, and the next request answered as usual. Valid requests
are checked against the Translator called directly.
"""

import glob
import os

import pytest

from decode.request import COMMON_OPTIONS
from seq2seq.decoding_options import OPTIONS, DecodingOptions
from server.app import create_app
from server.model_slot import ModelSlot
from server.request_checks import MAX_SERVED_EXPANSIONS
from tests.same_hypotheses import SCORE_TOLERANCE, assert_same_hypotheses, n_best
from tests.test_serve_api import assert_error, assert_serves
from tests.test_serve_batching import CountingTranslator, app_with, post_behind_a_held_call

SENTENCE = "I paid three hundred and five euros on Monday"
SAMPLE = {"decoder": "sample"}
EXACT = {"decoder": "exact"}


@pytest.fixture(scope="module")
def translator(tiny_model_dir):
    from decode.translator import Translator
    return Translator(tiny_model_dir)


@pytest.fixture(scope="module")
def client(translator):
    return create_app(ModelSlot(translator), translator.config).test_client()


def translated(client, **body):
    response = client.post("/translate", json=body)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def assert_as_translator(answer, expected):
    """An answer's translation is the Translator's `expected` (tests/same_hypotheses.py's rule:
    the server may batch it with others)."""
    assert_same_hypotheses(n_best([answer]), n_best([expected]))


# --- GET /v1/info ------------------------------------------------------------------------------

def test_info_reports_each_option_s_default_range_hint_and_decoders(client, translator):
    decoding = client.get("/v1/info").get_json()["decoding"]
    decode_params = translator.config["decode"]
    assert list(decoding) == list(OPTIONS)
    for name, entry in decoding.items():
        assert entry["default"] == decode_params[name]
        assert entry["hint"] == DecodingOptions.model_fields[name].description
    longest, widest = translator.config["data"]["max_target_length"], decode_params["max_beam_width"]
    assert {name: (entry["type"], entry.get("choices") or (
        entry["min"], entry["max"], entry["exclusive_min"], entry["exclusive_max"]))
        for name, entry in decoding.items()} == {  # docs/API.md's ranges
        "length_penalty": ("number", (0, 10, False, False)),
        "length_penalty_kind": ("choice", ["gnmt", "average", "none"]),
        "coverage_penalty": ("number", (0, 10, False, False)),
        "no_repeat_ngram_size": ("integer", (0, longest, False, False)),
        "min_length": ("integer", (0, longest, False, False)),
        "diverse_beam_groups": ("integer", (1, None, False, False)),
        "diverse_beam_strength": ("number", (0, None, False, False)),
        "num_samples": ("integer", (1, widest, False, False)),
        "temperature": ("number", (1e-6, None, False, False)),
        "top_k": ("integer", (0, 2 ** 31 - 1, False, False)),
        "top_p": ("number", (0, 1, True, False)),
        "epsilon": ("number", (0, 1, False, True)),
        "seed": ("integer", (-2 ** 62, 2 ** 62, False, False)),
        "max_expansions": ("integer", (1, MAX_SERVED_EXPANSIONS, False, False)),
        "mbr_candidates": ("choice", ["sample", "beam"]),
        "mbr_utility": ("choice", ["chrf", "bleu"]),
        "placeholders": ("choice", ["keep", "free"])}
    every = ["while_loop", "unrolled", "greedy", "sample", "exact", "mbr"]
    samplers = ["sample", "mbr"]
    assert {name: entry["decoders"] for name, entry in decoding.items()} == dict(
        {name: every for name in COMMON_OPTIONS}, coverage_penalty=every[:4] + ["mbr"],
        diverse_beam_groups=every[:2], diverse_beam_strength=every[:2], num_samples=samplers,
        temperature=samplers, top_k=samplers, top_p=samplers, epsilon=samplers, seed=samplers,
        max_expansions=["exact"], mbr_candidates=["mbr"], mbr_utility=["mbr"],
        placeholders=every[:2])


def test_info_s_ranges_are_the_ones_requests_are_held_to(client, translator):
    """Each reported edge is accepted (unless excluded) and a step beyond it refused."""
    for name, entry in client.get("/v1/info").get_json()["decoding"].items():
        decoder = entry["decoders"][0]
        if entry["type"] == "choice":
            edges = [(choice, True) for choice in entry["choices"]] + [("other", False)]
        else:
            step = 1 if entry["type"] == "integer" else 1e-3
            edges = [(entry["min"], not entry["exclusive_min"]), (entry["min"] - step, False)]
            if entry["max"] is not None:
                edges += [(entry["max"], not entry["exclusive_max"]), (entry["max"] + step, False)]
        for value, allowed in edges:
            if allowed:  # the Translator's check: decoding would only add time
                assert getattr(translator.request(decoder, options={name: value}), name) == value
            else:
                response = client.post("/translate", json={"text": "one", "decoder": decoder,
                                                            name: value})
                assert response.status_code == 400, (name, value)
                assert response.get_json()["error"]["message"].startswith(name + " must be ")


# --- POST /translate: every option's bad values -------------------------------------------------

BAD_OPTIONS = [
    # (case id, fields beside "text", part of the message)
    ("length_penalty a string", {"length_penalty": "0.6"},
     'length_penalty must be a number, got "0.6"'),
    ("length_penalty a boolean", {"length_penalty": True},
     "length_penalty must be a number, got true"),
    ("length_penalty negative", {"length_penalty": -0.1},
     "length_penalty must be in 0..10, got -0.1"),
    ("length_penalty_kind unknown", {"length_penalty_kind": "log"},
     'length_penalty_kind must be one of gnmt, average, none, got "log"'),
    ("length_penalty_kind a number", {"length_penalty_kind": 1},
     "length_penalty_kind must be one of gnmt, average, none, got 1"),
    ("coverage_penalty a list", {"coverage_penalty": [0.2]},
     "coverage_penalty must be a number, got [0.2]"),
    ("coverage_penalty negative", {"coverage_penalty": -1},
     "coverage_penalty must be in 0..10, got -1"),
    ("coverage_penalty with exact", dict(EXACT, coverage_penalty=0.2),
     "coverage_penalty is not an option of the exact decoder"),
    ("no_repeat_ngram_size a float", {"no_repeat_ngram_size": 2.0},
     "no_repeat_ngram_size must be an integer, got 2.0"),
    ("no_repeat_ngram_size negative", {"no_repeat_ngram_size": -1},
     "no_repeat_ngram_size must be in 0..64, got -1"),
    ("no_repeat_ngram_size over the length limit", {"no_repeat_ngram_size": 65},
     "no_repeat_ngram_size must be in 0..64, got 65"),
    ("min_length a string", {"min_length": "3"}, 'min_length must be an integer, got "3"'),
    ("min_length negative", {"decoder": "greedy", "min_length": -2},
     "min_length must be in 0..64, got -2"),
    ("min_length over the length limit", {"min_length": 65}, "min_length must be in 0..64, got 65"),
    ("num_samples a float", dict(SAMPLE, num_samples=2.5),
     "num_samples must be an integer, got 2.5"),
    ("num_samples zero", dict(SAMPLE, num_samples=0), "num_samples must be in 1..8, got 0"),
    ("num_samples over the widest beam", dict(SAMPLE, num_samples=9),
     "num_samples must be in 1..8, got 9"),
    ("num_samples with a beam search", {"num_samples": 2},
     "num_samples is an option of the sample and mbr decoders, not of while_loop"),
    ("temperature a string", dict(SAMPLE, temperature="hot"),
     'temperature must be a number, got "hot"'),
    ("temperature zero", dict(SAMPLE, temperature=0), "temperature must be in 1e-06.., got 0"),
    ("temperature infinite in float32", dict(SAMPLE, temperature=1e39),
     "temperature must be a finite number of at most 3.403e+38 in size, got 1e+39"),
    ("coverage_penalty over its range", {"coverage_penalty": 3e38},
     "coverage_penalty must be in 0..10, got 3e+38"),
    ("temperature too small for float32", dict(SAMPLE, temperature=1e-38),
     "temperature must be in 1e-06.., got 1e-38"),
    ("top_k over int32", dict(SAMPLE, top_k=2 ** 31), "top_k must be in 0..2147483647"),
    ("temperature with greedy", {"decoder": "greedy", "temperature": 0.5},
     "temperature is an option of the sample and mbr decoders, not of greedy"),
    ("top_k a boolean", dict(SAMPLE, top_k=False), "top_k must be an integer, got false"),
    ("top_k negative", dict(SAMPLE, top_k=-1), "top_k must be in 0..2147483647, got -1"),
    ("top_k with unrolled", {"decoder": "unrolled", "top_k": 5},
     "top_k is an option of the sample and mbr decoders, not of unrolled"),
    ("top_p a string", dict(SAMPLE, top_p="0.9"), 'top_p must be a number, got "0.9"'),
    ("top_p zero", dict(SAMPLE, top_p=0), "top_p must be in (0, 1], got 0"),
    ("top_p over one", dict(SAMPLE, top_p=1.5), "top_p must be in (0, 1], got 1.5"),
    ("top_p with exact", dict(EXACT, top_p=0.9),
     "top_p is an option of the sample and mbr decoders, not of exact"),
    ("seed a float", dict(SAMPLE, seed=1.5), "seed must be an integer, got 1.5"),
    ("seed of 20 digits", dict(SAMPLE, seed=10 ** 20),
     "seed must be in -4611686018427387904..4611686018427387904, got an integer of more than 15"),
    ("seed with a beam search", {"seed": 1},
     "seed is an option of the sample and mbr decoders, not of while_loop"),
    ("max_expansions a float", dict(EXACT, max_expansions=10.0),
     "max_expansions must be an integer, got 10.0"),
    ("max_expansions zero", dict(EXACT, max_expansions=0),
     "max_expansions must be in 1..%d, got 0" % MAX_SERVED_EXPANSIONS),
    ("max_expansions over the server's cap", dict(EXACT, max_expansions=MAX_SERVED_EXPANSIONS + 1),
     "max_expansions must be in 1..%d, got %d" % (MAX_SERVED_EXPANSIONS,
                                                  MAX_SERVED_EXPANSIONS + 1)),
    ("max_expansions with sample", dict(SAMPLE, max_expansions=5),
     "max_expansions is an option of the exact decoder, not of sample"),
    ("beam_width with sample", dict(SAMPLE, beam_width=2),
     "beam_width is not an option of the sample decoder"),
    ("beam_width with exact", dict(EXACT, beam_width=2),
     "beam_width is not an option of the exact decoder"),
    ("n_best over the samples", dict(SAMPLE, num_samples=2, n_best=3),
     "n_best must be an integer in 1..2 (the number of samples), got 3"),
    ("n_best with exact", dict(EXACT, n_best=2),
     "n_best must be an integer in 1..1 (the exact search finds the one best translation), got 2"),
    ("trace with sample", dict(SAMPLE, trace=True),
     "trace: the sample decoder keeps no beams to trace"),
    ("trace with exact", dict(EXACT, trace=True),
     "trace: the exact decoder keeps no beams to trace"),
]


@pytest.mark.parametrize("fields, message_part", [case[1:] for case in BAD_OPTIONS],
                         ids=[case[0] for case in BAD_OPTIONS])
def test_a_bad_option_is_a_400_naming_it(client, fields, message_part):
    assert_error(client.post("/translate", json=dict(fields, text="one")), 400, "bad_request",
                 message_part)
    assert_serves(client)


# --- POST /translate: options as the Translator applies them -----------------------------------

@pytest.mark.parametrize("decoder, options, n_best", [
    ("while_loop", {"length_penalty_kind": "average"}, 2),
    ("while_loop", {"length_penalty": 1.0, "coverage_penalty": 0.4}, 1),
    ("while_loop", {"no_repeat_ngram_size": 2, "min_length": 4}, 3),
    ("unrolled", {"length_penalty_kind": "none", "min_length": 6}, 2),
    ("greedy", {"no_repeat_ngram_size": 1}, 1),
    ("sample", {"num_samples": 3, "temperature": 0.7, "top_k": 5, "top_p": 0.9, "seed": 7}, 3),
    ("exact", {"max_expansions": 50, "length_penalty_kind": "none"}, 1),
])
def test_options_are_the_translators(client, translator, decoder, options, n_best):
    texts = ["forty two", "nine thousand"]
    answer = translated(client, texts=texts, decoder=decoder, n_best=n_best, **options)
    expected = translator.translate(texts, decoder=decoder, n_best=n_best, options=options)
    for translation, alone in zip(answer["translations"], expected):
        assert_as_translator(translation, alone)
    resolved = translator.request(decoder, options=options)
    assert answer["options"] == {name: getattr(resolved, name) for name in answer["options"]}
    assert set(answer["options"]) <= set(OPTIONS) and set(options) <= set(answer["options"])


def test_null_options_are_the_defaults(client):
    nulls = {name: None for name in OPTIONS}  # null: the default, even of an unused option
    with_nulls = translated(client, text=SENTENCE, decoder="sample", n_best=4, **nulls)
    plain = translated(client, text=SENTENCE, decoder="sample", n_best=4)
    assert with_nulls["translations"] == plain["translations"]
    assert with_nulls["options"] == plain["options"]


def test_options_change_the_answer(client):
    plain = translated(client, text=SENTENCE)["translations"][0]
    longer = translated(client, text=SENTENCE, min_length=20)["translations"][0]
    assert longer["text"] != plain["text"] and len(longer["text"]) > len(plain["text"])
    unnormalised = translated(client, text=SENTENCE, length_penalty_kind="none")["translations"][0]
    assert unnormalised["score"] != pytest.approx(plain["score"], abs=1e-3), \
        "the same model, another normalisation: another score"
    first, again, other = (translated(client, text=SENTENCE, decoder="sample", num_samples=4,
                                      n_best=4, seed=seed)["translations"][0]["n_best"]
                           for seed in (1, 1, 2))
    assert first == again, "the same seed draws the same samples"
    assert first != other, "another seed draws others"


def test_requests_batch_only_with_the_same_decoder_and_options(translator):
    counting = CountingTranslator(translator, hold_first=True)
    app = app_with(counting, translator.config)
    default_alpha = translator.config["decode"]["length_penalty"]
    bodies = [{"text": "one"}, {"text": "forty two", "length_penalty": default_alpha},
              {"text": "nine thousand", "min_length": 5}, {"text": "twenty one", "min_length": 5},
              {"text": "seven", "decoder": "greedy"}]
    responses = post_behind_a_held_call(app, counting, bodies)
    assert [response.status_code for response in responses] == [200] * len(bodies)
    calls = sorted(zip(counting.calls[1:], (call.min_length for call in counting.requests[1:])))
    assert calls == [(1, 0), (2, 0), (2, 5)], \
        "the default given or left out batch together; another min_length or decoder apart"
    for body, response in zip(bodies, responses):
        options = {name: value for name, value in body.items() if name in OPTIONS}
        [alone] = translator.translate([body["text"]], decoder=body.get("decoder", "while_loop"),
                                       options=options)
        assert_as_translator(response.get_json()["translations"][0], alone)


# --- The exact search ---------------------------------------------------------------------------

def test_exact_answers_say_proven_and_expansions(client, translator):
    texts = ["one", "forty two", SENTENCE]
    answer = translated(client, texts=texts, decoder="exact")
    assert (answer["decoder"], answer["beam_width"]) == ("exact", None)
    assert answer["options"]["max_expansions"] == translator.config["decode"]["max_expansions"]
    beams = translated(client, texts=texts)["translations"]
    for translation, alone, beam in zip(answer["translations"], translator.translate(
            texts, decoder="exact"), beams):
        assert_as_translator(translation, alone)
        assert (translation["proven"], translation["expansions"]) == (alone.proven,
                                                                     alone.expansions)
        assert 1 <= translation["expansions"] <= answer["options"]["max_expansions"]
        assert translation["score"] >= beam["score"] - 1e-4, "never below the beam it starts from"
        assert "proven" not in beam and "expansions" not in beam
    assert answer["translations"][0]["proven"] is True, "a one-word source is proven at once"


def test_the_exact_search_stops_at_the_cap_a_request_asks_for(client, translator):
    [unproven] = translator.translate([SENTENCE], decoder="exact", options={"max_expansions": 5})
    assert unproven.proven is False, "the sentence needs more than 5 expansions"
    [translation] = translated(client, text=SENTENCE, decoder="exact",
                               max_expansions=5)["translations"]
    assert (translation["proven"], translation["expansions"]) == (False, 5)
    assert_as_translator(translation, unproven)


# --- POST /score ----------------------------------------------------------------------------------

def scored(client, **body):
    response = client.post("/score", json=body)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def assert_same_scores(answer, expected):
    assert len(answer) == len(expected)
    for score, alone in zip(answer, expected):
        assert [piece["piece"] for piece in score["pieces"]] == \
            [piece["piece"] for piece in alone["pieces"]]
        assert [piece["log_prob"] for piece in score["pieces"]] == pytest.approx(
            [piece["log_prob"] for piece in alone["pieces"]], abs=SCORE_TOLERANCE)
        assert (score["score"], score["log_prob"]) == pytest.approx(
            (alone["score"], alone["log_prob"]), abs=SCORE_TOLERANCE)
        assert score["length"] == alone["length"]


def test_score_answers_equal_the_translators(client, translator):
    answer = scored(client, source="  forty two ", target="quarenta e dois")
    assert list(answer) == ["scores", "model"]
    assert answer["model"] == {"name": translator.model_name, "step": translator.step}
    assert_same_scores(answer["scores"], translator.score(["forty two"], ["quarenta e dois"]))
    sources, targets = ["one", "nine thousand", SENTENCE], ["um", "", "Eu paguei trezentos euros."]
    options = {"length_penalty": 1.0, "length_penalty_kind": "average", "coverage_penalty": 0.3}
    answer = scored(client, pairs=[{"source": source, "target": target}
                                   for source, target in zip(sources, targets)], **options)
    expected = translator.score(sources, targets, options)
    assert_same_scores(answer["scores"], expected)
    assert answer["scores"][1]["length"] == 1 and \
        [piece["piece"] for piece in answer["scores"][1]["pieces"]] == ["</s>"], \
        "the empty translation: the end token alone"
    assert expected[0]["score"] != pytest.approx(translator.score(["one"], ["um"])[0]["score"],
                                                 abs=1e-3), "the options change the score"


def test_a_search_s_own_output_scores_its_score(client):
    compared = 0
    for text in ("one", "forty two", "nine thousand", "twenty one", SENTENCE):
        [translation] = translated(client, text=text, trace=True)["translations"]
        [score] = scored(client, source=text, target=translation["text"])["scores"]
        pieces = [piece["piece"] for piece in score["pieces"]]
        if pieces != translation["trace"]["n_best"][0]["pieces"]:
            continue  # its text splits into other pieces than the search chose
        assert score["score"] == pytest.approx(translation["score"], abs=1e-4)
        compared += 1
    assert compared >= 3


BAD_SCORES = [
    # (case id, body, part of the message)
    ("no target", {"source": "one"}, 'give "source" and "target" (strings) or "target_pieces"'),
    ("both forms", {"source": "one", "target": "um", "pairs": []},
     'give "pairs", or "source" and "target" (or "target_pieces"), not both'),
    ("unknown field", {"source": "one", "target": "um", "text": "one"}, 'unknown field "text"; '
     "the fields are source, target, target_pieces, pairs, length_penalty, length_penalty_kind, "
     "coverage_penalty"),
    ("source not a string", {"source": 1, "target": "um"}, "source must be a string, got a number"),
    ("source empty", {"source": " ", "target": "um"}, "source is empty"),
    ("source too long", {"source": "one " * 130, "target": "um"},
     "source has 519 characters; the limit is 500"),
    ("source of too many tokens", {"source": "a " * 249 + "a", "target": "um"},
     "source has 500 tokens; the limit is 128"),
    ("target null", {"source": "one", "target": None}, "target must be a string, got null"),
    ("target too long", {"source": "one", "target": "um " * 170},
     "target has 509 characters; the limit is 500"),
    ("target of too many tokens", {"source": "one", "target": "a " * 200},
     "target has 400 tokens; the limit is 265, the longest translation of a source of 128"),
    ("target with a control character", {"source": "one", "target": "u\u0007m"},
     "target contains the control character U+0007 at position 1"),
    ("pairs not a list", {"pairs": {"source": "one", "target": "um"}},
     "pairs must be a list of objects, got an object"),
    ("pairs empty", {"pairs": []}, "pairs is empty"),
    ("too many pairs", {"pairs": [{"source": "one", "target": "um"}] * 33},
     "pairs has 33 entries; the limit is 32"),
    ("a pair not an object", {"pairs": [{"source": "one", "target": "um"}, "two"]},
     'pairs[1] must be an object with "source" and "target" (or "target_pieces"), got "two"'),
    ("a pair without its target", {"pairs": [{"source": "one"}]},
     'pairs[0] must be an object with "source" and "target"'),
    ("a pair's source empty", {"pairs": [{"source": "one", "target": "um"},
                                         {"source": "", "target": "x"}]},
     "pairs[1].source is empty"),
    ("a pair's target a number", {"pairs": [{"source": "one", "target": 2}]},
     "pairs[0].target must be a string, got a number"),
    ("length_penalty negative", {"source": "one", "target": "um", "length_penalty": -1},
     "length_penalty must be in 0..10, got -1"),
    ("length_penalty_kind unknown", {"source": "one", "target": "um", "length_penalty_kind": "x"},
     'length_penalty_kind must be one of gnmt, average, none, got "x"'),
    ("coverage_penalty a string", {"source": "one", "target": "um", "coverage_penalty": "0"},
     'coverage_penalty must be a number, got "0"'),
    ("an option that does not change a score", {"source": "one", "target": "um", "min_length": 2},
     "min_length does not change a score; the scoring options are length_penalty, "
     "length_penalty_kind, coverage_penalty"),
]


@pytest.mark.parametrize("body, message_part", [case[1:] for case in BAD_SCORES],
                         ids=[case[0] for case in BAD_SCORES])
def test_a_bad_score_request_is_a_400_naming_the_field(client, body, message_part):
    assert_error(client.post("/score", json=body), 400, "bad_request", message_part)
    assert scored(client, source="one", target="um")["scores"][0]["length"] >= 2


def test_score_refuses_what_is_not_json_and_waits_for_the_model(translator):
    slot = ModelSlot()
    client = create_app(slot, translator.config).test_client()
    assert_error(client.post("/score", json={"source": "one", "target": "um"}), 503,
                 "unavailable", "loading")
    slot.fill(translator)
    assert_error(client.post("/score", data='{"source": "one", "target": "um"}',
                             content_type="text/plain"), 415, "unsupported_media_type",
                 "Content-Type: application/json")
    assert_error(client.get("/score"), 405, "method_not_allowed", "use POST")
    assert "POST /score" in client.get("/nowhere").get_json()["error"]["message"]


def test_a_saved_model_scores_nothing_and_says_why(tiny_model_dir, translator):
    from decode.translator import Translator
    exported = Translator(tiny_model_dir, export_dir=max(glob.glob(
        os.path.join(tiny_model_dir, "export", "*"))))
    client = create_app(ModelSlot(exported), translator.config).test_client()
    assert_error(client.post("/score", json={"source": "one", "target": "um"}), 400,
                 "bad_request", "scoring needs a checkpoint")
    assert_error(client.post("/translate", json={"text": "one", "min_length": 3}), 400,
                 "bad_request", "the exported SavedModel serves the config's decoding options only")
    exported.close()
