"""A bidirectional GRU encoder and an attention GRU decoder, built from one set of templates.

    h_0 = tanh([forward final; backward final] W_b + b_b); h_t = GRU(embed(y_{t-1}), h_{t-1})
    c_t = attention(h_t, keys, memory, mask);              logits_t = OutputLayer(h_t, c_t)
"""

import collections
import re

import tensorflow.compat.v1 as tf

from seq2seq.common import batch_gather, get_shape, merge_beams, split_beams
from seq2seq.layers import (GRU, Attention, Embeddings, OutputLayer, dense, dropout, template,
                            unroll)

# memory [batch, src_time, 2 * encoder_units] (0 at padding), keys [batch, src_time, key_size],
# mask [batch, src_time] float32 (1: valid), initial_state {"h": [batch, num_units]}.
EncoderOutput = collections.namedtuple("EncoderOutput", ["memory", "keys", "mask", "initial_state"])
SCOPE = "seq2seq"  # the model's default scope: the names of train.py's checkpoints start with it


def _reverse(sequences, lengths):
    """Reverses each [batch, time, ...] sequence within its length; padding stays last."""
    return tf.reverse_sequence(sequences, lengths, seq_axis=1, batch_axis=0)


def _state_at_length(states, lengths):
    """states [batch, time, units] -> [batch, units] after each last valid step (0 if empty)."""
    last = batch_gather(states, tf.maximum(lengths - 1, 0)[:, None])[:, 0]
    return last * tf.cast(lengths > 0, last.dtype)[:, None]


class BidirectionalEncoder:
    """Stacked bidirectional GRU layers `layer_<i>/{forward,backward}/...`, num_units // 2 each."""

    def __init__(self, num_units, num_layers, dropout_rate, name="encoder"):
        self._dropout_rate = dropout_rate
        self._layers = []
        with tf.variable_scope(None, default_name=name):
            for index in range(num_layers):
                with tf.variable_scope("layer_%d" % index):
                    self._layers.append((GRU(num_units // 2, name="forward"),
                                         GRU(num_units // 2, name="backward")))

    def __call__(self, inputs, lengths, training):
        """inputs [batch, time, in], lengths [batch] -> outputs [batch, time, num_units]
        (zero at padding), final_state [batch, num_units] ([forward at the length; backward])."""
        with tf.name_scope("encoder"):
            mask = tf.sequence_mask(lengths, get_shape(inputs)[1], dtype=tf.float32)[:, :, None]
            outputs = inputs
            for index, (forward, backward) in enumerate(self._layers):
                with tf.name_scope("layer_%d" % index):
                    if index > 0:
                        outputs = dropout(outputs, self._dropout_rate, training)
                    zeros = tf.zeros([get_shape(outputs)[0], forward.num_units], outputs.dtype)
                    with tf.name_scope("forward"):
                        forward_states = unroll(
                            forward.step, forward.project_inputs(outputs), zeros)
                    with tf.name_scope("backward"):
                        reversed_states = unroll(backward.step, backward.project_inputs(
                            _reverse(outputs, lengths)), zeros)
                    with tf.name_scope("final_state"):
                        final_state = tf.concat([_state_at_length(forward_states, lengths),
                                                 _state_at_length(reversed_states, lengths)], -1)
                    outputs = tf.concat(
                        [forward_states, _reverse(reversed_states, lengths)], axis=-1) * mask
            return outputs, final_state


class Seq2SeqModel:
    """The model of the config's "model" section (model_params), vocabularies of V_s and V_t
    pieces; all variables under `scope_name` (`name`, made unique if taken)."""

    def __init__(self, model_params, source_vocab_size, target_vocab_size, name=SCOPE):
        num_units, embedding_size = model_params["num_units"], model_params["embedding_size"]
        tied, dropout_rate = model_params["tie_output_projection"], model_params["dropout"]
        with tf.variable_scope(None, default_name=name) as scope:
            self.scope_name = scope.name
            self._embeddings = Embeddings(source_vocab_size, target_vocab_size, embedding_size,
                                          model_params["share_embeddings"], dropout_rate)
            self._encoder = BidirectionalEncoder(
                2 * (model_params.get("encoder_units", 0) or num_units // 2),  # each direction's
                model_params["encoder_layers"], dropout_rate)
            with tf.variable_scope(None, default_name="decoder"):
                self._bridge = template("bridge", dense, units=num_units)
                self._cell = GRU(num_units)
                self._attention = Attention(model_params["attention"],
                                            model_params["attention_size"], num_units)
                self._output = OutputLayer(
                    target_vocab_size, embedding_size if tied else num_units, dropout_rate,
                    tied_table=self._embeddings.target_table if tied else None)

    @property
    def variables(self):
        """This model's trainable variables."""
        return tf.trainable_variables(scope=re.escape(self.scope_name) + "/")

    def encode(self, source_ids, source_length, training):
        """source_ids [batch, src_time] int32 (0-padded), source_length [batch] -> EncoderOutput."""
        with tf.name_scope("encode"):
            embedded = self._embeddings.embed("source", source_ids, training)
            memory, final_state = self._encoder(embedded, source_length, training)
            with tf.name_scope("source_mask"):
                mask = tf.sequence_mask(source_length, tf.shape(source_ids)[1], dtype=tf.float32)
            keys = self._attention.project_keys(memory)  # first: op order seeds the weights
            return EncoderOutput(memory=memory, keys=keys, mask=mask,
                                 initial_state={"h": tf.tanh(self._bridge(final_state))})

    def teacher_forced_logits(self, encoder_output, target_input, training, with_attention=False,
                              positions=None):
        """target_input [batch, tgt_time] int32 (begin token + target) -> logits [batch,
        tgt_time, V_t] (and with_attention, weights [batch, tgt_time, src_time]); given
        positions [batch, tgt_time] bool (training passes the valid ones), logits [positions,
        V_t] at those alone, in row order: the output layer, the largest product, skips padding."""
        with tf.name_scope("decoder"):
            projected_inputs = self._cell.project_inputs(
                self._embeddings.embed("target", target_input, training))
            states = unroll(self._cell.step, projected_inputs, encoder_output.initial_state["h"])
            context, weights = self._attention(
                states, encoder_output.keys, encoder_output.memory, encoder_output.mask)
            if positions is not None:
                states, context = [tf.boolean_mask(t, positions) for t in (states, context)]
            logits = self._output(states, context, training)
            return (logits, weights) if with_attention else logits

    def step(self, encoder_output, state, prev_ids, training=False, with_attention=False):
        """state {"h": [n, num_units]}, prev_ids [n] int32 -> new_state {"h"} (with_attention
        also "attention" [n, src_time]), logits [n, V_t]; encoder_output tiled to n rows."""
        with tf.name_scope("decoder_step"):
            projected_input = self._cell.project_inputs(
                self._embeddings.embed("target", prev_ids, training))
            h = self._cell.step(projected_input, state["h"])
            context, weights = self._attention(
                h[:, None, :], encoder_output.keys, encoder_output.memory, encoder_output.mask)
            new_state = {"h": h, "attention": weights[:, 0, :]} if with_attention else {"h": h}
            return new_state, self._output(h, context[:, 0, :], training)

    def beam_update_fn(self, encoder_output, beam_width, with_attention=False):
        """`step` for the beam-search contract of docs/API.md, the encoder output in the state,
        handed back unchanged: a search never reorders it, only drops decided sentences' rows.

        Args:
          encoder_output: `encode(..., training=False)`'s result, [batch, ...].
          beam_width: K (1 for greedy decoding).
          with_attention: states also hold "attention" [batch, K, src_time] (initially 0).
        Returns:
          update_fn: (state {"h": [batch, K, num_units] (an Ensemble's: "members"), "encoder":
            {"memory": [batch, K, src_time, M], "keys": [batch, K, src_time, A], "mask":
            [batch, K, src_time]}}, ids [batch, K] int32) -> (new_state, logits [batch, K, V_t]).
          initial_state: the same without K, for the search to tile.
        """
        def update_fn(state, ids):
            with tf.name_scope("beam_update"):
                encoder = {name: merge_beams(value) for name, value in state["encoder"].items()}
                decoder = {name: tf.nest.map_structure(merge_beams, state[name])
                           for name in encoder_output.initial_state}  # "h", an Ensemble's "members"
                new_state, logits = self.step(EncoderOutput(initial_state=None, **encoder), decoder,
                                              merge_beams(ids), with_attention=with_attention)
                new_state = tf.nest.map_structure(lambda t: split_beams(t, beam_width), new_state)
                return dict(new_state, encoder=state["encoder"]), split_beams(logits, beam_width)

        encoder = {name: getattr(encoder_output, name) for name in ("memory", "keys", "mask")}
        initial_state = dict(encoder_output.initial_state, encoder=encoder)
        if with_attention:
            initial_state["attention"] = tf.zeros_like(encoder_output.mask)
        return update_fn, initial_state
