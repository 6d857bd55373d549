"""decode/ensemble.py: an ensemble decodes with its members' mean log-probabilities, through
every decoder's step, and restores each member from its own checkpoint."""

import contextlib
import os
import shutil

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from data_pipeline.tokenizer import BOS_ID, EOS_ID, Tokenizer, train_tokenizer
from decode import greedy_search, while_loop_beam_search
from decode.ensemble import Ensemble, build_model, load_configs
from decode.exact import expansion_step
from decode.graph_cache import CheckpointValues
from decode.graphs import pad_batch, score_encoded
from decode.scoring import Scoring
from decode.translator import Translator
from seq2seq.common import tile_beams
from seq2seq.config import load_config
from seq2seq.model import SCOPE, Seq2SeqModel
from seq2seq.model_dir import checkpoint_step

SOURCES = ["Tom is here.", "I like cats very much.", "Where is the station?"]
TARGETS = ["Tom está aqui.", "Eu gosto de gatos.", "Onde fica a estação?"]
MAX_LENGTH, BEAM_WIDTH = 12, 3
SCORING = Scoring(length_penalty=0.6, coverage_penalty=0.2)  # coverage: the attention's mean


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    """The tiny model's params, its last two checkpoints, and a batch of sources and targets."""
    tokenizer = Tokenizer.load(tiny_model_dir)
    config = load_config(os.path.join(tiny_model_dir, "config.yaml"))
    checkpoints = tf.train.get_checkpoint_state(tiny_model_dir).all_model_checkpoint_paths[-2:]
    sources = pad_batch([tokenizer.encode_source(text) for text in SOURCES])
    targets = pad_batch([tokenizer.encode_target(text) + [EOS_ID] for text in TARGETS])
    return dict(model_dir=tiny_model_dir, config=config, params=config["model"],
                sizes=(tokenizer.source_vocab_size, tokenizer.target_vocab_size),
                checkpoints=checkpoints, sources=sources, targets=targets)


def restore(session, model, checkpoints):
    """Loads a Seq2SeqModel (whatever its scope) from checkpoints[0], or each member of an
    Ensemble from its checkpoint."""
    for values in model.checkpoint_values(checkpoints) if isinstance(model, Ensemble) else [
            CheckpointValues(checkpoints[0], model.scope_name + "/", SCOPE + "/")]:
        values.restore_new(session)


def decoders(model, inputs):
    """Greedy, the while_loop beam search (traced, coverage), teacher-forced scores and the
    exact search's step of `model` over the `inputs` placeholders."""
    encoded = model.encode(inputs["source_ids"], inputs["source_length"], training=False)
    update_fn, initial_state = model.beam_update_fn(encoded, 1)
    fetches = {"greedy": greedy_search(update_fn, initial_state, MAX_LENGTH, BOS_ID, EOS_ID, 0.6)}
    update_fn, initial_state = model.beam_update_fn(encoded, BEAM_WIDTH, with_attention=True)
    ids, scores, lengths, trace = while_loop_beam_search(
        update_fn, initial_state, MAX_LENGTH, BEAM_WIDTH, BOS_ID, EOS_ID, SCORING, trace=True,
        source_mask=encoded.mask)
    fetches["beam"] = ids, scores, lengths, trace["attention"]
    fetches["score"] = score_encoded(model, encoded, inputs["target_ids"], inputs["target_length"],
                                     SCORING)
    exact_inputs, exact_outputs = expansion_step(model, encoded, Scoring(), EOS_ID)
    return encoded, fetches, exact_inputs, exact_outputs


def run_decoders(models, tiny):
    """{name: decoders' results} of each (model, checkpoints) of `models` (name -> a function
    building the model), built in one graph and run on the tiny batch."""
    with tf.Graph().as_default(), tf.Session() as session:
        inputs = {name: tf.placeholder(tf.int32, shape) for name, shape in [
            ("source_ids", [None, None]), ("source_length", [None]),
            ("target_ids", [None, None]), ("target_length", [None])]}
        feeds = dict(zip([inputs[name] for name in ("source_ids", "source_length", "target_ids",
                                                    "target_length")],
                         tiny["sources"] + tiny["targets"]))
        built = {name: (build(), checkpoints) for name, (build, checkpoints) in models.items()}
        graphs = {name: decoders(model, inputs) for name, (model, _) in built.items()}
        for model, checkpoints in built.values():
            restore(session, model, checkpoints)
        results = {}
        for name, (encoded, fetches, exact_inputs, exact_outputs) in graphs.items():
            results[name] = session.run(fetches, feeds)
            states = session.run(encoded.initial_state, feeds)  # the exact search's first step
            exact_feeds = {exact_inputs["sentences"]: np.arange(len(SOURCES)),
                           exact_inputs["last_ids"]: [BOS_ID] * len(SOURCES),
                           exact_inputs["prefixes"]: np.zeros([len(SOURCES), 0], np.int32),
                           exact_inputs["prefix_lengths"]: [0] * len(SOURCES), **feeds}
            exact_feeds.update(zip(tf.nest.flatten(exact_inputs["states"]),
                                   tf.nest.flatten(states)))
            results[name]["exact"] = session.run(exact_outputs["log_probs"], exact_feeds)
        return results


def test_copies_of_a_model_decode_as_it(tiny):
    newest = tiny["checkpoints"][-1]
    results = run_decoders(dict(model=(lambda: Seq2SeqModel(tiny["params"], *tiny["sizes"]),
                                       [newest]),
                                **{"ensemble of %d" % copies: (
                                    lambda copies=copies: Ensemble([tiny["params"]] * copies,
                                                                   *tiny["sizes"]),
                                    [newest] * copies) for copies in (1, 2)}), tiny)
    model = results.pop("model")
    for ensemble in results.values():
        for decoder in ("greedy", "beam"):
            np.testing.assert_array_equal(ensemble[decoder][0], model[decoder][0])  # ids
            np.testing.assert_array_equal(ensemble[decoder][2], model[decoder][2])  # lengths
            np.testing.assert_allclose(ensemble[decoder][1], model[decoder][1], atol=1e-5)
        np.testing.assert_allclose(ensemble["beam"][3], model["beam"][3], atol=1e-5)  # attention
        for got, expected in zip(ensemble["score"], model["score"]):
            np.testing.assert_allclose(got, expected, atol=1e-5)
        finite = np.isfinite(model["exact"])
        np.testing.assert_array_equal(np.isfinite(ensemble["exact"]), finite)
        np.testing.assert_allclose(ensemble["exact"][finite], model["exact"][finite], atol=1e-5)


def log_softmax(logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def test_two_checkpoints_average_their_log_probabilities(tiny):
    """Two steps of the beam update of an ensemble of two checkpoints and teacher forcing,
    against NumPy's mean of each checkpoint's own model's log-softmax."""
    with tf.Graph().as_default(), tf.Session() as session:
        ids = tf.constant([[BOS_ID] * 2, [5, 9]])                                # [step, K]
        models = [Seq2SeqModel(tiny["params"], *tiny["sizes"]) for _ in tiny["checkpoints"]]
        ensemble, ensemble_values, members = build_model(
            [tiny["config"]] * 2, [tiny["model_dir"]] * 2, list(tiny["checkpoints"]),
            *tiny["sizes"])
        source_ids, source_length = (tf.constant(value) for value in tiny["sources"])
        target_input = tf.constant(tiny["targets"][0])
        fetches = []
        for model in models + [ensemble]:
            encoded = model.encode(source_ids, source_length, training=False)
            update_fn, state = model.beam_update_fn(encoded, 2, with_attention=True)
            state = tf.nest.map_structure(lambda tensor: tile_beams(tensor, 2), state)
            steps = []
            for step in range(2):
                state, logits = update_fn(state, tf.tile(ids[step][None], [len(SOURCES), 1]))
                steps.append((logits, state["attention"]))
            fetches.append((steps, model.teacher_forced_logits(
                encoded, target_input, training=False, with_attention=True)))
        for model, checkpoint in zip(models, tiny["checkpoints"]):
            restore(session, model, [checkpoint])
        for values in ensemble_values:
            values.restore_new(session)
        (first, second, got) = session.run(fetches)
    assert [member["step"] for member in members] == list(map(checkpoint_step, tiny["checkpoints"]))
    assert not np.allclose(first[1][0], second[1][0])  # the checkpoints differ
    for (first_logits, first_weights), (second_logits, second_weights), (logits, weights) in zip(
            first[0] + [first[1]], second[0] + [second[1]], got[0] + [got[1]]):
        np.testing.assert_allclose(
            logits, (log_softmax(first_logits) + log_softmax(second_logits)) / 2, atol=1e-5)
        np.testing.assert_allclose(weights, (first_weights + second_weights) / 2, atol=1e-6)


def test_members_must_share_their_vocabularies(tiny, tiny_model_dir, tmp_path):
    same = str(tmp_path / "same")
    shutil.copytree(tiny_model_dir, same)
    assert load_configs([tiny_model_dir, same]) == [tiny["config"]] * 2
    other = str(tmp_path / "other")  # the tiny model with a SentencePiece model of its own
    shutil.copytree(tiny_model_dir, other)
    train_tokenizer(list(zip(SOURCES, TARGETS)) * 20, other, 60, "unigram", joint=True)
    with pytest.raises(ValueError, match="%s and %s have different vocabularies" % (
            same, other)):
        load_configs([same, other])


def test_translator_decodes_an_ensemble(tiny_model_dir):
    with contextlib.closing(Translator([tiny_model_dir] * 2)) as ensemble, contextlib.closing(
            Translator(tiny_model_dir)) as model:
        assert ensemble.members == [{"name": model.model_name, "step": model.step}] * 2
        for got, expected in zip(ensemble.translate(SOURCES, n_best=2, trace=True),
                                 model.translate(SOURCES, n_best=2, trace=True)):
            assert [hypothesis.text for hypothesis in got.n_best] == [
                hypothesis.text for hypothesis in expected.n_best]
            np.testing.assert_allclose([hypothesis.score for hypothesis in got.n_best],
                                       [hypothesis.score for hypothesis in expected.n_best],
                                       atol=1e-5)
            np.testing.assert_allclose(got.trace["n_best"][0]["attention"],
                                       expected.trace["n_best"][0]["attention"], atol=1e-5)
        exact = {"max_expansions": 40}
        for got, expected in zip(ensemble.translate(SOURCES, "exact", options=exact),
                                 model.translate(SOURCES, "exact", options=exact)):
            assert got.text == expected.text
            np.testing.assert_allclose(got.score, expected.score, atol=1e-5)
        for got, expected in zip(ensemble.score(SOURCES, TARGETS), model.score(SOURCES, TARGETS)):
            np.testing.assert_allclose(got["score"], expected["score"], atol=1e-5)
