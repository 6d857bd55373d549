"""Decoding: two beam searches with one contract, and greedy decoding.

`rnn_beam_search` (unrolled) and `while_loop_beam_search` return the same
hypotheses and scores; `greedy_search` returns what either returns with
`beam_width=1`, more cheaply.
"""

from decode.greedy import greedy_search
from decode.unrolled_search import rnn_beam_search
from decode.while_loop_search import while_loop_beam_search

__all__ = ["greedy_search", "rnn_beam_search", "while_loop_beam_search"]
