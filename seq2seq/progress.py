"""What a person reads while a model trains: progress lines and evaluation tables.

TensorFlow's own logging is turned down to warnings by `train.py`; these lines
go through the "seq2seq" Python logger instead.
"""

import logging
import numbers
import time

import tensorflow.compat.v1 as tf

logger = logging.getLogger("seq2seq")


def format_duration(seconds):
    """3725 -> "1h02m", 125 -> "2m05s", 7 -> "7s"."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return "%dh%02dm" % (hours, minutes)
    if minutes:
        return "%dm%02ds" % (minutes, seconds)
    return "%ds" % seconds


def format_metrics_table(metrics, title):
    """Formats evaluation metrics as a small two-column table.

    Args:
      metrics: dict name -> number (an Estimator's evaluation result, NumPy
        scalars included).
      title: the line above the table.
    Returns:
      A multi-line string.
    """
    rows = [(name, str(value) if isinstance(value, numbers.Integral) else "%.4g" % value)
            for name, value in sorted(metrics.items())]
    name_width = max(len(name) for name, _ in rows)
    value_width = max(len(value) for _, value in rows)
    rule = "  " + "-" * (name_width + value_width + 3)
    lines = [title, rule]
    lines += ["  %-*s   %*s" % (name_width, name, value_width, value) for name, value in rows]
    lines.append(rule)
    return "\n".join(lines)


class ProgressHook(tf.train.SessionRunHook):
    """Every `every_n_steps` steps: a log line and a tokens/s summary.

    The line shows the global step, the mean training loss since the previous
    line, the learning rate, steps/s, tokens/s (source + target tokens, padding
    excluded) and the time left until `max_steps` at the current speed. With
    towers a step holds N times the data, so tokens/s is the figure to compare.
    The rates are wall-clock: an interval that holds a checkpoint evaluation
    shows a lower rate, as the ETA should. With several workers, steps/s and
    the ETA follow the global step (all workers' updates), while loss and
    tokens/s are this worker's own batches.
    """

    def __init__(self, loss, num_tokens, learning_rate, max_steps, every_n_steps,
                 summary_dir=None):
        """Creates the hook.

        Args:
          loss: scalar float tensor, the training loss of a step.
          num_tokens: scalar tensor, the tokens a step trains on.
          learning_rate: scalar float tensor.
          max_steps: int, the global step at which training stops.
          every_n_steps: int, steps between two log lines.
          summary_dir: where to write the "tokens_per_sec" summary (the model
            directory), or None for no summary.
        """
        self._fetches = {"loss": loss, "tokens": num_tokens, "learning_rate": learning_rate}
        self._max_steps = max_steps
        self._every_n_steps = every_n_steps
        self._summary_dir = summary_dir

    def begin(self):
        self._global_step = tf.train.get_global_step()
        self._summary_writer = (tf.summary.FileWriterCache.get(self._summary_dir)
                                if self._summary_dir else None)

    def after_create_session(self, session, coord):
        self._last_step = session.run(self._global_step)
        self._last_time = time.time()
        # The global step this process expects after its own updates: exact
        # on one machine, a lower bound when other workers also train.
        self._expected_step = self._last_step
        self._loss_sum, self._tokens, self._steps = 0.0, 0, 0

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(self._fetches)

    def after_run(self, run_context, run_values):
        results = run_values.results
        self._loss_sum += results["loss"]
        self._tokens += int(results["tokens"])
        self._steps += 1
        self._expected_step += 1
        if self._expected_step // self._every_n_steps > self._last_step // self._every_n_steps:
            # Fetching the step with the update would race with its increment:
            # read it after the run, and only when logging.
            self._report(run_context.session.run(self._global_step), results["learning_rate"])

    def _report(self, step, learning_rate):
        elapsed = max(time.time() - self._last_time, 1e-9)
        steps_per_sec = (step - self._last_step) / elapsed
        tokens_per_sec = self._tokens / elapsed
        remaining = max(self._max_steps - step, 0)
        eta = format_duration(remaining / steps_per_sec) if steps_per_sec > 0 else "?"
        logger.info("step %d/%d  loss %.3f  lr %.2e  %.2f steps/s  %.0f tokens/s  ETA %s",
                    step, self._max_steps, self._loss_sum / self._steps, learning_rate,
                    steps_per_sec, tokens_per_sec, eta)
        if self._summary_writer is not None:
            summary = tf.Summary(value=[
                tf.Summary.Value(tag="tokens_per_sec", simple_value=tokens_per_sec)])
            self._summary_writer.add_summary(summary, step)
        self._last_step, self._last_time, self._expected_step = step, time.time(), step
        self._loss_sum, self._tokens, self._steps = 0.0, 0, 0
