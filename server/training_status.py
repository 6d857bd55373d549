"""What training is doing, as the server reports it: MODEL_DIR/training_status.json (written by
training/status.py) read back, without TensorFlow, so that it answers while the model loads."""

import os

from data_pipeline.tokenizer import JOINT_MODEL, SOURCE_MODEL, TARGET_MODEL
from seq2seq.config import ConfigError, load_config
from seq2seq.model_dir import CONFIG_FILE, checkpoint_step, find_checkpoint, read_status_file


def process_alive(pid):
    """Whether process `pid` runs (a zombie, exited but not yet reaped, does not)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: it exists
        return True
    try:
        with open("/proc/%d/stat" % pid, encoding="utf-8") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:  # no /proc (macOS)
        return True


def read_status(model_dir):
    """The status file's object, "running" false if its trainer's process is gone; None if the
    file is absent or is not a JSON object."""
    try:
        status = read_status_file(model_dir)
    except (OSError, ValueError):
        return None
    if status and status.get("running") and not process_alive(status.get("pid")):
        status.update(running=False, eta_seconds=None)
    return status


def training_report(model_dir, serving_step):
    """GET /v1/training's body: the status file's fields (running false, no step, no evaluations
    without one, or without `model_dir`) and the step being served (or None)."""
    status = (read_status(model_dir) if model_dir else None) or {}
    return {"running": bool(status.get("running")), "step": status.get("step"),
            "max_steps": status.get("max_steps"), "evaluations": status.get("evaluations", []),
            "serving_step": serving_step, "eta_seconds": status.get("eta_seconds"),
            "steps_per_second": status.get("steps_per_second"), "stopped": status.get("stopped"),
            "updated_at": status.get("updated_at")}


def has_model_files(model_dir):
    """Whether train.py has written config.yaml and the SentencePiece model(s) into `model_dir`."""
    exists = lambda name: os.path.isfile(os.path.join(model_dir, name))  # noqa: E731
    return exists(CONFIG_FILE) and (exists(JOINT_MODEL) or exists(SOURCE_MODEL)
                                    and exists(TARGET_MODEL))


def trained_checkpoint(model_dir):
    """The checkpoint `model_dir` serves (`find_checkpoint`'s), or None while it has none past
    step 0 (tf.estimator's first checkpoint: its translations are noise)."""
    try:
        path = find_checkpoint(model_dir)
    except ValueError:
        return None
    return path if checkpoint_step(path) != 0 else None


def waiting_message(model_dir):
    """Why there is no model to serve yet and when there will be one; None once a checkpoint
    exists (it is loading, or failed to load)."""
    if not has_model_files(model_dir):
        return ("waiting for training: %s has no config.yaml and tokenizer yet (train.py prepares "
                "its data first, then writes them; start it with python train.py --model_dir %s "
                "if it is not running)" % (model_dir, model_dir))
    if trained_checkpoint(model_dir):
        return None
    status = read_status(model_dir)
    if not (status and status.get("running")):
        return ("%s has no checkpoint yet and no training is running: start it with "
                "python train.py --model_dir %s" % (model_dir, model_dir))
    step, speed = status.get("step") or 0, status.get("steps_per_second")
    try:
        first = load_config(os.path.join(model_dir, CONFIG_FILE))["train"]["save_checkpoints_steps"]
    except (ConfigError, OSError):
        first = None
    when = " shortly"
    if first and step < first:
        when = " at step %d" % first
        if speed:
            seconds = (first - step) / speed
            when = " in about %s (step %d)" % ("%d s" % round(seconds) if seconds < 90 else
                                               "%d min" % round(seconds / 60.0), first)
    return ("training has started (step %d of %s) and has written no checkpoint yet: the first "
            "model will be ready%s" % (step, status.get("max_steps", "?"), when))
