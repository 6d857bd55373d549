"""docs/API.md "Decoding options" over HTTP, with the real tiny model: MBR answers, each
hypothesis's pieces, target prefixes, POST /score of given pieces, ensembles, and the decoding
lab's examples in GET /v1/info. Each field has its 400s, each naming the field.
"""

import contextlib
import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
from sacrebleu.metrics import CHRF

from server.app import create_app
from server.model_slot import ModelSlot
from tests.same_hypotheses import SCORE_TOLERANCE, assert_same_hypotheses, n_best
from tests.test_serve_api import REPO, assert_error, assert_serves
from tests.test_serve_batching import CountingTranslator, app_with
from tests.test_serve_browser import serving
from tests.test_serve_process import ServerProcess

SENTENCE = "I paid three hundred and five euros on Monday"
MBR = {"decoder": "mbr", "num_samples": 5, "seed": 3}


@pytest.fixture(scope="module")
def translator(tiny_model_dir):
    from decode.translator import Translator
    with contextlib.closing(Translator(tiny_model_dir)) as translator:
        yield translator


@pytest.fixture(scope="module")
def client(translator):
    return create_app(ModelSlot(translator), translator.config).test_client()


def posted(client, path, **body):
    response = client.post(path, json=body)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def spelled(pieces):
    """The text SentencePiece pieces spell, without the end token."""
    return "".join(piece for piece in pieces if piece != "</s>").replace("\u2581", " ").strip()


# --- Pieces ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("decoder, fields", [
    ("while_loop", {"beam_width": 4, "n_best": 3}), ("greedy", {}),
    ("sample", {"num_samples": 3, "n_best": 3, "seed": 1}), ("exact", {"max_expansions": 50}),
    ("mbr", {"num_samples": 3}),
])
def test_every_hypothesis_carries_its_pieces_and_they_score_its_score(client, decoder, fields):
    texts = ["forty two", SENTENCE]
    answer = posted(client, "/translate", texts=texts, decoder=decoder, **fields)
    for source, translation in zip(texts, answer["translations"]):
        assert translation["pieces"] == translation["n_best"][0]["pieces"]
        for hypothesis in translation["n_best"]:
            assert hypothesis["pieces"][-1] == "</s>" and "</s>" not in hypothesis["pieces"][:-1]
            assert spelled(hypothesis["pieces"]) == hypothesis["text"]
            [score] = posted(client, "/score", source=source,
                             target_pieces=hypothesis["pieces"])["scores"]
            assert [piece["piece"] for piece in score["pieces"]] == hypothesis["pieces"], \
                "the pieces scored are the pieces given"
            assert score["score"] == pytest.approx(hypothesis["score"], abs=1e-4)


# --- MBR ------------------------------------------------------------------------------------------

def test_mbr_answers_with_its_candidates_and_their_utilities(client, translator):
    answer = posted(client, "/translate", texts=["forty two", SENTENCE], **MBR)
    assert (answer["decoder"], answer["beam_width"]) == ("mbr", None)
    options = {name: value for name, value in MBR.items() if name != "decoder"}
    expected = translator.translate(["forty two", SENTENCE], decoder="mbr", options=options)
    chrf = CHRF()
    for translation, alone in zip(answer["translations"], expected):
        candidates = translation["candidates"]
        assert len(candidates) == 5 and translation["text"] == candidates[0]["text"]
        assert translation["expected_utility"] == candidates[0]["expected_utility"]
        assert [(candidate["text"], candidate["expected_utility"]) for candidate in candidates] \
            == [(candidate.text, pytest.approx(candidate.expected_utility, abs=1e-6))
                for candidate in alone.candidates], "seeded samples: the same in any batch"
        utilities = translation["utilities"]  # the candidates are the pseudo-references
        for row, candidate in enumerate(candidates):
            assert utilities[row] == pytest.approx([chrf.sentence_score(
                candidate["text"], [other["text"]]).score for other in candidates], abs=0.01)
            assert candidate["expected_utility"] == pytest.approx(
                sum(utilities[row]) / len(utilities[row]), abs=0.01)
        assert [candidate["expected_utility"] for candidate in candidates] == sorted(
            (candidate["expected_utility"] for candidate in candidates), reverse=True)
        assert candidates[0]["score"] == translation["score"]


def test_mbr_over_the_beam_takes_a_beam_width(client):
    answer = posted(client, "/translate", text="forty two", decoder="mbr",
                    mbr_candidates="beam", beam_width=3, num_samples=4, mbr_utility="bleu")
    assert answer["beam_width"] == 3
    [translation] = answer["translations"]
    assert len(translation["candidates"]) == 3 and len(translation["utilities"]) == 3
    assert all(len(row) == 4 for row in translation["utilities"]), "4 pseudo-references drawn"


@pytest.mark.parametrize("fields, message", [
    (dict(MBR, beam_width=3), "beam_width is not an option of the mbr decoder with "
                              "mbr_candidates sample"),
    (dict(MBR, trace=True), "trace: the mbr decoder keeps no beams to trace"),
    (dict(MBR, mbr_utility="meteor"), 'mbr_utility must be one of chrf, bleu, got "meteor"'),
    (dict(MBR, mbr_candidates=1), "mbr_candidates must be one of sample, beam, got 1"),
    (dict(MBR, epsilon=1), "epsilon must be in [0, 1), got 1"),
    ({"mbr_utility": "bleu"}, "mbr_utility is an option of the mbr decoder, not of while_loop"),
    ({"epsilon": 0.1}, "epsilon is an option of the sample and mbr decoders, not of while_loop"),
    ({"beam_width": 4, "diverse_beam_groups": 3}, "diverse_beam_groups must divide beam_width "
                                                  "4, got 3"),
    ({"decoder": "sample", "diverse_beam_strength": 1},
     "diverse_beam_strength is an option of the while_loop and unrolled decoders, not of sample"),
], ids=["beam_width", "trace", "utility", "candidates", "epsilon", "utility with a beam",
        "epsilon with a beam", "groups", "strength with sample"])
def test_a_bad_option_of_the_new_families_is_a_400_naming_it(client, fields, message):
    assert_error(client.post("/translate", json=dict(fields, text="one")), 400, "bad_request",
                 message)
    assert_serves(client)


def test_diverse_groups_are_the_translators(client, translator):
    options = {"diverse_beam_groups": 2, "diverse_beam_strength": 2.0}
    answer = posted(client, "/translate", text=SENTENCE, beam_width=4, n_best=4, **options)
    assert {name: answer["options"][name] for name in options} == options
    assert_same_hypotheses(n_best(answer["translations"]), n_best(translator.translate(
        [SENTENCE], beam_width=4, n_best=4, options=options)))


# --- target_prefix --------------------------------------------------------------------------------

def test_a_target_prefix_starts_the_translation(client, translator):
    texts = ["forty two", "on Wednesdays"]  # short: the unrolled graph of 16 steps
    plain = posted(client, "/translate", texts=texts, beam_width=3)["translations"]
    prefixes = [spelled(translation["pieces"][:2]) for translation in plain]
    forced = posted(client, "/translate", texts=texts, beam_width=3,
                    target_prefix=prefixes)["translations"]
    for translation, prefix in zip(forced, prefixes):
        assert translation["text"].startswith(prefix)
    expected = translator.translate(texts, beam_width=3, target_prefixes=prefixes)
    assert_same_hypotheses(n_best(forced), n_best(expected))
    other = "quarenta"  # one string: for every text
    for decoder in ("greedy", "unrolled", "sample", "mbr", "exact"):
        answer = posted(client, "/translate", texts=texts, decoder=decoder, target_prefix=other)
        for source, translation in zip(texts, answer["translations"]):
            assert translation["text"].startswith(other), decoder
            [score] = posted(client, "/score", source=source,
                             target_pieces=translation["pieces"])["scores"]
            assert score["score"] == pytest.approx(translation["score"], abs=1e-4), \
                "the forced pieces are scored too"
    empty = posted(client, "/translate", texts=texts, beam_width=3, target_prefix=["", "  "])
    assert empty["translations"] == plain, "an empty prefix is none"


@pytest.mark.parametrize("fields, message", [
    ({"target_prefix": 3}, "target_prefix must be a string (for every text) or a list of "
                           "strings (one per text), got a number"),
    ({"target_prefix": {"a": 1}}, "target_prefix must be a string"),
    ({"target_prefix": ["um"]}, "target_prefix has 1 entries for 2 texts: give one per text"),
    ({"target_prefix": ["um", "dois", "tres"]}, "target_prefix has 3 entries for 2 texts"),
    ({"target_prefix": ["um", None]}, "target_prefix[1] must be a string, got null"),
    ({"target_prefix": ["um", "x" * 501]}, "target_prefix[1] has 501 characters; the limit"),
    ({"target_prefix": "u\u0007m"}, "target_prefix contains the control character U+0007"),
    ({"target_prefix": ["um", "o " * 129]}, "target_prefix[1] has 258 tokens; the limit is 128"),
    ({"target_prefix": ["um", "o " * 17], "decoder": "unrolled"},
     "target_prefix[1] has 34 tokens; the unrolled decoder's graph grows with the length, so it "
     "serves up to 16 prefix tokens here; use while_loop"),
], ids=["number", "object", "too few", "too many", "null entry", "too long", "control",
        "too many tokens", "too many for unrolled"])
def test_a_bad_target_prefix_is_a_400_naming_it(client, fields, message):
    assert_error(client.post("/translate", json=dict(fields, texts=["one", "two"])), 400,
                 "bad_request", message)
    assert_serves(client)


def test_a_prefix_the_vocabulary_cannot_spell_is_refused_before_any_model_call(translator):
    counting = CountingTranslator(translator)
    client = app_with(counting, translator.config).test_client()
    unspellable = "\u65e5\u672c"  # no CJK in the tiny corpus: <unk> pieces
    assert_error(client.post("/translate", json={"texts": ["one", "two"],
                                                 "target_prefix": ["um", unspellable]}),
                 400, "bad_request", "target_prefix[1] %s holds characters the target "
                 "vocabulary lacks" % json.dumps(unspellable))
    assert counting.calls == [], "refused where it entered"
    answer = posted(client, "/translate", text="forty two", target_prefix="quarenta")
    assert answer["translations"][0]["text"].startswith("quarenta")


# --- constraints ----------------------------------------------------------------------------------

def test_a_constraint_appears_in_every_translation_over_http(translator):
    texts = ["forty two", "on Wednesdays"]  # short: the unrolled graph of 16 steps
    plain = translator.translate(texts, beam_width=3)
    def pieces(text):
        return [entry["piece"] for entry in translator.score(["one"], [text])[0]["pieces"]]
    # A word that is one piece of the target vocabulary, in neither plain translation.
    word = next(piece[1:] for piece in pieces("vinte trinta quarenta cinquenta maio mil euros")
                if piece not in plain[0].pieces + plain[1].pieces and len(piece) > 2
                and pieces(piece[1:]) == [piece, "</s>"])
    piece = "\u2581" + word
    with serving(translator) as url:
        for decoder, constraints in (("while_loop", [word]), ("unrolled", [[word], [word]])):
            status, answer = http_post(url + "translate", {
                "texts": texts, "decoder": decoder, "beam_width": 3, "n_best": 3,
                "constraints": constraints})
            assert status == 200, answer
            for translation in answer["translations"]:
                assert all(piece in hypothesis["pieces"] for hypothesis in translation["n_best"])
            assert_same_hypotheses(n_best(answer["translations"]), n_best(translator.translate(
                texts, decoder, 3, n_best=3, constraints=[[word], [word]])))
        status, answer = http_post(url + "translate", {"text": "one", "decoder": "greedy",
                                                       "constraints": [word]})
        assert (status, answer) == (400, {"error": {
            "code": "bad_request", "message": "constraints is an option of the while_loop and "
                                              "unrolled decoders, not of greedy"}})


def http_post(url, body):
    """(status, JSON answer) of a real HTTP POST of `body` as JSON."""
    call = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"), method="POST",
                                  headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(call, timeout=120) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


@pytest.mark.parametrize("fields, message", [
    ({"constraints": 3}, "constraints must be a list of strings (for every text) or a list of "
                         "lists of strings (one per text), got a number"),
    ({"constraints": "um"}, "constraints must be a list of strings (for every text)"),
    ({"constraints": [["um"]]}, "constraints has 1 entries for 2 texts: give one per text"),
    ({"constraints": [["um"], "dois"]}, "constraints[1] must be a list of strings, got a string"),
    ({"constraints": [["um"], ["dois", 3]]}, "constraints[1][1] must be a string, got a number"),
    ({"constraints": [["um"], ["dois", " "]]}, "constraints[1][1] is empty"),
    ({"constraints": ["um", None]}, "constraints[1] must be a string, got null"),
    ({"constraints": [[], ["\u65e5\u672c"]]},
     'constraints[1][0] "\\u65e5\\u672c" holds characters the target vocabulary lacks'),
    ({"constraints": [[], ["o " * 129]]}, "constraints[1][0] has 258 tokens; the limit is 128"),
    ({"constraints": [[], ["o " * 40, "o " * 40]]}, "constraints[1]: its 160 pieces, the target "
     "prefix's and the end token must fit in max_target_length 64, got 161"),
    ({"constraints": [[], ["o " * 9]], "decoder": "unrolled"},
     "constraints[1] has 18 tokens; the unrolled decoder's graph grows with the length, so it "
     "serves up to 16 constraint tokens here; use while_loop"),
    ({"constraints": ["um"], "beam_width": 4, "diverse_beam_groups": 2},
     "constraints cannot be combined with diverse_beam_groups 2"),
    ({"constraints": ["um"], "decoder": "sample"},
     "constraints is an option of the while_loop and unrolled decoders, not of sample"),
], ids=["number", "string", "too few", "not a list", "not a string", "empty", "null", "unspellable",
        "too many tokens", "too long for the model", "too many for unrolled", "diverse groups",
        "sample"])
def test_bad_constraints_are_a_400_naming_them(client, fields, message):
    assert_error(client.post("/translate", json=dict(fields, texts=["one", "two"])), 400,
                 "bad_request", message)
    assert_serves(client)


# --- POST /score of target_pieces -----------------------------------------------------------------

def test_target_pieces_score_as_given_beside_texts(client, translator):
    [translation] = posted(client, "/translate", text=SENTENCE)["translations"]
    pairs = [{"source": SENTENCE, "target_pieces": translation["pieces"]},
             {"source": "one", "target": "um"},
             {"source": "forty two", "target_pieces": ["</s>"]}]
    answer = posted(client, "/score", pairs=pairs, length_penalty_kind="none")
    expected = translator.score(["one"], ["um"], {"length_penalty_kind": "none"})[0]
    assert answer["scores"][1]["score"] == pytest.approx(expected["score"], abs=SCORE_TOLERANCE)
    assert [piece["piece"] for piece in answer["scores"][0]["pieces"]] == translation["pieces"]
    assert answer["scores"][0]["log_prob"] == pytest.approx(sum(
        piece["log_prob"] for piece in answer["scores"][0]["pieces"]), abs=1e-4)
    assert answer["scores"][2]["length"] == 1, "the end token alone: the empty translation"
    without_end = posted(client, "/score", source=SENTENCE,
                         target_pieces=translation["pieces"][:-1])["scores"][0]
    assert without_end == answer["scores"][0] or without_end["score"] == pytest.approx(
        translation["score"], abs=1e-4), "the end token is scored whether given or not"


@pytest.mark.parametrize("body, message", [
    ({"source": "one", "target": "um", "target_pieces": ["GOOD"]},
     'give "target" (a string) or "target_pieces" (a list of pieces), not both'),
    ({"source": "one"}, 'give "source" and "target" (strings) or "target_pieces"'),
    ({"source": "one", "target_pieces": "GOOD"},
     "target_pieces must be a list of pieces, got a string"),
    ({"source": "one", "target_pieces": None}, "target_pieces must be a list of pieces, got null"),
    ({"source": "one", "target_pieces": ["GOOD", 3]},
     "target_pieces[1] is 3, not a piece of the target vocabulary"),
    ({"source": "one", "target_pieces": ["GOOD", "zzz-no-such-piece"]},
     'target_pieces[1] is "zzz-no-such-piece", not a piece of the target vocabulary'),
    ({"source": "one", "target_pieces": ["</s>", "GOOD"]},
     'target_pieces[0] is "</s>", which ends a translation'),
    ({"source": "one", "target_pieces": ["GOOD"] * 270},  # 2.0 * 128 + 10 - 1, as translations
     "target_pieces has 270 tokens; the limit is 265, the longest translation of a source of 128"),
    ({"pairs": [{"source": "one", "target": "um"},
                {"source": "two", "target_pieces": ["GOOD", "<unk>x"]}]},
     'pairs[1].target_pieces[1] is "<unk>x", not a piece of the target vocabulary'),
    ({"pairs": [{"source": "one", "target": "um", "target_pieces": []}]},
     'pairs[0] must be an object with "source" and "target" (or "target_pieces")'),
    ({"pairs": [], "target_pieces": []}, 'give "pairs", or "source" and "target"'),
], ids=["both", "neither", "a string", "null", "a number piece", "unknown piece", "end token first",
        "too many", "in a pair", "a pair with both", "pairs and pieces"])
def test_a_bad_target_pieces_is_a_400_naming_it(client, body, message):
    good = posted(client, "/translate", text="one")["translations"][0]["pieces"][0]
    body = json.loads(json.dumps(body).replace("GOOD", good))  # a piece of the vocabulary
    assert_error(client.post("/score", json=body), 400, "bad_request", message)
    assert posted(client, "/score", source="one", target="um")["scores"][0]["length"] >= 2


# --- Ensembles ------------------------------------------------------------------------------------

def test_an_ensemble_lists_its_members_and_translates_as_its_model(tiny_model_dir, translator):
    from decode.translator import Translator
    with contextlib.closing(Translator([tiny_model_dir] * 2)) as ensemble:
        client = create_app(ModelSlot(ensemble), ensemble.config).test_client()
        model = client.get("/v1/info").get_json()["model"]
        assert model["members"] == [{"name": translator.model_name, "step": translator.step}] * 2
        answer = posted(client, "/translate", texts=["forty two", SENTENCE], n_best=2)
        assert answer["model"]["members"] == model["members"]
        assert_same_hypotheses(n_best(answer["translations"]), n_best(translator.translate(
            ["forty two", SENTENCE], n_best=2)))  # two copies: the model's distribution
    assert "members" not in posted(create_app(ModelSlot(translator), translator.config)
                                   .test_client(), "/translate", text="one")["model"]


def test_serve_py_serves_an_ensemble(tiny_model_dir, translator, tmp_path):
    server = ServerProcess(tiny_model_dir, str(tmp_path / "serve.log"),
                           ["--model_dir", tiny_model_dir])
    try:
        server.wait_until_ready()
        status, info = server.request("GET", "/v1/info")
        assert status == 200 and info["model"]["members"] == [
            {"name": translator.model_name, "step": translator.step}] * 2
        assert info["lab_examples"] == [] and server.request("GET", "/v1/training")[1][
            "running"] is False, "an ensemble: no one directory's lab or training"
        status, answer = server.request("POST", "/translate", {"text": "forty two"})
        assert status == 200
        assert_same_hypotheses(n_best(answer["translations"]), n_best(translator.translate(
            ["forty two"])))
        assert "an ensemble of 2 models: loaded once, not watched" in server.log()
    finally:
        server.stop()


def model_files(model_dir, into):
    """A directory of `model_dir`'s config and SentencePiece models only: what serve.py reads
    before it loads anything."""
    os.makedirs(into)
    for name in os.listdir(model_dir):
        if name == "config.yaml" or name.endswith((".model", ".json")):
            shutil.copy(os.path.join(model_dir, name), into)
    return into


def serve_py(*args):
    return subprocess.run([sys.executable, "serve.py", "--port", "0", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_an_ensemble_of_other_vocabularies_is_refused_at_start(tiny_model_dir, tmp_path):
    from data_pipeline.tokenizer import train_tokenizer
    same = model_files(tiny_model_dir, str(tmp_path / "same"))
    other = model_files(tiny_model_dir, str(tmp_path / "other"))
    train_tokenizer([("Tom is here.", "Tom está aqui."), ("Where is it?", "Onde está?")] * 20,
                    other, 50, "unigram", joint=True)
    finished = serve_py("--model_dir", same, "--model_dir", other)
    assert finished.returncode == 2, finished.stderr
    assert "%s and %s have different vocabularies" % (same, other) in finished.stderr
    assert "Traceback" not in finished.stderr
    finished = serve_py("--model_dir", same, "--model_dir", same, "--export_dir", other)
    assert finished.returncode == 2
    assert "--export_dir serves one model directory's SavedModel, not an ensemble" in \
        finished.stderr


# --- The decoding lab's examples ------------------------------------------------------------------

LAB_EXAMPLES = [
    {"index": 4, "source": "Show hidden files", "reference": "Mostrar arquivos ocultos",
     "kinds": ["search_error", "wider_beam_changes"], "note": "gnmt 0.6: beam 5 ..."},
    {"index": 9, "source": "Open", "reference": "Abrir", "kinds": ["empty_exact_best"],
     "note": "exact ..."},
]


def test_info_offers_the_lab_s_examples(translator, tmp_path, caplog):
    def lab_examples():
        slot = ModelSlot(translator, lab_dir=str(tmp_path))  # reads lab.json as it loads
        return create_app(slot, translator.config).test_client().get("/v1/info").get_json()[
            "lab_examples"]

    assert lab_examples() == [], "no lab.json: none"
    report = {"sweep": [], "examples": LAB_EXAMPLES + [{"index": 1, "kinds": ["search_error"]},
                                                       "not an example"]}
    (tmp_path / "lab.json").write_text(json.dumps(report), encoding="utf-8")
    assert lab_examples() == LAB_EXAMPLES
    assert "2 of its 4 examples lack a source or kinds" in caplog.text
    (tmp_path / "lab.json").write_text("{not json", encoding="utf-8")
    assert lab_examples() == []
    assert "cannot read %s" % (tmp_path / "lab.json") in caplog.text
