"""The exported SavedModel translates like the checkpoint it was made from.

Second paths: `estimator.predict` on the checkpoint, and the Translator's
checkpoint graph, whose sentences are batched differently, on every dev
sentence, also those that reach their length limit.
"""

import glob
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf
import yaml

import train
from data_pipeline.tokenizer import EOS_ID, PAD_ID, Tokenizer
from decode.length_limits import output_length_limit
from decode.translator import Translator

SENTENCES = ["twenty one", "three hundred and five", "one", "forty two thousand"]


def _padded_batch(encoded):
    """A feed dict of the serving signature's inputs for lists of source ids."""
    lengths = np.array([len(ids) for ids in encoded], np.int32)
    ids = np.full([len(encoded), lengths.max()], PAD_ID, np.int32)
    for row, sentence in enumerate(encoded):
        ids[row, :len(sentence)] = sentence
    return {"source_ids": ids, "source_length": lengths}


@pytest.fixture(scope="module")
def source_batch(tiny_model_dir):
    """A padded batch of encoded sentences of different lengths."""
    tokenizer = Tokenizer.load(tiny_model_dir)
    return _padded_batch([tokenizer.encode_source(text) for text in SENTENCES])


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


def test_saved_model_translates_every_sentence_as_the_translator_does(
        tiny_config, tiny_model_dir, dev_token_ids):
    # One batch of every sentence, in corpus order, where the Translator
    # decodes length-sorted batches of decode.batch_size.
    served = _run_saved_model(_latest_export(tiny_model_dir), _padded_batch(dev_token_ids))
    translator = Translator(tiny_model_dir)
    try:
        expected = translator.search(dev_token_ids, "while_loop",
                                     tiny_config["decode"]["beam_width"])
    finally:
        translator.close()

    reached_limit = 0
    for row, (source, want) in enumerate(zip(dev_token_ids, expected)):
        got_ids = [ids[:length].tolist() for ids, length
                   in zip(served["ids"][row], served["lengths"][row])]
        assert all(ids[-1] == EOS_ID for ids in got_ids), "every hypothesis ends"
        assert [ids[:-1] for ids in got_ids] == want.ids, "sentence %d" % row
        np.testing.assert_allclose(served["scores"][row], want.scores, rtol=0, atol=1e-5)
        reached_limit += len(got_ids[0]) == output_length_limit(len(source),
                                                                tiny_config["decode"])
    assert reached_limit > 0, "no best translation reached its limit: nothing to compare there"


def test_saved_model_carries_config_and_sentencepiece(tiny_model_dir):
    assets = os.path.join(_latest_export(tiny_model_dir), "assets.extra")
    with open(os.path.join(assets, "config.yaml"), encoding="utf-8") as f:
        assert yaml.safe_load(f)["name"] == "tiny"
    tokenizer = Tokenizer.load(assets)
    assert tokenizer.target_vocab_size == Tokenizer.load(tiny_model_dir).target_vocab_size


def test_export_schedule_writes_a_new_export(tiny_config, tiny_model_dir):
    before = set(glob.glob(os.path.join(tiny_model_dir, "export", "[0-9]*")))
    result = train.run(tiny_config, tiny_model_dir, schedule="export")
    assert result["export_path"] not in before
    assert os.path.exists(os.path.join(result["export_path"], "saved_model.pb"))
