"""Trains, evaluates and exports a translation model with tf.estimator.

    python train.py            # configs/default.yaml on the embedded corpus into runs/default
    python train.py --config configs/tiny.yaml --model_dir /tmp/tiny --max_steps 100
    python train.py --train_data my.tsv --dev_data dev.tsv --model_dir runs/mine
    python train.py --model_dir runs/default --schedule export

Data is prepared first if needed; rerunning resumes; TF_CONFIG runs it on several machines.
"""

import argparse
import logging
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import absl.logging  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

from data_pipeline.corpus import CorpusError  # noqa: E402
from data_pipeline.input import input_fn  # noqa: E402
from data_pipeline.prepare import prepare  # noqa: E402
from data_pipeline.tokenizer import Tokenizer  # noqa: E402
from seq2seq.config import (  # noqa: E402
    DEFAULT_CONFIG, ConfigError, corpus_overrides, load_config, save_config, shape_mismatches)
from seq2seq.model_dir import (  # noqa: E402
    AVERAGED_RECORD, CONFIG_FILE, EXPORT_DIR, checkpoint_step, find_checkpoint, latest_checkpoint)
from training.best_checkpoint import BestCheckpointExporter, log_evaluation  # noqa: E402
from training.early_stopping import EarlyStopping, evaluations_since_best  # noqa: E402
from training.model_fn import (  # noqa: E402
    NonFiniteLossError, model_fn, raise_non_finite_loss, serving_input_receiver_fn, session_config)
from training.status import (  # noqa: E402
    StatusExporter, start_training_status, write_training_status)

CHIEF_TIMEOUT_SECS = 600  # a cluster task's wait for the chief to write the model directory
TRAINING_SCHEDULES = ("train_and_evaluate", "train")

logger = logging.getLogger("seq2seq")


def check_model_shape(config, model_dir, schedule):
    """Raises ConfigError if `model_dir` holds a model of another shape, or an average that
    `schedule` would train (checked before any data is prepared or file written)."""
    if schedule in TRAINING_SCHEDULES and os.path.exists(os.path.join(model_dir, AVERAGED_RECORD)):
        raise ConfigError("%s is an average of checkpoints (training.average): it holds no "
                          "optimizer state to resume training from; train into the model "
                          "directory it averages, or a new --model_dir" % model_dir)
    config_path = os.path.join(model_dir, CONFIG_FILE)
    mismatches = os.path.exists(config_path) and shape_mismatches(load_config(config_path), config)
    if mismatches:
        raise ConfigError("%s was trained with a different model shape (%s); train into a new "
                          "--model_dir or restore these values"
                          % (model_dir, "; ".join(mismatches)))


def check_tokenizer(config, model_dir, tokenizer):
    """Raises ConfigError if `model_dir` holds SentencePiece models other than `tokenizer`'s."""
    try:
        trained = Tokenizer.load(model_dir)
    except FileNotFoundError:
        return
    if trained.encoding() != tokenizer.encoding():
        raise ConfigError(
            "the SentencePiece model(s) in %s differ from those the data in %s was prepared "
            "with; train into a new --model_dir" % (model_dir, config["data"]["data_dir"]))


def write_model_dir(config, model_dir, tokenizer):
    """Writes config.yaml and the SentencePiece model(s), each renamed into place whole."""
    os.makedirs(model_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".staging-", dir=model_dir) as staging:
        save_config(config, os.path.join(staging, CONFIG_FILE))
        tokenizer.copy_to(staging)
        for name in os.listdir(staging):
            os.replace(os.path.join(staging, name), os.path.join(model_dir, name))


def model_dir_files(model_dir):
    """The files besides the checkpoints that make `model_dir` self-contained."""
    return [CONFIG_FILE] + [os.path.basename(path)
                            for path in Tokenizer.load(model_dir).model_files]


def wait_for_chief(model_dir, chief, timeout_secs):
    """The tokenizer the chief task writes into `model_dir`; TimeoutError after timeout_secs."""
    logger.info("waiting for the chief (%s) to write %s", chief, model_dir)
    deadline = time.monotonic() + timeout_secs
    while True:
        try:
            return Tokenizer.load(model_dir)
        except FileNotFoundError:
            if time.monotonic() >= deadline:
                raise TimeoutError(
                    "the chief (%s) wrote no %s and tokenizer into %s within %d s: is it running, "
                    "with this --model_dir on a file system both share? (a chief prepares the data "
                    "first: raise --chief_timeout_secs for a large corpus)"
                    % (chief, CONFIG_FILE, model_dir, timeout_secs)) from None
            time.sleep(1.0)


def build_estimator(config, model_dir, num_towers, chief_timeout_secs=CHIEF_TIMEOUT_SECS):
    """An Estimator for `config` on `num_towers` towers (TF_CONFIG read by its RunConfig); a
    cluster task waits at most `chief_timeout_secs` for the chief to make its session ready."""
    train = config["train"]
    try:
        task_config = tf.estimator.RunConfig().session_config
    except ValueError as error:  # TF_CONFIG is not JSON, or names a task its cluster lacks
        raise ConfigError("TF_CONFIG: %s" % error) from None
    # a cluster task's own session config (TF_CONFIG's) holds its device filters: keep them
    towers_config = session_config(num_towers)
    if towers_config is not None and task_config is not None:
        task_config.MergeFrom(towers_config)
        towers_config = task_config
    run_config = tf.estimator.RunConfig(
        model_dir=model_dir, tf_random_seed=train["seed"], session_config=towers_config,
        save_checkpoints_steps=train["save_checkpoints_steps"],
        keep_checkpoint_max=train["keep_checkpoint_max"],
        save_summary_steps=train["log_step_count_steps"],
        log_step_count_steps=train["log_step_count_steps"],
        session_creation_timeout_secs=chief_timeout_secs)
    return tf.estimator.Estimator(
        model_fn=model_fn, config=run_config, params=dict(config, num_towers=num_towers))


def _export(estimator, config, model_dir):
    """Exports find_checkpoint's SavedModel to MODEL_DIR/export/<timestamp>/: {"export_path"}."""
    checkpoint = find_checkpoint(model_dir)
    path = estimator.export_saved_model(
        os.path.join(model_dir, EXPORT_DIR), serving_input_receiver_fn,
        assets_extra={name: os.path.join(model_dir, name) for name in model_dir_files(model_dir)},
        checkpoint_path=checkpoint).decode("utf-8")
    logger.info("exported the SavedModel of %s to %s", checkpoint, path)
    return {"export_path": path}


def _evaluate(estimator, config, model_dir):
    metrics = estimator.evaluate(input_fn)
    log_evaluation(metrics)
    return metrics


def _trained(estimator, config, model_dir):
    """The result of a run that trained to max_steps: its step and its export."""
    return dict(_export(estimator, config, model_dir), stopped="max_steps",
                global_step=estimator.get_variable_value(tf.GraphKeys.GLOBAL_STEP))


def _train(estimator, config, model_dir):
    estimator.train(input_fn, max_steps=config["train"]["max_steps"])
    return _trained(estimator, config, model_dir)


def _train_and_evaluate(estimator, config, model_dir):
    train, cluster = config["train"], estimator.config.cluster_spec.jobs
    if cluster and train["early_stopping_evaluations"]:
        logger.warning("train.early_stopping_evaluations is ignored in a TF_CONFIG cluster: its "
                       "evaluator task evaluates apart from the chief that trains")
    early_stopping = EarlyStopping(0 if cluster else train["early_stopping_evaluations"],
                                   evaluations_since_best(model_dir))
    if early_stopping.stopped:  # a rerun of a run that stopped early
        logger.info("early stopping: the last %d evaluation(s) found no better dev BLEU; raise "
                    "train.early_stopping_evaluations to train on",
                    early_stopping.evaluations_since_best)
        metrics = _evaluate(estimator, config, model_dir)
    else:
        eval_spec = tf.estimator.EvalSpec(
            input_fn, steps=None, start_delay_secs=0, throttle_secs=train["throttle_secs"],
            exporters=[BestCheckpointExporter(model_dir_files), StatusExporter(), early_stopping])
        result = tf.estimator.train_and_evaluate(estimator, tf.estimator.TrainSpec(
            input_fn, max_steps=train["max_steps"], hooks=[early_stopping.hook]), eval_spec)
        if not estimator.config.is_chief:
            return {}
        if cluster:  # a distributed chief only trains: its evaluator task evaluates
            return _trained(estimator, config, model_dir)
        metrics = result[0] or _evaluate(estimator, config, model_dir)  # None: no step trained
    return dict(metrics, **_export(estimator, config, model_dir),
                stopped="early_stopping" if early_stopping.stopped else "max_steps")


_SCHEDULES = {"train_and_evaluate": _train_and_evaluate, "train": _train,
              "evaluate": _evaluate, "export": _export}


def run(config, model_dir, schedule="train_and_evaluate", num_gpus=1, max_steps=None,
        chief_timeout_secs=CHIEF_TIMEOUT_SECS):
    """Trains, evaluates or exports `config` in `model_dir` (preparing data first if needed).

    Args:
      schedule: a key of _SCHEDULES ("train_and_evaluate" only in a TF_CONFIG cluster).
      num_gpus: towers per batch. max_steps: overrides train.max_steps.
      chief_timeout_secs: a cluster task's longest wait for the chief's model directory.
    Returns:
      The evaluation metrics, "global_step" ("train") and "export_path".
    """
    if max_steps is not None:
        config = dict(config, train=dict(config["train"], max_steps=max_steps))
    estimator = build_estimator(config, model_dir, num_gpus, chief_timeout_secs)
    task, cluster = estimator.config, estimator.config.cluster_spec.jobs
    chief = cluster and task.cluster_spec.job_tasks("chief")[0]
    trains = task.is_chief and schedule in TRAINING_SCHEDULES  # and so keeps the training status
    if cluster and schedule != "train_and_evaluate":
        raise ConfigError("TF_CONFIG describes a cluster: run the train_and_evaluate schedule "
                          "there (an evaluator task evaluates); --schedule %s runs without "
                          "TF_CONFIG" % schedule)
    if schedule in ("evaluate", "export") and not latest_checkpoint(model_dir):
        raise ConfigError("%s holds no checkpoint to %s: train a model into it first"
                          % (model_dir, schedule))
    check_model_shape(config, model_dir, schedule)
    # a parameter server only serves variables; an export needs no data
    if task.task_type != "ps" and schedule != "export":
        if cluster and not task.is_chief:  # the chief prepares the data first
            wait_for_chief(model_dir, chief, chief_timeout_secs)
        tokenizer = Tokenizer.load(prepare(config, verbose=True).data_dir)
        os.makedirs(model_dir, exist_ok=True)
        check_tokenizer(config, model_dir, tokenizer)
        if trains:
            write_model_dir(config, model_dir, tokenizer)
            start_training_status(model_dir, checkpoint_step(latest_checkpoint(model_dir)) or 0,
                                  config["train"]["max_steps"])
    try:
        result = _SCHEDULES[schedule](estimator, config, model_dir)
    except BaseException as error:
        if trains:
            write_training_status(model_dir, running=False, eta_seconds=None, stopped="error")
        if isinstance(error, tf.errors.DeadlineExceededError) and cluster:
            raise TimeoutError(
                "the chief (%s) did not make the session ready within %d s: is it running, at "
                "that address? (a chief slow to start: raise --chief_timeout_secs)"
                % (chief, chief_timeout_secs)) from None
        raise_non_finite_loss(error)
        raise
    if trains:
        write_training_status(model_dir, running=False, eta_seconds=None,
                              step=int(result["global_step"]), stopped=result["stopped"])
    return result


def positive_int(text):
    """The argparse type of the counts: an integer >= 1."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError("expected an integer >= 1, got %s" % text)
    return int(text)


def config_path(args):
    """--config, else the trained model's config to evaluate or export, else DEFAULT_CONFIG."""
    if args.config or args.schedule not in ("evaluate", "export") or not args.model_dir:
        return args.config or DEFAULT_CONFIG
    trained = os.path.join(args.model_dir, CONFIG_FILE)
    return trained if os.path.isfile(trained) else DEFAULT_CONFIG


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", help="YAML config (default: MODEL_DIR/config.yaml to evaluate "
                                         "or export a trained model, else configs/default.yaml)")
    parser.add_argument("--model_dir", help="model directory (default: runs/<config name>)")
    parser.add_argument("--hparams", default="", help="overrides: section.key=value,...")
    parser.add_argument("--train_data", help="TSV file (source<TAB>target) or src_file,tgt_file")
    parser.add_argument("--dev_data", help="TSV file or src_file,tgt_file")
    parser.add_argument("--num_gpus", type=positive_int, default=1, help="towers per batch: "
                        "GPUs, or virtual CPU devices without GPUs (1: the CPU or one GPU)")
    parser.add_argument("--max_steps", type=positive_int, help="overrides train.max_steps")
    parser.add_argument("--schedule", choices=tuple(_SCHEDULES), default="train_and_evaluate")
    parser.add_argument("--chief_timeout_secs", type=positive_int, default=CHIEF_TIMEOUT_SECS,
                        help="in a TF_CONFIG cluster, how long a task waits for the chief to "
                             "write the model directory, then for it to make the session ready "
                             "(default: %(default)s)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    tf.logging.set_verbosity(tf.logging.WARN)  # without TensorFlow's deprecation notices
    absl.logging.set_verbosity(absl.logging.WARNING)
    tf.get_logger().addFilter(lambda record: "deprecated" not in record.getMessage())
    tf.get_logger().propagate = False
    tf.disable_v2_behavior()
    try:
        config = load_config(config_path(args), args.hparams,
                             corpus_overrides(args.train_data, args.dev_data))
        run(config, args.model_dir or os.path.join("runs", config["name"]), args.schedule,
            args.num_gpus, args.max_steps, args.chief_timeout_secs)
    except (ConfigError, CorpusError, NonFiniteLossError, TimeoutError) as error:
        logger.error("error: %s", error)  # one line; any other exception is a bug
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
