"""The exported SavedModel translates like the checkpoint it was made from.

Second paths: `estimator.predict` on the checkpoint, and the Translator's
checkpoint graph on every dev sentence, also those that reach their length
limit.
"""

import glob
import os
import re
import shutil

import numpy as np
import pytest
import tensorflow.compat.v1 as tf
import yaml

import train
from data_pipeline.tokenizer import Tokenizer
from decode.graphs import output_length_limit
from decode.translator import Translator

SENTENCES = ["twenty one", "three hundred and five", "one", "forty two thousand"]


@pytest.fixture(scope="module")
def source_batch(tiny_model_dir):
    """A padded batch of encoded sentences of different lengths."""
    tokenizer = Tokenizer.load(tiny_model_dir)
    encoded = [tokenizer.encode_source(text) for text in SENTENCES]
    lengths = np.array([len(ids) for ids in encoded], np.int32)
    ids = np.zeros([len(encoded), lengths.max()], np.int32)
    for row, sentence in enumerate(encoded):
        ids[row, :len(sentence)] = sentence
    return {"source_ids": ids, "source_length": lengths}


@pytest.fixture(scope="module")
def dev_token_ids(tiny_config, tiny_data, tiny_model_dir):
    """Every dev sentence, encoded."""
    tokenizer = Tokenizer.load(tiny_model_dir)
    with open(os.path.join(tiny_config["data"]["data_dir"], "dev.src"), encoding="utf-8") as f:
        return [tokenizer.encode_source(line) for line in f if line.strip()]


def _latest_export(model_dir):
    exports = sorted(glob.glob(os.path.join(model_dir, "export", "[0-9]*")))
    assert exports, "training should end with an export"
    return exports[-1]


@pytest.fixture(scope="module")
def saved_model_translator(tiny_model_dir):
    """A Translator of the tiny model's SavedModel, loaded once for this module's tests."""
    translator = Translator(tiny_model_dir, export_dir=_latest_export(tiny_model_dir))
    yield translator
    translator.close()


def _run_saved_model(export_dir, inputs):
    with tf.Graph().as_default(), tf.Session() as session:
        meta_graph = tf.saved_model.loader.load(session, [tf.saved_model.tag_constants.SERVING],
                                                export_dir)
        signature = meta_graph.signature_def[tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY]
        feeds = {signature.inputs[name].name: value for name, value in inputs.items()}
        fetches = {name: info.name for name, info in signature.outputs.items()}
        return session.run(fetches, feeds)


def test_saved_model_equals_checkpoint_predictions(tiny_config, tiny_model_dir, source_batch):
    served = _run_saved_model(_latest_export(tiny_model_dir), source_batch)

    estimator = train.build_estimator(tiny_config, tiny_model_dir, num_towers=1)
    predicted = list(estimator.predict(
        lambda: tf.data.Dataset.from_tensors(source_batch), yield_single_examples=False))[0]

    beam_width = tiny_config["decode"]["beam_width"]
    assert served["ids"].shape[:2] == (len(SENTENCES), beam_width)
    assert served["scores"].shape == served["lengths"].shape == (len(SENTENCES), beam_width)
    np.testing.assert_array_equal(served["ids"], predicted["ids"])
    np.testing.assert_array_equal(served["lengths"], predicted["lengths"])
    np.testing.assert_allclose(served["scores"], predicted["scores"], rtol=1e-5, atol=1e-5)
    assert np.all(np.diff(served["scores"], axis=1) <= 0), "n-best must come best first"


def test_saved_model_translates_every_sentence_as_the_checkpoint_does(
        tiny_config, tiny_model_dir, dev_token_ids, saved_model_translator):
    beam_width = tiny_config["decode"]["beam_width"]
    checkpoint = Translator(tiny_model_dir)
    try:
        results = {name: translator.search(dev_token_ids, "while_loop", beam_width)
                   for name, translator in (("saved_model", saved_model_translator),
                                            ("checkpoint", checkpoint))}
    finally:
        checkpoint.close()

    # The same ops on the same batches: the same ids and bit-identical scores.
    assert results["saved_model"] == results["checkpoint"]
    reached_limit = [len(result.ids[0]) + 1 == output_length_limit(len(ids), tiny_config["decode"])
                     for ids, result in zip(dev_token_ids, results["checkpoint"])]
    assert any(reached_limit), "no best translation reached its limit: nothing compared there"


def test_saved_model_refuses_a_target_prefix_naming_what_takes_one(saved_model_translator):
    with pytest.raises(ValueError, match=re.escape(
            "target_prefixes: the exported SavedModel takes none (a checkpoint's decoders")):
        saved_model_translator.translate(["one"], target_prefixes=["um"])
    assert saved_model_translator.translate(["one"], target_prefixes=[""])[0].text, \
        "no prefix: fine"


def test_saved_model_carries_config_and_sentencepiece(tiny_model_dir):
    assets = os.path.join(_latest_export(tiny_model_dir), "assets.extra")
    with open(os.path.join(assets, "config.yaml"), encoding="utf-8") as f:
        assert yaml.safe_load(f)["name"] == "tiny"
    tokenizer = Tokenizer.load(assets)
    assert tokenizer.target_vocab_size == Tokenizer.load(tiny_model_dir).target_vocab_size


def test_export_schedule_writes_a_new_export(tiny_config, tiny_model_dir, tmp_path):
    # A copy: the shared model directory keeps its one export for other modules' tests.
    model_dir = str(tmp_path / "model")
    shutil.copytree(tiny_model_dir, model_dir)
    before = set(glob.glob(os.path.join(model_dir, "export", "[0-9]*")))
    result = train.run(tiny_config, model_dir, schedule="export")
    assert result["export_path"] not in before
    assert os.path.exists(os.path.join(result["export_path"], "saved_model.pb"))
