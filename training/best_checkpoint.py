"""Keeps the checkpoint with the best dev BLEU in MODEL_DIR/best/, a model directory of its own."""

import glob
import logging
import numbers
import os
import re
import shutil

import tensorflow.compat.v1 as tf
import yaml

from seq2seq.model_dir import BEST_DIR, PREVIOUS_SUFFIX

logger = logging.getLogger("seq2seq")

BEST_RECORD = "best.yaml"
_STAGING_SUFFIX = ".tmp"
_DATA_SHARD = re.compile(r"\.data-(\d+)-of-(\d+)$")


def format_metrics_table(metrics, title):
    """{name: number} -> a two-column table under `title`, as a multi-line string."""
    rows = [(name, str(value) if isinstance(value, numbers.Integral) else "%.4g" % value)
            for name, value in sorted(metrics.items()) if not isinstance(value, bytes)]
    name_width = max(len(name) for name, _ in rows)
    value_width = max(len(value) for _, value in rows)
    rule = "  " + "-" * (name_width + value_width + 3)
    return "\n".join([title, rule] + ["  %-*s   %*s" % (name_width, name, value_width, value)
                                      for name, value in rows] + [rule])


def read_best(best_dir):
    """{"metric", "value", "global_step", "checkpoint", "metrics"} of the best so far, or None."""
    path = os.path.join(best_dir, BEST_RECORD)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def _copy_checkpoint(checkpoint_path, model_dir_files, record, best_dir):
    """Copies the checkpoint, `model_dir_files` and the record into `best_dir` (via best.tmp);
    False, best_dir left as it was, if its .index or a .data shard is gone."""
    best_dir = os.path.abspath(best_dir)  # update_checkpoint_state records the bare name
    staging = best_dir + _STAGING_SUFFIX
    files = sorted(glob.glob(glob.escape(checkpoint_path) + ".*"))
    suffixes = [path[len(checkpoint_path):] for path in files]
    shards = sorted((int(match.group(1)), int(match.group(2)))
                    for match in map(_DATA_SHARD.match, suffixes) if match)
    if ".index" not in suffixes or not shards or shards != [
            (index, shards[0][1]) for index in range(shards[0][1])]:
        logger.warning("checkpoint %s has no .index or misses a .data shard (deleted by "
                       "the trainer's keep_checkpoint_max?): %s kept as it was",
                       checkpoint_path, best_dir)
        return False
    os.makedirs(staging)
    try:
        for path in files:
            shutil.copy2(path, staging)
    except FileNotFoundError as error:
        shutil.rmtree(staging, ignore_errors=True)
        logger.warning("checkpoint %s disappeared while being copied (%s): %s kept as it was",
                       checkpoint_path, error, best_dir)
        return False
    for path in model_dir_files:
        shutil.copy2(path, staging)
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
    """A higher metric, or the same one at a lower dev perplexity (BLEU saturates)."""
    if value != best["value"]:
        return value > best["value"]
    return perplexity < best["metrics"]["perplexity"]


class BestCheckpointExporter(tf.estimator.Exporter):
    """Logs each evaluation; copies the checkpoint to best/ if its `metric` is the best, with
    the files `model_dir_files(model_dir)` names."""

    name = "best_checkpoint"

    def __init__(self, model_dir_files, metric="bleu"):
        self._model_dir_files, self._metric = model_dir_files, metric

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        step = int(eval_result[tf.GraphKeys.GLOBAL_STEP])
        logger.info(format_metrics_table(eval_result, "evaluation at step %d" % step))
        best_dir = os.path.join(estimator.model_dir, BEST_DIR)
        previous = best_dir + PREVIOUS_SUFFIX  # an update interrupted between its renames
        if not os.path.exists(best_dir) and os.path.isdir(previous):
            os.replace(previous, best_dir)
            logger.warning("%s was missing after an interrupted update: restored it from %s",
                           best_dir, previous)
        shutil.rmtree(previous, ignore_errors=True)
        shutil.rmtree(best_dir + _STAGING_SUFFIX, ignore_errors=True)
        value = float(eval_result[self._metric])
        best = read_best(best_dir)
        if best is not None and not _improves(value, float(eval_result["perplexity"]), best):
            logger.info("%s %.2f, not better than %.2f at step %d (kept in %s)",
                        self._metric, value, best["value"], best["global_step"], best_dir)
            return None
        record = {"metric": self._metric, "value": value, "global_step": step,
                  "checkpoint": os.path.basename(checkpoint_path),
                  "metrics": {name: float(v) for name, v in eval_result.items()
                              if not isinstance(v, bytes)}}
        files = [os.path.join(estimator.model_dir, name)
                 for name in self._model_dir_files(estimator.model_dir)]
        if not _copy_checkpoint(checkpoint_path, files, record, best_dir):
            return None
        logger.info("%s %.2f is the best so far: checkpoint copied to %s",
                    self._metric, value, best_dir)
        return best_dir
