"""`python -m lab.compare --graphs LOGDIR`: the searches' graphs for TensorBoard's Graphs
tab, where the unrolled search's graph grows with the length and the while_loop search's not."""

import os

GRAPH_LENGTHS = (8, 32)  # the unrolled search's steps in its two graphs


def write_graphs(translator, logdir):
    """Writes the unrolled search at GRAPH_LENGTHS steps and the while_loop search as
    TensorBoard graphs in logdir/<name>, printing each one's op count."""
    import tensorflow.compat.v1 as tf

    from decode.graphs import search_encoded
    from seq2seq.model import Seq2SeqModel

    for decoder, length in [("unrolled", n) for n in GRAPH_LENGTHS] + [("while_loop", None)]:
        name = "%s_%d_steps" % (decoder, length) if length else decoder
        with tf.Graph().as_default() as graph:
            source_ids = tf.placeholder(tf.int32, [None, None], name="source_ids")
            source_length = tf.placeholder(tf.int32, [None], name="source_length")
            model = Seq2SeqModel(translator.config["model"], translator.source_vocab_size,
                                 translator.target_vocab_size)
            search_encoded(model, model.encode(source_ids, source_length, training=False),
                           source_length, translator.config["decode"], decoder,
                           translator.config["decode"]["beam_width"], unrolled_length=length)
            tf.summary.FileWriter(os.path.join(logdir, name), graph).close()
        print("%s: %d ops" % (name, len(graph.get_operations())))
    print("tensorboard --logdir %s  (then the Graphs tab)" % logdir)
