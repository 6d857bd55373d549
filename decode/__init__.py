"""Decoding: both beam searches and greedy decoding (decode/beam_search.py), and the tools."""

# The decoder variants by name, offered by every tool and the API (options: decoding_options.py).
DECODERS = ("while_loop", "unrolled", "greedy", "sample", "exact", "mbr")
SEARCHES = ("greedy_search", "rnn_beam_search", "while_loop_beam_search")
__all__ = ["DECODERS", *SEARCHES]


def __getattr__(name):
    """The searches load TensorFlow, so on first use: the CLIs' --help stays quick."""
    if name not in SEARCHES:
        raise AttributeError("module 'decode' has no attribute %r" % name)
    from decode import beam_search
    return getattr(beam_search, name)
