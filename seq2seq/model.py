"""The sequence-to-sequence model: embeddings, bi-GRU encoder, attention GRU decoder.

One `Seq2SeqModel` creates every template once, in `__init__`, under one
variable scope; training, evaluation, greedy decoding and both beam searches
call the same templates, so they share one set of variables by construction.
"""

import collections
import re

import tensorflow.compat.v1 as tf

from seq2seq.common import merge_beams, sequence_mask, split_beams, tile_beams
from seq2seq.decoder import Decoder
from seq2seq.embedding import Embeddings
from seq2seq.encoder import BidirectionalEncoder

EncoderOutput = collections.namedtuple("EncoderOutput", ["memory", "keys", "mask", "initial_state"])
EncoderOutput.__doc__ = """What the decoder needs from a source batch.

Fields:
  memory: [batch, src_time, 2 * encoder_units], the encoder's [forward;
    backward] states, zero at padding (encoder_units: the model's
    "encoder_units", or num_units // 2 when that is 0).
  keys: [batch, src_time, key_size], the memory projected once for attention
    (key_size: attention_size for "bahdanau", num_units for "luong").
  mask: [batch, src_time] float32, 1 at valid source positions.
  initial_state: the decoder's initial state, {"h": [batch, num_units]},
    bridged from the encoder's [batch, 2 * encoder_units] final states.
"""


def encoder_units(model_params):
    """Each encoder direction's GRU size: "encoder_units", or num_units // 2 if 0 or absent."""
    return model_params.get("encoder_units", 0) or model_params["num_units"] // 2


class Seq2SeqModel:
    """The model, configured by the "model" section of the config.

    Attributes:
      scope_name: the variable scope that holds all of its variables.
    """

    def __init__(self, model_params, source_vocab_size, target_vocab_size, name="seq2seq"):
        """Creates every template (no variables until the first call).

        Args:
          model_params: the config's "model" dict: embedding_size, num_units
            (the decoder GRU), encoder_units (each encoder direction; 0 or
            absent: num_units // 2), encoder_layers, attention,
            attention_size, share_embeddings, tie_output_projection, dropout.
          source_vocab_size: V_s.
          target_vocab_size: V_t.
          name: the variable scope, made unique if taken.
        """
        embedding_size = model_params["embedding_size"]
        num_units = model_params["num_units"]
        dropout_rate = model_params["dropout"]
        tied = model_params["tie_output_projection"]
        with tf.variable_scope(None, default_name=name) as scope:
            self.scope_name = scope.name
            self._embeddings = Embeddings(
                source_vocab_size, target_vocab_size, embedding_size,
                share=model_params["share_embeddings"], dropout_rate=dropout_rate)
            self._encoder = BidirectionalEncoder(
                2 * encoder_units(model_params), model_params["encoder_layers"], dropout_rate)
            self._decoder = Decoder(
                self._embeddings, target_vocab_size, num_units,
                model_params["attention"], model_params["attention_size"],
                pre_output_size=embedding_size if tied else num_units,
                tie_output_projection=tied, dropout_rate=dropout_rate)

    @property
    def variables(self):
        """This model's trainable variables: those under its variable scope."""
        return tf.trainable_variables(scope=re.escape(self.scope_name) + "/")

    def encode(self, source_ids, source_length, training):
        """Encodes a padded source batch.

        Args:
          source_ids: [batch, src_time] int32, 0-padded.
          source_length: [batch] int32.
          training: a Python bool (dropout on or off).
        Returns:
          An `EncoderOutput` of [batch, ...] tensors; memory [batch, src_time,
          2 * encoder_units].
        """
        # One "encode" box in TensorBoard instead of five root-level ones. A
        # name scope names ops only: tf.get_variable ignores it, so the
        # templates' variables (and the checkpoints) keep their names.
        with tf.name_scope("encode"):
            embedded = self._embeddings.embed_source(source_ids, training)
            memory, final_state = self._encoder(embedded, source_length, training)
            with tf.name_scope("source_mask"):
                mask = sequence_mask(source_length, tf.shape(source_ids)[1])
            return EncoderOutput(
                memory=memory,
                keys=self._decoder.attention_keys(memory),
                mask=mask,
                initial_state=self._decoder.initial_state(final_state))

    def teacher_forced_logits(self, encoder_output, target_input, training):
        """The logits of every target step given the gold previous tokens.

        Args:
          encoder_output: `encode`'s result.
          target_input: [batch, tgt_time] int32, begin token + target, 0-padded.
          training: a Python bool (dropout on or off).
        Returns:
          [batch, tgt_time, V_t] float32. Steps past a target's length hold
          logits that depend on padding only: mask them in the loss.
        """
        return self._decoder.teacher_forced_logits(encoder_output, target_input, training)

    def step(self, encoder_output, state, prev_ids, training=False, with_attention=False):
        """One decoder step, built from the same templates as teacher forcing.

        The memory comes in explicitly (not in `state`) so that a beam search
        never carries or reorders it.

        Args:
          encoder_output: an `EncoderOutput` with n rows (e.g. tiled for a beam).
          state: {"h": [n, num_units]}.
          prev_ids: [n] int32.
          training: a Python bool (dropout on or off).
          with_attention: also return the step's attention weights.
        Returns:
          new_state: {"h": [n, num_units]}, and with_attention "attention":
            [n, src_time] float32 (zero at padding, summing to 1).
          logits: [n, V_t] float32.
        """
        return self._decoder.step(encoder_output, state, prev_ids, training, with_attention)

    def beam_update_fn(self, encoder_output, beam_width, with_attention=False):
        """Adapts `step` to the beam-search contract of DESIGN.md.

        The memory, keys and mask are tiled to [batch * beam, ...] once, here,
        and closed over, so the search never reorders them. The initial state
        is not: the search tiles it into its own state.

        Args:
          encoder_output: `encode(..., training=False)`'s result, [batch, ...].
          beam_width: K (1 for greedy decoding).
          with_attention: the states also hold "attention": [batch, K,
            src_time] float32, the step's attention weights (zero at padding,
            summing to 1); the initial state's are zeros [batch, src_time].
        Returns:
          update_fn: (state {"h": [batch, K, num_units]}, ids [batch, K] int32)
            -> (new_state {"h": [batch, K, num_units]}, logits [batch, K, V_t]).
          initial_state: {"h": [batch, num_units]}, for the search to tile.
        """
        with tf.name_scope("tile_encoder_output"):
            def tile(tensor):
                return merge_beams(tile_beams(tensor, beam_width))

            # The step reads memory, keys and mask only; initial_state=None
            # keeps an untiled tensor from being read by mistake.
            tiled = EncoderOutput(memory=tile(encoder_output.memory),
                                  keys=tile(encoder_output.keys),
                                  mask=tile(encoder_output.mask),
                                  initial_state=None)

        def update_fn(state, ids):
            with tf.name_scope("beam_update"):
                new_state, logits = self.step(
                    tiled, {"h": merge_beams(state["h"])}, merge_beams(ids),
                    with_attention=with_attention)
                return (tf.nest.map_structure(lambda t: split_beams(t, beam_width), new_state),
                        split_beams(logits, beam_width))

        if not with_attention:
            return update_fn, encoder_output.initial_state
        return update_fn, dict(encoder_output.initial_state,
                               attention=tf.zeros_like(encoder_output.mask))
