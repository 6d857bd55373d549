"""seq2seq/model_dir.py reads a model directory without TensorFlow: its answers against
tf.train's on checkpoints a Saver writes."""

import os

import pytest
import tensorflow.compat.v1 as tf

from seq2seq.model_dir import STATUS_FILE, checkpoint_step, latest_checkpoint, read_status_file


def save(directory, step, relative):
    """Writes DIRECTORY/model.ckpt-STEP holding the global step, as the Estimator's Saver."""
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        with tf.Session() as session:
            global_step.load(step, session)
            return tf.train.Saver(save_relative_paths=relative).save(
                session, os.path.join(directory, "model.ckpt"), global_step=step)


@pytest.mark.parametrize("name", ["model", 'a "quoted" modèle'])
def test_the_latest_checkpoint_and_its_step_are_tf_trains(tmp_path, name):
    directory = str(tmp_path / name)
    assert latest_checkpoint(directory) is None and tf.train.latest_checkpoint(directory) is None
    os.makedirs(directory)
    for step, relative in ((7, False), (12, True)):  # the state file: absolute, then relative
        path = save(directory, step, relative)
        assert latest_checkpoint(directory) == tf.train.latest_checkpoint(directory) == path
        assert checkpoint_step(path) == tf.train.load_checkpoint(path).get_tensor(
            tf.GraphKeys.GLOBAL_STEP) == step
    os.remove(path + ".index")  # deleted under the state file: no checkpoint
    assert latest_checkpoint(directory) is None and tf.train.latest_checkpoint(directory) is None


def test_a_name_without_a_step_has_none():
    assert checkpoint_step("/runs/my-model/model.ckpt") is None
    assert checkpoint_step(None) is None


def test_the_status_file_is_a_json_object_or_a_named_error(tmp_path):
    assert read_status_file(str(tmp_path)) is None
    for text in ('{"running": tr', "[1, 2]"):
        (tmp_path / STATUS_FILE).write_text(text)
        with pytest.raises(ValueError, match=STATUS_FILE):
            read_status_file(str(tmp_path))
    (tmp_path / STATUS_FILE).write_text('{"step": 3}')
    assert read_status_file(str(tmp_path)) == {"step": 3}
