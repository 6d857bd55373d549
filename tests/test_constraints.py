"""Lexically constrained beam search (decode/constraints.py) against independent references.

The NumPy reference (tests/numpy_constrained_search.py) runs the same search one sentence at a
time; the brute force lists every output that holds the constraints; the progress and the
allowed pieces are checked against the reference's plain definitions (a prefix the tokens end
with, a sublist they contain), and the bank allocation against fairseq's worked example.
"""

import functools

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

import numpy_constrained_search as reference
from decode import constraints as constraints_lib
from decode import rnn_beam_search, while_loop_beam_search
from decode.scoring import Scoring
from test_beam_search import BEGIN, END, MIXED_ROWS, assert_same_result, path_back
from toy_decoder import ToyDecoder, row_state

SEARCHES = {"unrolled": rnn_beam_search, "while_loop": while_loop_beam_search,
            "compact": functools.partial(while_loop_beam_search, compact=True)}
# Per row of MIXED_ROWS (never ends, neutral, ends soon, ends at once): three pieces; two
# constraints, one a piece twice; none; two pieces.
CONSTRAINTS = [[[3, 4, 5]], [[2], [5, 5]], [], [[6, 2]]]
LIMITS = [8, 6, 5, 4]


def padded(rows, width=None):
    """Per sentence a list of constraints (lists of pieces) -> [b, C, L] int32, -1 padded."""
    count = max([len(row) for row in rows] + [0])
    width = max([len(c) for row in rows for c in row] + [0]) if width is None else width
    return np.array([[list(c) + [-1] * (width - len(c)) for c in row]
                     + [[-1] * width] * (count - len(row)) for row in rows],
                    np.int32).reshape(len(rows), count, width)


def run(search, update_fn, initial_state, steps, width, constraints=None, alpha=0.6,
        **options):
    """Builds `search` in a fresh graph and runs it."""
    with tf.Graph().as_default():
        state = tf.nest.map_structure(tf.constant, initial_state)
        outputs = SEARCHES[search](update_fn, state, steps, width, BEGIN, END, alpha,
                                   constraints=constraints, **options)
        with tf.Session() as session:
            return session.run(outputs)


def numpy_results(step, row_states, steps, width, rows, limits, alpha=0.6, protected=()):
    """The NumPy reference's results, row by row."""
    results = [reference.constrained_beam_search(step, state, steps, width, BEGIN, END, alpha,
                                                 row, limit, protected)
               for state, row, limit in zip(row_states, rows, limits)]
    return tuple(np.stack(parts) for parts in zip(*results))


def assert_hold(results, rows, limits):
    """Every hypothesis found holds its sentence's constraints and ends within its limit."""
    ids, scores, lengths = results
    for row, constraints in enumerate(rows):
        for slot in np.flatnonzero(scores[row] > -np.inf):
            tokens = tuple(ids[row, slot, :lengths[row, slot]])
            assert tokens[-1] == END and len(tokens) <= limits[row]
            assert all(reference.contains(tokens, c) for c in constraints), (row, tokens)


def bigram_model(table):
    """A decoder whose logits depend only on the previous piece: (update_fn, numpy step)."""
    table = np.asarray(table, np.float32)
    return (lambda state, ids: (state, tf.gather(table, ids)),
            lambda state, token: (state, table[token]))


@pytest.mark.parametrize("search, width", [("unrolled", 3), ("while_loop", 3), ("compact", 3),
                                           ("compact", 1)])
def test_matches_numpy_reference_and_every_hypothesis_holds_its_constraints(search, width):
    toy = ToyDecoder(vocab_size=7, seed=3)
    batch_state = toy.initial_state(MIXED_ROWS)
    actual = run(search, toy.update_fn, batch_state, 8, width, padded(CONSTRAINTS),
                 max_lengths=LIMITS)
    row_states = [row_state(batch_state, row) for row in range(len(MIXED_ROWS))]
    assert_same_result(actual, numpy_results(toy.numpy_step, row_states, 8, width, CONSTRAINTS,
                                             LIMITS))
    assert_hold(actual, CONSTRAINTS, LIMITS)
    assert (actual[1][:, 0] > -np.inf).all()  # each sentence found one


@pytest.mark.parametrize("search", ["unrolled", "compact"])
def test_no_constraints_is_the_plain_search(search):
    # Every limit is within the 8 steps: with constraints, every hypothesis ends by then.
    toy = ToyDecoder(vocab_size=7, seed=3)
    batch_state = toy.initial_state(MIXED_ROWS)
    plain = run(search, toy.update_fn, batch_state, 8, 3, max_lengths=LIMITS)
    for empty in (padded([[]] * 4), padded([[[], []]] * 4, width=2)):  # [4, 0, 0], all -1
        got = run(search, toy.update_fn, batch_state, 8, 3, empty, max_lengths=LIMITS)
        for part, expected in zip(got, plain):
            np.testing.assert_array_equal(part, expected)


# Bigram logits over begin, end, 2..5, and the constraint each output must hold. Self-overlap:
# the model says "2 2 2 3", whose match of "2 2 3" breaks at the third 2 and goes on inside
# itself. Restart: the model loops "3 4 2 3 4 ..." and "3 4 5" must start again after a 2.
OVERLAP = [[-9, -9, 5, -9, -9, -9], [0] * 6, [-9, -9, 3, 1, -9, -9], [-9, 5, -9, -9, -9, -9],
           [0] * 6, [0] * 6]
RESTART = [[-9, -9, -9, 5, -9, -9], [0] * 6, [-9, -9, -9, 5, -9, -9],
           [-9, -9, -9, -9, 5, -9], [-9, -9, 5, -9, -9, 0], [-9, 5, -9, -9, -9, -9]]


@pytest.mark.parametrize("table, constraint, output", [
    (OVERLAP, [2, 2, 3], [2, 2, 2, 3, END]), (RESTART, [3, 4, 5], [3, 4, 2, 3, 4, 5, END])],
    ids=["overlap", "restart"])
def test_a_broken_match_goes_on_as_the_brute_force_says(table, constraint, output):
    update_fn, step = bigram_model(table)
    steps = len(output)  # at alpha 2 the longest output wins
    best = reference.enumerate_constrained(step, 0, steps, 6, BEGIN, END, 2.0, [constraint])[0]
    assert list(best[0][:best[2]]) == output
    for search in ("unrolled", "while_loop"):
        ids, scores, lengths = run(search, update_fn, np.zeros([1, 1], np.float32), steps, 4,
                                   padded([[constraint]]), 2.0)
        np.testing.assert_array_equal(ids[0, 0, :lengths[0, 0]], output)
        np.testing.assert_allclose(scores[0, 0], best[1], rtol=1e-5)


@pytest.mark.parametrize("rows", [[[[2, 3]], [[3, 3]]], [[[3], [2]], [[2, 2], [3]]]],
                         ids=["one", "two"])
def test_a_wide_beam_finds_the_best_output_holding_the_constraints(rows):
    # Vocab 4, 4 pieces: a beam of 40 holds every hypothesis; with alpha 0 the banks drop
    # only what cannot end better than an output already found.
    toy = ToyDecoder(vocab_size=4, seed=5, logit_scale=1.0)
    batch_state = toy.initial_state([0.0, 1.0])
    ids, scores, lengths = run("while_loop", toy.update_fn, batch_state, 4, 40, padded(rows), 0.0)
    for row, constraints in enumerate(rows):
        best = reference.enumerate_constrained(toy.numpy_step, row_state(batch_state, row), 4,
                                               4, BEGIN, END, 0.0, constraints)[0]
        np.testing.assert_array_equal(ids[row, 0], best[0])
        np.testing.assert_allclose(scores[row, 0], best[1], rtol=1e-5)


PROTECTED = [5, 6]


@pytest.mark.parametrize("search", ["unrolled", "compact"])
def test_keep_mode_takes_each_protected_piece_of_the_sentence_exactly_once(search):
    toy = ToyDecoder(vocab_size=7, seed=3)
    batch_state = toy.initial_state(MIXED_ROWS)
    rows = [[[5]], [[6], [5]], [[2, 3]], []]  # a user's constraint beside none protected
    actual = run(search, toy.update_fn, batch_state, 7, 3, padded(rows), max_lengths=LIMITS,
                 protected_ids=np.tile(PROTECTED, [4, 1]))
    row_states = [row_state(batch_state, row) for row in range(len(MIXED_ROWS))]
    assert_same_result(actual, numpy_results(toy.numpy_step, row_states, 7, 3, rows, LIMITS,
                                             protected=PROTECTED))
    ids, scores, lengths = actual
    for row, constraints in enumerate(rows):
        for slot in np.flatnonzero(scores[row] > -np.inf):
            tokens = list(ids[row, slot, :lengths[row, slot]])
            assert [tokens.count(p) for p in PROTECTED] == [[p] in constraints for p in PROTECTED]


@pytest.mark.parametrize("search", ["unrolled", "compact"])
def test_keep_mode_with_no_constraint_blocks_the_protected_pieces_without_banks(search):
    # No sentence of the batch keeps a protected piece: the plain step with them blocked gives
    # the reference's results and the constrained step's, given none (8 steps: every limit).
    toy = ToyDecoder(vocab_size=7, seed=3)
    batch_state = toy.initial_state(MIXED_ROWS)
    protected = np.tile(PROTECTED, [4, 1])
    blocked = run(search, toy.update_fn, batch_state, 8, 3, max_lengths=LIMITS,
                  protected_ids=protected)
    row_states = [row_state(batch_state, row) for row in range(len(MIXED_ROWS))]
    assert_same_result(blocked, numpy_results(toy.numpy_step, row_states, 8, 3, [[]] * 4, LIMITS,
                                              protected=PROTECTED))
    assert_same_result(blocked, run(search, toy.update_fn, batch_state, 8, 3, padded([[]] * 4),
                                    max_lengths=LIMITS, protected_ids=protected))
    assert not np.isin(blocked[0], PROTECTED).any()


def test_keep_mode_finds_the_best_output_keeping_each_protected_piece_once():
    toy = ToyDecoder(vocab_size=5, seed=2, logit_scale=1.0)
    batch_state = toy.initial_state([0.5])
    ids, scores, _ = run("while_loop", toy.update_fn, batch_state, 4, 80, padded([[[3]]]), 0.0,
                         protected_ids=[[3, 4]])
    best = reference.enumerate_constrained(toy.numpy_step, row_state(batch_state, 0), 4, 5,
                                           BEGIN, END, 0.0, [[3]], protected=[3, 4])[0]
    np.testing.assert_array_equal(ids[0, 0], best[0])
    np.testing.assert_allclose(scores[0, 0], best[1], rtol=1e-5)


@pytest.mark.parametrize("search, width", [("unrolled", 2), ("compact", 1), ("compact", 2)])
def test_constraints_that_fit_their_limit_are_always_met(search, width):
    # Every limit is exactly the constraints' pieces and the end token; the model would rather
    # end at once (end bias 2.5), and "2 3" and "2 4" share their first piece.
    toy = ToyDecoder(vocab_size=7, seed=3)
    rows = [[[2, 3], [2, 4]], [[6, 6, 6]], [[3], [4], [5], [6]], [[5, 4, 3, 2]]]
    limits = [5, 4, 5, 5]
    actual = run(search, toy.update_fn, toy.initial_state([2.5] * 4), 6, width, padded(rows),
                 max_lengths=limits)
    assert_hold(actual, rows, limits)
    assert (actual[1][:, 0] > -np.inf).all()


def test_the_trace_follows_each_constrained_hypothesis_back():
    toy = ToyDecoder(vocab_size=7, seed=3)
    ids, scores, _, trace = run("compact", toy.update_fn, toy.initial_state(MIXED_ROWS), 8, 3,
                                padded(CONSTRAINTS), max_lengths=LIMITS, trace=True)
    np.testing.assert_array_equal(trace["scores"][:, -1], scores)
    steps = ids.shape[-1]
    for row in range(len(MIXED_ROWS)):
        for slot in np.flatnonzero(scores[row] > -np.inf):
            path = path_back(trace["parent_ids"][row], slot)
            np.testing.assert_array_equal(trace["token_ids"][row][np.arange(steps), path],
                                          ids[row, slot])


@pytest.mark.parametrize("constraints, limits, message", [
    ([[[2, 3, 4]]], [3], "must fit in its limit"),      # 3 pieces and the end: 4
    ([[[2, -1, 3]]], [9], "piece ids >= 0, then -1"),
    ([[[2]], [[3]]], [9], "one row per sentence"),
])
def test_bad_constraints_fail_when_run(constraints, limits, message):
    toy = ToyDecoder()
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        run("while_loop", toy.update_fn, toy.initial_state([0.0]), 9, 2,
            np.array(constraints, np.int32), max_lengths=limits)


@pytest.mark.parametrize("constraints, options, message", [
    ([[[2.0]]], {}, "constraints must be \\[batch, constraints, pieces\\] integers"),
    ([[2, 3]], {}, "constraints must be \\[batch, constraints, pieces\\] integers"),
    ([[[2]]], {"alpha": Scoring(diverse_beam_groups=2)}, "diverse beam groups"),
])
def test_constraints_of_the_wrong_kind_fail_when_building(constraints, options, message):
    toy = ToyDecoder()
    with pytest.raises(ValueError, match=message):
        run("unrolled", toy.update_fn, toy.initial_state([0.0]), 4, 2, constraints, **options)


def run_functions(build):
    """Runs what `build()` returns, built in a fresh graph."""
    with tf.Graph().as_default():
        outputs = build()
        with tf.Session() as session:
            return session.run(outputs)


def test_progress_is_the_longest_prefix_each_hypothesis_ends_with():
    rows = [[[2, 2, 3], [3, 2], [4]], [[2, 3, 2, 3, 4], [], [3, 3]]]
    sequences = np.random.RandomState(0).randint(2, 5, size=[2, 3, 12])  # [b, k, time]

    def build():
        constraints, progress = constraints_lib.start(padded(rows), [99, 99], 3)
        steps = []
        for time in range(sequences.shape[2]):
            progress = constraints_lib.advance(constraints, progress,
                                               sequences[:, :, time:time + 1])[:, :, 0]
            steps.append(progress)
        return steps

    steps = run_functions(build)
    for row, constraints in enumerate(rows):
        for slot in range(3):
            for time, progress in enumerate(steps):
                tokens = tuple(sequences[row, slot, :time + 1])
                expected = [reference.matched(tokens, tuple(c)) for c in constraints]
                assert list(progress[row, slot, :len(constraints)]) == expected, tokens


def test_each_slot_offers_its_best_and_the_next_pieces_it_may_take():
    # Keep mode with protected 5 and 6: sentence 0 keeps 5 (met by some slots), sentence 1
    # neither; the end token waits for every constraint.
    rows = [[[5], [2, 3, 4]], [[3, 3]]]
    prefixes = [[[2, 3], [5, 2], [5, 2, 3, 4], [4]], [[3], [3, 3], [2], [6]]]
    logits = np.random.RandomState(1).randn(2, 4, 7).astype(np.float32)

    def build():
        constraints, progress = constraints_lib.start(padded(rows), [99, 99], 4,
                                                      protected_ids=[PROTECTED, PROTECTED])
        for time in range(4):  # each slot's prefix; past it, a slot keeps its progress
            pieces = [[(p + [0] * 4)[time] for p in row] for row in prefixes]
            after = constraints_lib.advance(constraints, progress, np.array(pieces)[..., None])
            progress = tf.where_v2(np.array([[len(p) > time for p in row] for row in prefixes]
                                            )[..., None], after[:, :, 0], progress)
        blocked = constraints_lib.blocked(constraints, progress, 7, END)
        allowed = tf.where_v2(blocked, -np.inf, logits)
        return constraints_lib.with_next_pieces(*tf.nn.top_k(allowed, 4), allowed, constraints,
                                                progress)

    offered_logits, offered = run_functions(build)
    for row, constraints in enumerate(rows):
        for slot, prefix in enumerate(prefixes[row]):
            finite = offered_logits[row, slot] > -np.inf
            expected = reference.offers(tuple(prefix), reference.log_softmax(logits[row, slot]),
                                        4, END, [tuple(c) for c in constraints], PROTECTED)
            assert list(offered[row, slot][finite]) == expected, (row, prefix)


def test_round_robin_takes_each_banks_best_from_the_highest_down():
    # fairseq's worked example (LexicallyConstrainedBeamSearch.step_sentence): candidates by
    # score within banks 3 3 3 2 2 2 2 1 1 1 0 0 are taken as banks 3 2 1 0 3 2 1 0 3 2 1 2.
    banks = np.array([[3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 0, 0]], np.int32)
    scores = -np.arange(12, dtype=np.float32)[None]
    shuffle = np.random.RandomState(2).permutation(12)  # the order offered does not matter
    best = run_functions(lambda: constraints_lib._round_robin(  # pylint: disable=protected-access
        tf.constant(scores[:, shuffle]), tf.constant(banks[:, shuffle]), 12))
    taken = banks[0, shuffle][best[0]]
    assert list(taken) == [3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 2]
    assert list(scores[0, shuffle][best[0]][:4]) == [0, -3, -7, -10]  # each bank's best first
