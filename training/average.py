"""Checkpoint averaging: the element-wise mean of a model directory's last N checkpoints.

    python -m training.average --model_dir D [--last N] [--out D/averaged]

writes a model directory that decode.translate and serve.py load like any other (what it
holds, and why: docs/TRAINING-NOTES.md, "Checkpoint averaging").
"""

import argparse
import glob
import json
import os
import shutil

import numpy as np
import tensorflow.compat.v1 as tf

from data_pipeline.tokenizer import Tokenizer
from seq2seq.config import load_config
from seq2seq.model import Seq2SeqModel
from seq2seq.model_dir import AVERAGED_DIR, AVERAGED_RECORD, CONFIG_FILE, checkpoint_step


def last_checkpoints(model_dir, count):
    """The last `count` checkpoint prefixes in `model_dir` past step 0 (the initial random
    weights, kept while a run is young), oldest first, found as files."""
    if count < 1:
        raise ValueError("--last must be at least 1, got %d" % count)
    paths = sorted(filter(checkpoint_step, (path[:-len(".index")] for path in glob.glob(
        os.path.join(glob.escape(model_dir), "model.ckpt-*.index")))), key=checkpoint_step)
    if len(paths) < count:
        advice = ("pass --last %d or less, or train with a larger train.keep_checkpoint_max"
                  % len(paths) if paths else "train a model into it first")
        raise ValueError("%s holds %d checkpoint(s) past step 0, fewer than the %d to average: %s"
                         % (model_dir, len(paths), count, advice))
    return paths[-count:]


def average_checkpoints(model_dir, count=5, out=None):
    """Writes the mean of `model_dir`'s last `count` checkpoints as the model directory `out`
    (default MODEL_DIR/averaged; a previous average there is replaced); returns its checkpoint.
    ValueError: fewer checkpoints, `out` holds something else, or a checkpoint lacks a variable."""
    out = os.path.normpath(out or os.path.join(model_dir, AVERAGED_DIR))
    paths = last_checkpoints(model_dir, count)
    if os.path.exists(out) and not os.path.isfile(os.path.join(out, AVERAGED_RECORD)):
        raise ValueError("%s exists and was not written by training.average: pass another --out"
                         % out)
    config, tokenizer = load_config(os.path.join(model_dir, CONFIG_FILE)), Tokenizer.load(model_dir)
    readers = [tf.train.load_checkpoint(path) for path in paths]
    staging = "%s.staging-%d" % (out, os.getpid())
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with tf.Graph().as_default(), tf.Session() as session:
        model = Seq2SeqModel(config["model"], tokenizer.source_vocab_size,
                             tokenizer.target_vocab_size)
        ids = tf.zeros([1, 1], tf.int32)  # a call of every layer makes every variable
        model.teacher_forced_logits(model.encode(ids, tf.ones([1], tf.int32), False), ids, False)
        for variable in model.variables:
            name = variable.op.name
            missing = [path for path, reader in zip(paths, readers) if not reader.has_tensor(name)]
            if missing:
                raise ValueError("checkpoint %s has no variable %s: was it trained with a "
                                 "different model config?" % (missing[0], name))
            mean = sum(reader.get_tensor(name).astype(np.float64) for reader in readers) / count
            variable.load(mean.astype(np.float32), session)
        step = tf.train.get_or_create_global_step()
        step.load(readers[-1].get_tensor(tf.GraphKeys.GLOBAL_STEP), session)
        saver = tf.train.Saver(model.variables + [step], save_relative_paths=True)
        saved = saver.save(session, os.path.join(staging, "model.ckpt"), global_step=step,
                           write_meta_graph=False)
    shutil.copyfile(os.path.join(model_dir, CONFIG_FILE), os.path.join(staging, CONFIG_FILE))
    tokenizer.copy_to(staging)
    with open(os.path.join(staging, AVERAGED_RECORD), "w", encoding="utf-8") as record:
        json.dump({"checkpoints": [os.path.basename(path) for path in paths]}, record)
    shutil.rmtree(out, ignore_errors=True)  # a previous average
    os.replace(staging, out)
    return os.path.join(out, os.path.basename(saved))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--last", type=int, default=5, help="checkpoints to average (default 5)")
    parser.add_argument("--out", help="the averaged model directory (default MODEL_DIR/averaged)")
    args = parser.parse_args(argv)
    tf.disable_v2_behavior()
    try:
        path = average_checkpoints(args.model_dir, args.last, args.out)
    except ValueError as error:
        parser.error(str(error))
    print("wrote the average of %d checkpoints: %s" % (args.last, path))


if __name__ == "__main__":
    main()
