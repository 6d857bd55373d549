"""The DecodeRequest (decode/request.py): validated once at each entry point, its messages, and
the graph key and feeds it gives. Most cases need no model: the context is written out here."""

import pytest

from decode import translate as translate_cli
from decode.request import DecodeRequest, Served, decode_request, score_request
from lab import sweep
from seq2seq.config import DEFAULTS
from seq2seq.decoding_options import limits
from server.app import create_app
from server.model_slot import ModelSlot

DECODE = dict(DEFAULTS["decode"], beam_width=3, max_beam_width=8)
SERVED = Served(DECODE, limits(DECODE, 64), ("while_loop", "unrolled", "greedy", "sample",
                                             "exact", "mbr"), range(1, 9), 3, True, False)
EXPORTED = SERVED._replace(decoders=("while_loop",), beam_widths=range(3, 4), can_trace=False,
                           exported=True)


def count_validations(monkeypatch, call):
    """How many DecodeRequests `call()` validates."""
    validations = []
    validate = DecodeRequest.model_validate.__func__

    def counting(cls, *args, **kwargs):
        validations.append(args)
        return validate(cls, *args, **kwargs)
    monkeypatch.setattr(DecodeRequest, "model_validate", classmethod(counting))
    call()
    return len(validations)


# --- Once per entry point ---------------------------------------------------------------------

def test_one_post_translate_validates_one_request(monkeypatch, translator):
    client = create_app(ModelSlot(translator), translator.config).test_client()
    body = {"texts": ["one", "forty two", "nine thousand"], "n_best": 2, "min_length": 1,
            "target_prefix": ["um", "", "nove"]}
    assert count_validations(monkeypatch, lambda: client.post("/translate", json=body)) == 1
    response = client.post("/translate", json=body)
    assert response.status_code == 200, response.get_json()


def test_one_decode_translate_run_validates_one_request(monkeypatch, tiny_model_dir, tmp_path):
    monkeypatch.setattr(translate_cli, "BATCHES_PER_CHUNK", 1)  # the lines below: 3 chunks
    (tmp_path / "in").write_text("one\nforty two\n\nnine thousand\n" * 20, encoding="utf-8")
    (tmp_path / "prefixes").write_text("um\n\n\n\n" * 20, encoding="utf-8")
    args = ["--model_dir", tiny_model_dir, "--input", str(tmp_path / "in"), "--output",
            str(tmp_path / "out"), "--target_prefix", str(tmp_path / "prefixes")]
    assert count_validations(monkeypatch, lambda: translate_cli.main(args)) == 1
    lines = (tmp_path / "out").read_text(encoding="utf-8").split("\n")
    assert len(lines) == 81 and all(line.startswith("um") for line in lines[:80:4])


@pytest.mark.parametrize("lines", [1, 12])
def test_the_lab_validates_a_variant_once_whatever_its_lines(monkeypatch, translator, lines):
    sources = ["one", "forty two", "nine thousand"] * 4
    found = []
    assert count_validations(monkeypatch, lambda: found.append(sweep.decode(
        translator, "beam2", sources[:lines], sources[:lines], "while_loop", 2,
        options={"length_penalty_kind": "none"}))) == 1
    assert len(found[0][0]) == lines


# --- Messages, without a model ---------------------------------------------------------------

@pytest.mark.parametrize("fields, message", [
    ({"epsilon": 1.0, "decoder": "sample"}, "epsilon must be in [0, 1), got 1.0"),
    ({"diverse_beam_strength": float("inf")},
     "diverse_beam_strength must be a finite number of at most 3.403e+38 in size, got Infinity"),
    ({"diverse_beam_groups": 0}, "diverse_beam_groups must be in 1.., got 0"),
    ({"diverse_beam_groups": 2, "beam_width": 4, "n_best": 5},
     "n_best must be an integer in 1..4 (the beam width), got 5"),
    ({"diverse_beam_groups": 2, "beam_width": 3}, "diverse_beam_groups must divide beam_width 3, "
                                                  "got 2"),
    ({"decoder": "mbr", "mbr_utility": "meteor"}, 'mbr_utility must be one of chrf, bleu, got '
                                                  '"meteor"'),
    ({"decoder": "sample", "num_samples": 9}, "num_samples must be in 1..8, got 9"),
    ({"min_length": 65}, "min_length must be in 0..64, got 65"),
    ({"decoder": "exact", "max_expansions": 1000001}, "max_expansions must be in 1..1000000"),
    ({"decoder": "sample", "temperature": True}, "temperature must be a number, got true"),
    ({"trace": "yes"}, 'trace must be true or false, got "yes"'),
    ({"beam_width": 10 ** 5000}, "beam_width must be an integer in 1..8, got an integer of more "
                                 "than 15 digits"),
    ({"greedy": 1}, 'unknown decoding option "greedy"'),
    ({"decoder": "exact", "coverage_penalty": 0.5}, "coverage_penalty is not an option of the "
                                                    "exact decoder, which scores without it"),
    ({"decoder": "greedy", "top_k": 3}, "top_k is an option of the sample and mbr decoders, not "
                                        "of greedy"),
    ({"decoder": "mbr", "mbr_candidates": "beam", "num_samples": 2, "beam_width": 9},
     "beam_width must be an integer in 1..8, got 9"),
])
def test_each_error_names_the_field_its_bound_and_the_value(fields, message):
    with pytest.raises(ValueError) as error:
        decode_request(SERVED, fields)
    assert message in str(error.value)


def test_absent_and_null_take_the_config_s_defaults_and_unused_options_are_off():
    config = dict(DECODE, min_length=2, diverse_beam_groups=3, coverage_penalty=0.3)
    served = SERVED._replace(defaults=config)
    plain = decode_request(served, {"decoder": "while_loop", "n_best": None, "top_k": None})
    assert (plain.min_length, plain.diverse_beam_groups, plain.coverage_penalty, plain.n_best,
            plain.beam_width) == (2, 3, 0.3, 1, 3)
    exact = decode_request(served, {"decoder": "exact", "coverage_penalty": 0})
    assert (exact.min_length, exact.diverse_beam_groups, exact.coverage_penalty) == (2, 1, 0.0)
    assert (exact.width, exact.searched_beam_width) == (1, None)
    sample = decode_request(served, {"decoder": "sample", "num_samples": 5})
    assert (sample.width, sample.searched_beam_width, sample.draws_samples) == (5, None, True)
    assert set(sample.used_options()) == {
        "length_penalty", "length_penalty_kind", "coverage_penalty", "no_repeat_ngram_size",
        "min_length", "num_samples", "temperature", "top_k", "top_p", "epsilon", "seed"}


def test_a_saved_model_takes_only_its_width_its_options_and_no_prefix():
    assert decode_request(EXPORTED, {"n_best": 3}).width == 3
    for fields, message in [
            ({"beam_width": 4}, "serves only the while_loop decoder at beam_width 3"),
            ({"min_length": 1}, "serves the config's decoding options only (a checkpoint serves "
                                "others), got min_length 1"),
            ({"decoder": "greedy"}, "decoder must be one of while_loop, got"),
            ({"trace": True}, "this translator serves a SavedModel, which returns no trace"),
            ({"target_prefix": [[5]]}, "target_prefixes: the exported SavedModel takes none")]:
        with pytest.raises(ValueError) as error:
            decode_request(EXPORTED, fields)
        assert message in str(error.value)
    assert decode_request(EXPORTED, {"target_prefix": [[], []]}).target_prefix is None


def test_score_takes_only_the_options_that_change_a_score():
    assert score_request(SERVED, {"length_penalty_kind": "none"}).length_penalty_kind == "none"
    with pytest.raises(ValueError, match="min_length does not change a score; the scoring "
                                         "options are length_penalty, length_penalty_kind, "
                                         "coverage_penalty"):
        score_request(SERVED, {"min_length": 2})


# --- What the graph is keyed by and fed --------------------------------------------------------

def test_the_graph_key_holds_what_shapes_it_and_the_feeds_the_rest():
    plain = decode_request(SERVED, {})
    fed_only = decode_request(SERVED, {"length_penalty": 1.5, "diverse_beam_strength": 2.0})
    assert fed_only.graph_key() == plain.graph_key(), "a fed option needs no graph of its own"
    assert fed_only.feeds()["length_penalty"] == 1.5
    for shaping in ({"length_penalty_kind": "none"}, {"no_repeat_ngram_size": 2},
                    {"min_length": 1}, {"coverage_penalty": 0.1}, {"diverse_beam_groups": 3}):
        assert decode_request(SERVED, shaping).graph_key() != plain.graph_key(), shaping
    on, more = (decode_request(SERVED, {"min_length": length}) for length in (1, 5))
    assert on.graph_key() == more.graph_key(), "min_length keys the graph by on or off"
    fed = {name: "placeholder" for name in plain.feeds()}
    assert on.graph_options(fed)["min_length"] == "placeholder"
    assert plain.graph_options(fed)["min_length"] == 0, "off: built without it"
    assert plain.graph_options(fed)["length_penalty_kind"] == "gnmt"
