"""Compaction: a decided sentence's rows leave the running batch of a tf.while_loop search.

A sentence is decided once every slot of its beam has finished; the loop runs the undecided
("live") rows only, and each step's record and hypotheses are scattered into batch-sized ones
(docs/DECODING-NOTES.md, "Compaction"). Shapes as in decode/beam_search.py.
"""

import tensorflow.compat.v1 as tf

from seq2seq.common import get_shape


def start(state):
    """Compaction's loop state from the first BeamState: (rows [b] int32, its hypotheses)."""
    return tf.range(get_shape(state.ids)[0]), state.hypotheses()


def _scatter_rows(batch_values, rows, live_values):
    """Nested [b, ...] tensors with rows `rows` [live] replaced by nested [live, ...] ones."""
    return tf.nest.map_structure(
        lambda batch, live: tf.tensor_scatter_nd_update(batch, rows[:, None], live),
        batch_values, live_values)


def leave(state, record, batch, end_token_id):
    """After a step: its record and hypotheses for the whole batch; the decided sentences'
    rows leave `state` (gathered only at a step that decided one).

    Args:
      state: the BeamState [live, k] after the step.
      record: {"token_ids", "parent_ids" (None: every slot its own): [live, k] int32;
        "attention" [live, k, src] where traced}.
      batch: (rows [live] int32: the live rows' places in the batch, its hypotheses [b, k]).
    Returns:
      (state without the decided rows, the record [b, k, ...] (a decided sentence's: the end
      token, each slot its own parent, no attention), the new batch).
    """
    rows, hypotheses = batch
    batch_size, width = get_shape(hypotheses.log_probs)
    bases = {"token_ids": tf.fill([batch_size, width], end_token_id),
             "parent_ids": tf.tile(tf.range(width)[None], [batch_size, 1])}
    if "attention" in record:
        bases["attention"] = tf.zeros([batch_size, width, get_shape(record["attention"])[2]])
    record = {key: _scatter_rows(base, rows, record[key]) for key, base in bases.items()
              if record[key] is not None}
    hypotheses = _scatter_rows(hypotheses, rows, state.hypotheses())
    with tf.name_scope("drop_decided"):
        decided = tf.reduce_all(state.finished, axis=1)                        # [live]

        def undecided_rows():
            kept = tf.reshape(tf.where(tf.logical_not(decided)), [-1])          # [live']
            return tf.nest.map_structure(lambda values: tf.gather(values, kept), (state, rows))
        state, rows = tf.cond(tf.reduce_any(decided), undecided_rows, lambda: (state, rows))
    return state, record, (rows, hypotheses)
