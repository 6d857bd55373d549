"""Token embeddings: one table shared by both sides, or one table per side."""

import tensorflow.compat.v1 as tf

from seq2seq.layers import dropout


def _table(vocab_size, embedding_size):
    # N(0, 1/embedding_size): vectors of expected unit norm, a scale that also
    # suits the table's use as the tied output projection.
    return tf.get_variable(
        "table", [vocab_size, embedding_size],
        initializer=tf.random_normal_initializer(stddev=embedding_size ** -0.5))


class Embeddings:
    """The embedding tables: `shared/table`, or `source/table` and `target/table`.

    Attributes:
      source_table: a template returning the [V_s, E] source table variable.
      target_table: a template returning the [V_t, E] target table variable
        (the same template as `source_table` when shared).
    """

    def __init__(self, source_vocab_size, target_vocab_size, embedding_size, share,
                 dropout_rate, name="embeddings"):
        """Creates the table templates (no variables until the first call).

        Args:
          source_vocab_size: V_s.
          target_vocab_size: V_t.
          embedding_size: E.
          share: one table for both sides (needs V_s == V_t, a joint vocabulary).
          dropout_rate: dropout on the embedded vectors when training.
          name: the variable scope, made unique if taken.
        Raises:
          ValueError: if `share` and the vocabulary sizes differ.
        """
        if share and source_vocab_size != target_vocab_size:
            raise ValueError("shared embeddings need one vocabulary, got sizes %d and %d"
                             % (source_vocab_size, target_vocab_size))
        self._dropout_rate = dropout_rate
        with tf.variable_scope(None, default_name=name):
            if share:
                self.source_table = self.target_table = tf.make_template(
                    "shared", _table, create_scope_now_=True,
                    vocab_size=source_vocab_size, embedding_size=embedding_size)
            else:
                self.source_table = tf.make_template(
                    "source", _table, create_scope_now_=True,
                    vocab_size=source_vocab_size, embedding_size=embedding_size)
                self.target_table = tf.make_template(
                    "target", _table, create_scope_now_=True,
                    vocab_size=target_vocab_size, embedding_size=embedding_size)

    def embed_source(self, ids, training):
        """[...] int32 source ids -> [..., E] vectors (with dropout when training)."""
        with tf.name_scope("source_embedding"):
            return dropout(tf.nn.embedding_lookup(self.source_table(), ids),
                           self._dropout_rate, training)

    def embed_target(self, ids, training):
        """[...] int32 target ids -> [..., E] vectors (with dropout when training)."""
        with tf.name_scope("target_embedding"):
            return dropout(tf.nn.embedding_lookup(self.target_table(), ids),
                           self._dropout_rate, training)
