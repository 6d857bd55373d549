"""The session config both Translator backends create their session with.

On the first `Session.run` of a new set of fetches, Grappler, TensorFlow's
graph optimizer, runs its passes (pruning, common subgraphs, constant
folding, arithmetic, layout, remapper, dependency, memory, ...) twice over
the whole graph those fetches need. An unrolled search holds one copy of the
decoder step per token, so its graphs are large: on the tiny test model a
48-step graph has 12,000 ops, and Grappler took ~7.5 s of its ~10.7 s first
run, 0.1-0.8 s per pass (logged with TF_CPP_VMODULE=meta_optimizer=1). Its
rewrites buy these small matmuls and gathers nothing measurable at steady
state, and TensorFlow's own graph optimizer (OptimizerOptions L1: common
subexpressions, constant folding) still runs without it.
"""

import tensorflow.compat.v1 as tf
from tensorflow.core.protobuf import rewriter_config_pb2


def session_config():
    """The `tf.ConfigProto` of every decoding session: Grappler off, all else default.

    Returns:
      A new `tf.ConfigProto`.
    """
    # Tiny model, TF 2.15.1, 2 shared CPU cores, beam 4, the 100 test
    # sentences in batches of 32; before: Grappler on (commit 389a3c6).
    #   python -m decode.compare --model_dir M --beam_widths 4 --runs 10 --latency_sentences 0
    # First call minus graph building, 3 runs each: unrolled (4 graphs,
    # 47,401 ops) 15.1-19.0 s -> 5.0-6.4 s; while_loop 0.33-0.60 s -> 0.15-0.22 s;
    # greedy 0.28-0.33 s -> 0.14-0.17 s. Steady medians, both configs
    # interleaved in one process: unrolled 114 -> 108 ms, while_loop 90 -> 84 ms,
    # greedy 45 -> 41 ms (alike within this machine's noise).
    return tf.ConfigProto(graph_options=tf.GraphOptions(
        rewrite_options=rewriter_config_pb2.RewriterConfig(disable_meta_optimizer=True)))
