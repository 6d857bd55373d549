"""Decoding: both beam searches and greedy decoding (decode/beam_search.py), and the tools."""

SEARCHES = ("greedy_search", "rnn_beam_search", "while_loop_beam_search")
__all__ = list(SEARCHES)


def __getattr__(name):
    """The searches load TensorFlow, so on first use: the CLIs' --help stays quick."""
    if name not in SEARCHES:
        raise AttributeError("module 'decode' has no attribute %r" % name)
    from decode import beam_search
    return getattr(beam_search, name)
