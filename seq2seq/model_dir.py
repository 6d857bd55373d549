"""The model directory train.py writes: its files' names, the checkpoint it serves, its status.

Nothing here imports TensorFlow: the server reads the directory while TensorFlow loads.
"""

import codecs
import json
import os
import re

CONFIG_FILE = "config.yaml"  # the resolved config the model was trained with
STATUS_FILE = "training_status.json"  # what training is doing (written by training/status.py)
EXPORT_DIR = "export"  # SavedModels, in export/<timestamp>/
BEST_DIR = "best"  # the best-BLEU checkpoint, a model directory of its own
PREVIOUS_SUFFIX = ".old"  # best.old: best/ between its update's two renames
CHECKPOINT_STATE = "checkpoint"  # tf.train's record of a directory's checkpoints, written last
SERVING_SIGNATURE = "serving_default"  # the exports' (tf.saved_model's default key)
AVERAGED_DIR, AVERAGED_RECORD = "averaged", "averaged.json"  # training.average's, and its record


def checkpoint_step(path):
    """The global step in a checkpoint prefix's name (".../model.ckpt-STEP"), or None."""
    match = re.search(r"-(\d+)$", path or "")
    return int(match.group(1)) if match else None


def latest_checkpoint(directory):
    """tf.train.latest_checkpoint(directory): the prefix its state names if the .index exists."""
    try:
        with open(os.path.join(directory, CHECKPOINT_STATE), encoding="utf-8") as state:
            found = re.search(r'^model_checkpoint_path: "(.*)"$', state.read(), re.MULTILINE)
    except OSError:
        return None
    if not found:
        return None
    # A protobuf text string: quotes, backslashes and non-ASCII bytes come escaped.
    path = os.path.join(directory, codecs.escape_decode(found.group(1))[0].decode("utf-8"))
    return path if os.path.isfile(path + ".index") else None


def best_checkpoint_dir(model_dir):
    """MODEL_DIR/best, else MODEL_DIR/best.old (an update died between its renames), else None."""
    best_dir = os.path.join(model_dir, BEST_DIR)
    return next((directory for directory in (best_dir, best_dir + PREVIOUS_SUFFIX)
                 if os.path.isdir(directory)), None)


def find_checkpoint(model_dir):
    """The checkpoint `model_dir` serves: its best-BLEU one, else its latest, else ValueError."""
    best_dir = best_checkpoint_dir(model_dir)
    path = (best_dir and latest_checkpoint(best_dir)) or latest_checkpoint(model_dir)
    if not path:
        raise ValueError("%s holds no checkpoint: train a model into it first "
                         "(python train.py --model_dir %s)" % (model_dir, model_dir))
    return path


def read_status_file(model_dir):
    """MODEL_DIR/training_status.json's object, None if absent; ValueError naming it if not one."""
    path = os.path.join(model_dir, STATUS_FILE)
    try:
        with open(path, encoding="utf-8") as status_file:
            status = json.load(status_file)
    except FileNotFoundError:
        return None
    except ValueError as error:
        raise ValueError("%s is not JSON (%s)" % (path, error)) from None
    if not isinstance(status, dict):
        raise ValueError("%s holds no JSON object" % path)
    return status
