"""Decoding an encoded batch with any decoder variant, within per-sentence length limits.

The one place where a decoder is built over the model: the Translator's
checkpoint graph calls `search_encoded` for each of its variants, and
`model_fn` for EVAL BLEU, PREDICT and the exported SavedModel, so a sentence
is translated alike by all of them, also when it reaches its length limit.
"""

import tensorflow.compat.v1 as tf

from data_pipeline.tokenizer import BOS_ID, EOS_ID
from decode import DECODERS, greedy_search, rnn_beam_search, while_loop_beam_search
from decode.length_limits import output_length_limits


def search_encoded(model, encoder_output, source_length, decode_params, decoder, beam_width,
                   unrolled_length=None):
    """The n-best translations of an encoded batch, each within its sentence's length limit.

    Args:
      model: a `Seq2SeqModel`.
      encoder_output: `model.encode(..., training=False)`, [batch, ...] tensors.
      source_length: [batch] int32, the source lengths the limits come from.
      decode_params: the config's "decode" dict (length_penalty,
        max_length_ratio, max_length_extra).
      decoder: one of DECODERS.
      beam_width: K, a Python int >= 1; 1 for "greedy".
      unrolled_length: for "unrolled" only, the Python int number of steps
        to build: at least the batch's longest limit, as
        `length_limits.unrolled_length_bucket` gives it (fewer steps would
        cut hypotheses short; more change nothing).
    Returns:
      (ids [batch, K, time] int32, scores [batch, K] float32 best first,
       lengths [batch, K] int32 counting the end token), as the decoder
      contract defines them; every hypothesis ends with the end token.
    Raises:
      ValueError: for an unknown decoder, a greedy beam width other than 1,
        or an `unrolled_length` given to (or missing from) the wrong decoder.
    """
    if decoder not in DECODERS:
        raise ValueError("decoder must be one of %s, got %r" % (", ".join(DECODERS), decoder))
    if decoder == "greedy" and beam_width != 1:
        raise ValueError("greedy decoding has beam width 1, got %r" % (beam_width,))
    if (decoder == "unrolled") != (unrolled_length is not None):
        raise ValueError("unrolled_length is needed by the unrolled decoder and only by it, "
                         "got %r for %s" % (unrolled_length, decoder))
    alpha = decode_params["length_penalty"]
    scope = "%s_beam%d" % (decoder, beam_width) + (
        "_len%d" % unrolled_length if unrolled_length else "")  # e.g. unrolled_beam4_len24
    with tf.name_scope(scope):
        # Each sentence's own limit, applied by the search itself: at a
        # sentence's last allowed step its hypotheses can only end, and the
        # end token is scored with its log-probability under the model.
        limits = output_length_limits(source_length, decode_params)          # [batch]
        update_fn, initial_state = model.beam_update_fn(encoder_output, beam_width)
        if decoder == "unrolled":
            return rnn_beam_search(update_fn, initial_state, unrolled_length, beam_width,
                                   BOS_ID, EOS_ID, length_penalty=alpha, max_lengths=limits)
        # By its longest limit every hypothesis of the batch has ended, so
        # this batch-wide bound changes no sentence's result.
        max_length = tf.reduce_max(limits, name="max_output_length")
        if decoder == "greedy":
            return greedy_search(update_fn, initial_state, max_length, BOS_ID, EOS_ID,
                                 length_penalty=alpha, max_lengths=limits)
        return while_loop_beam_search(update_fn, initial_state, max_length, beam_width,
                                      BOS_ID, EOS_ID, length_penalty=alpha, max_lengths=limits)
