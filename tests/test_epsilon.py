"""Epsilon sampling (decode/sampling.py, Hewitt et al. 2022) against a NumPy reference.

The reference: the tempered distribution softmax(logits / T) in float64; a piece is kept when its
probability is >= epsilon or it is the most likely piece, and top_k / top_p keep what they kept.
"""

import itertools

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from decode.sampling import Sampling, restricted_logits, sample_search
from decode.scoring import Scoring
from tests.numpy_beam_search import log_softmax
from tests.same_hypotheses import assert_same_hypotheses, hypotheses
from tests.toy_decoder import ToyDecoder, row_state

BEGIN, END = 0, 1


def numpy_kept(logits, temperature, top_k=0, top_p=1.0, epsilon=0.0):
    """The set of pieces a [vocab] row may draw."""
    probs = np.exp(log_softmax(np.asarray(logits, np.float64) / temperature))
    order = np.argsort(-probs, kind="stable")
    ranked = order[:top_k] if top_k else order
    mass = probs[ranked] / probs[ranked].sum()
    nucleus = ranked[:np.searchsorted(np.cumsum(mass), top_p) + 1]
    return set(nucleus) & ({order[0]} | set(np.flatnonzero(probs >= epsilon)))


@pytest.mark.parametrize("temperature, top_k, top_p, epsilon", [
    (1.0, 0, 1.0, 0.05), (0.5, 0, 1.0, 0.02), (2.0, 0, 1.0, 0.1), (1.0, 4, 1.0, 0.05),
    (0.7, 0, 0.6, 0.03), (1.0, 0, 1.0, 0.99), (1.0, 5, 0.9, 0.0)])
def test_restricted_logits_keep_what_the_numpy_reference_keeps(temperature, top_k, top_p,
                                                               epsilon):
    logits = np.random.RandomState(0).randn(3, 2, 11).astype(np.float32) * 2.0
    with tf.Graph().as_default(), tf.Session() as session:
        restricted = session.run(restricted_logits(
            tf.constant(logits), Sampling(temperature, top_k, top_p, 0, epsilon)))
    for row in itertools.product(range(3), range(2)):
        kept = numpy_kept(logits[row], temperature, top_k, top_p, epsilon)
        assert set(np.flatnonzero(np.isfinite(restricted[row]))) == kept, row
        np.testing.assert_array_equal(restricted[row][sorted(kept)],
                                      logits[row][sorted(kept)] / np.float32(temperature))


def draw_first(logits, sampling, sentences=60, num_samples=8):
    """First pieces [sentences, num_samples] drawn from constant logits, every one possible."""
    def update_fn(state, ids):
        constant = tf.constant(logits, tf.float32)[None, None]
        return state, tf.tile(constant, [tf.shape(ids)[0], tf.shape(ids)[1], 1])
    with tf.Graph().as_default(), tf.Session() as session:
        state = {"unused": tf.zeros([sentences, 1])}
        ids, scores, _ = session.run(sample_search(update_fn, state, 1, num_samples, BEGIN, END,
                                                   Scoring(0.0), sampling,
                                                   tf.constant(np.arange(sentences), tf.int64)))
    assert np.all(np.isfinite(scores)), "a slot had no piece left to draw"
    return ids[:, :, 0]


def test_no_piece_below_epsilon_is_drawn_and_every_other_is():
    logits = np.array([0.0, -1.0, 2.0, 1.5, -0.5, 0.8, -3.0, 1.0])
    probs = np.exp(log_softmax(logits))
    for epsilon in (0.05, 0.1, 0.2):
        drawn = set(draw_first(logits, Sampling(epsilon=epsilon)).ravel())
        assert drawn == set(np.flatnonzero(probs >= epsilon)), (epsilon, drawn)


def test_the_most_likely_piece_is_never_removed():
    flat = np.array([0.0, -0.01, 0.0, 0.01])  # every probability about 0.25
    drawn = draw_first(flat, Sampling(epsilon=0.5), sentences=10)
    assert set(drawn.ravel()) == {3}
    drawn = draw_first(flat, Sampling(temperature=0.01, epsilon=0.9), sentences=10)
    assert set(drawn.ravel()) == {3}


def test_epsilon_zero_and_an_epsilon_that_removes_nothing_draw_the_same_samples():
    toy = ToyDecoder(vocab_size=9, end_token_id=END, seed=2, logit_scale=0.3)
    batch_state = toy.initial_state([0.1, -0.2, 0.0])
    with tf.Graph().as_default(), tf.Session() as session:
        state = tf.nest.map_structure(tf.constant, batch_state)
        keys = tf.constant([5, 6, 7], tf.int64)
        fed = tf.placeholder_with_default(0.0, [])
        runs = [session.run(sample_search(toy.update_fn, state, 6, 4, BEGIN, END, Scoring(0.6),
                                          sampling, keys, name="s%d" % i))
                for i, sampling in enumerate([Sampling(seed=3), Sampling(seed=3, epsilon=fed),
                                              Sampling(seed=3, epsilon=1e-9)])]
    for other in runs[1:]:
        for output in range(3):
            np.testing.assert_array_equal(runs[0][output], other[output])


def test_every_drawn_piece_had_probability_at_least_epsilon_for_its_own_prefix():
    toy = ToyDecoder(vocab_size=10, end_token_id=END, seed=6, logit_scale=0.6)
    batch_state = toy.initial_state([0.0, 0.3, -0.4, 0.1])
    temperature, epsilon = 1.3, 0.06
    with tf.Graph().as_default(), tf.Session() as session:
        state = tf.nest.map_structure(tf.constant, batch_state)
        ids, _, lengths = session.run(sample_search(
            toy.update_fn, state, 7, 6, BEGIN, END, Scoring(0.0),
            Sampling(temperature, seed=9, epsilon=epsilon), tf.constant([1, 2, 3, 4], tf.int64)))
    binding = 0
    for row, slot in itertools.product(range(4), range(6)):
        state, token = row_state(batch_state, row), BEGIN
        for piece in ids[row, slot, :lengths[row, slot]]:
            state, logits = toy.numpy_step(state, token)
            probs = np.exp(log_softmax(logits / temperature))
            assert probs[piece] >= epsilon * (1 - 1e-4) or piece == np.argmax(probs)
            binding += probs.min() < epsilon
            token = piece
    assert binding > 0, "epsilon removed some piece somewhere"


def test_epsilon_samples_do_not_depend_on_the_batch():
    toy = ToyDecoder(vocab_size=8, end_token_id=END, seed=4, logit_scale=0.5)
    batch_state = toy.initial_state([0.0, 0.2, -0.1])
    keys = np.array([11, 22, 33])

    def run(order):
        with tf.Graph().as_default(), tf.Session() as session:
            state = tf.nest.map_structure(lambda v: tf.constant(v[order]), batch_state)
            return session.run(sample_search(toy.update_fn, state, 6, 5, BEGIN, END, Scoring(0.6),
                                             Sampling(top_p=0.95, seed=7, epsilon=0.05),
                                             tf.constant(keys[order], tf.int64), compact=True))
    alone = [hypotheses(*run([row]))[0] for row in range(3)]
    assert_same_hypotheses(hypotheses(*run([0, 1, 2])), alone)
    assert_same_hypotheses(hypotheses(*run([2, 1, 0]))[::-1], alone)
