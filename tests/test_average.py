"""training/average.py: the mean of a model directory's last checkpoints, a model directory."""

import contextlib
import glob
import os
import shutil

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from data_pipeline.tokenizer import Tokenizer
from decode.translator import Translator
from training.average import average_checkpoints, main

SENTENCES = ["Tom is here.", "I like cats.", "Where is the station?"]


def checkpoints_of(model_dir):
    return list(tf.train.get_checkpoint_state(model_dir).all_model_checkpoint_paths)


def values(checkpoint):
    """{name: array} of every variable in a checkpoint."""
    reader = tf.train.load_checkpoint(checkpoint)
    return {name: reader.get_tensor(name) for name, _ in tf.train.list_variables(checkpoint)}


def model_dir_of(model_dir, directory, checkpoints):
    """A model directory with model_dir's config and tokenizer and `checkpoints` (prefixes),
    copied in this order as model.ckpt-1, model.ckpt-2, ...; its `checkpoint` state lists the
    last only, as train.keep_checkpoint_max 0 (keep all) leaves it."""
    os.makedirs(directory)
    shutil.copyfile(os.path.join(model_dir, "config.yaml"), os.path.join(directory, "config.yaml"))
    Tokenizer.load(model_dir).copy_to(directory)
    copies = []
    for index, checkpoint in enumerate(checkpoints, 1):
        copies.append(os.path.join(directory, "model.ckpt-%d" % index))
        for path in glob.glob(checkpoint + ".*"):
            shutil.copyfile(path, copies[-1] + path[len(checkpoint):])
    tf.train.update_checkpoint_state(directory, copies[-1], copies[-1:])
    return directory


def test_two_copies_average_to_the_checkpoint_and_translate_alike(tiny_model_dir, tmp_path):
    newest = checkpoints_of(tiny_model_dir)[-1]
    copies = model_dir_of(tiny_model_dir, str(tmp_path / "copies"), [newest, newest])
    out = str(tmp_path / "averaged")
    average_checkpoints(copies, 2, out)
    path = average_checkpoints(copies, 2, out)  # a previous average is replaced
    original, averaged = values(newest), values(path)
    model_names = {name for name in original if name.startswith("seq2seq/")
                   and not name.rpartition("/")[2].startswith("Adam")}  # Adam's slots dropped
    assert set(averaged) == model_names | {"global_step"}
    for name, value in averaged.items():
        np.testing.assert_array_equal(value, original[name], err_msg=name)
    with contextlib.closing(Translator(out)) as translator, contextlib.closing(
            Translator(tiny_model_dir, checkpoint=newest)) as reference:
        assert translator.step == reference.step == original["global_step"]
        for got, expected in zip(translator.translate(SENTENCES), reference.translate(SENTENCES)):
            assert got.text == expected.text
            np.testing.assert_allclose(got.score, expected.score, rtol=1e-5, atol=1e-5)


def test_two_checkpoints_average_to_their_mean(tiny_model_dir, tmp_path):
    older, newest = (values(path) for path in checkpoints_of(tiny_model_dir)[-2:])
    out = str(tmp_path / "new" / "averaged")  # its parent made as it is
    main(["--model_dir", tiny_model_dir, "--last", "2", "--out", out])
    averaged = values(tf.train.latest_checkpoint(out))
    assert averaged.pop("global_step") == newest["global_step"]
    assert any(not np.array_equal(older[name], newest[name]) for name in averaged)
    for name, value in averaged.items():
        assert value.dtype == newest[name].dtype
        np.testing.assert_allclose(value, (older[name] + newest[name]) / 2, rtol=1e-6, atol=0)
    with contextlib.closing(Translator(out)) as translator:
        assert all(translation.text for translation in translator.translate(SENTENCES))


def test_too_few_checkpoints_or_a_foreign_out_is_an_error(tiny_model_dir, tmp_path, capsys):
    count = len([path for path in checkpoints_of(tiny_model_dir) if not path.endswith("-0")])
    out = str(tmp_path / "averaged")
    with pytest.raises(SystemExit):
        main(["--model_dir", tiny_model_dir, "--last", str(count + 1), "--out", out])
    assert "holds %d checkpoint(s) past step 0, fewer than the %d" % (count, count + 1) in (
        capsys.readouterr().err)
    assert not os.path.exists(out)
    with pytest.raises(ValueError, match="holds 0 checkpoint.s.*train a model into it first"):
        average_checkpoints(str(tmp_path), 1, out)
    with pytest.raises(ValueError, match="was not written by training.average"):
        average_checkpoints(tiny_model_dir, 1, tiny_model_dir)


def test_step_0_the_initial_weights_is_never_averaged(tiny_model_dir, tmp_path):
    first, newest = checkpoints_of(tiny_model_dir)[-2:]
    directory = model_dir_of(tiny_model_dir, str(tmp_path / "young"), [first, newest])
    for path in glob.glob(first + ".*"):  # a young run keeps the checkpoint of step 0
        shutil.copyfile(path, os.path.join(directory, "model.ckpt-0" + path[len(first):]))
    with pytest.raises(ValueError, match="holds 2 checkpoint.s. past step 0, fewer than the 3"):
        average_checkpoints(directory, 3, str(tmp_path / "three"))
    averaged = values(average_checkpoints(directory, 2, str(tmp_path / "two")))
    older, newer = values(first), values(newest)
    for name, value in averaged.items():
        if name != "global_step":
            np.testing.assert_allclose(value, (older[name] + newer[name]) / 2, rtol=1e-6, atol=0)
