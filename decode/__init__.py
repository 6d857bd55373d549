"""Decoding: two beam searches with one contract, and greedy decoding.

`rnn_beam_search` (unrolled) and `while_loop_beam_search` return the same
hypotheses and scores; `greedy_search` returns what either returns with
`beam_width=1`, more cheaply.

The three are imported on first use (`from decode import rnn_beam_search`
works as usual): the package also holds command-line tools, whose --help
should not wait for TensorFlow to load.
"""

import importlib

# The decoder variants by name, as the tools and the API take them. Here,
# where importing it loads no TensorFlow (decode.translate's --help uses it).
DECODERS = ("while_loop", "unrolled", "greedy")

_HOMES = {"greedy_search": "decode.greedy",
          "rnn_beam_search": "decode.unrolled_search",
          "while_loop_beam_search": "decode.while_loop_search"}

__all__ = ["DECODERS"] + sorted(_HOMES)


def __getattr__(name):
    if name not in _HOMES:
        raise AttributeError("module 'decode' has no attribute %r" % name)
    return getattr(importlib.import_module(_HOMES[name]), name)
