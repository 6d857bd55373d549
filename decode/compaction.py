"""Compaction: a decided sentence's rows leave the running batch of a tf.while_loop search.

A sentence is decided once every slot of its beam has finished: its K hypotheses can no longer
change (docs/DECODING-NOTES.md, "Compaction"). The loop keeps the undecided sentences' rows and
`rows`, their positions in the batch; each step's record and Beam are scattered back into
batch-sized ones, holding for a decided sentence what the full-size search would write.
"""

import tensorflow.compat.v1 as tf

from seq2seq.common import get_shape


def scatter_rows(batch_values, rows, live_values):
    """Nested [batch, ...] tensors with rows `rows` [live] replaced by nested [live, ...] ones."""
    return tf.nest.map_structure(
        lambda batch, live: tf.tensor_scatter_nd_update(batch, rows[:, None], live),
        batch_values, live_values)


def batch_record(record, rows, batch_size, end_token_id):
    """A step's token and parent ids (and attention) of the live rows, for the whole batch.

    Args:
      record: {"token_ids", "parent_ids": [live, beam] int32 (parent_ids None when sampling);
        "attention" [live, beam, src] where traced}.
      rows: [live] int32, each live row's position in the batch; batch_size: int or tensor.
    Returns:
      The same keys, [batch, beam, ...]: decided rows hold the end token, their own slot
      as parent and no attention (0).
    """
    width = get_shape(record["token_ids"])[1]
    bases = {"token_ids": tf.fill([batch_size, width], end_token_id)}
    if record["parent_ids"] is not None:
        bases["parent_ids"] = tf.tile(tf.range(width)[None], [batch_size, 1])
    if "attention" in record:
        attention_shape = tf.concat([[batch_size], tf.shape(record["attention"])[1:]], 0)
        bases["attention"] = tf.zeros(attention_shape)
    return {key: scatter_rows(base, rows, record[key]) for key, base in bases.items()}


def drop_decided(live, beam):
    """Keeps the rows of the sentences still undecided; gathers only at a step that decided one.

    Args:
      live: nested [live, ...] tensors, the search's running batch (its Beam included).
      beam: the Beam of `live` after this step.
    Returns:
      `live`, without the rows of sentences whose every slot has finished.
    """
    with tf.name_scope("drop_decided"):
        decided = tf.reduce_all(beam.finished, axis=1)                        # [live]

        def undecided_rows():
            kept = tf.reshape(tf.where(tf.logical_not(decided)), [-1])          # [live']
            return tf.nest.map_structure(lambda values: tf.gather(values, kept), live)
        return tf.cond(tf.reduce_any(decided), undecided_rows, lambda: live)
