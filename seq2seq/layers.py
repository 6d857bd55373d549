"""The model's layers, each a set of `tf.make_template`s made once in `__init__`."""

import tensorflow.compat.v1 as tf

from seq2seq.common import get_shape


def template(scope, function, **kwargs):
    """`function` as a template whose variables live in `scope`, made now under the current one."""
    return tf.make_template(scope, function, create_scope_now_=True, **kwargs)


def apply_kernel(inputs, kernel, bias=None, transpose_kernel=False):
    """inputs [..., in] x kernel [in, out] (or [out, in] transposed) + bias [out] -> [..., out]."""
    if inputs.shape.ndims == 2:
        outputs = tf.matmul(inputs, kernel, transpose_b=transpose_kernel)
        return outputs if bias is None else tf.nn.bias_add(outputs, bias)
    shape = get_shape(inputs)  # rank > 2: one large 2-D GEMM
    outputs = apply_kernel(tf.reshape(inputs, [-1, shape[-1]]), kernel, bias, transpose_kernel)
    return tf.reshape(outputs, shape[:-1] + get_shape(outputs, 1))


def _zero_bias(units):
    return tf.get_variable("bias", [units], initializer=tf.zeros_initializer())


def dense(inputs, units, use_bias=True):
    """[..., in] -> [..., units] with `kernel` and `bias` in the current scope."""
    kernel = tf.get_variable("kernel", [inputs.shape.as_list()[-1], units],
                             initializer=tf.glorot_uniform_initializer())
    return apply_kernel(inputs, kernel, _zero_bias(units) if use_bias else None)


def dropout(inputs, rate, training):
    """Dropout at `rate` when `training` (a Python bool), else the identity."""
    return tf.nn.dropout(inputs, rate=rate) if training and rate else inputs


def _table(vocab_size, embedding_size):
    return tf.get_variable("table", [vocab_size, embedding_size],
                           initializer=tf.random_normal_initializer(stddev=embedding_size ** -0.5))


class Embeddings:
    """The tables `shared/table` [V, E], or `source/table` [V_s, E] and `target/table` [V_t, E]."""

    def __init__(self, source_vocab_size, target_vocab_size, embedding_size, share, dropout_rate):
        self._dropout_rate = dropout_rate
        scopes = {"shared": source_vocab_size} if share else {
            "source": source_vocab_size, "target": target_vocab_size}
        with tf.variable_scope(None, default_name="embeddings"):
            tables = [template(scope, _table, vocab_size=vocab_size, embedding_size=embedding_size)
                      for scope, vocab_size in scopes.items()]
        self.source_table, self.target_table = tables[0], tables[-1]  # shared: the same one

    def embed(self, side, ids, training):
        """[...] int32 ids of `side` ("source" or "target") -> [..., E] float32."""
        table = self.source_table if side == "source" else self.target_table
        with tf.name_scope(side + "_embedding"):
            return dropout(tf.nn.embedding_lookup(table(), ids), self._dropout_rate, training)


def _orthogonal_gates(shape, dtype=tf.float32, partition_info=None):
    """An initializer for [units, 3 * units]: one orthogonal block per gate."""
    orthogonal = tf.orthogonal_initializer()
    return tf.concat([orthogonal([shape[0], shape[1] // 3], dtype) for _ in range(3)], axis=1)


class GRU:
    """A "reset after" GRU: `input_projection/{kernel,bias}`, `recurrent/{kernel,bias}`.

        [x_r, x_z, x_n] = x W_x + b_x (project_inputs); [h_r, h_z, h_n] = h W_h + b_h (step)
        r = sigmoid(x_r + h_r); z = sigmoid(x_z + h_z); n = tanh(x_n + r * h_n)
        h' = (1 - z) * n + z * h
    """

    def __init__(self, num_units, name="gru"):
        self.num_units = num_units
        with tf.variable_scope(None, default_name=name):
            self.project_inputs = template("input_projection", dense, units=3 * num_units)
            self.step = template("recurrent", self._recurrent_step)

    def _recurrent_step(self, projected_input, state):
        units = self.num_units
        kernel = tf.get_variable("kernel", [units, 3 * units], initializer=_orthogonal_gates)
        projected_state = apply_kernel(state, kernel, _zero_bias(3 * units))
        input_rz, input_n = tf.split(projected_input, [2 * units, units], axis=-1)
        state_rz, state_n = tf.split(projected_state, [2 * units, units], axis=-1)
        reset, update = tf.split(tf.sigmoid(input_rz + state_rz), 2, axis=-1)
        candidate = tf.tanh(input_n + reset * state_n)
        return candidate + update * (state - candidate)


def unroll(step, projected_inputs, initial_state):
    """The states [batch, time, units] of `step` (input [batch, in], state [batch, units] ->
    state) over projected_inputs [batch, time, in] from initial_state, unmasked."""
    with tf.name_scope("unroll"):
        time_major = tf.transpose(projected_inputs, [1, 0, 2])
        num_steps = tf.shape(time_major)[0]
        inputs = tf.TensorArray(time_major.dtype, size=num_steps,
                                element_shape=time_major.shape[1:]).unstack(time_major)
        outputs = tf.TensorArray(initial_state.dtype, size=num_steps,
                                 element_shape=initial_state.shape)

        def body(time, state, outputs):
            state = step(inputs.read(time), state)
            return time + 1, state, outputs.write(time, state)

        _, _, outputs = tf.while_loop(lambda time, *_: time < num_steps, body,
                                      (tf.constant(0), initial_state, outputs))
        return tf.transpose(outputs.stack(), [1, 0, 2])


def masked_softmax(scores, mask):
    """scores [batch, queries, src_time], mask [batch, src_time] -> weights, 0 on padding."""
    return tf.nn.softmax(scores + (1.0 - mask[:, None, :]) * -1e9)


class Attention:
    """Bahdanau: score(q, s) = v . tanh(keys[s] + q W_q), keys = memory W_k + b_k; or
    Luong ("general"): score(q, s) = q . keys[s], keys = memory W_k."""

    def __init__(self, kind, attention_size, query_size, name="attention"):
        self._luong = kind == "luong"
        with tf.variable_scope(None, default_name=name):
            self._project_keys = template("key_projection", dense, use_bias=not self._luong,
                                          units=query_size if self._luong else attention_size)
            if not self._luong:
                self._project_query = template("query_projection", dense, units=attention_size,
                                               use_bias=False)
                self._additive = template("score", _additive_score)

    def project_keys(self, memory):
        """[batch, src_time, memory_size] -> keys [batch, src_time, key_size], once per source."""
        with tf.name_scope("attention_keys"):
            return self._project_keys(memory)

    def __call__(self, query, keys, memory, mask):
        """query [batch, queries, query_size], keys [batch, src_time, key_size], memory
        [batch, src_time, M], mask [batch, src_time] -> context [batch, queries, M], weights
        [batch, queries, src_time]."""
        with tf.name_scope("attention"):
            if self._luong:
                scores = tf.matmul(query, keys, transpose_b=True)
            else:
                scores = self._additive(self._project_query(query), keys)
            weights = masked_softmax(scores, mask)
            return tf.matmul(weights, memory), weights


def _additive_score(projected_query, keys):
    # [batch, queries, 1, A] + [batch, 1, src_time, A] -> [batch, queries, src_time]
    hidden = tf.tanh(projected_query[:, :, None, :] + keys[:, None, :, :])
    v = tf.get_variable("v", [keys.shape.as_list()[-1]],
                        initializer=tf.glorot_uniform_initializer())
    # a matrix product, not sum(hidden * v): no [batch, queries, src_time, A] product is kept
    return tf.tensordot(hidden, v, 1)


class OutputLayer:
    """logits = dropout(tanh([h; c] W_o + b_o)) W_v + b_v; W_v the target table if tied."""

    def __init__(self, vocab_size, pre_output_size, dropout_rate, tied_table=None):
        self._dropout_rate, self._vocab_size = dropout_rate, vocab_size
        self._tied_table = tied_table
        with tf.variable_scope(None, default_name="output_projection"):
            self._pre_output = template("pre_output", dense, units=pre_output_size)
            self._project = template("logits", self._vocabulary_projection)

    def __call__(self, state, context, training):
        """state [..., H], context [..., M] -> logits [..., V] float32."""
        with tf.name_scope("output_projection"):
            pre_output = tf.tanh(self._pre_output(tf.concat([state, context], axis=-1)))
            return self._project(dropout(pre_output, self._dropout_rate, training))

    def _vocabulary_projection(self, inputs):
        if self._tied_table is None:
            return dense(inputs, self._vocab_size)
        bias = _zero_bias(self._vocab_size)
        return apply_kernel(inputs, self._tied_table(), bias, transpose_kernel=True)
