"""Trains, evaluates and exports a translation model with tf.estimator.

    python train.py            # configs/default.yaml on the embedded corpus into runs/default
    python train.py --config configs/tiny.yaml --model_dir /tmp/tiny --max_steps 100
    python train.py --train_data my.tsv --dev_data dev.tsv --model_dir runs/mine
    python train.py --model_dir runs/default --schedule export

Evaluating or exporting an existing model directory uses the config it was
trained with (MODEL_DIR/config.yaml) unless --config is given.

The data is prepared first if needed (`data_pipeline.prepare`). The model
directory receives the resolved config (config.yaml), the SentencePiece
model(s), the checkpoints, TensorBoard events, MODEL_DIR/best/ (the checkpoint
with the best dev BLEU, see `seq2seq.best_checkpoint`) and
MODEL_DIR/export/<timestamp>/ SavedModels. Rerunning resumes from the last
checkpoint.

Several devices: `--num_gpus N` splits every batch over N towers (GPUs, or N
virtual CPU devices without GPUs). Several machines: set TF_CONFIG (chief,
worker, ps, and optionally evaluator) and run the default schedule,
train_and_evaluate: the Estimator runs between-graph replicated training with
parameter servers, each training task on its own share of the data.
"""

import argparse
import copy
import logging
import os
import shutil
import sys
import time

# Before TensorFlow is imported: its C++ start-up messages drown the progress lines.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import absl.logging  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

from data_pipeline.corpus import CorpusError  # noqa: E402
from data_pipeline.input import input_fn  # noqa: E402
from data_pipeline.prepare import prepare  # noqa: E402
from data_pipeline.tokenizer import Tokenizer  # noqa: E402
from seq2seq import towers  # noqa: E402
from seq2seq.best_checkpoint import BestCheckpointExporter  # noqa: E402
from seq2seq.config import (  # noqa: E402
    ConfigError, corpus_overrides, load_config, save_config, shape_mismatches)
from seq2seq.loss_guard import NonFiniteLossError, as_non_finite_loss_error  # noqa: E402
from seq2seq.model_fn import model_fn, serving_input_receiver_fn  # noqa: E402
from seq2seq.progress import format_metrics_table  # noqa: E402

DEFAULT_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs", "default.yaml")
CONFIG_FILE = "config.yaml"

logger = logging.getLogger("seq2seq")


def _same_file_contents(path_a, path_b):
    with open(path_a, "rb") as a, open(path_b, "rb") as b:
        return a.read() == b.read()


def check_model_dir(config, model_dir, tokenizer):
    """Refuses a model directory trained with another model shape or vocabulary.

    Args:
      config: the resolved config about to be trained.
      model_dir: an existing or new model directory.
      tokenizer: the `Tokenizer` the prepared data was encoded with.
    Raises:
      ConfigError: naming the disagreeing config keys, or the SentencePiece
        files that differ (the checkpoint's embeddings would not match the data).
    """
    config_path = os.path.join(model_dir, CONFIG_FILE)
    if os.path.exists(config_path):
        mismatches = shape_mismatches(load_config(config_path), config)
        if mismatches:
            raise ConfigError(
                "%s was trained with a different model shape (%s); train into a new "
                "--model_dir or restore these values" % (model_dir, "; ".join(mismatches)))
    try:
        trained = Tokenizer.load(model_dir)
    except FileNotFoundError:
        return
    if len(trained.model_files) != len(tokenizer.model_files) or not all(
            _same_file_contents(a, b) for a, b in zip(trained.model_files, tokenizer.model_files)):
        raise ConfigError(
            "the SentencePiece model(s) in %s differ from those the data in %s was prepared "
            "with; train into a new --model_dir" % (model_dir, config["data"]["data_dir"]))


def write_model_dir(config, model_dir, tokenizer):
    """Writes config.yaml and the SentencePiece model(s) into the model directory.

    Each file is written under a temporary name and renamed, so that the
    other tasks of a distributed run never read a half-written file.
    """
    staging = os.path.join(model_dir, ".staging-%d" % os.getpid())
    os.makedirs(staging, exist_ok=True)
    save_config(config, os.path.join(staging, CONFIG_FILE))
    tokenizer.copy_to(staging)
    for name in os.listdir(staging):
        os.replace(os.path.join(staging, name), os.path.join(model_dir, name))
    shutil.rmtree(staging)


def wait_for_model_dir(model_dir, poll_secs=1.0):
    """Blocks until the SentencePiece model(s) are in the model directory.

    model_fn reads the vocabulary there and only the chief writes it, so a
    worker or evaluator that gets there first waits for the chief, as it
    waits for the chief's session anyway.
    """
    waiting = False
    while True:
        try:
            Tokenizer.load(model_dir)
            return
        except FileNotFoundError:
            if not waiting:
                logger.info("waiting for the chief to write %s", model_dir)
                waiting = True
            time.sleep(poll_secs)


def model_dir_files(model_dir):
    """The files that make `model_dir` self-contained besides its checkpoints."""
    return [CONFIG_FILE] + [os.path.basename(path)
                            for path in Tokenizer.load(model_dir).model_files]


def build_estimator(config, model_dir, num_towers):
    """An Estimator for `config`, its batches split over `num_towers` devices.

    TF_CONFIG, when set, is read by the RunConfig: the Estimator then runs as
    one task (chief, worker, ps or evaluator) of a distributed job.
    """
    train = config["train"]
    run_config = tf.estimator.RunConfig(
        model_dir=model_dir,
        tf_random_seed=train["seed"],
        save_checkpoints_steps=train["save_checkpoints_steps"],
        keep_checkpoint_max=train["keep_checkpoint_max"],
        save_summary_steps=train["log_step_count_steps"],
        log_step_count_steps=train["log_step_count_steps"],
        session_config=_with_cluster_defaults(towers.session_config(num_towers)))
    return tf.estimator.Estimator(
        model_fn=model_fn, config=run_config, params=dict(config, num_towers=num_towers))


def _with_cluster_defaults(session_config):
    """`session_config` plus what a RunConfig gives a task of TF_CONFIG's cluster.

    RunConfig sets a task's device filters (a worker talks to the parameter
    servers and itself, not to the other workers, so one that is down or done
    cannot hang the others' sessions) only in a session config of its own
    making: the towers' config would drop them.
    """
    probe = tf.estimator.RunConfig()
    cluster_default = probe.session_config if probe.cluster_spec.jobs else None
    if session_config is None or cluster_default is None:
        return session_config
    merged = tf.ConfigProto()
    merged.CopyFrom(cluster_default)
    merged.MergeFrom(session_config)
    return merged


def export(estimator, model_dir):
    """Writes a SavedModel of the latest checkpoint to MODEL_DIR/export/<timestamp>/.

    Its serving signature takes "source_ids" [batch, time] and "source_length"
    [batch] and returns the beam's n-best "ids", "scores" and "lengths". The
    config and SentencePiece model(s) go into its assets.extra/ so that the
    SavedModel alone can translate text.

    Returns:
      The export directory.
    """
    path = estimator.export_saved_model(
        os.path.join(model_dir, "export"), serving_input_receiver_fn,
        assets_extra={name: os.path.join(model_dir, name) for name in model_dir_files(model_dir)})
    path = path.decode("utf-8") if isinstance(path, bytes) else path
    logger.info("exported the SavedModel to %s", path)
    return path


def _evaluate(estimator, config, model_dir):
    metrics = estimator.evaluate(input_fn)
    logger.info(format_metrics_table(metrics, "evaluation at step %d" % metrics["global_step"]))
    return metrics


def _train(estimator, config, model_dir):
    estimator.train(input_fn, max_steps=config["train"]["max_steps"])
    if not estimator.config.is_chief:
        return {}
    return {"global_step": estimator.get_variable_value(tf.GraphKeys.GLOBAL_STEP),
            "export_path": export(estimator, model_dir)}


def _train_and_evaluate(estimator, config, model_dir):
    train = config["train"]
    train_spec = tf.estimator.TrainSpec(input_fn, max_steps=train["max_steps"])
    eval_spec = tf.estimator.EvalSpec(
        input_fn, steps=None, start_delay_secs=0, throttle_secs=train["throttle_secs"],
        exporters=[BestCheckpointExporter(model_dir_files)])
    result = tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
    if not estimator.config.is_chief:
        return {}
    if estimator.config.cluster_spec.jobs:
        # A distributed chief only trains; an evaluator task evaluates.
        return {"export_path": export(estimator, model_dir)}
    metrics = result[0]
    if metrics is None:
        # max_steps had already been reached: no new checkpoint to evaluate.
        metrics = _evaluate(estimator, config, model_dir)
    return dict(metrics, export_path=export(estimator, model_dir))


def _export(estimator, config, model_dir):
    return {"export_path": export(estimator, model_dir)}


_SCHEDULES = {
    "train_and_evaluate": _train_and_evaluate,
    "train": _train,
    "evaluate": _evaluate,
    "export": _export,
}
SCHEDULES = tuple(_SCHEDULES)
TRAINING_SCHEDULES = ("train_and_evaluate", "train")


def run(config, model_dir, schedule="train_and_evaluate", num_gpus=1, max_steps=None):
    """Trains, evaluates or exports; the schedules that read data prepare it first if needed.

    Args:
      config: a resolved config (`seq2seq.config.load_config`).
      model_dir: the model directory, created if needed; an existing one is
        resumed from its last checkpoint.
      schedule: "train_and_evaluate" (train, evaluating after every
        checkpoint, then export), "train" (train, then export), "evaluate"
        (the latest checkpoint on the dev set) or "export" (a SavedModel of
        the latest checkpoint; no data is read). Under a TF_CONFIG cluster
        only "train_and_evaluate" runs.
      num_gpus: towers to split each batch over (GPUs, or virtual CPU
        devices when there are none).
      max_steps: the global step to train to; overrides train.max_steps.
    Returns:
      A dict: the evaluation metrics (for evaluating schedules), the global
      step (for "train") and "export_path" (for schedules that export).
    Raises:
      ConfigError: when the model directory holds a model of another shape,
        or no checkpoint to evaluate or export; when a cluster is given
        another schedule than train_and_evaluate; for data settings that
        cannot be met (a ValueError, as is CorpusError for unreadable data).
      NonFiniteLossError: when the loss becomes NaN or infinite, naming the step.
    """
    if schedule not in _SCHEDULES:
        raise ValueError("schedule must be one of %s, got %r" % (", ".join(SCHEDULES), schedule))
    config = copy.deepcopy(config)
    if max_steps is not None:
        config["train"]["max_steps"] = max_steps
    estimator = build_estimator(config, model_dir, num_gpus)
    if estimator.config.cluster_spec.jobs and schedule != "train_and_evaluate":
        # Only tf.estimator.train_and_evaluate starts a task's server and
        # makes a parameter server serve: any other schedule would leave the
        # other tasks waiting for a server that never comes.
        raise ConfigError("TF_CONFIG describes a cluster: run the train_and_evaluate schedule "
                          "there (an evaluator task evaluates); --schedule %s runs without "
                          "TF_CONFIG" % schedule)
    if schedule in ("evaluate", "export") and not tf.train.latest_checkpoint(model_dir):
        raise ConfigError("%s holds no checkpoint to %s: train a model into it first"
                          % (model_dir, schedule))
    if schedule == "export":
        # Exporting needs the model directory only, not the training data.
        return _export(estimator, config, model_dir)
    if estimator.config.task_type != "ps":  # a parameter server only serves variables
        follows_chief = estimator.config.cluster_spec.jobs and not estimator.config.is_chief
        if follows_chief:
            # The chief prepares the data before it writes the model directory:
            # on a shared file system the others then find it prepared, rather
            # than all writing the same data_dir at once.
            wait_for_model_dir(model_dir)
        prepared = prepare(config, verbose=True)
        tokenizer = Tokenizer.load(prepared.data_dir)
        os.makedirs(model_dir, exist_ok=True)
        check_model_dir(config, model_dir, tokenizer)
        # Only training records its config: evaluating or exporting with
        # other non-shape settings leaves the trained model's record alone.
        if estimator.config.is_chief and schedule in TRAINING_SCHEDULES:
            write_model_dir(config, model_dir, tokenizer)
    try:
        return _SCHEDULES[schedule](estimator, config, model_dir)
    except tf.errors.InvalidArgumentError as error:
        non_finite = as_non_finite_loss_error(error)
        if non_finite is None:
            raise
        raise non_finite from None


class _DropDeprecationNotices(logging.Filter):
    """Drops TensorFlow's "X is deprecated" notices.

    This project uses the TF1 API (tf.compat.v1, tf.estimator) on purpose;
    the notices, dozens per graph, say nothing a user can act on.
    """

    def filter(self, record):
        return "deprecated" not in record.getMessage()


def quiet_tensorflow():
    """TensorFlow and absl logging at WARNING, so that the progress lines stand out."""
    tf.logging.set_verbosity(tf.logging.WARN)
    absl.logging.set_verbosity(absl.logging.WARNING)
    tf_logger = tf.get_logger()
    tf_logger.addFilter(_DropDeprecationNotices())
    # TensorFlow's logger has its own handler: not propagating to ours avoids
    # printing every warning twice.
    tf_logger.propagate = False


def positive_int(text):
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected an integer >= 1, got %r" % text) from None
    if value < 1:
        raise argparse.ArgumentTypeError("expected an integer >= 1, got %d" % value)
    return value


def config_path(args):
    """The YAML config to load: --config, else the trained model's own for
    evaluate and export, else configs/default.yaml."""
    if args.config:
        return args.config
    if args.schedule in ("evaluate", "export") and args.model_dir:
        trained = os.path.join(args.model_dir, CONFIG_FILE)
        if os.path.isfile(trained):
            return trained
    return DEFAULT_CONFIG


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config",
                        help="YAML config (default: MODEL_DIR/config.yaml to evaluate or export "
                             "a trained model, else configs/default.yaml)")
    parser.add_argument("--model_dir", help="model directory (default: runs/<config name>)")
    parser.add_argument("--hparams", default="", help="overrides: section.key=value,...")
    parser.add_argument("--train_data", help="TSV file (source<TAB>target) or src_file,tgt_file")
    parser.add_argument("--dev_data", help="TSV file or src_file,tgt_file")
    parser.add_argument("--num_gpus", type=positive_int, default=1,
                        help="towers per batch: GPUs, or virtual CPU devices without GPUs "
                             "(1: the CPU or one GPU)")
    parser.add_argument("--max_steps", type=positive_int, help="overrides train.max_steps")
    parser.add_argument("--schedule", choices=SCHEDULES, default="train_and_evaluate")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    quiet_tensorflow()
    tf.disable_v2_behavior()
    try:
        overrides = corpus_overrides(args.train_data, args.dev_data)
        config = load_config(config_path(args), args.hparams, overrides)
        model_dir = args.model_dir or os.path.join("runs", config["name"])
        run(config, model_dir, args.schedule, args.num_gpus, args.max_steps)
    except (ConfigError, CorpusError, NonFiniteLossError) as error:
        # Bad input, each naming its problem: one line, no traceback. Any
        # other exception is a bug, and keeps its traceback.
        logger.error("error: %s", error)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
