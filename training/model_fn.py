"""The Estimator model_fn: TRAIN (towers, Adam), EVAL (metrics: training/evaluation.py), PREDICT."""

import logging
import math
import os
import re
import time

import tensorflow.compat.v1 as tf

from data_pipeline.tokenizer import Tokenizer
from decode.graphs import search_encoded
from seq2seq import losses
from seq2seq.config import ConfigError
from seq2seq.model import Seq2SeqModel
from seq2seq.model_dir import SERVING_SIGNATURE
from training.evaluation import attention_images, bleu_and_examples, bleu_references, ids_to_text
from training.status import write_training_status

logger = logging.getLogger("seq2seq")


def logical_gpus():
    """Per physical GPU, the memory limits (MB) of its logical GPUs ([]: not split)."""
    return [[device.memory_limit for device in tf.config.get_logical_device_configuration(gpu)
             or ()] for gpu in tf.config.list_physical_devices("GPU")]


def tower_devices(num_towers):
    """["/gpu:i"] with GPUs (logical ones count), else ["/cpu:i"]; ConfigError: too few GPUs."""
    gpus = sum(len(limits) or 1 for limits in logical_gpus())
    if num_towers > 1 and tf.test.is_built_with_cuda() and gpus < num_towers:
        raise ConfigError("--num_gpus %d, but TensorFlow sees %d GPU(s) (CUDA_VISIBLE_DEVICES=%s)"
                          % (num_towers, gpus, os.environ.get("CUDA_VISIBLE_DEVICES", "unset")))
    return ["/%s:%d" % ("gpu" if gpus else "cpu", i) for i in range(num_towers)]


def session_config(num_towers):
    """A ConfigProto: a CPU device per tower without GPUs, or tf.config's logical GPUs; or None."""
    if num_towers > 1 and tower_devices(num_towers)[0].startswith("/cpu"):
        return tf.ConfigProto(device_count={"CPU": num_towers}, allow_soft_placement=True)
    if not any(logical_gpus()):
        return None
    return tf.ConfigProto(allow_soft_placement=True, gpu_options=tf.GPUOptions(
        experimental=tf.GPUOptions.Experimental(virtual_devices=[
            tf.GPUOptions.Experimental.VirtualDevices(memory_limit_mb=limits)
            for limits in logical_gpus()])))


def split_batch(inputs, num_towers):
    """A nested structure of [batch, ...] tensors -> a list of num_towers [batch / N, ...] ones."""
    with tf.name_scope("split_batch"):
        pieces = [tf.split(tensor, num_towers, axis=0) for tensor in tf.nest.flatten(inputs)]
    return [tf.nest.pack_sequence_as(inputs, tower) for tower in zip(*pieces)]


def parallel_gradients(loss_fn, inputs, num_towers):
    """(sum(loss_sum) / sum(weight), [(gradient, variable)]), each tower on its own device.

    Args:
      loss_fn: inputs -> (loss_sum, weight), scalars; its variables in templates.
      inputs: nested [batch, ...] tensors, batch divisible by num_towers.
      num_towers: int >= 1; with 1 no device is set (a distributed Estimator places).
    """
    if num_towers == 1:
        with tf.name_scope("tower_loss"):  # "loss" is the Estimator's summary tag
            loss_sum, weight = loss_fn(inputs)
            loss = loss_sum / weight
        variables = tf.trainable_variables()
        return loss, list(zip(tf.gradients(loss, variables), variables))
    towers = []  # (loss_sum, weight, gradients) per tower
    for index, (device, tower_inputs) in enumerate(
            zip(tower_devices(num_towers), split_batch(inputs, num_towers))):
        with tf.device(device), tf.name_scope("tower_%d" % index):
            loss_sum, weight = loss_fn(tower_inputs)
            if index == 0:
                variables = tf.trainable_variables()
            elif len(tf.trainable_variables()) != len(variables):
                raise ValueError("tower %d created new variables: the loss function must "
                                 "share them across calls (tf.make_template)" % index)
            towers.append((loss_sum, weight, tf.gradients(
                loss_sum, variables, colocate_gradients_with_ops=True)))
    tower_sums, tower_weights, tower_gradients = zip(*towers)
    with tf.name_scope("average_towers"):
        total_weight = tf.add_n(tower_weights)
        loss = tf.add_n(tower_sums) / total_weight
        grads_and_vars = []
        for variable, gradients in zip(variables, zip(*tower_gradients)):
            with tf.colocate_with(variable):
                scale = 1.0 / total_weight
                if isinstance(gradients[0], tf.IndexedSlices):  # concatenated
                    gradient = tf.IndexedSlices(
                        tf.concat([g.values for g in gradients], axis=0) * scale,
                        tf.concat([g.indices for g in gradients], axis=0), gradients[0].dense_shape)
                else:
                    gradient = tf.add_n(gradients) * scale
            grads_and_vars.append((gradient, variable))
    return loss, grads_and_vars


def learning_rate_schedule(step, peak_rate, warmup_steps, decay, max_steps):
    """The next update's rate, scalar: linear warm-up to `peak_rate`, then `decay`."""
    with tf.name_scope("learning_rate"):
        step = tf.cast(step, tf.float32) + 1.0
        warmup_steps = float(max(warmup_steps, 1))
        warmup = tf.minimum(1.0, step / warmup_steps)
        if decay == "rsqrt":
            decayed = tf.sqrt(warmup_steps / tf.maximum(step, warmup_steps))
        elif decay == "constant":
            decayed = tf.constant(1.0)
        else:
            progress = tf.clip_by_value(
                (step - warmup_steps) / float(max(max_steps - warmup_steps, 1)), 0.0, 1.0)
            decayed = 0.5 * (1.0 + tf.cos(math.pi * progress))
        return peak_rate * warmup * decayed


def clip_gradients(gradients, clip_norm):
    """(gradients scaled to a global norm <= clip_norm (<= 0: unclipped), the norm before);
    an IndexedSlices comes out with each row once (repeated rows summed)."""
    with tf.name_scope("clip_gradients"):
        gradients = list(gradients)
        for index, gradient in enumerate(gradients):
            if isinstance(gradient, tf.IndexedSlices):
                rows, slice_rows = tf.unique(gradient.indices)
                values = tf.math.unsorted_segment_sum(gradient.values, slice_rows, tf.size(rows))
                gradients[index] = tf.IndexedSlices(values, rows, gradient.dense_shape)
        global_norm = tf.global_norm(gradients)
        if clip_norm > 0:
            gradients, _ = tf.clip_by_global_norm(gradients, clip_norm, use_norm=global_norm)
        return gradients, global_norm


class NonFiniteLossError(RuntimeError):
    """The training loss became NaN or infinite."""


_GUARD_NAME = "non_finite_loss_guard"


def assert_finite_step(loss, gradient_norm, global_step):
    """An op that fails, naming the step, when the loss or the gradient norm is not finite."""
    with tf.name_scope(_GUARD_NAME):
        message = tf.strings.format("the training loss is {} (gradient norm {}) at step {}",
                                    (loss, gradient_norm, global_step + 1))
        finite = tf.logical_and(tf.math.is_finite(loss), tf.math.is_finite(gradient_norm))
        return tf.Assert(finite, [message])


def raise_non_finite_loss(error):
    """Raises a NonFiniteLossError in place of `error` if `assert_finite_step` raised it."""
    op = error.op if isinstance(error, tf.errors.InvalidArgumentError) else None
    if op is not None and _GUARD_NAME in op.name:
        what = re.search(r"assertion failed: \[(.*?)\]", error.message).group(1)
        raise NonFiniteLossError("training stopped: %s. The last checkpoint holds the weights "
                                 "before it; lower train.learning_rate or "
                                 "train.clip_gradient_norm." % what) from None


class ProgressHook(tf.train.SessionRunHook):
    """Logs step, loss, lr, steps/s, tokens/s and ETA; with chief_dir, also writes a
    "tokens_per_sec" summary and the progress into chief_dir's training status file."""

    def __init__(self, loss, num_tokens, learning_rate, max_steps, every_n_steps, chief_dir=None):
        self._fetches = {"loss": loss, "tokens": num_tokens, "learning_rate": learning_rate}
        self._max_steps, self._every_n_steps = max_steps, every_n_steps
        self._global_step = tf.train.get_global_step()
        self._chief_dir = chief_dir
        self._writer = chief_dir and tf.summary.FileWriterCache.get(chief_dir)

    def _start_interval(self, step):
        self._last_step = self._expected_step = step
        self._last_time, self._loss_sum, self._tokens = time.time(), 0.0, 0

    def after_create_session(self, session, coord):
        self._start_interval(session.run(self._global_step))

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(self._fetches)

    def after_run(self, run_context, run_values):
        results = run_values.results
        self._loss_sum += results["loss"]
        self._tokens += int(results["tokens"])
        self._expected_step += 1  # without fetching the global step at every step
        if self._expected_step // self._every_n_steps <= self._last_step // self._every_n_steps:
            return
        mean_loss = self._loss_sum / (self._expected_step - self._last_step)
        step = int(run_context.session.run(self._global_step))  # > _last_step: it counts our steps
        elapsed = max(time.time() - self._last_time, 1e-9)
        steps_per_sec, tokens_per_sec = (step - self._last_step) / elapsed, self._tokens / elapsed
        eta_seconds = max(self._max_steps - step, 0) / steps_per_sec
        hours, rest = divmod(int(round(eta_seconds)), 3600)
        minutes, seconds = divmod(rest, 60)
        eta = ("%dh%02dm" % (hours, minutes) if hours else
               "%dm%02ds" % (minutes, seconds) if minutes else "%ds" % seconds)
        logger.info("step %d/%d  loss %.3f  lr %.2e  %.2f steps/s  %.0f tokens/s  ETA %s", step,
                    self._max_steps, mean_loss, results["learning_rate"], steps_per_sec,
                    tokens_per_sec, eta)
        if self._chief_dir:
            self._writer.add_summary(tf.Summary(value=[tf.Summary.Value(
                tag="tokens_per_sec", simple_value=tokens_per_sec)]), step)
            write_training_status(self._chief_dir, running=True, step=step,
                                  max_steps=self._max_steps, steps_per_second=steps_per_sec,
                                  eta_seconds=eta_seconds)
        self._start_interval(step)


def _train_spec(model, features, labels, params, run_config):
    train = params["train"]

    def tower_loss(inputs):
        tower_features, tower_labels = inputs
        encoded = model.encode(tower_features["source_ids"], tower_features["source_length"],
                               training=True)
        valid = losses.valid_positions(tower_labels["target_output"],
                                       tower_labels["target_length"])
        logits = model.teacher_forced_logits(encoded, tower_labels["target_input"], training=True,
                                             positions=valid)
        cross_entropy = losses.token_cross_entropy(
            logits, tf.boolean_mask(tower_labels["target_output"], valid),
            train["label_smoothing"])
        return cross_entropy.loss_sum, cross_entropy.num_tokens

    loss, grads_and_vars = parallel_gradients(
        tower_loss, (features, labels), params.get("num_towers", 1))
    global_step = tf.train.get_or_create_global_step()
    with tf.name_scope("optimization"):
        learning_rate = learning_rate_schedule(global_step, train["learning_rate"],
                                               train["warmup_steps"], train["decay"],
                                               train["max_steps"])
        gradients, variables = zip(*grads_and_vars)
        clipped, gradient_norm = clip_gradients(gradients, train["clip_gradient_norm"])
        with tf.control_dependencies([assert_finite_step(loss, gradient_norm, global_step)]):
            optimizer = tf.train.AdamOptimizer(learning_rate, beta1=0.9, beta2=0.98, epsilon=1e-9)
            train_op = optimizer.apply_gradients(zip(clipped, variables), global_step=global_step)
    tf.summary.scalar("learning_rate", learning_rate)
    tf.summary.scalar("gradient_norm", gradient_norm)
    with tf.name_scope("num_tokens"):
        num_tokens = (tf.reduce_sum(features["source_length"])
                      + tf.reduce_sum(labels["target_length"]))
    chief_dir = run_config.model_dir if run_config.is_chief else None
    hooks = [ProgressHook(loss, num_tokens, learning_rate, train["max_steps"],
                          train["log_step_count_steps"], chief_dir=chief_dir)]
    if chief_dir and train["histogram_steps"] > 0:
        with tf.name_scope("histograms"):  # weights and (clipped) gradients
            summaries = [tf.summary.histogram(
                "%s/%s" % (kind, variable.op.name), collections=[],
                values=values.values if isinstance(values, tf.IndexedSlices) else values)
                for gradient, variable in zip(clipped, variables)
                for kind, values in (("weights", variable), ("gradients", gradient))]
        hooks.append(tf.train.SummarySaverHook(train["histogram_steps"], output_dir=chief_dir,
                                               summary_op=tf.summary.merge(summaries)))
    return tf.estimator.EstimatorSpec(
        tf.estimator.ModeKeys.TRAIN, loss=loss, train_op=train_op, training_hooks=hooks)


def _eval_spec(model, tokenizer, encoded, search, features, labels, params):
    """Teacher-forced loss, perplexity and accuracy; BLEU, examples and heatmaps of search()."""
    train = params["train"]
    logits, attention = model.teacher_forced_logits(
        encoded, labels["target_input"], training=False, with_attention=True)
    target_output, target_length = labels["target_output"], labels["target_length"]
    with tf.name_scope("loss"):
        cross_entropy = losses.sequence_cross_entropy(
            logits, target_output, target_length, train["label_smoothing"])
        num_tokens = cross_entropy.num_tokens
        loss = losses.token_mean(cross_entropy.loss_sum, num_tokens)
        nll = losses.token_mean(cross_entropy.nll_sum, num_tokens)
    accuracy, _ = losses.batch_token_accuracy(logits, target_output, target_length)

    def translations():
        ids, _, lengths = search()
        return ids_to_text(ids[:, 0], lengths[:, 0], tokenizer.decode_target)

    with tf.name_scope("metrics"):
        mean_nll, nll_update = tf.metrics.mean(nll, weights=num_tokens, name="perplexity")
        metric_ops = {"perplexity": (tf.exp(mean_nll), nll_update), "token_accuracy":
                      tf.metrics.mean(accuracy, weights=num_tokens, name="token_accuracy")}
        metric_ops.update(bleu_and_examples(
            translations, bleu_references(labels, tokenizer),
            lambda: ids_to_text(features["source_ids"], features["source_length"],
                                tokenizer.decode_source), train["eval_bleu_sentences"]))
        if train["eval_attention_images"] > 0:
            metric_ops["attention"] = attention_images(features, labels, attention, tokenizer,
                                                       train["eval_attention_images"])
    return tf.estimator.EstimatorSpec(
        tf.estimator.ModeKeys.EVAL, loss=loss, eval_metric_ops=metric_ops)


def model_fn(features, labels, mode, params, config):
    """The Estimator model_fn (vocabulary from the model directory).

    Args:
      features: {"source_ids": [batch, src_time] int32, "source_length": [batch] int32}.
      labels: {"target_input", "target_output": [batch, tgt_time] int32, "target_length":
        [batch] int32, in EVAL "target_text": [batch] string}; None in PREDICT.
      params: the resolved config plus "num_towers" (default 1).
    Returns:
      An EstimatorSpec; PREDICT's {"ids" [batch, K, time], "scores" [batch, K], "lengths"
        [batch, K]} are the while_loop search's, K = decode.beam_width.
    """
    tokenizer = Tokenizer.load(config.model_dir)
    model = Seq2SeqModel(params["model"], tokenizer.source_vocab_size, tokenizer.target_vocab_size)
    if mode == tf.estimator.ModeKeys.TRAIN:
        return _train_spec(model, features, labels, params, config)
    source_length = features["source_length"]
    encoded = model.encode(features["source_ids"], source_length, training=False)

    def search():
        return search_encoded(model, encoded, source_length, params["decode"], "while_loop",
                              params["decode"]["beam_width"])

    if mode == tf.estimator.ModeKeys.PREDICT:
        predictions = dict(zip(("ids", "scores", "lengths"), search()))
        return tf.estimator.EstimatorSpec(mode, predictions=predictions, export_outputs={
            SERVING_SIGNATURE: tf.estimator.export.PredictOutput(predictions)})
    return _eval_spec(model, tokenizer, encoded, search, features, labels, params)


def serving_input_receiver_fn():
    """The SavedModel's inputs: "source_ids" [batch, src_time] int32, "source_length" [batch]."""
    inputs = {"source_ids": tf.placeholder(tf.int32, [None, None], name="source_ids"),
              "source_length": tf.placeholder(tf.int32, [None], name="source_length")}
    return tf.estimator.export.ServingInputReceiver(inputs, inputs)
