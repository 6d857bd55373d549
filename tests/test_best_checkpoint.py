"""The best-checkpoint exporter when checkpoints vanish under it or an update dies halfway,
and early stopping, which counts on it.

Checkpoints here are one-variable checkpoints written by a Saver, the same
files (.index, .data-*, .meta) the Estimator writes; the variable holds the
step, so a restored best/ tells which checkpoint it really is.
"""

import glob
import logging
import os
import shutil
import types

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from seq2seq.model_dir import BEST_DIR, CONFIG_FILE, best_checkpoint_dir, find_checkpoint
from training import best_checkpoint
from training.best_checkpoint import BestCheckpointExporter, read_best
from training.early_stopping import EarlyStopping, StopHook, evaluations_since_best
from training.status import write_training_status


@pytest.fixture
def model_dir(tmp_path):
    """A model directory with a config.yaml, the file the exporter copies along."""
    directory = str(tmp_path / "model")
    os.makedirs(directory)
    with open(os.path.join(directory, CONFIG_FILE), "w", encoding="utf-8") as f:
        f.write("model: {}\n")
    return directory


def save_checkpoint(model_dir, step):
    """Writes MODEL_DIR/model.ckpt-STEP holding the global step and weight = STEP."""
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        tf.Variable(float(step), name="weight")
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            global_step.load(step, session)
            return tf.train.Saver().save(
                session, os.path.join(model_dir, "model.ckpt"), global_step=step)


def export(model_dir, checkpoint, step, bleu):
    """Runs the exporter as train_and_evaluate does after an evaluation."""
    exporter = BestCheckpointExporter(lambda _: [CONFIG_FILE])
    eval_result = {tf.GraphKeys.GLOBAL_STEP: np.int64(step), "bleu": np.float32(bleu),
                   "perplexity": np.float32(10.0), "loss": np.float32(2.0)}
    return exporter.export(types.SimpleNamespace(model_dir=model_dir), None, checkpoint,
                           eval_result, is_the_final_export=False)


def best_weight(model_dir):
    """The weight of best/'s checkpoint (the step it was saved at)."""
    best_dir = os.path.join(model_dir, BEST_DIR)
    return tf.train.load_checkpoint(tf.train.latest_checkpoint(best_dir)).get_tensor("weight")


def assert_best_is(model_dir, step):
    """best/ is a complete copy of model.ckpt-STEP, with its record and config, and alone."""
    best_dir = os.path.join(model_dir, BEST_DIR)
    assert read_best(best_dir)["global_step"] == step
    assert best_weight(model_dir) == step
    assert os.path.exists(os.path.join(best_dir, CONFIG_FILE))
    leftovers = glob.glob(best_dir + ".*")
    assert not leftovers, leftovers


def test_a_better_checkpoint_replaces_the_best(model_dir):
    assert export(model_dir, save_checkpoint(model_dir, 10), 10, bleu=10.0)
    assert export(model_dir, save_checkpoint(model_dir, 20), 20, bleu=20.0)
    assert_best_is(model_dir, 20)
    assert export(model_dir, save_checkpoint(model_dir, 30), 30, bleu=15.0) is None
    assert_best_is(model_dir, 20)


@pytest.mark.parametrize("deleted", ["*", "data-*", "index"])
def test_a_deleted_checkpoint_keeps_the_old_best(model_dir, deleted, caplog):
    """An evaluator beside the chief (keep_checkpoint_max) may find its
    checkpoint gone, or half gone, by the time it exports."""
    assert export(model_dir, save_checkpoint(model_dir, 10), 10, bleu=10.0)
    checkpoint = save_checkpoint(model_dir, 20)
    for path in glob.glob(checkpoint + "." + deleted):
        os.remove(path)

    with caplog.at_level(logging.WARNING, logger="seq2seq"):
        assert export(model_dir, checkpoint, 20, bleu=20.0) is None
    assert_best_is(model_dir, 10)
    assert "model.ckpt-20" in caplog.text and "kept as it was" in caplog.text


def test_a_missing_data_shard_keeps_the_old_best(model_dir):
    assert export(model_dir, save_checkpoint(model_dir, 10), 10, bleu=10.0)
    checkpoint = save_checkpoint(model_dir, 20)
    # One of two shards: the second was deleted (or never written).
    os.replace(checkpoint + ".data-00000-of-00001", checkpoint + ".data-00000-of-00002")
    assert export(model_dir, checkpoint, 20, bleu=20.0) is None
    assert_best_is(model_dir, 10)


def test_a_checkpoint_deleted_while_being_copied_keeps_the_old_best(model_dir, monkeypatch):
    assert export(model_dir, save_checkpoint(model_dir, 10), 10, bleu=10.0)
    checkpoint = save_checkpoint(model_dir, 20)
    copy = shutil.copy2

    def copy_after_the_trainer_deleted_it(source, destination):
        for path in glob.glob(checkpoint + ".*"):
            os.remove(path)
        return copy(source, destination)

    monkeypatch.setattr(best_checkpoint.shutil, "copy2", copy_after_the_trainer_deleted_it)
    assert export(model_dir, checkpoint, 20, bleu=20.0) is None
    monkeypatch.undo()
    assert_best_is(model_dir, 10)


def interrupt_between_the_renames(model_dir):
    """What a process killed inside _copy_checkpoint leaves: best/ renamed to
    best.old, the new copy still in best.tmp."""
    best_dir = os.path.join(model_dir, BEST_DIR)
    shutil.copytree(best_dir, best_dir + ".tmp")
    os.replace(best_dir, best_dir + ".old")


def test_a_worse_checkpoint_after_an_interrupted_update_keeps_the_real_best(model_dir):
    assert export(model_dir, save_checkpoint(model_dir, 10), 10, bleu=30.0)
    interrupt_between_the_renames(model_dir)
    # Without the recovery there is no best record: step 20 would be taken
    # as the best and best.old, the real best, deleted.
    assert export(model_dir, save_checkpoint(model_dir, 20), 20, bleu=5.0) is None
    assert_best_is(model_dir, 10)


def test_a_better_checkpoint_after_an_interrupted_update_replaces_the_best(model_dir):
    assert export(model_dir, save_checkpoint(model_dir, 10), 10, bleu=10.0)
    interrupt_between_the_renames(model_dir)
    assert export(model_dir, save_checkpoint(model_dir, 20), 20, bleu=20.0)
    assert_best_is(model_dir, 20)


def test_a_stale_old_directory_does_not_block_the_next_update(model_dir):
    """A process killed after both renames leaves best.old beside a complete best/."""
    assert export(model_dir, save_checkpoint(model_dir, 10), 10, bleu=10.0)
    best_dir = os.path.join(model_dir, BEST_DIR)
    shutil.copytree(best_dir, best_dir + ".old")
    assert export(model_dir, save_checkpoint(model_dir, 20), 20, bleu=20.0)
    assert_best_is(model_dir, 20)


def test_readers_find_the_best_during_an_interrupted_update(model_dir):
    """Decoding serves best.old rather than the latest checkpoint, without
    renaming anything (an export may be under way)."""
    assert best_checkpoint_dir(model_dir) is None
    assert export(model_dir, save_checkpoint(model_dir, 10), 10, bleu=10.0)
    save_checkpoint(model_dir, 20)
    best_dir = os.path.join(model_dir, BEST_DIR)
    assert find_checkpoint(model_dir) == os.path.join(best_dir, "model.ckpt-10")
    interrupt_between_the_renames(model_dir)
    assert best_checkpoint_dir(model_dir) == best_dir + ".old"
    assert find_checkpoint(model_dir) == os.path.join(best_dir + ".old", "model.ckpt-10")
    assert not os.path.exists(best_dir)


# Early stopping counts on best/: an evaluation is better when best/ takes its checkpoint.
# (step, dev BLEU, dev perplexity): a BLEU tie goes to the lower perplexity.
EVALUATIONS = [(10, 10.0, 5.0), (20, 20.0, 4.0), (30, 20.0, 3.0), (40, 20.0, 3.0),
               (50, 25.0, 9.0), (60, 24.0, 1.0), (70, 25.0, 9.0), (80, 30.0, 9.0)]


@pytest.mark.parametrize("patience, stop_step", [(1, 40), (2, 70), (3, None), (0, None)])
def test_early_stopping_after_patience_evaluations_without_a_better_one(model_dir, patience,
                                                                       stop_step, caplog):
    exporters = [BestCheckpointExporter(lambda _: [CONFIG_FILE]), EarlyStopping(patience)]
    stopped_at = None
    caplog.set_level(logging.INFO, logger="seq2seq")
    for step, bleu, perplexity in EVALUATIONS:
        eval_result = {tf.GraphKeys.GLOBAL_STEP: np.int64(step), "bleu": np.float32(bleu),
                       "perplexity": np.float32(perplexity), "loss": np.float32(2.0)}
        for exporter in exporters:
            exporter.export(types.SimpleNamespace(model_dir=model_dir), None,
                            save_checkpoint(model_dir, step), eval_result, False)
        if exporters[1].stopped:
            stopped_at = step
            break
    assert stopped_at == stop_step
    lines = [record.getMessage() for record in caplog.records if "early stopping" in
             record.getMessage()]
    assert lines == ([] if stop_step is None else [
        "early stopping at step %d: %d evaluation(s) in a row without a better dev BLEU than "
        "step %d's" % (stop_step, patience, {40: 30, 70: 50}[stop_step])])


class Evaluations(tf.train.SessionRunHook):
    """Counts the steps, as the checkpoint saver's evaluation runs before the stop hook."""

    def __init__(self):
        self.steps = 0

    def after_run(self, run_context, run_values):
        self.steps += 1


def test_the_stop_hook_ends_training_at_the_step_that_decided():
    evaluations = Evaluations()
    with tf.Graph().as_default():
        step = tf.assign_add(tf.train.get_or_create_global_step(), 1)
        hooks = [evaluations, StopHook(lambda: evaluations.steps == 3)]
        with tf.train.SingularMonitoredSession(hooks=hooks) as session:
            steps_run = []
            while not session.should_stop():
                steps_run.append(session.run(step))
    assert steps_run == [1, 2, 3]


def test_a_resumed_run_counts_the_evaluations_since_the_best(model_dir):
    assert evaluations_since_best(model_dir) == 0
    for step, bleu, perplexity in EVALUATIONS[:4]:
        write_training_status(model_dir, evaluation={
            "step": step, "loss": 2.0, "dev_bleu": bleu, "dev_perplexity": perplexity,
            "examples": []})
    assert evaluations_since_best(model_dir) == 4, "no best/ yet: every evaluation counts"
    export(model_dir, save_checkpoint(model_dir, 20), 20, bleu=20.0)
    assert evaluations_since_best(model_dir) == 2
