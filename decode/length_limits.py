"""Output length limits: the most target tokens each sentence may get.

A sentence of n source tokens gets at most ceil(max_length_ratio * n) +
max_length_extra target tokens, its end token included. The searches apply
the limits (their `max_lengths` argument, see `scoring.select_best`): at a
sentence's last allowed step every token but the end token is removed from
its alive hypotheses' candidates after the log-softmax, as fairseq masks its
log-probabilities at its max length, so the end token keeps its true
log-probability. A hypothesis that ends at its limit is therefore scored as
any other: the sum of the log-softmax probabilities of its tokens, the forced
end token's included, divided by the length penalty of its length, end token
included. It pays -log p(end) as a hypothesis that ends by itself does;
masking before the log-softmax would give it the end token for free and
favour exactly the runaway outputs the limit is meant to stop.

fairseq's limit is one per batch, from the padded source length; here every
sentence has its own. A limit computed per batch, as the decoders' scalar
`sequence_length` alone would give, makes a sentence's translation depend on
the longest sentence it is batched with, and a beam cut off mid-sentence
would be scored unlike one that ended. With per-sentence limits every
hypothesis ends with the end token, so every decoder variant, any batching,
and the unrolled search's extra steps (see UNROLLED_LENGTH_STEP) all give the
same result.

These functions are the only definition of the limits: `decode.model_search`
passes them to every decoder graph, the Translator's and model_fn's (EVAL
BLEU, PREDICT and the exported SavedModel) alike.
"""

import numpy as np
import tensorflow.compat.v1 as tf

# The unrolled search is rebuilt for every distinct output length. Rounding
# the length up to a multiple of this many steps bounds the number of graphs
# (and the seconds spent building them) to max_length / 8 per beam width,
# where exact lengths would build a new graph for nearly every new batch
# (each source token adds `max_length_ratio` steps; on the tiny test model a
# 48-step graph is 12,000 ops, ~3-5 s to build and ~1 s more for its first
# run, on 2 busy CPU cores). The price is up to 7 extra steps per batch,
# which change no result: by the batch's longest limit every hypothesis has
# ended.
UNROLLED_LENGTH_STEP = 8


def output_length_limit(source_length, decode_params):
    """The most target tokens, end token included, for a sentence of `source_length` tokens.

    ceil(max_length_ratio * source_length) + max_length_extra, in float32 as
    `output_length_limits` computes it in the graph, so that the Python and
    graph limits never differ by rounding.

    Args:
      source_length: a Python int >= 1.
      decode_params: the config's "decode" dict.
    Returns:
      A Python int.
    """
    scaled = np.float32(decode_params["max_length_ratio"]) * np.float32(source_length)
    return int(np.ceil(scaled)) + decode_params["max_length_extra"]


def output_length_limits(source_length, decode_params):
    """`output_length_limit` of every sentence of a batch, in the graph.

    Args:
      source_length: [batch] int32.
      decode_params: the config's "decode" dict.
    Returns:
      [batch] int32.
    """
    with tf.name_scope("output_length_limits"):
        scaled = tf.ceil(decode_params["max_length_ratio"] * tf.cast(source_length, tf.float32))
        return tf.cast(scaled, tf.int32) + decode_params["max_length_extra"]


def unrolled_length_bucket(max_source_length, decode_params):
    """The unrolled search's length for a batch: its longest limit, rounded up.

    Args:
      max_source_length: the batch's longest source, in tokens (a Python int).
      decode_params: the config's "decode" dict.
    Returns:
      A Python int, a multiple of UNROLLED_LENGTH_STEP.
    """
    length = output_length_limit(max_source_length, decode_params)
    return -(-length // UNROLLED_LENGTH_STEP) * UNROLLED_LENGTH_STEP

