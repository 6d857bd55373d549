"""Exact search: the hypothesis with the highest score under the decoding options, proven.

Branch and bound, best-first by log-probability. The beam search's best is the first
incumbent. A log-probability only falls as a hypothesis grows, so a prefix of log-probability
L <= 0 can end no higher than L / (the largest normaliser its sentence's length limit allows);
a prefix whose bound does not beat the incumbent is pruned, and every end-token child is a
complete hypothesis, scored exactly. A sentence is proven once nothing is left to expand; the
search stops short (not proven) at `max_expansions`. Why best-first, and what it costs:
docs/DECODING-NOTES.md ("The exact search").

The algorithm calls `expand`, one model step for many prefixes of many sentences at once: the
Translator's step graph (`expansion_step`), or a NumPy model in tests.
"""

import collections
import heapq

import numpy as np
import tensorflow.compat.v1 as tf

from decode.scoring import allowed_logits
from seq2seq.model import EncoderOutput

ExactResult = collections.namedtuple("ExactResult", "ids score proven expansions")
ExactResult.__doc__ = """One sentence's best hypothesis: ids (without the end token), its score,
whether it is proven the best, and how many prefixes the search expanded."""
# An expanded prefix: its pieces, log-probability, the decoder state after it, and the pieces
# that may follow it with their log-probabilities, best first (end token left out).
Node = collections.namedtuple("Node", "ids log_prob state child_ids child_log_probs")
ROOT = -1  # a heap entry's node for the empty prefix, not yet expanded


def normaliser(length, scoring):
    """What a hypothesis of `length` pieces (end included) divides its log-probability by."""
    if scoring.length_penalty_kind == "gnmt":
        return ((5.0 + length) / 6.0) ** scoring.length_penalty
    return float(max(length, 1)) if scoring.length_penalty_kind == "average" else 1.0


class SentenceSearch:
    """The search of one sentence: its heap of prefixes to expand, and the incumbent.

    Heap entries are (-log-probability, order, node, rank): the rank-th best child of an
    expanded node. Each node's next child enters the heap only when the one before it leaves,
    so the heap grows by one entry per expansion, not by one per vocabulary piece.
    """

    def __init__(self, initial_state, limit, lower_bound, scoring, max_expansions):
        self.initial_state, self.limit, self.scoring = initial_state, limit, scoring
        self.max_expansions, self.expansions = max_expansions, 0
        self.largest_normaliser = normaliser(limit, scoring)  # each kind grows with the length
        self.best_ids, self.best_score = lower_bound if lower_bound else (None, -np.inf)
        self.nodes, self.heap, self.pushed = [], [(-0.0, 0, ROOT, 0)], 1

    def beats_best(self, log_prob):
        """Whether a prefix of this log-probability may still end above the incumbent."""
        return log_prob / self.largest_normaliser > self.best_score

    def pop(self, count):
        """Up to `count` prefixes to expand, best first: (ids, log_prob, state, last id or None)."""
        prefixes = []
        while self.heap and len(prefixes) < count and self.expansions + len(prefixes) < (
                self.max_expansions):
            negative_log_prob, _, node_index, rank = self.heap[0]
            if not self.beats_best(-negative_log_prob):
                self.heap = []  # best-first: no entry left can beat the incumbent
                break
            heapq.heappop(self.heap)
            if node_index == ROOT:
                prefixes.append(((), 0.0, self.initial_state, None))
                continue
            node = self.nodes[node_index]
            if rank + 1 < len(node.child_ids):
                self._push(node.log_prob + node.child_log_probs[rank + 1], node_index, rank + 1)
            child_id = int(node.child_ids[rank])
            prefixes.append((node.ids + (child_id,), -negative_log_prob, node.state, child_id))
        return prefixes

    def _push(self, log_prob, node_index, rank):
        heapq.heappush(self.heap, (-log_prob, self.pushed, node_index, rank))
        self.pushed += 1

    def add(self, ids, log_prob, state, log_probs, end_log_prob, end_token_id):
        """Records an expansion of prefix `ids`: its end-token child is scored, the children
        that may beat the incumbent are kept.

        Args:
          state: the decoder state after `ids`; log_probs: [vocab] next-piece log-probs with
          the options' -inf applied; end_log_prob: the end token's, without them (at the limit
          the searches force the end token).
        """
        self.expansions += 1
        at_limit = len(ids) + 1 >= self.limit
        end_score = (log_prob + (end_log_prob if at_limit else log_probs[end_token_id])) / (
            normaliser(len(ids) + 1, self.scoring))
        if end_score > self.best_score:
            self.best_ids, self.best_score = ids, float(end_score)
        if at_limit:
            return
        threshold = self.best_score * self.largest_normaliser - log_prob
        child_ids = np.flatnonzero(log_probs > threshold)
        child_ids = child_ids[child_ids != end_token_id]
        if len(child_ids):
            order = np.argsort(-log_probs[child_ids], kind="stable")
            node = Node(ids, log_prob, state, child_ids[order], log_probs[child_ids[order]])
            self.nodes.append(node)
            self._push(log_prob + node.child_log_probs[0], len(self.nodes) - 1, 0)

    def result(self):
        proven = not any(self.beats_best(-entry[0]) for entry in self.heap)
        return ExactResult(list(self.best_ids or ()), self.best_score, proven, self.expansions)


def exact_search(expand, initial_states, limits, lower_bounds, scoring, begin_token_id,
                 end_token_id, max_expansions, rows_per_call=512):
    """The best hypothesis of each sentence under `scoring`, within its length limit.

    Args:
      expand: (sentences [n] ints, states: n decoder states, last_ids [n] int32, prefixes:
        n tuples of ids) -> (new_states: n states, log_probs [n, vocab] with the options'
        -inf applied (blocking, minimum length), end_log_probs [n] without them).
      initial_states: a decoder state per sentence, whatever `expand` takes.
      limits: per sentence, the most pieces of a hypothesis, end token included.
      lower_bounds: per sentence None or (ids, score), a known hypothesis (the beam's best).
      scoring: a decode.scoring.Scoring of Python values (its coverage penalty is not used).
      begin_token_id, end_token_id: ints; max_expansions: prefixes expanded per sentence at most.
      rows_per_call: prefixes per `expand` call at most, shared among the unfinished sentences.
    Returns:
      A list of `ExactResult`, one per sentence.
    """
    searches = [SentenceSearch(state, limit, bound, scoring, max_expansions)
                for state, limit, bound in zip(initial_states, limits, lower_bounds)]
    while True:
        unfinished = [index for index, search in enumerate(searches)
                      if search.heap and search.expansions < max_expansions]
        share = max(1, rows_per_call // max(len(unfinished), 1))
        requests = [(index, prefix) for index in unfinished for prefix in searches[index].pop(share)]
        if not requests:
            return [search.result() for search in searches]
        states, log_probs, end_log_probs = expand(
            [index for index, _ in requests], [prefix[2] for _, prefix in requests],
            np.array([begin_token_id if prefix[3] is None else prefix[3]
                      for _, prefix in requests], np.int32),
            [prefix[0] for _, prefix in requests])
        for row, (index, (ids, log_prob, _, _)) in enumerate(requests):
            searches[index].add(ids, log_prob, states[row], log_probs[row], end_log_probs[row],
                                end_token_id)


def expansion_step(model, encoder_output, scoring, end_token_id):
    """The graph of one decoder step for prefixes of many sentences, sharing `model`'s templates.

    Args:
      model, encoder_output: a `Seq2SeqModel` and its encoding of a batch of sentences.
      scoring: a decode.scoring.Scoring (no_repeat_ngram_size a Python int, min_length an int
        or scalar tensor).
    Returns:
      (inputs, outputs): inputs {"sentences" [n] int32 (rows of encoder_output), "states"
      (encoder_output.initial_state's structure, [n, ...]), "last_ids" [n] int32, "prefixes"
      [n, time] int32 (each row's pieces, -1 in front of shorter ones), "prefix_lengths" [n]};
      outputs {"states", "log_probs" [n, vocab] with `allowed_logits` applied,
      "end_log_probs" [n]}.
    """
    with tf.name_scope("exact_step"):
        inputs = {"sentences": tf.placeholder(tf.int32, [None], "sentences"),
                  "states": tf.nest.map_structure(lambda t: tf.placeholder(t.dtype, t.shape),
                                                  encoder_output.initial_state),
                  "last_ids": tf.placeholder(tf.int32, [None], "last_ids"),
                  "prefixes": tf.placeholder(tf.int32, [None, None], "prefixes"),
                  "prefix_lengths": tf.placeholder(tf.int32, [None], "prefix_lengths")}
        gathered = EncoderOutput(*(tf.gather(tensor, inputs["sentences"])
                                   for tensor in encoder_output[:3]), initial_state=None)
        states, logits = model.step(gathered, inputs["states"], inputs["last_ids"])
        log_probs = tf.nn.log_softmax(logits)                                  # [n, vocab]
        # Pieces shifted by one: the -1 in front of a short prefix becomes a piece of its own
        # (column 0), so it never blocks a real one; that column is dropped after.
        shifted = tf.pad(log_probs, [[0, 0], [1, 0]])[:, None, :]             # [n, 1, 1 + vocab]
        allowed = allowed_logits(shifted, inputs["prefix_lengths"][:, None, None],
                                 end_token_id + 1, scoring, (inputs["prefixes"] + 1)[:, None, :])
        return inputs, {"states": states, "log_probs": allowed[:, 0, 1:],
                        "end_log_probs": log_probs[:, end_token_id]}
