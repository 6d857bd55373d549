"""Early stopping: training ends after N evaluations in a row without a new best checkpoint."""

import logging

import tensorflow.compat.v1 as tf

from seq2seq.model_dir import best_checkpoint_dir
from training.best_checkpoint import read_best
from training.status import read_training_status

logger = logging.getLogger("seq2seq")


def best_step(model_dir):
    """The step of `model_dir`'s best checkpoint, or None."""
    best_dir = best_checkpoint_dir(model_dir)
    best = read_best(best_dir) if best_dir else None
    return best and best["global_step"]


def evaluations_since_best(model_dir):
    """How many evaluations in the training status came after the best checkpoint's."""
    best = best_step(model_dir)
    return sum(evaluation["step"] > (-1 if best is None else best)
               for evaluation in (read_training_status(model_dir) or {}).get("evaluations", []))


class StopHook(tf.train.SessionRunHook):
    """Requests the stop after any step at whose end `should_stop()` is true."""

    def __init__(self, should_stop):
        self._should_stop = should_stop

    def after_run(self, run_context, run_values):
        if self._should_stop():
            run_context.request_stop()


class EarlyStopping(tf.estimator.Exporter):
    """Counts the evaluations since the best; after `patience` of them (0: never) its training
    `hook` stops at the step that decided. Listed after BestCheckpointExporter, whose best/ says
    whether an evaluation was the best (why: docs/TRAINING-NOTES.md, "Early stopping")."""

    name = "early_stopping"

    def __init__(self, patience, evaluations_since_best=0):
        self.patience, self.evaluations_since_best = patience, evaluations_since_best
        self.hook = StopHook(lambda: self.stopped)

    @property
    def stopped(self):
        return 0 < self.patience <= self.evaluations_since_best

    def record(self, step, best_step):
        """Counts the evaluation at `step`; best_step: the best checkpoint's step (or None)."""
        self.evaluations_since_best = 0 if step == best_step else self.evaluations_since_best + 1
        if self.stopped:
            logger.info("early stopping at step %d: %d evaluation(s) in a row without a better "
                        "dev BLEU than step %s's", step, self.evaluations_since_best, best_step)

    def export(self, estimator, export_path, checkpoint_path, eval_result, is_the_final_export):
        self.record(int(eval_result[tf.GraphKeys.GLOBAL_STEP]), best_step(estimator.model_dir))
