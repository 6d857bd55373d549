"""Forced target prefixes (`target_prefix`) in every search, against independent references.

The NumPy reference (tests/numpy_beam_search.py) forces the same prefixes one sentence at a
time; the brute force lists every output that starts with a prefix; a sample is scored again
by the NumPy model; and a prefix that is a search's own output must give that output back.
"""

import functools

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

import numpy_beam_search as reference
from decode import greedy_search, rnn_beam_search, while_loop_beam_search
from decode.sampling import Sampling, sample_search
from decode.scoring import Scoring
from test_beam_search import BEGIN, END, MIXED_ROWS, assert_same_result, path_back
from toy_decoder import ToyDecoder, row_state

DECODERS = {"unrolled": rnn_beam_search, "while_loop": while_loop_beam_search,
            "compact": functools.partial(while_loop_beam_search, compact=True),
            "greedy": lambda f, s, n, k, *a, **kw: greedy_search(f, s, n, *a, compact=True, **kw)}
# Per row of MIXED_ROWS: three pieces, one, two, none; -1 pads.
PREFIXES = [[3, 5, 2], [4], [6, 6], []]
# The first two are too short for their prefix and the end token: the search raises them.
LIMITS = [3, 1, 5, 2]


def padded(prefixes, width=None):
    """Lists of piece ids -> [batch, width] int32, -1 after each prefix."""
    width = max(map(len, prefixes)) if width is None else width
    return np.array([list(p) + [-1] * (width - len(p)) for p in prefixes], np.int32).reshape(
        len(prefixes), width)


def run(decoder, toy, batch_state, steps, width, scoring=0.6, prefix=None, **options):
    """Builds `decoder` over the toy model in a fresh graph and runs it."""
    with tf.Graph().as_default():
        state = tf.nest.map_structure(tf.constant, batch_state)
        outputs = DECODERS[decoder](toy.update_fn, state, steps, width, BEGIN, END, scoring,
                                    target_prefix=prefix, **options)
        with tf.Session() as session:
            return session.run(outputs)


def numpy_results(toy, batch_state, steps, width, prefixes, limits=None, **options):
    """The NumPy reference's results, row by row (greedy for a width of None)."""
    rows = []
    for row, prefix in enumerate(prefixes):
        limit = None if limits is None else limits[row]
        args = (toy.numpy_step, row_state(batch_state, row), steps)
        if width is None:
            ids, score, length = reference.greedy(*args, BEGIN, END, 0.6, limit, prefix=prefix)
            rows.append((ids[None], np.array([score]), np.array([length])))
        else:
            rows.append(reference.beam_search(*args, width, BEGIN, END, 0.6, limit, prefix=prefix,
                                              **options))
    return tuple(np.stack(parts) for parts in zip(*rows))


@pytest.mark.parametrize("limits", [None, LIMITS], ids=["free", "limits"])
@pytest.mark.parametrize("decoder", sorted(DECODERS))
def test_matches_numpy_reference(decoder, limits):
    toy = ToyDecoder(vocab_size=7, seed=3)
    batch_state = toy.initial_state(MIXED_ROWS)
    actual = run(decoder, toy, batch_state, 7, 3, prefix=padded(PREFIXES), max_lengths=limits)
    width = None if decoder == "greedy" else 3
    assert_same_result(actual, numpy_results(toy, batch_state, 7, width, PREFIXES, limits))
    ids, scores, lengths = actual
    for row, prefix in enumerate(PREFIXES):
        possible = scores[row] > -np.inf
        assert (ids[row, possible, :len(prefix)] == prefix).all()
        if limits:  # the raised limit: the prefix and the end token
            assert (lengths[row] <= max(limits[row], len(prefix) + 1)).all()
    if limits:  # row 0's only output: its 3 pieces and the end token
        assert (scores[0] > -np.inf).sum() == 1 and lengths[0, 0] == 4


@pytest.mark.parametrize("decoder", ["unrolled", "compact"])
def test_diverse_groups_with_prefixes_match_numpy_reference(decoder):
    toy = ToyDecoder(vocab_size=7, seed=3)
    batch_state = toy.initial_state(MIXED_ROWS)
    scoring = Scoring(0.6, diverse_beam_groups=2, diverse_beam_strength=1.0)
    actual = run(decoder, toy, batch_state, 7, 4, scoring, padded(PREFIXES), max_lengths=LIMITS)
    assert_same_result(actual, numpy_results(toy, batch_state, 7, 4, PREFIXES, LIMITS, groups=2,
                                             strength=1.0))


@pytest.mark.parametrize("decoder", sorted(DECODERS))
def test_an_empty_prefix_is_no_prefix(decoder):
    toy = ToyDecoder(vocab_size=7, seed=3)
    batch_state = toy.initial_state(MIXED_ROWS)
    plain = run(decoder, toy, batch_state, 6, 3, max_lengths=LIMITS)
    for prefix in (padded([[]] * 4), padded([[]] * 4, width=3)):  # [4, 0] and all padding
        empty = run(decoder, toy, batch_state, 6, 3, prefix=prefix, max_lengths=LIMITS)
        for got, expected in zip(empty, plain):
            np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("decoder", sorted(DECODERS))
def test_a_prefix_of_the_searchs_own_output_gives_it_back_with_its_score(decoder):
    # Each sentence's best output but its end token, forced: the search returns that output
    # (greedy: first) with the same score, its prefix's log-probability counted.
    toy = ToyDecoder(vocab_size=7, seed=3)
    batch_state = toy.initial_state(MIXED_ROWS)
    limits = [5, 3, 6, 4]
    ids, scores, lengths = run(decoder, toy, batch_state, 6, 3, max_lengths=limits)
    prefixes = [list(ids[row, 0, :lengths[row, 0] - 1]) for row in range(len(MIXED_ROWS))]
    assert any(prefixes) and all(ids[row, 0, lengths[row, 0] - 1] == END for row in range(4))
    forced = run(decoder, toy, batch_state, 6, 3, prefix=padded(prefixes), max_lengths=limits)
    for row in range(len(MIXED_ROWS)):
        length = lengths[row, 0]
        matches = [slot for slot in range(ids.shape[1]) if forced[2][row, slot] == length
                   and (forced[0][row, slot, :length] == ids[row, 0, :length]).all()]
        assert matches, "row %d: the output is not among the forced search's" % row
        np.testing.assert_allclose(forced[1][row, matches[0]], scores[row, 0], rtol=1e-5, atol=1e-5)
        assert decoder != "greedy" or matches[0] == 0


@pytest.mark.parametrize("search", ["unrolled", "while_loop"])
def test_exhaustive_beam_finds_every_sequence_with_the_prefix_in_order(search):
    # Vocab 4, 3 tokens: of the 40 outputs, 13 start with 2 (2 end; 2 x end; 2 x y).
    toy = ToyDecoder(vocab_size=4, seed=5, logit_scale=1.0)
    batch_state = toy.initial_state([0.0, 1.0])
    ids, scores, lengths = run(search, toy, batch_state, 3, 40, 1.0, padded([[2], [2, 3]]))
    for row, prefix in enumerate([[2], [2, 3]]):
        expected = [e for e in reference.enumerate_sequences(
            toy.numpy_step, row_state(batch_state, row), 3, 4, BEGIN, END, 1.0)
            if e[0][:len(prefix)] == prefix and e[2] > len(prefix)]
        count = len(expected)
        assert count == {1: 13, 2: 4}[len(prefix)]
        np.testing.assert_array_equal(ids[row, :count], [e[0] for e in expected])
        np.testing.assert_allclose(scores[row, :count], [e[1] for e in expected], rtol=1e-5,
                                   atol=1e-5)
        np.testing.assert_array_equal(lengths[row, :count], [e[2] for e in expected])
        assert (scores[row, count:] == -np.inf).all()


@pytest.mark.parametrize("decoder", ["unrolled", "compact", "greedy"])
def test_the_trace_holds_the_forced_steps(decoder):
    toy = ToyDecoder(vocab_size=7, seed=3)
    batch_state = toy.initial_state(MIXED_ROWS)
    ids, scores, lengths, trace = run(decoder, toy, batch_state, 7, 3, prefix=padded(PREFIXES),
                                      max_lengths=LIMITS, trace=True)
    np.testing.assert_array_equal(trace["scores"][:, -1], scores)
    steps = ids.shape[-1]
    for row, prefix in enumerate(PREFIXES):
        for slot in np.flatnonzero(scores[row] > -np.inf):
            path = path_back(trace["parent_ids"][row], slot)
            tokens = trace["token_ids"][row][np.arange(steps), path]
            np.testing.assert_array_equal(tokens, ids[row, slot])
            assert (tokens[:len(prefix)] == prefix).all()
            assert not trace["finished"][row][np.arange(len(prefix)), path[:len(prefix)]].any()


def sample(toy, batch_state, prefix, compact, steps=6):
    with tf.Graph().as_default():
        state = tf.nest.map_structure(tf.constant, batch_state)
        keys = tf.constant(np.arange(len(MIXED_ROWS), dtype=np.int64) * 7919)
        outputs = sample_search(toy.update_fn, state, steps, 3, BEGIN, END, Scoring(0.6),
                                Sampling(temperature=1.5, seed=3), keys, max_lengths=LIMITS,
                                compact=compact, target_prefix=prefix)
        with tf.Session() as session:
            return session.run(outputs)


def numpy_score(toy, state, tokens):
    """The contract's score of `tokens` under the NumPy twin of the toy model (alpha 0.6)."""
    last, log_prob = BEGIN, 0.0
    for token in tokens:
        state, logits = toy.numpy_step(state, last)
        log_prob, last = log_prob + reference.log_softmax(logits)[token], token
    return log_prob / reference.length_penalty(len(tokens), 0.6)


@pytest.mark.parametrize("compact", [False, True])
def test_samples_start_with_the_prefix_and_score_as_the_model_says(compact):
    toy = ToyDecoder(vocab_size=7, seed=3)
    batch_state = toy.initial_state(MIXED_ROWS)
    ids, scores, lengths = sample(toy, batch_state, padded(PREFIXES), compact)
    for row, prefix in enumerate(PREFIXES):
        for slot in range(ids.shape[1]):
            tokens = ids[row, slot, :lengths[row, slot]]
            assert list(tokens[:len(prefix)]) == prefix
            np.testing.assert_allclose(scores[row, slot], numpy_score(
                toy, row_state(batch_state, row), tokens), rtol=1e-5, atol=1e-5)
    for got, expected in zip(sample(toy, batch_state, padded([[]] * 4, 2), compact),
                             sample(toy, batch_state, None, compact)):
        np.testing.assert_array_equal(got, expected)  # an empty prefix is no prefix


@pytest.mark.parametrize("search", ["unrolled", "while_loop"])
@pytest.mark.parametrize("prefix, message", [
    ([[2.0], [3.0]], "target_prefix must be \\[batch, pieces\\] integers"),
    ([2, 3], "target_prefix must be \\[batch, pieces\\] integers"),
])
def test_a_prefix_of_the_wrong_kind_fails_when_building(search, prefix, message):
    toy = ToyDecoder()
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=message):
            DECODERS[search](toy.update_fn, tf.nest.map_structure(
                tf.constant, toy.initial_state([0.0, 0.0])), 4, 3, BEGIN, END,
                target_prefix=np.array(prefix))


@pytest.fixture(scope="module")
def fed_prefix_search():
    """`fed_prefix_search(decoder)`: its search over the toy with the target prefix fed
    (session, prefix placeholder, outputs), built on first use and kept for the module, so
    that every bad prefix runs on one graph."""
    built = {}

    def search(decoder):
        if decoder not in built:
            graph = tf.Graph()
            with graph.as_default():
                toy = ToyDecoder(vocab_size=7)
                given = tf.placeholder(tf.int32, [None, None])
                outputs = DECODERS[decoder](toy.update_fn, tf.nest.map_structure(
                    tf.constant, toy.initial_state([0.0, 0.0])), 4, 3, BEGIN, END,
                    target_prefix=given)
            built[decoder] = tf.Session(graph=graph), given, outputs
        return built[decoder]
    yield search
    for session, _, _ in built.values():
        session.close()


@pytest.mark.parametrize("search", ["unrolled", "compact", "greedy"])
@pytest.mark.parametrize("prefix, message", [
    ([[2], [7]], "piece ids must be < the vocabulary size"),
    ([[2], [-2]], "piece ids >= 0, then -1"),
    ([[-1, 2], [2, 2]], "piece ids >= 0, then -1"),
    ([[2]], "one row per sentence"),
    ([[2, 2, 2, 2], [2, -1, -1, -1]], "sequence_length must exceed every prefix"),
])
def test_a_bad_prefix_fails_when_run(fed_prefix_search, search, prefix, message):
    session, given, outputs = fed_prefix_search(search)
    session.run(outputs, {given: [[2], [3]]})
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        session.run(outputs, {given: prefix})
