"""Attention over the encoder memory: additive (Bahdanau) or multiplicative (Luong).

Both kinds split the work the same way: `project_keys` runs once per source
batch (its result is `EncoderOutput.keys`), and a call scores any number of
queries at once, [batch, queries, ...], so the teacher-forced decoder attends
for all target steps in one call and a decoding step with queries = 1.
"""

import tensorflow.compat.v1 as tf

from seq2seq.layers import dense


def masked_softmax(scores, mask):
    """A softmax over source positions that gives padding exactly zero weight.

    Args:
      scores: [batch, queries, src_time] float32.
      mask: [batch, src_time] float32, 1 at valid positions, 0 at padding.
    Returns:
      [batch, queries, src_time] weights, each row summing to 1.
    """
    # -1e9 rather than -inf: tf.nn.softmax subtracts the row maximum (a valid
    # score), so exp() of a padding score underflows to exactly 0, and a row
    # without any valid position stays finite instead of becoming NaN.
    return tf.nn.softmax(scores + (1.0 - mask[:, None, :]) * -1e9)


class _Attention:
    """Attends with the `_project_keys` and `_score` templates of a subclass."""

    def project_keys(self, memory):
        """[batch, src_time, memory_size] -> [batch, src_time, key_size] keys."""
        with tf.name_scope("attention_keys"):
            return self._project_keys(memory)

    def __call__(self, query, keys, memory, mask):
        """Attends to the memory with every query.

        Args:
          query: [batch, queries, query_size], e.g. the decoder states.
          keys: [batch, src_time, key_size], from `project_keys(memory)`.
          memory: [batch, src_time, memory_size].
          mask: [batch, src_time] float32, 1 at valid positions.
        Returns:
          context: [batch, queries, memory_size], the weighted memory.
          weights: [batch, queries, src_time], zero at padding, rows sum to 1.
        """
        with tf.name_scope("attention"):
            weights = masked_softmax(self._score(query, keys), mask)
            return tf.matmul(weights, memory), weights


class BahdanauAttention(_Attention):
    """Additive: score(q, s) = v^T tanh(keys[s] + q W_q), keys = memory W_k + b.

    Variables: `key_projection/{kernel,bias}`, `query_projection/kernel`, `score/v`.
    """

    def __init__(self, attention_size, name="attention"):
        """Creates the templates (no variables until the first call).

        Args:
          attention_size: A, the size of keys and projected queries.
          name: the variable scope, made unique if taken.
        """
        with tf.variable_scope(None, default_name=name):
            self._project_keys = tf.make_template(
                "key_projection", dense, create_scope_now_=True, units=attention_size)
            # No query bias: the key bias already sits inside the tanh.
            self._project_query = tf.make_template(
                "query_projection", dense, create_scope_now_=True,
                units=attention_size, use_bias=False)
            self._score_template = tf.make_template(
                "score", self._additive_score, create_scope_now_=True)

    def _score(self, query, keys):
        return self._score_template(self._project_query(query), keys)

    @staticmethod
    def _additive_score(projected_query, keys):
        # [batch, queries, 1, A] + [batch, 1, src_time, A] -> [batch, queries, src_time].
        hidden = tf.tanh(projected_query[:, :, None, :] + keys[:, None, :, :])
        v = tf.get_variable("v", [keys.shape.as_list()[-1]],
                            initializer=tf.glorot_uniform_initializer())
        return tf.reduce_sum(hidden * v, axis=-1)


class LuongAttention(_Attention):
    """Multiplicative ("general"): score(q, s) = q . keys[s], keys = memory W.

    Projecting the memory once (rather than each query) makes every decoding
    step a batched dot product. Variables: `key_projection/kernel`.
    """

    def __init__(self, query_size, name="attention"):
        """Creates the template (no variables until the first call).

        Args:
          query_size: the size of the queries (the decoder state), and so of the keys.
          name: the variable scope, made unique if taken.
        """
        with tf.variable_scope(None, default_name=name):
            # No bias: it would add the same q . b to every position's score,
            # which the softmax ignores.
            self._project_keys = tf.make_template(
                "key_projection", dense, create_scope_now_=True,
                units=query_size, use_bias=False)

    @staticmethod
    def _score(query, keys):
        return tf.matmul(query, keys, transpose_b=True)


def make_attention(kind, attention_size, query_size):
    """Returns a BahdanauAttention ("bahdanau") or a LuongAttention ("luong").

    Args:
      kind: "bahdanau" or "luong".
      attention_size: the hidden size of additive attention.
      query_size: the query (decoder state) size, which Luong keys match.
    Raises:
      ValueError: for any other kind.
    """
    if kind == "bahdanau":
        return BahdanauAttention(attention_size)
    if kind == "luong":
        return LuongAttention(query_size)
    raise ValueError("attention must be 'bahdanau' or 'luong', got %r" % kind)
