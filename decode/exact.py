"""Exact search: the hypothesis with the highest score under the decoding options, proven.

Branch and bound, best-first by log-probability, from the beam search's best: a prefix of
log-probability L <= 0 ends no higher than L / (the largest normaliser its length limit
allows). Why, and its cost: docs/DECODING-NOTES.md ("The exact search").
"""

import collections
import heapq

import numpy as np
import tensorflow.compat.v1 as tf

from decode.scoring import allowed_logits, force_pieces
from seq2seq.common import get_shape
from seq2seq.model import EncoderOutput

# One sentence's best: ids (end token left out), score, proven, prefixes expanded (model rows).
ExactResult = collections.namedtuple("ExactResult", "ids score proven expansions")
FIRST_CHILDREN = 16  # children a new node lists; expanding it again lists as many as before


def normaliser(length, scoring):
    """What a hypothesis of `length` pieces (end included) divides its log-probability by."""
    if scoring.length_penalty_kind == "gnmt":
        return ((5.0 + length) / 6.0) ** scoring.length_penalty
    return float(max(length, 1)) if scoring.length_penalty_kind == "average" else 1.0


class Node:
    """A prefix: ids, log_prob, state_in (the decoder state before its last piece), state (after
    it; None until expanded) and its children listed, best first: child_ids, child_log_probs,
    listed (all so far), rest_log_prob (the best not listed; -inf: none may win)."""

    def __init__(self, ids, log_prob, state_in):
        self.ids, self.log_prob, self.state_in, self.state = ids, log_prob, state_in, None
        self.child_ids, self.listed = (), np.zeros([0], np.int64)

    def list_children(self, log_probs, threshold, end_token_id):
        """Lists the best children whose log-probability passes `threshold` and not yet listed,
        as many as were listed before (at least FIRST_CHILDREN)."""
        passes = log_probs > threshold
        passes[end_token_id] = False
        passes[self.listed] = False
        candidates = np.flatnonzero(passes)
        count = max(FIRST_CHILDREN, len(self.listed))
        self.rest_log_prob = -np.inf
        if len(candidates) > count:
            candidates = candidates[np.argpartition(-log_probs[candidates], count)]
            self.rest_log_prob = log_probs[candidates[count]]
            candidates = candidates[:count]
        order = np.argsort(-log_probs[candidates], kind="stable")
        self.child_ids, self.child_log_probs = candidates[order], log_probs[candidates[order]]
        self.listed = np.concatenate([self.listed, self.child_ids])


class SentenceSearch:
    """One sentence's heap of prefixes to expand and its incumbent (best_ids, best_score).

    Heap entries are (-log-probability, order, Node, rank): the rank-th child a node lists, or
    at rank len(child_ids) the node itself, to be expanded again for the children not listed.
    """

    def __init__(self, initial_state, limit, lower_bound, scoring, max_expansions):
        self.limit, self.scoring = limit, scoring
        self.max_expansions, self.expansions = max_expansions, 0
        self.largest_normaliser = normaliser(limit, scoring)  # each kind grows with the length
        self.best_ids, self.best_score = lower_bound if lower_bound else (None, -np.inf)
        self.heap, self.pushed = [(-0.0, 0, Node((), 0.0, initial_state), 0)], 1

    def beats_best(self, log_prob):
        """Whether a prefix of this log-probability may still end above the incumbent."""
        return log_prob / self.largest_normaliser > self.best_score

    def pop(self, count):
        """Up to `count` Nodes to expand, best first, within max_expansions: new prefixes, and
        expanded ones whose children not listed may still win."""
        nodes = []
        count = min(count, self.max_expansions - self.expansions)
        while self.heap and len(nodes) < count:
            negative_log_prob, _, node, rank = self.heap[0]
            if not self.beats_best(-negative_log_prob):
                self.heap = []  # best-first: no entry left can beat the incumbent
                break
            heapq.heappop(self.heap)
            if rank < len(node.child_ids):  # its child: a new prefix
                self._push_next(node, rank + 1)
                child_id = int(node.child_ids[rank])
                node = Node(node.ids + (child_id,), -negative_log_prob, node.state)
            nodes.append(node)
        return nodes

    def _push_next(self, node, rank):
        """Pushes a node's child at `rank`, or past its listed children the node itself."""
        step = node.child_log_probs[rank] if rank < len(node.child_ids) else node.rest_log_prob
        if step > -np.inf:  # a listed child always is: it passed a threshold
            heapq.heappush(self.heap, (-(node.log_prob + step), self.pushed, node, rank))
            self.pushed += 1

    def add(self, node, state, log_probs, end_log_prob, end_token_id):
        """Records a Node's expansion (state after it; log_probs [vocab] with the options' -inf,
        end_log_prob without them): scores a new prefix's end, lists the children."""
        self.expansions += 1
        if node.state is None:
            length = len(node.ids) + 1
            at_limit = length >= self.limit  # the end token forced, whatever the options
            end = end_log_prob if at_limit else log_probs[end_token_id]
            end_score = (node.log_prob + end) / normaliser(length, self.scoring)
            if end_score > self.best_score:
                self.best_ids, self.best_score = node.ids, float(end_score)
            if at_limit:
                return
            node.state = state
        node.list_children(log_probs, self.best_score * self.largest_normaliser - node.log_prob,
                           end_token_id)
        self._push_next(node, 0)

    def result(self):
        proven = not any(self.beats_best(-entry[0]) for entry in self.heap)
        return ExactResult(list(self.best_ids or ()), self.best_score, proven, self.expansions)


def exact_search(expand, initial_states, limits, lower_bounds, scoring, begin_token_id,
                 end_token_id, max_expansions, rows_per_call=512):
    """The best hypothesis of each sentence under `scoring`, within its length limit.

    Args:
      expand: one model step for prefixes of many sentences (the Translator's `expansion_step`):
        (sentences [n] ints, n decoder states, last_ids [n] int32, n tuples of prefix ids) ->
        (n new states, log_probs [n, vocab] with the options' -inf, end_log_probs [n] without).
      initial_states: a decoder state per sentence; limits: per sentence, the most pieces of a
        hypothesis, end token included; lower_bounds: per sentence None or (ids, score).
      scoring: a decode.scoring.Scoring of Python values (its coverage penalty is not used).
      max_expansions: per sentence; rows_per_call: per `expand` call, shared among sentences.
    Returns:
      A list of `ExactResult`, one per sentence.
    """
    searches = [SentenceSearch(state, limit, bound, scoring, max_expansions)
                for state, limit, bound in zip(initial_states, limits, lower_bounds)]
    while True:
        unfinished = [index for index, search in enumerate(searches)
                      if search.heap and search.expansions < max_expansions]
        share = max(1, rows_per_call // max(len(unfinished), 1))
        nodes = [(index, node) for index in unfinished for node in searches[index].pop(share)]
        if not nodes:
            return [search.result() for search in searches]
        states, log_probs, end_log_probs = expand(
            [index for index, _ in nodes], [node.state_in for _, node in nodes],
            np.array([node.ids[-1] if node.ids else begin_token_id for _, node in nodes],
                     np.int32),
            [node.ids for _, node in nodes])
        for row, (index, node) in enumerate(nodes):
            searches[index].add(node, states[row], log_probs[row], end_log_probs[row], end_token_id)


def expansion_step(model, encoder_output, scoring, end_token_id):
    """The graph of one decoder step for prefixes of many sentences, sharing `model`'s templates.

    Args:
      model, encoder_output: a `Seq2SeqModel` and its encoding of a batch of sentences.
      scoring: a decode.scoring.Scoring (min_length an int or scalar tensor).
    Returns:
      (inputs, outputs): inputs {"sentences" [n] int32 (rows of encoder_output), "states",
      "last_ids" [n] int32, "prefixes" [n, time] int32 (-1 in front of shorter ones),
      "prefix_lengths" [n], "forced_ids" [n] int32 (a target prefix's next piece, else -1)};
      outputs {"states", "log_probs" [n, vocab] (`allowed_logits`, the forced pieces forced),
      "end_log_probs" [n]}.
    """
    with tf.name_scope("exact_step"):
        sentences = tf.placeholder(tf.int32, [None], "sentences")
        inputs = {"sentences": sentences,
                  "states": tf.nest.map_structure(
                      lambda t: tf.placeholder(t.dtype, [None] + t.shape.as_list()[1:]),
                      encoder_output.initial_state),
                  "last_ids": tf.placeholder(tf.int32, [None], "last_ids"),
                  "prefixes": tf.placeholder(tf.int32, [None, None], "prefixes"),
                  "prefix_lengths": tf.placeholder(tf.int32, [None], "prefix_lengths"),
                  "forced_ids": tf.placeholder_with_default(  # no target prefix: nothing to feed
                      tf.fill(tf.shape(sentences), -1), [None], "forced_ids")}
        gathered = EncoderOutput(*(tf.gather(tensor, inputs["sentences"])
                                   for tensor in encoder_output[:3]), initial_state=None)
        states, logits = model.step(gathered, inputs["states"], inputs["last_ids"])
        log_probs = tf.nn.log_softmax(logits)                                  # [n, vocab]
        # Pieces shifted by one: a short prefix's -1 padding is column 0, dropped after.
        shifted = tf.pad(log_probs, [[0, 0], [1, 0]])[:, None, :]             # [n, 1, 1 + vocab]
        allowed = allowed_logits(shifted, inputs["prefix_lengths"][:, None, None],
                                 end_token_id + 1, scoring, (inputs["prefixes"] + 1)[:, None, :])
        forced = force_pieces(allowed[:, 0, 1:], log_probs, inputs["forced_ids"][:, None],
                              get_shape(log_probs)[1])                         # [n, vocab]
        return inputs, {"states": states, "log_probs": forced,
                        "end_log_probs": log_probs[:, end_token_id]}
