"""The decoder's output layer: pre-output tanh, then the vocabulary projection."""

import tensorflow.compat.v1 as tf

from seq2seq.layers import apply_kernel, dense, dropout


class OutputLayer:
    """logits = dropout(tanh([h; c] W_o + b_o)) W_v + b_v.

    With a tied projection W_v is the target embedding table, transposed, and
    the pre-output size must be the embedding size. Variables:
    `pre_output/{kernel,bias}`, `logits/bias`, and `logits/kernel` if untied.
    """

    def __init__(self, vocab_size, pre_output_size, dropout_rate, tied_table=None,
                 name="output_projection"):
        """Creates the templates (no variables until the first call).

        Args:
          vocab_size: V.
          pre_output_size: the size of o (the embedding size when tied).
          dropout_rate: dropout on o when training.
          tied_table: None, or a function returning the [V, pre_output_size]
            target embedding table to use as W_v.
          name: the variable scope, made unique if taken.
        """
        self._dropout_rate = dropout_rate
        self._vocab_size = vocab_size
        self._tied_table = tied_table
        with tf.variable_scope(None, default_name=name):
            self._pre_output = tf.make_template(
                "pre_output", dense, create_scope_now_=True, units=pre_output_size)
            self._project = tf.make_template(
                "logits", self._vocabulary_projection, create_scope_now_=True)

    def __call__(self, state, context, training):
        """Computes the logits for any number of steps at once.

        Args:
          state: [..., H], the decoder state.
          context: [..., M], the attention context (M: the memory width,
            2 * the encoder's units per direction; need not equal H).
          training: a Python bool (dropout on or off).
        Returns:
          [..., V] float32 logits.
        """
        with tf.name_scope("output_projection"):
            pre_output = tf.tanh(self._pre_output(tf.concat([state, context], axis=-1)))
            return self._project(dropout(pre_output, self._dropout_rate, training))

    def _vocabulary_projection(self, inputs):
        if self._tied_table is None:
            return dense(inputs, self._vocab_size)
        bias = tf.get_variable("bias", [self._vocab_size], initializer=tf.zeros_initializer())
        return apply_kernel(inputs, self._tied_table(), bias, transpose_kernel=True)
