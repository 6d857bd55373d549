"""The Estimator model_fn: training, evaluation and n-best prediction.

The vocabulary (sizes for the model, detokenisation for BLEU) is read from the
SentencePiece models in the model directory, which `train.py` copies there
before the first step: what was trained is what is evaluated and exported.
"""

import tensorflow.compat.v1 as tf

from data_pipeline.tokenizer import Tokenizer
from decode.translator import search_encoded
from seq2seq import losses, metrics, optimization, towers
from seq2seq.loss_guard import assert_finite_step
from seq2seq.model import Seq2SeqModel
from seq2seq.progress import ProgressHook

SERVING_SIGNATURE = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY


def beam_search(model, encoder_output, source_length, decode_params):
    """The n-best translations of an encoded batch: the while_loop search at decode.beam_width.

    Built by `search_encoded`, as the Translator builds its variants, so that
    EVAL BLEU, PREDICT and the exported SavedModel translate as it does,
    within the same per-sentence length limits.

    Args:
      model: a `Seq2SeqModel`.
      encoder_output: `model.encode(..., training=False)`, [batch, ...].
      source_length: [batch] int32.
      decode_params: the config's "decode" section.
    Returns:
      (ids [batch, K, time] int32, scores [batch, K] float32 best first,
      lengths [batch, K] int32 counting the end token), K = beam_width.
    """
    return search_encoded(model, encoder_output, source_length, decode_params,
                          "while_loop", decode_params["beam_width"])


def _num_tokens(features, labels):
    """Source + target tokens of a batch, padding excluded (the tokens/s unit)."""
    with tf.name_scope("num_tokens"):
        return (tf.reduce_sum(features["source_length"])
                + tf.reduce_sum(labels["target_length"]))


def _train_spec(model, features, labels, params, run_config):
    """Label-smoothed loss, gradients split over towers, one Adam update."""
    train_params = params["train"]

    def tower_loss(inputs):
        tower_features, tower_labels = inputs
        encoder_output = model.encode(
            tower_features["source_ids"], tower_features["source_length"], training=True)
        logits = model.teacher_forced_logits(
            encoder_output, tower_labels["target_input"], training=True)
        cross_entropy = losses.sequence_cross_entropy(
            logits, tower_labels["target_output"], tower_labels["target_length"],
            train_params["label_smoothing"])
        # Sums: parallel_gradients divides by the whole batch's token count.
        return cross_entropy.loss_sum, cross_entropy.num_tokens

    loss, grads_and_vars = towers.parallel_gradients(
        tower_loss, (features, labels), params.get("num_towers", 1))
    global_step = tf.train.get_or_create_global_step()
    with tf.name_scope("optimization"):
        learning_rate = optimization.learning_rate_schedule(
            global_step, train_params["learning_rate"], train_params["warmup_steps"],
            train_params["decay"], train_params["max_steps"])
        gradients, variables = zip(*grads_and_vars)
        clipped, gradient_norm = optimization.clip_gradients(
            gradients, train_params["clip_gradient_norm"])
        with tf.control_dependencies([assert_finite_step(loss, gradient_norm, global_step)]):
            train_op = optimization.adam_update(
                list(zip(clipped, variables)), learning_rate, global_step)
    tf.summary.scalar("learning_rate", learning_rate)
    tf.summary.scalar("gradient_norm", gradient_norm)
    progress = ProgressHook(
        loss, _num_tokens(features, labels), learning_rate, train_params["max_steps"],
        train_params["log_step_count_steps"],
        summary_dir=run_config.model_dir if run_config.is_chief else None)
    return tf.estimator.EstimatorSpec(
        tf.estimator.ModeKeys.TRAIN, loss=loss, train_op=train_op, training_hooks=[progress])


def _eval_spec(model, tokenizer, features, labels, params):
    """Loss, perplexity, token accuracy and the BLEU of beam-search translations."""
    source_length = features["source_length"]
    encoder_output = model.encode(features["source_ids"], source_length, training=False)
    logits = model.teacher_forced_logits(encoder_output, labels["target_input"], training=False)
    target_output, target_length = labels["target_output"], labels["target_length"]
    with tf.name_scope("loss"):
        # One log-softmax for both: the smoothed loss is what training
        # minimises, the plain NLL gives a perplexity comparable across configs.
        cross_entropy = losses.sequence_cross_entropy(
            logits, target_output, target_length, params["train"]["label_smoothing"])
        num_tokens = cross_entropy.num_tokens
        loss = losses.token_mean(cross_entropy.loss_sum, num_tokens)
        nll = losses.token_mean(cross_entropy.nll_sum, num_tokens)
    accuracy, _ = losses.batch_token_accuracy(logits, target_output, target_length)

    def translations():
        ids, _, lengths = beam_search(model, encoder_output, source_length, params["decode"])
        return metrics.ids_to_text(ids[:, 0], lengths[:, 0], tokenizer.decode_target)

    with tf.name_scope("metrics"):
        references = _references(labels, tokenizer)
        metric_ops = {
            "perplexity": metrics.perplexity(nll, num_tokens),
            "token_accuracy": metrics.streaming_token_accuracy(accuracy, num_tokens),
            "bleu": metrics.corpus_bleu(translations, references,
                                        params["train"]["eval_bleu_sentences"]),
        }
    return tf.estimator.EstimatorSpec(
        tf.estimator.ModeKeys.EVAL, loss=loss, eval_metric_ops=metric_ops)


def _references(labels, tokenizer):
    """BLEU's references, [batch] string: the corpus's own text where the input
    carries it, else the reference ids detokenised (round-tripped through
    SentencePiece, which normalises text and turns unknown pieces into ⁇)."""
    detokenised = metrics.ids_to_text(labels["target_output"], labels["target_length"],
                                      tokenizer.decode_target)
    if "target_text" not in labels:
        return detokenised
    text = labels["target_text"]
    return tf.where(tf.equal(text, ""), detokenised, text)


def _predict_spec(model, features, params):
    """The beam's n-best: ids, scores and lengths, also the serving signature."""
    source_length = features["source_length"]
    encoder_output = model.encode(features["source_ids"], source_length, training=False)
    ids, scores, lengths = beam_search(model, encoder_output, source_length, params["decode"])
    predictions = {"ids": ids, "scores": scores, "lengths": lengths}
    return tf.estimator.EstimatorSpec(
        tf.estimator.ModeKeys.PREDICT, predictions=predictions,
        export_outputs={SERVING_SIGNATURE: tf.estimator.export.PredictOutput(predictions)})


def model_fn(features, labels, mode, params, config):
    """The Estimator model_fn.

    Args:
      features: {"source_ids": [batch, src_time] int32, "source_length":
        [batch] int32}.
      labels: {"target_input": [batch, tgt_time] int32 (begin token + target),
        "target_output": [batch, tgt_time] int32 (target + end token),
        "target_length": [batch] int32, and in EVAL "target_text": [batch]
        string, the references BLEU scores against}, or None in PREDICT mode.
      mode: a `tf.estimator.ModeKeys`.
      params: the resolved config, plus "num_towers" (int, default 1): the
        training batch is split over that many devices.
      config: the Estimator's `RunConfig` (model directory, chief or not).
    Returns:
      An `EstimatorSpec`. TRAIN: the label-smoothed loss and an Adam update.
      EVAL: loss, perplexity, token_accuracy and bleu. PREDICT:
      {"ids": [batch, K, time], "scores": [batch, K], "lengths": [batch, K]},
      the K = decode.beam_width best translations, best first.
    """
    tokenizer = Tokenizer.load(config.model_dir)
    model = Seq2SeqModel(params["model"], tokenizer.source_vocab_size,
                         tokenizer.target_vocab_size)
    if mode == tf.estimator.ModeKeys.PREDICT:
        return _predict_spec(model, features, params)
    if mode == tf.estimator.ModeKeys.EVAL:
        return _eval_spec(model, tokenizer, features, labels, params)
    return _train_spec(model, features, labels, params, config)


def serving_input_receiver_fn():
    """The SavedModel's inputs: a batch of source token ids and their lengths.

    Returns:
      A `ServingInputReceiver` with inputs "source_ids" [batch, src_time]
      int32 (0-padded SentencePiece ids, no begin or end token) and
      "source_length" [batch] int32.
    """
    inputs = {
        "source_ids": tf.placeholder(tf.int32, [None, None], name="source_ids"),
        "source_length": tf.placeholder(tf.int32, [None], name="source_length"),
    }
    return tf.estimator.export.ServingInputReceiver(inputs, inputs)
