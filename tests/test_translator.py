"""Translator and the translate CLI, on the tiny trained model.

Independent second paths: each sentence translated alone against the same
sentence in a shuffled, length-sorted batch; the unrolled search against the
while_loop search; greedy against beam width 1; the CLI's output against the
Translator's. The exported SavedModel against the checkpoint is in
tests/test_export.py.
"""

import json
import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest
import tensorflow.compat.v1 as tf
from conftest import SHORT_SOURCES

from data_pipeline.tokenizer import EOS_ID
from decode import translate as translate_cli
from decode.batching import length_sorted_batches
from decode.graphs import output_length_limit, search_result, unrolled_length_bucket
from decode.request import shown
from decode.translator import Hypothesis, Translation, Translator
from tests.same_hypotheses import assert_same_hypotheses, assert_same_trace, n_best

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def translator(tiny_model_dir):
    return Translator(tiny_model_dir)


@pytest.fixture(scope="module")
def dev_sentences(tiny_config, tiny_data):
    with open(os.path.join(tiny_config["data"]["data_dir"], "dev.src"), encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


@pytest.fixture(scope="module")
def short_sentences():
    """4 of conftest.py's SHORT_SOURCES: the smallest unrolled graph, which their tests share."""
    return SHORT_SOURCES[:4]


@pytest.fixture(scope="module")
def bucket_sentences(translator, dev_sentences):
    """The dev sentences of the shortest unrolled length bucket that holds 16: one graph each
    for translators of their own."""
    by_bucket = {}
    for text in dev_sentences:
        by_bucket.setdefault(unrolled_length_bucket(len(translator.tokenize(text)),
                                                    translator.config["decode"]), []).append(text)
    return min((bucket, texts) for bucket, texts in by_bucket.items() if len(texts) >= 16)[1]


def assert_same_n_best(translations, expected):
    """The same n-best texts and scores by tests/same_hypotheses.py's rule."""
    assert_same_hypotheses(n_best(translations), n_best(expected))


def test_loads_once_then_translates_without_reloading(translator, short_sentences, monkeypatch):
    first = translator.translate(short_sentences)
    built = list(translator.variants)

    def no_reload(*args, **kwargs):
        raise AssertionError("the translator reloaded something")
    monkeypatch.setattr("decode.translator.Tokenizer.load", no_reload)
    monkeypatch.setattr(tf.train, "load_checkpoint", no_reload)
    monkeypatch.setattr(tf, "Session", no_reload)
    monkeypatch.setattr(tf, "Graph", no_reload)
    again = translator.translate(short_sentences)

    assert again == first
    assert translator.variants == built, "a cached variant was built again"
    assert all(isinstance(t, Translation) and isinstance(t.text, str) and t.text == t.n_best[0].text
               for t in again)
    assert translator.step == 400
    assert translator.model_name == "tiny"
    assert translator.decoders == ("while_loop", "unrolled", "greedy", "sample", "exact", "mbr")
    assert translator.beam_widths == range(1, 9)
    assert not hasattr(translator, "max_beam_width"), "beam_widths[-1] says it"


def test_unrolled_and_while_loop_give_the_same_n_best(translator, short_sentences):
    beam_width = translator.config["decode"]["beam_width"]
    while_loop = translator.translate(short_sentences, "while_loop", beam_width, n_best=beam_width)
    unrolled = translator.translate(short_sentences, "unrolled", beam_width, n_best=beam_width)
    assert_same_n_best(unrolled, while_loop)
    unrolled_graphs = [v for v in translator.variants if v.decoder == "unrolled"]
    assert [v.unrolled_length for v in unrolled_graphs] == [unrolled_length_bucket(
        max(len(translator.tokenize(text)) for text in short_sentences), translator.config["decode"])]


def test_greedy_equals_while_loop_at_beam_width_one(translator, dev_sentences):
    sentences = dev_sentences[:10]
    assert_same_n_best(translator.translate(sentences, "greedy"),
                       translator.translate(sentences, "while_loop", beam_width=1))


def test_batches_restore_order_and_match_translating_alone(translator, dev_sentences, monkeypatch):
    # Mixed lengths, in an order length sorting must undo, over several batches.
    sentences = dev_sentences[:11]
    assert len({len(translator.tokenize(text)) for text in sentences}) > 3
    monkeypatch.setitem(translator.config["decode"], "batch_size", 4)
    batched = translator.translate(sentences, n_best=2)
    alone = [translator.translate([text], n_best=2)[0] for text in sentences]
    assert_same_n_best(batched, alone)


def test_n_best_is_sorted_best_first(translator, dev_sentences):
    for translation in translator.translate(dev_sentences[:5], beam_width=4, n_best=4):
        scores = [h.score for h in translation.n_best]
        assert len(scores) == 4
        assert scores == sorted(scores, reverse=True)
        assert (translation.text, translation.score, translation.pieces) == translation.n_best[0]
        assert all(isinstance(h, Hypothesis) for h in translation.n_best)


def test_every_hypothesis_ends_within_its_sentences_limit(translator, dev_sentences):
    decode_params = translator.config["decode"]
    token_ids = [translator.tokenize(text) for text in dev_sentences[:6]]
    for ids, result in zip(token_ids, translator.search(token_ids, beam_width=3)):
        limit = output_length_limit(len(ids), decode_params)
        assert all(len(hypothesis) + 1 <= limit for hypothesis in result.ids)


def test_concurrent_calls_match_serial_ones(translator, dev_sentences, short_sentences):
    # Graphs not built yet, so that some threads build while others decode.
    requests = [(dev_sentences[:6], "while_loop", 2), (dev_sentences[:6], "greedy", None),
                (short_sentences, "unrolled", 2), (dev_sentences[:6], "while_loop", 2),
                (dev_sentences[:6], "while_loop", 5)]
    results = [None] * len(requests)

    def call(index, sentences, decoder, beam_width):
        results[index] = translator.translate(sentences, decoder, beam_width)
    threads = [threading.Thread(target=call, args=(index,) + request)
               for index, request in enumerate(requests)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for request, result in zip(requests, results):  # the same graphs and batches: bit for bit
        assert result == translator.translate(*request)
    for decoder in ("while_loop", "unrolled"):
        assert len([v for v in translator.variants if v[:2] == (decoder, 2)]) == 1


def test_batches_at_once_and_session_threads_change_speed_not_results(translator, tiny_model_dir,
                                                                      bucket_sentences):
    # By default a batch per core at once, each run in its own thread; the second path is
    # TensorFlow's pools over one batch at a time. (The intra-op pool is the process's,
    # sized by its first session.)
    assert (translator.config["decode"]["concurrent_batches"],
            translator.config["decode"]["inter_op_threads"],
            translator.config["decode"]["intra_op_threads"]) == (0, -1, 1)
    pools = Translator(tiny_model_dir, hparams="decode.concurrent_batches=1,"
                       "decode.inter_op_threads=0,decode.intra_op_threads=0,decode.batch_size=4")
    streams = Translator(tiny_model_dir, hparams="decode.concurrent_batches=3,decode.batch_size=4")
    assert pools.config["decode"]["inter_op_threads"] == 0
    sentences = bucket_sentences[:16]  # four batches, one unrolled graph
    try:
        for decoder in ("while_loop", "greedy", "unrolled"):
            with streams.recording_builds() as built:  # built on the pool's threads
                assert_same_n_best(streams.translate(sentences, decoder),
                                   pools.translate(sentences, decoder))
            assert built and {variant.decoder for variant in built} == {decoder}
            assert built == [v for v in streams.variants if v.decoder == decoder]
    finally:
        pools.close()
        streams.close()


def test_a_call_too_small_for_a_full_batch_per_thread_is_split_evenly(translator, tiny_model_dir):
    split = Translator(tiny_model_dir, hparams="decode.concurrent_batches=2,decode.batch_size=32")
    batch_sizes, run = [], split._run

    def recording_run(decoder, beam_width, sentences, *args):
        batch_sizes.append((decoder, len(sentences)))
        return run(decoder, beam_width, sentences, *args)
    split._run = recording_run
    try:
        for decoder in ("while_loop", "unrolled"):
            assert_same_n_best(split.translate(SHORT_SOURCES[:7], decoder),
                               translator.translate(SHORT_SOURCES[:7], decoder))
    finally:
        split.close()
    # The unrolled search, which builds a graph per length, keeps one batch.
    assert sorted(batch_sizes) == [("unrolled", 7), ("while_loop", 3), ("while_loop", 4)]


@pytest.mark.parametrize("hparams, message", [
    ("decode.inter_op_threads=-2", r"decode\.inter_op_threads must be >= -1"),
    ("decode.intra_op_threads=-1", r"decode\.intra_op_threads must be >= 0"),
    ("model.num_units=64", r"holds \S+ with shape \[16, 48\], the config's model needs"),
])
def test_bad_hparams_are_refused_with_the_key_named(tiny_model_dir, hparams, message):
    with pytest.raises(ValueError, match=message):
        Translator(tiny_model_dir, hparams=hparams)


def test_warm_up_builds_eagerly_once(translator, short_sentences):
    built = translator.warm_up(["while_loop"], [6])
    assert [(v.decoder, v.beam_width) for v in built] == [("while_loop", 6)]
    assert built[0].num_ops > 0 and built[0].build_seconds > 0
    assert translator.warm_up(["while_loop"], [6]) == []
    translator.translate(short_sentences, beam_width=6)
    assert translator.warm_up(["while_loop"], [6]) == []


@pytest.fixture
def one_sentence_batches(tiny_model_dir):
    """A translator of its own (no graph built yet) that decodes one sentence per batch, under
    short length limits (its unrolled graphs take seconds, with the steps)."""
    fresh = Translator(tiny_model_dir, hparams="decode.batch_size=1,decode.max_length_extra=1")
    yield fresh
    fresh.close()


def test_recording_builds_names_every_graph_a_call_built(one_sentence_batches):
    translator = one_sentence_batches
    texts = ["one", "one two three", "one two three four five six"]  # the 3 shortest buckets
    buckets = [unrolled_length_bucket(len(translator.tokenize(text)), translator.config["decode"])
               for text in texts]
    assert len(set(buckets)) == 3, "three sentences, three length buckets, three batches"
    with translator.recording_builds() as outer:
        with translator.recording_builds() as first_call:
            translator.translate(texts[:1], "unrolled", 2)
        with translator.recording_builds() as second_call:
            translator.translate(texts, "unrolled", 2)
        with translator.recording_builds() as third_call:
            translator.translate(texts, "unrolled", 2)
    assert [(v.decoder, v.beam_width, v.unrolled_length) for v in first_call] == \
        [("unrolled", 2, buckets[0])]
    assert [v.unrolled_length for v in second_call] == buckets[1:], "only the new ones"
    assert third_call == []
    assert outer == first_call + second_call, "blocks nest"
    assert outer == translator.variants
    with translator.recording_builds() as warm_up:
        assert translator.warm_up(["while_loop"], [2]) == warm_up
    assert len(warm_up) == 1
    with translator.recording_builds() as after:
        translator.translate(texts, "while_loop", 2)
    assert after == []


def test_recording_builds_counts_this_threads_calls_only(one_sentence_batches):
    translator = one_sentence_batches
    other_thread_built = []

    def build_elsewhere():
        other_thread_built.extend(translator.warm_up(["while_loop"], [4]))
    with translator.recording_builds() as built:
        thread = threading.Thread(target=build_elsewhere)
        thread.start()
        thread.join(timeout=60)
        translator.translate(["one"], "while_loop", 5)
    assert [(v.decoder, v.beam_width) for v in other_thread_built] == [("while_loop", 4)]
    assert [(v.decoder, v.beam_width) for v in built] == [("while_loop", 5)], \
        "another thread's build is not this thread's"


def test_a_saved_model_records_no_builds(tiny_model_dir):
    export_root = os.path.join(tiny_model_dir, "export")
    exported = Translator(tiny_model_dir,
                          export_dir=os.path.join(export_root, sorted(os.listdir(export_root))[-1]))
    try:
        with exported.recording_builds() as built:
            exported.translate(["one", "forty two"])
        assert built == []
    finally:
        exported.close()


@pytest.mark.parametrize("value, expected", [
    ("beam", '"beam"'),
    ("b" * 50, '"' + "b" * 39 + "..."),
    (2.0, "2.0"),
    (True, "true"),
    (None, "null"),
    (["a"], '["a"]'),
    (-12, "-12"),
    (np.int64(7), "7"),
    (10 ** 15, "an integer of more than 15 digits"),
    (-10 ** 5000, "an integer of more than 15 digits"),
    (object, repr(object)),
], ids=["string", "long string", "float", "boolean", "null", "array", "integer", "numpy integer",
        "16 digits", "5001 digits", "no JSON"])
def test_one_helper_shows_values_in_messages(value, expected):
    assert shown(value) == expected


def test_greedy_checks_the_beam_width_then_decodes_at_one(translator):
    assert translator.request("greedy", 8).width == 1
    assert translator.request("greedy").width == 1


@pytest.mark.parametrize("call", [
    lambda translator: translator.translate(["seven", "one"], "while_loop", 2, 2),
    lambda translator: translator.translate_tokens([translator.tokenize("seven")], "greedy"),
    lambda translator: translator.search([translator.tokenize("seven")], "while_loop", 2),
    lambda translator: translator.translate(["seven"], "mbr", options={"num_samples": 2}),
    lambda translator: translator.translate(["seven"], "exact", options={"max_expansions": 5}),
    lambda translator: translator.score(["seven"], ["sete"], {"length_penalty": 1.0}),
], ids=["translate", "translate_tokens", "search", "mbr", "exact", "score"])
def test_options_are_validated_once_per_call(translator, monkeypatch, call):
    from tests.test_decode_request import count_validations
    assert count_validations(monkeypatch, lambda: call(translator)) == 1


def test_empty_input_gives_empty_output(translator):
    assert translator.translate([]) == []
    assert translator.translate([], "greedy") == []


@pytest.mark.parametrize("kwargs, message", [
    ({"decoder": "beam"}, "decoder must be one of while_loop, unrolled, greedy"),
    ({"beam_width": 0}, "beam_width must be an integer in 1..8"),
    ({"beam_width": 9}, "beam_width must be an integer in 1..8"),
    ({"beam_width": 2.0}, "beam_width"),
    ({"beam_width": True}, "beam_width"),
    ({"n_best": 0}, "n_best must be an integer in 1..3"),
    ({"beam_width": 2, "n_best": 3}, "n_best must be an integer in 1..2"),
    ({"decoder": "greedy", "n_best": 2}, "greedy decoding keeps one hypothesis"),
    ({"decoder": "greedy", "beam_width": 0}, "beam_width must be an integer in 1..8, got 0"),
    ({"decoder": "greedy", "beam_width": 9}, "beam_width must be an integer in 1..8, got 9"),
    ({"decoder": "greedy", "beam_width": "4"}, 'beam_width must be an integer, got "4"'),
    ({"beam_width": 10 ** 5000}, "got an integer of more than 15 digits"),
    ({"decoder": "b" * 5000}, 'got "' + "b" * 39 + "..."),
    ({"texts": "one sentence"}, "list of strings"),
    ({"texts": ["fine", 7]}, "texts[1] must be a string"),
    ({"texts": ["fine", "   "]}, "texts[1] is empty"),
])
def test_bad_arguments_raise_value_error(translator, kwargs, message):
    kwargs = dict({"texts": ["seven"]}, **kwargs)
    with pytest.raises(ValueError, match=re.escape(message)):
        translator.translate(**kwargs)


def test_bad_model_directories_raise_value_error(tmp_path, tiny_model_dir):
    with pytest.raises(ValueError, match="no config.yaml"):
        Translator(str(tmp_path))
    with pytest.raises(ValueError, match="not both"):
        Translator(tiny_model_dir, export_dir=tiny_model_dir, checkpoint="x")
    with pytest.raises(ValueError, match="holds no SavedModel"):
        Translator(tiny_model_dir, export_dir=str(tmp_path))


def test_length_sorted_batches_cover_every_index_once():
    lengths = [5, 1, 4, 1, 9, 2, 4]
    batches = length_sorted_batches(lengths, 3)
    assert batches == [[1, 3, 5], [2, 6, 0], [4]]
    assert sorted(sum(batches, [])) == list(range(len(lengths)))


def test_unrolled_length_buckets_round_up_to_multiples_of_eight():
    decode_params = {"max_length_ratio": 2.0, "max_length_extra": 10}
    assert [output_length_limit(n, decode_params) for n in (1, 3, 4)] == [12, 16, 18]
    assert [unrolled_length_bucket(n, decode_params) for n in (1, 3, 4, 7)] == [16, 16, 24, 24]


def test_saved_model_serves_its_signature_only(translator, tiny_model_dir):
    # tests/test_export.py checks that it translates as the checkpoint does.
    export_root = os.path.join(tiny_model_dir, "export")
    export_dir = os.path.join(export_root, sorted(os.listdir(export_root))[-1])
    exported = Translator(tiny_model_dir, export_dir=export_dir)
    beam_width = translator.config["decode"]["beam_width"]
    assert exported.decoders == ("while_loop",)
    assert exported.beam_widths == range(3, 4)
    assert exported.step == translator.step
    with pytest.raises(ValueError, match="serves only the while_loop decoder at beam_width 3") \
            as raised:
        exported.translate(["seven"], beam_width=beam_width + 1)
    # The message reaches HTTP clients: no server path in it.
    assert export_root not in str(raised.value) and "/" not in str(raised.value)
    assert str(raised.value).endswith("got beam_width 4")
    with pytest.raises(ValueError, match="decoder must be one of while_loop"):
        exported.translate(["seven"], decoder="greedy")


def test_translate_cli_reads_stdin_and_writes_stdout(translator, tiny_model_dir, short_sentences):
    lines = [short_sentences[0], "", short_sentences[1], "   ", short_sentences[2]]
    completed = subprocess.run(
        [sys.executable, "-m", "decode.translate", "--model_dir", tiny_model_dir,
         "--decoder", "greedy"],
        input="\n".join(lines) + "\n", capture_output=True, text=True, cwd=REPO, timeout=120)
    assert completed.returncode == 0, completed.stderr
    expected = translator.translate([line for line in lines if line.strip()], "greedy")
    texts = iter(translation.text for translation in expected)
    assert completed.stdout.split("\n")[:-1] == [next(texts) if line.strip() else ""
                                                 for line in lines]


def test_translate_cli_writes_n_best_blocks_to_a_file(translator, tiny_model_dir,
                                                      short_sentences, tmp_path):
    source, output = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("%s\n\n%s\n" % (short_sentences[0], short_sentences[1]), encoding="utf-8")
    assert translate_cli.main(["--model_dir", tiny_model_dir, "--beam_width", "3", "--n_best", "2",
                               "--input", str(source), "--output", str(output)]) == 0
    expected = translator.translate(short_sentences[:2], beam_width=3, n_best=2)
    blocks = [[]]
    for line in output.read_text(encoding="utf-8").split("\n")[:-1]:
        if line:
            blocks[-1].append(line.split("\t"))
        else:
            blocks.append([])
    assert len(blocks) == 4 and blocks[1] == [] and blocks[3] == [], \
        "a block per input line, each closed by a blank line, the empty line's block empty"
    # The CLI decodes these sentences in the translator's batches: the same hypotheses, bit for bit.
    assert [blocks[0], blocks[2]] == [[[h.text, "%.6f" % h.score] for h in t.n_best]
                                      for t in expected]


def test_translate_cli_rejects_bad_options(tiny_model_dir, tmp_path, capsys):
    assert translate_cli.main(["--model_dir", tiny_model_dir, "--beam_width", "99"]) == 2
    assert "beam_width must be an integer in 1..8" in capsys.readouterr().err
    assert translate_cli.main(["--model_dir", tiny_model_dir,
                               "--input", str(tmp_path / "missing.txt")]) == 2
    assert "missing.txt" in capsys.readouterr().err
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes(b"caf\xe9\n")
    assert translate_cli.main(["--model_dir", tiny_model_dir, "--input", str(latin1),
                               "--output", str(tmp_path / "out.txt")]) == 2
    assert "latin1.txt:1: not valid UTF-8 (byte 0xe9" in capsys.readouterr().err


def test_translate_cli_refuses_to_overwrite_its_input(tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("seven\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        translate_cli.main(["--model_dir", str(tmp_path), "--input", str(source),
                            "--output", str(tmp_path / "." / "in.txt")])
    assert "is the --input file" in capsys.readouterr().err
    assert source.read_text(encoding="utf-8") == "seven\n"


def test_impossible_hypotheses_are_left_out():
    # A beam wider than the possible sequences fills its last slots with
    # score -inf and ids of end tokens: no hypothesis, and no JSON number.
    ids = np.array([[5, 6, EOS_ID], [7, EOS_ID, EOS_ID], [EOS_ID, EOS_ID, EOS_ID]])
    result = search_result(ids, np.array([-1.0, -2.5, -np.inf], np.float32), np.array([3, 2, 0]))
    assert result.ids == [[5, 6], [7]]
    assert result.scores == [-1.0, -2.5]


@pytest.fixture(scope="module")
def traced(translator, dev_sentences):
    """while_loop translations of 8 dev sentences at beam width 4, traced and not."""
    sentences = dev_sentences[:8]
    return (sentences, translator.translate(sentences, "while_loop", 4, n_best=4, trace=True),
            translator.translate(sentences, "while_loop", 4, n_best=4))


def test_tracing_never_changes_the_translation(traced):
    _, with_trace, without = traced
    assert all(t.trace is None for t in without)
    assert [t._replace(trace=None) for t in with_trace] == without


def test_parents_lead_from_each_last_slot_to_its_n_best_pieces_and_score(translator, traced):
    sentences, translations, _ = traced
    for text, translation in zip(sentences, translations):
        trace = translation.trace
        assert trace["source_pieces"] == translator._tokenizer.source_pieces(
            translator.tokenize(text)), "exactly what the encoder read"
        assert all(len(step["pieces"]) == 4 for step in trace["steps"])
        assert len(trace["n_best"]) == len(translation.n_best)
        for slot, (hypothesis, traced_hypothesis) in enumerate(
                zip(translation.n_best, trace["n_best"])):
            pieces = []
            for step in reversed(trace["steps"]):
                pieces.append(step["pieces"][slot])
                slot = step["parents"][slot]
            pieces.reverse()
            assert pieces[:pieces.index("</s>") + 1] == traced_hypothesis["pieces"]
            assert translator.detokenize(translator._tokenizer._target.piece_to_id(
                traced_hypothesis["pieces"])) == hypothesis.text
        last = trace["steps"][-1]
        np.testing.assert_allclose(last["scores"][:len(translation.n_best)],
                                   [h.score for h in translation.n_best], atol=1e-5)
        assert all(last["finished"]) and not all(trace["steps"][-2]["finished"]), \
            "trimmed at the first step at which every slot has finished"


def test_attention_rows_sum_to_one_over_the_source_pieces(traced):
    for translation in traced[1]:
        for hypothesis in translation.trace["n_best"]:
            attention = np.array(hypothesis["attention"])
            assert attention.shape == (len(hypothesis["pieces"]),
                                       len(translation.trace["source_pieces"]))
            np.testing.assert_allclose(attention.sum(axis=1), 1.0, atol=1e-5)
            assert np.all(attention >= 0)


def test_a_sentences_trace_in_a_batch_equals_its_trace_alone(translator, traced):
    sentences, translations, _ = traced
    for text, translation in zip(sentences[:3], translations):
        alone = translator.translate([text], "while_loop", 4, n_best=4, trace=True)[0]
        assert_same_trace(translation.trace, alone.trace)


def test_unrolled_and_while_loop_traces_agree(translator, short_sentences):
    unrolled = translator.translate(short_sentences, "unrolled", 3, n_best=3, trace=True)
    while_loop = translator.translate(short_sentences, "while_loop", 3, n_best=3, trace=True)
    for got, want in zip(unrolled, while_loop):
        assert_same_trace(got.trace, want.trace)


def test_greedy_traces_one_slot_per_step(translator, dev_sentences):
    for translation in translator.translate(dev_sentences[:4], "greedy", trace=True):
        trace = translation.trace
        assert all(len(step[key]) == 1 for step in trace["steps"] for key in step)
        assert [step["pieces"][0] for step in trace["steps"]] == trace["n_best"][0]["pieces"]
        assert trace["steps"][-1]["scores"][0] == pytest.approx(translation.score, abs=1e-5)


def test_every_translation_says_whether_its_source_is_unfamiliar(translator, dev_sentences):
    for translation in translator.translate(dev_sentences[:4] + ["zxq qqq zzz"]):
        assert isinstance(translation.unfamiliar, bool)


def test_a_saved_model_does_not_trace(tiny_model_dir):
    export_root = os.path.join(tiny_model_dir, "export")
    exported = Translator(tiny_model_dir,
                          export_dir=os.path.join(export_root, sorted(os.listdir(export_root))[-1]))
    try:
        assert not exported.can_trace
        with pytest.raises(ValueError, match="returns no trace"):
            exported.translate(["one"], trace=True)
    finally:
        exported.close()


def test_translate_cli_writes_a_trace_line_per_input_line_and_flags(translator, tiny_model_dir,
                                                                   short_sentences, tmp_path):
    source, output, traces = tmp_path / "in.txt", tmp_path / "out.txt", tmp_path / "trace.jsonl"
    source.write_text("%s\n\n%s\n" % (short_sentences[0], short_sentences[1]), encoding="utf-8")
    assert translate_cli.main(["--model_dir", tiny_model_dir, "--beam_width", "3", "--input",
                               str(source), "--output", str(output), "--trace", str(traces),
                               "--show_unfamiliar"]) == 0
    expected = translator.translate(short_sentences[:2], beam_width=3, trace=True)
    lines = [json.loads(line) for line in traces.read_text(encoding="utf-8").splitlines()]
    assert lines[1] is None and len(lines) == 3
    # The translator's batches: the same traces, bit for bit (JSON keeps every float).
    assert [lines[0], lines[2]] == json.loads(json.dumps([t.trace for t in expected]))
    flags = ["\tunfamiliar" if t.unfamiliar else "\t" for t in expected]
    assert output.read_text(encoding="utf-8") == "%s%s\n\t\n%s%s\n" % (
        expected[0].text, flags[0], expected[1].text, flags[1])
