"""The attention GRU decoder: one set of templates, run step by step or teacher-forced.

    h_t      = GRU(embed(y_{t-1}), h_{t-1})
    c_t      = attention(query=h_t, keys, memory, mask)
    logits_t = OutputLayer(h_t, c_t)

There is no input feeding (c_{t-1} is not an input of step t), so h_t depends
on the target tokens alone: teacher forcing runs only the recurrent matmul in
its loop and attends and projects all time steps at once, outside it.
"""

import tensorflow.compat.v1 as tf

from seq2seq.attention import make_attention
from seq2seq.gru import GRU, unroll
from seq2seq.layers import dense
from seq2seq.output_layer import OutputLayer


def _bridge(encoder_final_state, units):
    return tf.tanh(dense(encoder_final_state, units))


class Decoder:
    """The decoder: `bridge/...`, `gru/...`, `attention/...`, `output_projection/...`.

    Its state is a dict {"h": [batch, num_units]}. The methods take the
    source side as an `EncoderOutput` (they use its memory, keys and mask).
    The memory width M (2 * the encoder's units per direction) need not be
    num_units: the bridge maps [batch, M] to num_units, the attention keys
    and the pre-output layer take their input width from the memory.
    """

    def __init__(self, embeddings, vocab_size, num_units, attention, attention_size,
                 pre_output_size, tie_output_projection, dropout_rate, name="decoder"):
        """Creates the templates (no variables until the first call).

        Args:
          embeddings: the `Embeddings`, for the target side.
          vocab_size: V, the target vocabulary size.
          num_units: H, the GRU state size.
          attention: "bahdanau" or "luong".
          attention_size: the hidden size of additive attention.
          pre_output_size: the output layer's tanh size (the embedding size
            if tied); its input is [h; c], num_units + M wide.
          tie_output_projection: project to the vocabulary with the target
            embedding table, transposed.
          dropout_rate: the output layer's dropout.
          name: the variable scope, made unique if taken.
        """
        self._embeddings = embeddings
        with tf.variable_scope(None, default_name=name):
            self._bridge = tf.make_template(
                "bridge", _bridge, create_scope_now_=True, units=num_units)
            self._cell = GRU(num_units)
            self._attention = make_attention(attention, attention_size, query_size=num_units)
            self._output = OutputLayer(
                vocab_size, pre_output_size, dropout_rate,
                tied_table=embeddings.target_table if tie_output_projection else None)

    def initial_state(self, encoder_final_state):
        """The bridge: h_0 = tanh(encoder_final_state W_b + b_b).

        Args:
          encoder_final_state: [batch, M], the encoder's final [forward;
            backward] states (M = 2 * encoder_units).
        Returns:
          {"h": [batch, num_units]}.
        """
        return {"h": self._bridge(encoder_final_state)}

    def attention_keys(self, memory):
        """[batch, src_time, M] -> [batch, src_time, key_size], once per source.

        key_size is attention_size for "bahdanau", num_units for "luong".
        """
        return self._attention.project_keys(memory)

    def step(self, source, state, prev_ids, training, with_attention=False):
        """One decoding step, from the templates teacher forcing runs over all steps at once.

        Args:
          source: an `EncoderOutput` with n rows: memory [n, src_time, M],
            keys [n, src_time, K], mask [n, src_time].
          state: {"h": [n, num_units]}.
          prev_ids: [n] int32, the previous tokens.
          training: a Python bool (dropout on or off).
          with_attention: also return the attention weights in new_state.
        Returns:
          new_state: {"h": [n, num_units]}, and with_attention "attention":
            [n, src_time] float32, zero at padding, summing to 1.
          logits: [n, V] float32.
        """
        with tf.name_scope("decoder_step"):
            # Embedding then projecting the n tokens costs about as much as
            # gathering rows of a precomputed [V, 3 * num_units] table of
            # projected embeddings: 208 ms of CPU either way for 32 sentences,
            # beam 5, 40 steps, V = 4000 (the table is rebuilt on every run).
            projected_input = self._cell.project_inputs(
                self._embeddings.embed_target(prev_ids, training))
            h = self._cell.step(projected_input, state["h"])
            context, weights = self._attention(
                h[:, None, :], source.keys, source.memory, source.mask)
            new_state = {"h": h, "attention": weights[:, 0, :]} if with_attention else {"h": h}
            return new_state, self._output(h, context[:, 0, :], training)

    def teacher_forced_logits(self, source, target_input, training):
        """The logits of every step given the gold previous tokens.

        Args:
          source: an `EncoderOutput`: memory [batch, src_time, M], keys
            [batch, src_time, K], mask [batch, src_time], initial_state
            {"h": [batch, num_units]}.
          target_input: [batch, tgt_time] int32, begin token + target.
          training: a Python bool (dropout on or off).
        Returns:
          [batch, tgt_time, V] float32 logits. Step t depends only on
          target_input[:, :t + 1], so target padding never changes a valid
          step and needs no mask here (the loss masks its logits).
        """
        # Only the recurrent matmul runs in the loop; input projection,
        # attention and output layer run once over all steps: 118-127 ms of
        # CPU for forward + backward at batch 64 x 20 tokens (default model
        # sizes, V = 4000) against 203-220 ms running `step` in the loop.
        with tf.name_scope("decoder"):
            projected_inputs = self._cell.project_inputs(
                self._embeddings.embed_target(target_input, training))
            states = unroll(self._cell.step, projected_inputs, source.initial_state["h"])
            context, _ = self._attention(states, source.keys, source.memory, source.mask)
            return self._output(states, context, training)
