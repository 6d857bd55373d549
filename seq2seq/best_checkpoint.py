"""Keeps the checkpoint with the best dev BLEU in MODEL_DIR/best/.

The Estimator keeps the last `keep_checkpoint_max` checkpoints, so the best
one is soon deleted when training goes past it. `tf.estimator.BestExporter`
would keep a SavedModel of it instead, which cannot be evaluated or resumed;
this exporter keeps the checkpoint itself, together with the model directory's
config and SentencePiece models, so that `best/` is a model directory of its
own (`decode.translate --model_dir MODEL_DIR/best` works).

An `Exporter` because that is the hook `train_and_evaluate` offers after every
evaluation, with the evaluated checkpoint and its metrics.
"""

import glob
import logging
import os
import re
import shutil

import tensorflow.compat.v1 as tf
import yaml

from seq2seq.progress import format_metrics_table

logger = logging.getLogger("seq2seq")

BEST_DIR = "best"
BEST_RECORD = "best.yaml"
# Where a new best directory is written, and where the old one waits while
# the new one is renamed in.
_STAGING_SUFFIX = ".tmp"
_PREVIOUS_SUFFIX = ".old"
_DATA_SHARD = re.compile(r"\.data-(\d+)-of-(\d+)$")


def read_best(best_dir):
    """The record of the best checkpoint so far: {"metric", "value", "global_step",
    "checkpoint", "metrics"}, or None when there is none yet."""
    path = os.path.join(best_dir, BEST_RECORD)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def best_checkpoint_dir(model_dir):
    """The directory holding a model directory's best checkpoint, for readers.

    MODEL_DIR/best, or MODEL_DIR/best.old when a replacement of best/ died
    between its two renames (the next export puts it back; readers must not
    rename it themselves, an export may be under way). None if neither exists.
    """
    best_dir = os.path.join(model_dir, BEST_DIR)
    for directory in (best_dir, best_dir + _PREVIOUS_SUFFIX):
        if os.path.isdir(directory):
            return directory
    return None


def _clean_up_interrupted_update(best_dir):
    """Undoes what an update of `best_dir` killed halfway left behind.

    Killed between renaming best/ to best.old and renaming the new copy in,
    it leaves no best/: best.old is renamed back, or the next export would
    find no best record, take whatever it evaluates as the best, and delete
    best.old, the real best, behind it. Killed earlier or later, it leaves a
    staging copy (best.tmp) or a stale best.old beside a complete best/:
    both are deleted (renaming best/ onto a non-empty best.old would fail).
    """
    previous = best_dir + _PREVIOUS_SUFFIX
    if not os.path.exists(best_dir) and os.path.isdir(previous):
        os.replace(previous, best_dir)
        logger.warning("%s was missing after an interrupted update: restored it from %s",
                       best_dir, previous)
    shutil.rmtree(previous, ignore_errors=True)
    shutil.rmtree(best_dir + _STAGING_SUFFIX, ignore_errors=True)


def _checkpoint_files(checkpoint_path):
    """The files of a checkpoint, or None when it is incomplete.

    Complete means its .index and every shard .data-i-of-n are there: an
    evaluator running beside the training chief may find the checkpoint it
    evaluated already deleted (the chief keeps only keep_checkpoint_max).
    """
    files = sorted(glob.glob(glob.escape(checkpoint_path) + ".*"))
    suffixes = [path[len(checkpoint_path):] for path in files]
    shards = sorted((int(match.group(1)), int(match.group(2)))
                    for match in map(_DATA_SHARD.match, suffixes) if match)
    if ".index" not in suffixes or not shards:
        return None
    num_shards = shards[0][1]
    if shards != [(index, num_shards) for index in range(num_shards)]:
        return None
    return files


def _copy_checkpoint(checkpoint_path, model_dir_files, record, best_dir):
    """Writes the checkpoint, the model directory's files and the record into
    `best_dir`, replacing what was there only once the new copy is complete.

    The caller first runs `_clean_up_interrupted_update(best_dir)` (export
    does, before it reads the best record): a leftover staging copy or
    best.old would make the copy or the renames fail.

    Returns:
      True if `best_dir` now holds the checkpoint; False if the checkpoint's
      files are missing, in which case `best_dir` is left as it was.
    """
    # Absolute, because for a relative directory update_checkpoint_state
    # rewrites the checkpoint's name relative to the working directory
    # ("../../../model.ckpt-N"); for an absolute one it keeps the bare name,
    # which readers resolve inside the directory, wherever it is moved.
    best_dir = os.path.abspath(best_dir)
    staging = best_dir + _STAGING_SUFFIX
    files = _checkpoint_files(checkpoint_path)
    if files is None:
        logger.warning("checkpoint %s has no .index or misses a .data shard (deleted by "
                       "the trainer's keep_checkpoint_max?): %s kept as it was",
                       checkpoint_path, best_dir)
        return False
    os.makedirs(staging)
    try:
        for path in files:
            shutil.copy2(path, staging)
    except FileNotFoundError as error:
        # Deleted between the check and the copy.
        shutil.rmtree(staging, ignore_errors=True)
        logger.warning("checkpoint %s disappeared while being copied (%s): %s kept as it was",
                       checkpoint_path, error, best_dir)
        return False
    for path in model_dir_files:
        shutil.copy2(path, staging)
    tf.train.update_checkpoint_state(staging, os.path.basename(checkpoint_path))
    with open(os.path.join(staging, BEST_RECORD), "w", encoding="utf-8") as f:
        yaml.safe_dump(record, f, sort_keys=False)
    previous = best_dir + _PREVIOUS_SUFFIX
    if os.path.exists(best_dir):
        os.replace(best_dir, previous)
    os.replace(staging, best_dir)
    shutil.rmtree(previous, ignore_errors=True)
    return True


def _improves(value, perplexity, best):
    """Whether a checkpoint beats the best record: a higher metric, or the same
    metric at a lower dev perplexity (BLEU saturates, e.g. at 100 on the
    embedded corpus, while perplexity still tells later checkpoints apart).

    Perplexity rather than the Estimator's "loss": that is a mean over
    batches, so a short last batch weighs as much as a full one; perplexity
    averages over target tokens."""
    if value != best["value"]:
        return value > best["value"]
    return perplexity < best["metrics"]["perplexity"]


class BestCheckpointExporter(tf.estimator.Exporter):
    """After each evaluation: prints the metrics, keeps the checkpoint if it is the best.

    Args:
      model_dir_files: function(model_dir) -> names of the files in the model
        directory to copy along (config.yaml, the SentencePiece models);
        called at each export, when they exist.
      metric: the evaluation metric to maximise.
    """

    def __init__(self, model_dir_files, metric="bleu"):
        self._model_dir_files = model_dir_files
        self._metric = metric

    @property
    def name(self):
        return "best_checkpoint"

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        """Copies `checkpoint_path` to MODEL_DIR/best/ when it beats the best so
        far: a higher metric, or an equal one at a lower dev perplexity.

        Returns:
          The best directory when the checkpoint was copied, else None (not
          better, or its files already deleted).
        """
        del export_path, is_the_final_export  # best/ has a fixed place
        step = int(eval_result[tf.GraphKeys.GLOBAL_STEP])
        logger.info(format_metrics_table(eval_result, "evaluation at step %d" % step))
        best_dir = os.path.join(estimator.model_dir, BEST_DIR)
        # Before reading the record (an interrupted update may have left it
        # in best.old) and for _copy_checkpoint (leftovers block its renames).
        _clean_up_interrupted_update(best_dir)
        value = float(eval_result[self._metric])
        best = read_best(best_dir)
        if best is not None and not _improves(value, float(eval_result["perplexity"]), best):
            logger.info("%s %.2f, not better than %.2f at step %d (kept in %s)",
                        self._metric, value, best["value"], best["global_step"], best_dir)
            return None
        record = {
            "metric": self._metric,
            "value": value,
            "global_step": step,
            "checkpoint": os.path.basename(checkpoint_path),
            "metrics": {name: float(v) for name, v in eval_result.items()},
        }
        files = [os.path.join(estimator.model_dir, name)
                 for name in self._model_dir_files(estimator.model_dir)]
        if not _copy_checkpoint(checkpoint_path, files, record, best_dir):
            return None
        logger.info("%s %.2f is the best so far: checkpoint copied to %s",
                    self._metric, value, best_dir)
        return best_dir
