"""MODEL_DIR/training_status.json: what training is doing, for the server's training panel
(its fields, and when each is written: docs/TRAINING-NOTES.md, "The training status file")."""

import fcntl
import json
import logging
import math
import os
import time

import tensorflow.compat.v1 as tf

from seq2seq.model_dir import STATUS_FILE, read_status_file

logger = logging.getLogger("seq2seq")


def read_training_status(model_dir):
    """The status dict, or None if there is none (or it is not one: a warning names the file)."""
    try:
        return read_status_file(model_dir)
    except ValueError as error:
        logger.warning("%s: starting a new training status", error)
        return None


def write_training_status(model_dir, evaluation=None, **fields):
    """Sets `fields`, "updated_at" (now) and `evaluation` (an "evaluations" entry, in place of one
    of its step) in an existing model directory's status file, replaced whole; returns it."""
    descriptor = os.open(model_dir, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)  # released by os.close
        now = time.time()
        status = read_training_status(model_dir) or {
            "running": True, "pid": os.getpid(), "started_at": now, "step": 0, "max_steps": 0,
            "steps_per_second": None, "eta_seconds": None, "stopped": None, "evaluations": []}
        status.update(fields, updated_at=now)
        if evaluation is not None:
            kept = [other for other in status["evaluations"] if other["step"] != evaluation["step"]]
            status["evaluations"] = sorted(kept + [evaluation], key=lambda entry: entry["step"])
        temporary = os.path.join(model_dir, ".%s.tmp" % STATUS_FILE)  # ours while we hold the lock
        with open(temporary, "w", encoding="utf-8") as f:
            json.dump(status, f, ensure_ascii=False)
        os.replace(temporary, os.path.join(model_dir, STATUS_FILE))
    finally:
        os.close(descriptor)
    return status


def start_training_status(model_dir, step, max_steps):
    """A run's first write: running, this process, now; earlier runs' evaluations up to `step`
    (the checkpoint it resumes from) kept."""
    earlier = (read_training_status(model_dir) or {}).get("evaluations", [])
    return write_training_status(
        model_dir, running=True, pid=os.getpid(), started_at=time.time(), step=int(step),
        max_steps=max_steps, steps_per_second=None, eta_seconds=None, stopped=None,
        evaluations=[evaluation for evaluation in earlier if evaluation["step"] <= step])


def read_examples(serialized):
    """bleu_and_examples' "examples" metric -> [{"source": str, "translation": str}]."""
    rows = tf.make_ndarray(tf.Summary.FromString(serialized).value[0].tensor)
    return [{"source": source.decode("utf-8"), "translation": translation.decode("utf-8")}
            for source, translation in rows]


class StatusExporter(tf.estimator.Exporter):
    """Adds each evaluation to the training status: step, dev loss (label-smoothed, as the
    training loss), dev BLEU, dev perplexity (unsmoothed) and the example translations."""

    name = "training_status"

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        metrics = {key: float(eval_result[name]) for key, name in (
            ("loss", "loss"), ("dev_bleu", "bleu"), ("dev_perplexity", "perplexity"))}
        write_training_status(estimator.model_dir, evaluation=dict(  # JSON has no Infinity: null
            {key: value if math.isfinite(value) else None for key, value in metrics.items()},
            step=int(eval_result[tf.GraphKeys.GLOBAL_STEP]),
            examples=read_examples(eval_result["examples"])))
