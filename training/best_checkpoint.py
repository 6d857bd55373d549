"""Keeps the checkpoint with the best dev BLEU in MODEL_DIR/best/, a model directory of its own."""

import glob
import logging
import numbers
import os
import shutil

import tensorflow.compat.v1 as tf
import yaml

from seq2seq.model_dir import BEST_DIR, PREVIOUS_SUFFIX

logger = logging.getLogger("seq2seq")

BEST_RECORD = "best.yaml"
_STAGING_SUFFIX = ".tmp"


def log_evaluation(metrics):
    """Logs an evaluation's {name: number} metrics as a two-column table."""
    rows = [(name, str(value) if isinstance(value, numbers.Integral) else "%.4g" % value)
            for name, value in sorted(metrics.items()) if not isinstance(value, bytes)]
    name_width, value_width = (max(map(len, column)) for column in zip(*rows))
    rule = "  " + "-" * (name_width + value_width + 3)
    title = "evaluation at step %d" % metrics[tf.GraphKeys.GLOBAL_STEP]
    logger.info("\n".join([title, rule] + ["  %-*s   %*s" % (name_width, name, value_width, value)
                                           for name, value in rows] + [rule]))


def read_best(best_dir):
    """{"metric", "value", "global_step", "checkpoint", "metrics"} of the best so far, or None."""
    path = os.path.join(best_dir, BEST_RECORD)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def _copy_checkpoint(checkpoint_path, model_dir_files, record, best_dir):
    """Copies the checkpoint, `model_dir_files` and `record` to `best_dir` (False: one is gone)."""
    best_dir = os.path.abspath(best_dir)  # update_checkpoint_state records the bare name
    staging = best_dir + _STAGING_SUFFIX
    files = sorted(glob.glob(glob.escape(checkpoint_path) + ".*"))
    suffixes = [path[len(checkpoint_path):] for path in files]
    shards = [suffix for suffix in suffixes if suffix.startswith(".data-")]
    try:  # the trainer's keep_checkpoint_max may delete it before or while it is copied
        if ".index" not in suffixes or not shards or shards != [
                ".data-%05d-of-%05d" % (index, len(shards)) for index in range(len(shards))]:
            raise FileNotFoundError("no .index or a .data shard missing")
        os.makedirs(staging)
        for path in files + model_dir_files:
            shutil.copy2(path, staging)
    except FileNotFoundError as error:
        shutil.rmtree(staging, ignore_errors=True)
        logger.warning("checkpoint %s is gone, whole or in part (%s): %s kept as it was",
                       checkpoint_path, error, best_dir)
        return False
    tf.train.update_checkpoint_state(staging, os.path.basename(checkpoint_path))
    with open(os.path.join(staging, BEST_RECORD), "w", encoding="utf-8") as f:
        yaml.safe_dump(record, f, sort_keys=False)
    previous = best_dir + PREVIOUS_SUFFIX
    if os.path.exists(best_dir):
        os.replace(best_dir, previous)
    os.replace(staging, best_dir)
    shutil.rmtree(previous, ignore_errors=True)
    return True


def _improves(value, perplexity, best):
    """A higher BLEU, or the same at a lower dev perplexity (BLEU saturates)."""
    return (value, -perplexity) > (best["value"], -best["metrics"]["perplexity"])


class BestCheckpointExporter(tf.estimator.Exporter):
    """Logs each evaluation; copies a best-BLEU checkpoint and model_dir_files(dir) to best/."""

    name = "best_checkpoint"

    def __init__(self, model_dir_files):
        self._model_dir_files = model_dir_files

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        log_evaluation(eval_result)
        best_dir = os.path.join(estimator.model_dir, BEST_DIR)
        previous = best_dir + PREVIOUS_SUFFIX  # an update interrupted between its renames
        if not os.path.exists(best_dir) and os.path.isdir(previous):
            os.replace(previous, best_dir)
            logger.warning("%s was missing after an interrupted update: restored it from %s",
                           best_dir, previous)
        shutil.rmtree(previous, ignore_errors=True)
        shutil.rmtree(best_dir + _STAGING_SUFFIX, ignore_errors=True)
        metrics = {name: float(v) for name, v in eval_result.items() if not isinstance(v, bytes)}
        value, best = metrics["bleu"], read_best(best_dir)
        if best is not None and not _improves(value, metrics["perplexity"], best):
            logger.info("bleu %.2f, not better than %.2f at step %d (kept in %s)",
                        value, best["value"], best["global_step"], best_dir)
            return None
        record = {"metric": "bleu", "value": value, "global_step": int(metrics["global_step"]),
                  "checkpoint": os.path.basename(checkpoint_path), "metrics": metrics}
        files = [os.path.join(estimator.model_dir, name)
                 for name in self._model_dir_files(estimator.model_dir)]
        if not _copy_checkpoint(checkpoint_path, files, record, best_dir):
            return None
        logger.info("bleu %.2f is the best so far: checkpoint copied to %s", value, best_dir)
        return best_dir
