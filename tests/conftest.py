"""Shared fixtures: a tiny prepared corpus and a tiny trained model.

Both are built once per test session (in a temporary directory) and shared by
every test module that asks for them, so the suite stays fast.
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytest  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

from seq2seq.config import load_config  # noqa: E402

tf.disable_v2_behavior()

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY_CONFIG = os.path.join(REPO, "configs", "tiny.yaml")


@pytest.fixture(scope="session")
def tiny_config(tmp_path_factory):
    """configs/tiny.yaml with its data_dir in a temporary directory."""
    data_dir = tmp_path_factory.mktemp("tiny_data")
    return load_config(TINY_CONFIG, overrides={"data": {"data_dir": str(data_dir)}})


@pytest.fixture(scope="session")
def tiny_data(tiny_config):
    """The embedded corpus at tiny size, prepared: SentencePiece + TFRecords."""
    from data_pipeline.prepare import prepare
    return prepare(tiny_config, verbose=False)


@pytest.fixture(scope="session")
def tiny_model_dir(tiny_config, tiny_data, tmp_path_factory):
    """A model directory holding a tiny model trained for 400 steps (enough to translate
    the tiny corpus into non-empty Portuguese)."""
    import train
    model_dir = str(tmp_path_factory.mktemp("tiny_model"))
    train.run(tiny_config, model_dir, schedule="train", max_steps=400)
    return model_dir


@pytest.fixture(scope="module")
def translator(tiny_model_dir):
    """A Translator of the tiny model, one per test module (a module may define its own)."""
    from decode.translator import Translator
    translator = Translator(tiny_model_dir)
    yield translator
    translator.close()
