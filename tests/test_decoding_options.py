"""The decoding options (decode/scoring.py, decode/sampling.py) against a NumPy reference.

The reference below is written from docs/API.md's "Decoding options", independently of
decode/: one hypothesis at a time, float64, every candidate in one stably sorted list.
A toy model with attention (the toy decoder plus a masked softmax over a few source
positions) drives both the searches and the reference.
"""

import collections
import itertools

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from decode import greedy_search, rnn_beam_search, while_loop_beam_search
from decode.sampling import Sampling, restricted_logits, sample_search
from decode.scoring import Scoring, repeated_ngram_mask
from tests.numpy_beam_search import log_softmax
from tests.same_hypotheses import assert_same_hypotheses, hypotheses
from tests.toy_decoder import ToyDecoder, row_state

BEGIN, END, SOURCE_TIME = 0, 1, 4
SOURCE_LENGTHS = [4, 2, 3]
MIXED_LIMITS = [3, 6, 5]
SEARCHES = {"unrolled": rnn_beam_search, "while_loop": while_loop_beam_search}
OPTION_SETS = {
    "gnmt": Scoring(0.6),
    "average": Scoring(0.0, "average"),
    "none": Scoring(0.0, "none"),
    "coverage": Scoring(0.6, "gnmt", 0.5),
    "block2": Scoring(0.6, "gnmt", 0.0, 2),
    "block1": Scoring(0.0, "none", 0.0, 1),
    "min_length": Scoring(0.6, "gnmt", 0.0, 0, 4),
    "all": Scoring(1.0, "average", 0.3, 2, 3),
}


class AttentionToy(ToyDecoder):
    """The toy decoder, whose state also holds a masked-softmax "attention" over the source."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.attend = (2.0 * self._rng.randn(self.hidden_size, SOURCE_TIME)).astype(np.float32)

    def tf_update_fn(self, source_mask):
        def update_fn(state, ids):
            new_state, logits = self.update_fn(state, ids)
            scores = tf.einsum("bkh,hs->bks", new_state["rnn"], self.attend)
            scores = tf.where_v2(source_mask[:, None, :] > 0, scores, -1e9)
            new_state["attention"] = tf.nn.softmax(scores)
            return new_state, logits
        return update_fn

    def numpy_step(self, state, token, source_length):
        state, logits = super().numpy_step(state, token)
        scores = state["rnn"] @ self.attend
        weights = np.exp(scores[:source_length] - scores[:source_length].max())
        attention = np.zeros(SOURCE_TIME)
        attention[:source_length] = weights / weights.sum()
        return state, logits, attention


Hypothesis = collections.namedtuple("Hypothesis", "tokens log_prob finished state coverage")


def reference_score(hypothesis, options, source_length):
    """docs/API.md's score: log p / normaliser(length) + beta * sum log(min(coverage, 1))."""
    length = len(hypothesis.tokens)
    normaliser = {"gnmt": ((5.0 + length) / 6.0) ** options.length_penalty,
                  "average": max(length, 1), "none": 1.0}[options.length_penalty_kind]
    received = np.clip(hypothesis.coverage[:source_length], 1e-10, 1.0)
    return hypothesis.log_prob / normaliser + options.coverage_penalty * np.log(received).sum()


def repeats_ngram(tokens, n):
    """Whether some n consecutive pieces occur twice in `tokens` (brute force)."""
    grams = [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
    return n > 0 and len(grams) != len(set(grams))


def reference_beam_search(toy, state, source_length, steps, beam_width, options, max_length):
    """One sentence's beam search with every option: (ids, scores, lengths) NumPy arrays."""
    beam = [Hypothesis((), 0.0, False, state, np.zeros(SOURCE_TIME))]
    for position in range(steps):
        candidates = []
        for hypothesis in beam:
            if hypothesis.finished:
                candidates.append(hypothesis)
                continue
            last = hypothesis.tokens[-1] if hypothesis.tokens else BEGIN
            new_state, logits, attention = toy.numpy_step(hypothesis.state, last, source_length)
            at_limit = max_length is not None and position + 1 >= max_length
            for token, log_prob in enumerate(log_softmax(logits)):
                tokens = hypothesis.tokens + (token,)
                if at_limit and token != END:
                    continue
                if not at_limit and (repeats_ngram(tokens, options.no_repeat_ngram_size) or (
                        token == END and position < options.min_length)):
                    continue
                candidates.append(Hypothesis(tokens, hypothesis.log_prob + log_prob, token == END,
                                             new_state, hypothesis.coverage + attention))
        candidates.sort(key=lambda c: -reference_score(c, options, source_length))
        beam = candidates[:beam_width]
    ids = [list(h.tokens) + [END] * (steps - len(h.tokens)) for h in beam]
    return (np.array(ids), np.array([reference_score(h, options, source_length) for h in beam]),
            np.array([len(h.tokens) for h in beam]))


def run_search(search, toy, batch_state, steps, beam_width, options, max_lengths=None,
               source_lengths=SOURCE_LENGTHS):
    with tf.Graph().as_default():
        state = tf.nest.map_structure(tf.constant, batch_state)
        mask = tf.sequence_mask(source_lengths, SOURCE_TIME, dtype=tf.float32)
        state["attention"] = tf.zeros([len(source_lengths), SOURCE_TIME])
        outputs = search(toy.tf_update_fn(mask), state, steps, beam_width, BEGIN, END, options,
                         max_lengths=max_lengths, source_mask=mask)
        with tf.Session() as session:
            return session.run(outputs)


@pytest.mark.parametrize("limits", [None, MIXED_LIMITS], ids=["free", "limits"])
@pytest.mark.parametrize("name", sorted(OPTION_SETS))
@pytest.mark.parametrize("search", sorted(SEARCHES))
def test_both_searches_equal_the_numpy_reference_under_every_option(search, name, limits):
    options, steps, beam_width = OPTION_SETS[name], 6, 3
    for seed in (0, 1):
        toy = AttentionToy(vocab_size=6, end_token_id=END, seed=seed)
        batch_state = toy.initial_state([-0.5, 0.3, 0.0])
        ids, scores, lengths = run_search(SEARCHES[search], toy, batch_state, steps, beam_width,
                                          options, limits)
        for row in range(len(SOURCE_LENGTHS)):
            expected = reference_beam_search(
                toy, row_state(batch_state, row), SOURCE_LENGTHS[row], steps, beam_width, options,
                None if limits is None else limits[row])
            found = np.isfinite(scores[row])
            assert found.sum() == len(expected[1])
            np.testing.assert_array_equal(ids[row][found], expected[0][:, :ids.shape[2]])
            np.testing.assert_allclose(scores[row][found], expected[1], rtol=1e-5, atol=1e-5)
            np.testing.assert_array_equal(lengths[row][found], expected[2])


@pytest.mark.parametrize("name", ["coverage", "block1", "min_length", "all"])
def test_greedy_is_the_beam_of_one_under_the_options(name):
    toy = AttentionToy(vocab_size=6, end_token_id=END, seed=2)
    batch_state = toy.initial_state([-0.5, 0.3, 0.0])

    def greedy(update_fn, state, steps, width, *args, **kwargs):
        return greedy_search(update_fn, state, steps, *args, **kwargs)
    greedy_outputs = run_search(greedy, toy, batch_state, 6, 1, OPTION_SETS[name], MIXED_LIMITS)
    for row in range(len(SOURCE_LENGTHS)):
        expected = reference_beam_search(toy, row_state(batch_state, row), SOURCE_LENGTHS[row], 6,
                                         1, OPTION_SETS[name], MIXED_LIMITS[row])
        np.testing.assert_array_equal(greedy_outputs[0][row],
                                      expected[0][:, :greedy_outputs[0].shape[2]])
        np.testing.assert_allclose(greedy_outputs[1][row], expected[1], rtol=1e-5, atol=1e-5)


def test_a_sentence_decodes_alike_alone_and_in_a_batch_under_every_option():
    toy = AttentionToy(vocab_size=6, end_token_id=END, seed=3)
    batch_state = toy.initial_state([-0.5, 0.3, 0.0])
    rows = list(range(len(SOURCE_LENGTHS)))
    runs = []
    with tf.Graph().as_default():  # one graph (the costly part), fed the batch, then each sentence
        fed = tf.nest.map_structure(
            lambda value: tf.placeholder(value.dtype, (None,) + value.shape[1:]), batch_state)
        source_lengths = tf.placeholder(tf.int32, [None])
        mask = tf.sequence_mask(source_lengths, SOURCE_TIME, dtype=tf.float32)
        outputs = while_loop_beam_search(
            toy.tf_update_fn(mask), dict(fed, attention=tf.zeros_like(mask)), 6, 3, BEGIN, END,
            OPTION_SETS["all"], source_mask=mask)
        with tf.Session() as session:
            for run_rows in [rows] + [[row] for row in rows]:
                feeds = dict(zip(tf.nest.flatten(fed),
                                 [value[run_rows] for value in tf.nest.flatten(batch_state)]))
                feeds[source_lengths] = np.array(SOURCE_LENGTHS)[run_rows]
                runs.append(session.run(outputs, feeds))
    together, *alone = runs
    assert_same_hypotheses([hypotheses(*run)[0] for run in alone], hypotheses(*together))


@pytest.mark.parametrize("n", [1, 2, 3])
def test_repeated_ngram_mask_blocks_exactly_the_pieces_that_would_repeat(n):
    rng = np.random.RandomState(n)
    tokens = rng.randint(0, 4, size=[3, 2, 7]).astype(np.int32)
    with tf.Graph().as_default(), tf.Session() as session:
        for time in range(8):
            blocked = session.run(repeated_ngram_mask(tf.constant(tokens[:, :, :time]), n, 5))
            for row, slot, piece in itertools.product(range(3), range(2), range(5)):
                grown = list(tokens[row, slot, :time]) + [piece]
                earlier = [grown[i:i + n] for i in range(len(grown) - n)]
                expected = len(grown) >= n and grown[-n:] in earlier
                assert blocked[row, slot, piece] == expected, (time, row, slot, piece)


def test_blocking_removes_a_stutter_the_model_prefers():
    """A hand-built model that says "a b a b a b ...": with n = 2 "a b" is never repeated."""
    vocab, a, b = 4, 2, 3

    def update_fn(state, ids):
        prefers = tf.where_v2(tf.equal(ids, a), b, a)                        # after a: b, else a
        logits = 5.0 * tf.one_hot(prefers, vocab) + tf.one_hot(END, vocab) * 0.5
        return state, logits
    with tf.Graph().as_default(), tf.Session() as session:
        state = {"unused": tf.zeros([1, 1])}
        plain, blocked = session.run([
            while_loop_beam_search(update_fn, state, 8, 2, BEGIN, END, Scoring(0.0))[0],
            while_loop_beam_search(update_fn, state, 8, 2, BEGIN, END, Scoring(0.0, "gnmt", 0.0, 2))[0]])
    assert list(plain[0, 0, :4]) == [a, b, a, b]
    best = [int(t) for t in blocked[0, 0]]
    assert not repeats_ngram(best[:best.index(END) if END in best else 8], 2), best


def test_min_length_holds_back_the_end_token_until_then_but_a_limit_still_ends():
    def update_fn(state, ids):
        return state, tf.tile(tf.constant([[[0.0, 9.0, 1.0, 0.5]]]), [2, tf.shape(ids)[1], 1])
    with tf.Graph().as_default(), tf.Session() as session:
        state = {"unused": tf.zeros([2, 1])}
        ids, scores, lengths = session.run(while_loop_beam_search(
            update_fn, state, 10, 2, BEGIN, END, Scoring(0.0, "none", 0.0, 0, 5),
            max_lengths=tf.constant([3, 10])))
    assert list(lengths[:, 0]) == [3, 6]  # the limit of 3 ends the first; the second waits
    expected = 5 * log_softmax([0.0, 9.0, 1.0, 0.5])[2] + log_softmax([0.0, 9.0, 1.0, 0.5])[1]
    np.testing.assert_allclose(scores[1, 0], expected, rtol=1e-5)


# Sampling.
def constant_logits_fn(logits):
    def update_fn(state, ids):
        constant = tf.constant(logits, tf.float32)[None, None]
        return state, tf.tile(constant, [tf.shape(ids)[0], tf.shape(ids)[1], 1])
    return update_fn


def draw(update_fn, keys, num_samples, steps, sampling, scoring=Scoring(0.0), max_lengths=None):
    with tf.Graph().as_default(), tf.Session() as session:
        state = {"unused": tf.zeros([len(keys), 1])}
        return session.run(sample_search(update_fn, state, steps, num_samples, BEGIN, END, scoring,
                                         sampling, tf.constant(keys, tf.int64),
                                         max_lengths=max_lengths))


def test_samples_depend_on_the_seed_and_the_sentence_not_the_batch():
    toy = ToyDecoder(vocab_size=8, end_token_id=END, seed=4, logit_scale=0.5)
    batch_state = toy.initial_state([0.0, 0.0, 0.0])
    keys = [11, 22, 33]

    def run(order, seed):
        with tf.Graph().as_default(), tf.Session() as session:
            state = tf.nest.map_structure(lambda v: tf.constant(v[order]), batch_state)
            return session.run(sample_search(toy.update_fn, state, 6, 5, BEGIN, END, Scoring(0.6),
                                             Sampling(seed=seed), tf.constant(np.array(keys)[order], tf.int64)))
    forward, backward = run([0, 1, 2], 7), run([2, 1, 0], 7)
    again, other_seed = run([0, 1, 2], 7), run([0, 1, 2], 8)
    for output in range(3):
        np.testing.assert_array_equal(forward[output], again[output])
    assert_same_hypotheses(hypotheses(*forward)[::-1], hypotheses(*backward))
    assert not np.array_equal(forward[0], other_seed[0])
    assert np.all(np.diff(forward[1], axis=1) <= 0), "best score first"


def test_sample_scores_are_the_models_untempered_log_probabilities():
    logits = np.array([0.0, 0.2, 1.0, 2.0, 0.5])
    ids, scores, lengths = draw(constant_logits_fn(logits), [5, 6], 6, 5, Sampling(temperature=3.0),
                                Scoring(0.0, "average"))
    log_probs = log_softmax(logits)
    for row, slot in itertools.product(range(2), range(6)):
        pieces = ids[row, slot, :lengths[row, slot]]
        np.testing.assert_allclose(scores[row, slot], log_probs[pieces].sum() / len(pieces),
                                   rtol=1e-5)


def test_top_k_and_top_p_never_emit_a_piece_outside_the_allowed_set():
    logits = np.array([0.0, -1.0, 3.0, 2.5, 1.0, 0.9, -2.0])
    probs = np.exp(log_softmax(logits))
    order = np.argsort(-probs)
    nucleus = set(order[:np.searchsorted(np.cumsum(probs[order]), 0.8) + 1])
    for sampling, allowed in [(Sampling(top_k=2), set(order[:2])), (Sampling(top_p=0.8), nucleus),
                              (Sampling(top_k=3, top_p=0.8), set(order[:3]) & nucleus)]:
        ids, _, _ = draw(constant_logits_fn(logits), list(range(40)), 8, 1, sampling)
        assert set(ids[:, :, 0].ravel()) <= allowed, sampling
        assert len(set(ids[:, :, 0].ravel())) == len(allowed), "every allowed piece drawn"


def test_restricted_logits_match_a_numpy_nucleus():
    rng = np.random.RandomState(0)
    logits = rng.randn(2, 3, 9).astype(np.float32)
    with tf.Graph().as_default(), tf.Session() as session:
        restricted = session.run(restricted_logits(tf.constant(logits), Sampling(0.7, 4, 0.6)))
    for row in itertools.product(range(2), range(3)):
        tempered = logits[row] / 0.7
        kept = np.argsort(-tempered)[:4]
        probs = np.exp(tempered[kept] - tempered[kept].max())
        probs /= probs.sum()
        nucleus = kept[:np.searchsorted(np.cumsum(probs), 0.6) + 1]
        assert set(np.flatnonzero(np.isfinite(restricted[row]))) == set(nucleus)


def test_a_temperature_near_zero_samples_the_greedy_translation():
    toy = ToyDecoder(vocab_size=8, end_token_id=END, seed=5)
    batch_state = toy.initial_state([0.2, -0.3])
    with tf.Graph().as_default(), tf.Session() as session:
        state = tf.nest.map_structure(tf.constant, batch_state)
        greedy = session.run(greedy_search(toy.update_fn, state, 7, BEGIN, END, 0.6))
        samples = session.run(sample_search(toy.update_fn, state, 7, 4, BEGIN, END, Scoring(0.6),
                                            Sampling(temperature=1e-4), tf.constant([1, 2], tf.int64)))
    for slot in range(4):
        assert_same_hypotheses(hypotheses(*[output[:, slot:slot + 1] for output in samples]),
                               hypotheses(*greedy))


def test_first_pieces_follow_the_tempered_distribution():
    logits = np.array([0.0, -0.5, 1.0, 0.3])
    ids, _, _ = draw(constant_logits_fn(logits), list(range(400)), 16, 1, Sampling(temperature=2.0))
    counts = np.bincount(ids[:, :, 0].ravel(), minlength=4)
    expected = np.exp(log_softmax(logits / 2.0)) * counts.sum()
    chi_square = ((counts - expected) ** 2 / expected).sum()
    assert chi_square < 16.3, (counts, expected)  # 3 degrees of freedom: p = 0.001
