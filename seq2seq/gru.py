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

Initialisation: Glorot-uniform W_x, an orthogonal block per gate in W_h (keeps
the recurrent map norm-preserving at the start), zero biases, so the update
gate starts at z = 0.5: halfway between keeping and replacing the state, the
cuDNN/Keras default; our sentences are short enough not to need a carry bias.
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
        # One sigmoid over both gates: fewer ops per step, and ops, not FLOPs,
        # dominate a step at these sizes.
        reset, update = tf.split(tf.sigmoid(input_rz + state_rz), 2, axis=-1)
        candidate = tf.tanh(input_n + reset * state_n)
        # (1 - z) * n + z * h, written with one op fewer.
        return candidate + update * (state - candidate)


def unroll(steps, projected_inputs, initial_states):
    """Runs independent recurrences side by side in ONE tf.while_loop over time.

    Two directions of a bidirectional layer in one loop pay the per-iteration
    loop overhead once and let their ops run concurrently.

    Padding is not masked here: the state at step t depends only on inputs up
    to t, so callers with right-padded sequences read a sequence's final state
    at its length and zero the outputs past it, outside the loop (cheaper than
    freezing the state with a select at every step).

    Args:
      steps: a list of functions (projected_input [batch, in_i], state
        [batch, units_i]) -> new state [batch, units_i], e.g. `GRU.step`.
      projected_inputs: a list of [batch, time, in_i], one per step function,
        with the same batch and time.
      initial_states: a list of [batch, units_i].
    Returns:
      A list of [batch, time, units_i]: the states after every time step.
    """
    with tf.name_scope("unroll"):
        time_major = [tf.transpose(inputs, [1, 0, 2]) for inputs in projected_inputs]
        num_steps = tf.shape(time_major[0])[0]
        input_arrays = [
            tf.TensorArray(inputs.dtype, size=num_steps, element_shape=inputs.shape[1:])
            .unstack(inputs) for inputs in time_major]
        output_arrays = [
            tf.TensorArray(state.dtype, size=num_steps, element_shape=state.shape)
            for state in initial_states]

        def body(time, states, outputs):
            states = [step(inputs.read(time), state)
                      for step, inputs, state in zip(steps, input_arrays, states)]
            outputs = [array.write(time, state) for array, state in zip(outputs, states)]
            return time + 1, states, outputs

        _, _, output_arrays = tf.while_loop(
            lambda time, *_: time < num_steps, body,
            (tf.constant(0), list(initial_states), output_arrays))
        return [tf.transpose(array.stack(), [1, 0, 2]) for array in output_arrays]
