"""The GRU layer, split for speed, and the loop that runs GRUs over time.

A GRU step is split in two so that the input half is not in the recurrence:
`project_inputs` multiplies the inputs of ALL time steps by W_x in one GEMM
outside the loop, and `step` does only the recurrent h W_h product, fused for
the three gates. The equations are the "reset after" variant (cuDNN's, and
Keras' `reset_after=True`), which is what makes the fused h W_h possible:

    [x_r, x_z, x_n] = x W_x + b_x           project_inputs, [..., 3 * units]
    [h_r, h_z, h_n] = h W_h + b_h           step, one [units, 3 * units] matmul
    r = sigmoid(x_r + h_r)                  reset gate
    z = sigmoid(x_z + h_z)                  update gate
    n = tanh(x_n + r * h_n)                 candidate (reset applied after W_h)
    h' = (1 - z) * n + z * h

Initialisation: Glorot-uniform W_x, an orthogonal block per gate in W_h (the
recurrent map starts norm-preserving), and zero biases, as in Keras: the
update gate starts at z = 0.5, halfway between keeping and replacing the state.
"""

import tensorflow.compat.v1 as tf

from seq2seq.layers import apply_kernel, dense


def _orthogonal_blocks(num_blocks):
    """An initializer for [units, num_blocks * units]: one orthogonal block per gate."""
    orthogonal = tf.orthogonal_initializer()

    def initializer(shape, dtype=tf.float32, partition_info=None):
        del partition_info  # Part of the initializer signature; unused.
        rows, cols = shape
        return tf.concat([orthogonal([rows, cols // num_blocks], dtype)
                          for _ in range(num_blocks)], axis=1)

    return initializer


class GRU:
    """A GRU layer: variables `input_projection/{kernel,bias}`, `recurrent/{kernel,bias}`.

    Both halves are templates created here, so every call shares them.
    """

    def __init__(self, num_units, name="gru"):
        """Creates the templates (no variables until the first call).

        Args:
          num_units: the state size H.
          name: the variable scope, made unique if taken.
        """
        self.num_units = num_units
        with tf.variable_scope(None, default_name=name):
            self._project_inputs = tf.make_template(
                "input_projection", dense, create_scope_now_=True, units=3 * num_units)
            self._step = tf.make_template("recurrent", self._recurrent_step, create_scope_now_=True)

    def project_inputs(self, inputs):
        """The input half of the gates, for any number of time steps at once.

        Args:
          inputs: [..., input_size].
        Returns:
          [..., 3 * num_units]: x W_x + b_x, gates in the order reset, update, candidate.
        """
        return self._project_inputs(inputs)

    def step(self, projected_input, state):
        """One time step from a projected input.

        Args:
          projected_input: [batch, 3 * num_units], a row of `project_inputs`.
          state: [batch, num_units].
        Returns:
          The new state, [batch, num_units].
        """
        return self._step(projected_input, state)

    def _recurrent_step(self, projected_input, state):
        units = self.num_units
        kernel = tf.get_variable("kernel", [units, 3 * units],
                                 initializer=_orthogonal_blocks(3))
        bias = tf.get_variable("bias", [3 * units], initializer=tf.zeros_initializer())
        projected_state = apply_kernel(state, kernel, bias)
        input_rz, input_n = tf.split(projected_input, [2 * units, units], axis=-1)
        state_rz, state_n = tf.split(projected_state, [2 * units, units], axis=-1)
        # One sigmoid for both gates: one op fewer per step.
        reset, update = tf.split(tf.sigmoid(input_rz + state_rz), 2, axis=-1)
        candidate = tf.tanh(input_n + reset * state_n)
        # (1 - z) * n + z * h, written with one op fewer.
        return candidate + update * (state - candidate)


def unroll(step, projected_inputs, initial_state):
    """Runs a recurrence over time in a tf.while_loop.

    Padding is not masked here: the state at step t depends only on inputs up
    to t, so callers with right-padded sequences read a sequence's final state
    at its length and zero the outputs past it, outside the loop, rather than
    freezing the state with a select at every step.

    Args:
      step: a function (projected_input [batch, in], state [batch, units]) ->
        new state [batch, units], e.g. `GRU.step`.
      projected_inputs: [batch, time, in].
      initial_state: [batch, units].
    Returns:
      [batch, time, units]: the states after every time step.
    """
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
