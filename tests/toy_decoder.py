"""A toy recurrent model for the decoder tests, written twice: TensorFlow and NumPy.

Both twins compute, from the same small random matrices,

    rnn'   = tanh(rnn @ W + E[token])
    steps' = steps + 1
    logits = rnn' @ O + one_hot(end) * end_bias * steps'

with the nested state ``{"rnn": [H], "clock": {"steps": [], "end_bias": []}}``
per hypothesis. The recurrence makes history matter; ``end_bias`` (one value
per batch row) makes some rows finish early, some late and some never; every
batch row depends only on its own state.
"""

import numpy as np
import tensorflow.compat.v1 as tf


class ToyDecoder:
    """The toy model's parameters and its two implementations.

    Args:
      vocab_size: logits per step.
      hidden_size: size of the recurrent state.
      end_token_id: the token whose logit grows (or shrinks) with time.
      seed: seeds the random matrices.
      logit_scale: larger values make the distributions peakier.
    """

    def __init__(self, vocab_size=7, hidden_size=5, end_token_id=1, seed=0, logit_scale=2.0):
        rng = np.random.RandomState(seed)
        self.vocab_size = vocab_size
        self.end_token_id = end_token_id
        self.embedding = rng.randn(vocab_size, hidden_size).astype(np.float32)
        self.recurrent = (0.5 * rng.randn(hidden_size, hidden_size)).astype(np.float32)
        self.output = (logit_scale * rng.randn(hidden_size, vocab_size)).astype(np.float32)
        self.hidden_size = hidden_size
        self._rng = rng

    def initial_state(self, end_biases):
        """A NumPy batch state: one random rnn vector and the given end bias per row."""
        batch_size = len(end_biases)
        return {"rnn": self._rng.randn(batch_size, self.hidden_size).astype(np.float32),
                "clock": {"steps": np.zeros(batch_size, np.float32),
                          "end_bias": np.asarray(end_biases, np.float32)}}

    def update_fn(self, state, ids):
        """TensorFlow step: state nested [batch, beam, ...], ids [batch, beam]."""
        rnn = tf.tanh(tf.einsum("bkh,hg->bkg", state["rnn"], self.recurrent)
                      + tf.gather(self.embedding, ids))
        steps = state["clock"]["steps"] + 1.0
        end_logit = tf.one_hot(self.end_token_id, self.vocab_size)
        logits = (tf.einsum("bkh,hv->bkv", rnn, self.output)
                  + end_logit * (state["clock"]["end_bias"] * steps)[..., None])
        return {"rnn": rnn, "clock": {"steps": steps, "end_bias": state["clock"]["end_bias"]}}, logits

    def numpy_step(self, state, token):
        """NumPy step for one hypothesis: state with rnn [H], scalars; token int."""
        rnn = np.tanh(state["rnn"].astype(np.float64) @ self.recurrent + self.embedding[token])
        steps = state["clock"]["steps"] + 1.0
        logits = rnn @ self.output
        logits[self.end_token_id] += state["clock"]["end_bias"] * steps
        return {"rnn": rnn, "clock": {"steps": steps, "end_bias": state["clock"]["end_bias"]}}, logits


def row_state(batch_state, row):
    """The NumPy state of one batch row of a nested batch state."""
    return {"rnn": batch_state["rnn"][row],
            "clock": {key: value[row] for key, value in batch_state["clock"].items()}}
