"""The evaluation's text and image metrics: streaming BLEU of the first dev sentences, example
translations and attention heatmaps, each collected in local variables by an update op."""

import io

import numpy as np
import sacrebleu
import tensorflow.compat.v1 as tf

NUM_EXAMPLES = 4  # dev sentences whose translation each evaluation records
IMAGE_SIZE = 320  # pixels, each side of an attention heatmap


def ids_to_text(ids, lengths, decode_fn):
    """ids [batch, time] int32, lengths [batch] -> [batch] UTF-8 strings via `decode_fn(list)`."""
    def decode_batch(batch_ids, batch_lengths):
        return np.array([decode_fn(row[:length].tolist()).encode("utf-8")
                         for row, length in zip(batch_ids, batch_lengths)], dtype=object)
    texts = tf.py_func(decode_batch, [ids, lengths], tf.string, stateful=False, name="ids_to_text")
    texts.set_shape([None])
    return texts


def bleu_references(labels, tokenizer):
    """BLEU's references [batch]: the corpus text where given, else the ids detokenised."""
    detokenised = ids_to_text(labels["target_output"], labels["target_length"],
                              tokenizer.decode_target)
    if "target_text" not in labels:
        return detokenised
    return tf.where(tf.equal(labels["target_text"], ""), detokenised, labels["target_text"])


def _first_rows(limit, tensors_fn, names):
    """(local string vectors `names`, an op appending tensors_fn() until `limit` (0: all) rows)."""
    collections = [tf.GraphKeys.LOCAL_VARIABLES, tf.GraphKeys.METRIC_VARIABLES]
    variables = [tf.Variable(tf.constant([], tf.string), trainable=False, name=name,
                             validate_shape=False, collections=collections) for name in names]

    def append():
        return tf.group(*[
            tf.assign(variable, tf.concat([variable.value(), tensor], 0)[:limit or None],
                      validate_shape=False)
            for variable, tensor in zip(variables, tensors_fn())])
    return variables, (tf.cond(tf.shape(variables[0])[0] < limit, append, tf.no_op) if limit > 0
                       else append())


def spread_by_length(texts, count):
    """Indices of `count` of `texts`, evenly spaced from the shortest to the longest."""
    order = sorted(range(len(texts)), key=lambda index: len(texts[index]))
    if len(order) <= count:
        return order
    return [order[round(k * (len(order) - 1) / max(count - 1, 1))] for k in range(count)]


def bleu_and_examples(hypotheses_fn, references, sources_fn, max_sentences=0,
                      num_examples=NUM_EXAMPLES):
    """Eval metrics of the first `max_sentences` (0: all) dev sentences, decoded until collected.

    Args:
      hypotheses_fn, sources_fn: () -> [batch] strings: the translations, the source texts.
      references: [batch] strings.
    Returns:
      {"bleu": (corpus BLEU, update_op), "examples": (a serialized TensorBoard text Summary of
        [num_examples, 2] (source, translation) rows, sources `spread_by_length`, no_op)}.
    """
    def _sacrebleu(hypotheses, references):
        return np.float32(sacrebleu.corpus_bleu([h.decode("utf-8") for h in hypotheses],
                                                [[r.decode("utf-8") for r in references]]).score)

    def _examples(hypotheses, sources):
        texts = [source.decode("utf-8") for source in sources]
        rows = [[sources[i], hypotheses[i]] for i in spread_by_length(texts, num_examples)]
        text = tf.SummaryMetadata(plugin_data=tf.SummaryMetadata.PluginData(plugin_name="text"))
        return tf.Summary(value=[tf.Summary.Value(
            tag="examples", metadata=text, tensor=tf.make_tensor_proto(
                np.array(rows, dtype=object).reshape([-1, 2])))]).SerializeToString()

    with tf.name_scope("bleu"):
        stored, update_op = _first_rows(
            max_sentences, lambda: (hypotheses_fn(), references, sources_fn()),
            ("hypotheses", "references", "sources"))
        bleu = tf.py_func(_sacrebleu, stored[:2], tf.float32, name="sacrebleu")
        bleu.set_shape([])
        examples = tf.py_func(_examples, stored[::2], tf.string, stateful=False, name="examples")
    return {"bleu": (bleu, update_op), "examples": (examples, tf.no_op())}


def attention_images(features, labels, attention, tokenizer, count):
    """(serialized image Summary, update_op): attention [batch, tgt_time, src_time] of the
    first `count` dev sentences as heatmaps, target pieces down, source pieces across."""
    def render(sources, source_lengths, targets, target_lengths, weights):
        from matplotlib.figure import Figure
        pngs = []
        for source, source_length, target, target_length, sentence_weights in zip(
                sources, source_lengths, targets, target_lengths, weights):
            figure = Figure(figsize=(4, 4), dpi=IMAGE_SIZE / 4)
            axes = figure.add_subplot(1, 1, 1)
            axes.imshow(sentence_weights[:target_length, :source_length], cmap="viridis",
                        vmin=0.0, vmax=1.0, aspect="auto")
            axes.set_xticks(range(source_length), rotation=90, fontsize=7,
                            labels=tokenizer.source_pieces(source[:source_length]))
            axes.set_yticks(range(target_length), fontsize=7,
                            labels=tokenizer.target_pieces(target[:target_length]))
            figure.tight_layout()
            buffer = io.BytesIO()
            figure.savefig(buffer, format="png")
            pngs.append(buffer.getvalue())
        return np.array(pngs, dtype=object)

    def summary(pngs):
        return tf.Summary(value=[tf.Summary.Value(tag="attention", image=tf.Summary.Image(
            height=IMAGE_SIZE, width=IMAGE_SIZE, colorspace=4, encoded_image_string=png))
            for png in pngs]).SerializeToString()

    with tf.name_scope("attention_images"):
        inputs = [features["source_ids"], features["source_length"],
                  labels["target_output"], labels["target_length"], attention]
        stored, update_op = _first_rows(count, lambda: [tf.py_func(
            render, [tensor[:count] for tensor in inputs], tf.string, stateful=False)], ["pngs"])
        value = tf.py_func(summary, stored, tf.string, stateful=False, name="summary")
    return value, update_op
