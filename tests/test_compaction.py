"""Compaction (decode/compaction.py) against the full-size search, a second code path.

`while_loop_beam_search(compact=True)` must return what `compact=False` returns, and trace
what it traces up to the step that decides each sentence; the full search's own trace says
when that is (every slot finished or impossible) and how many sentences each step must run.
On fewer rows the products round differently, so "the same" is tests/same_hypotheses.py's.
"""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from decode import greedy_search, while_loop_beam_search
from decode.sampling import Sampling, sample_search
from decode.scoring import Scoring
from tests.same_hypotheses import (SCORE_TOLERANCE, assert_same_hypotheses, hypotheses,
                                   trace_steps)
from tests.test_decoding_options import OPTION_SETS, SOURCE_LENGTHS, SOURCE_TIME, AttentionToy
from tests.toy_decoder import ToyDecoder

BEGIN, END = 0, 1
# end_bias per batch row: never ends, neutral, ends soon, ends at once, and two more.
MIXED_ROWS = [-3.0, 0.0, 0.8, 2.5, 1.5, -0.5]
MIXED_LIMITS = [3, 1, 5, 2, 7, 4]


def counting(update_fn, live_rows):
    """update_fn that appends the number of sentences it runs on to `live_rows`, each step."""
    def update(state, ids):
        count = tf.py_func(lambda n: live_rows.append(int(n)) or n, [tf.shape(ids)[0]], tf.int32)
        with tf.control_dependencies([count]):
            return update_fn(state, ids)
    return update


def run_both(update_fn, batch_state, steps, beam_width, scoring, max_lengths=None, trace=True,
             source_mask=None, search=while_loop_beam_search):
    """(full-size results, compacted results, the compacted search's sentences per step)."""
    live_rows = []
    with tf.Graph().as_default():
        state = tf.nest.map_structure(tf.constant, batch_state)
        mask = None if source_mask is None else tf.constant(source_mask)
        outputs = [search(fn, state, steps, beam_width, BEGIN, END, scoring,
                          max_lengths=max_lengths, trace=trace, source_mask=mask, compact=compact)
                   for compact, fn in ((False, update_fn), (True, counting(update_fn, live_rows)))]
        with tf.Session() as session:
            full, compacted = session.run(outputs)
    return full, compacted, live_rows


def decided_after(trace):
    """[batch] the step (0-based) after which each sentence's slots have all finished, from a
    trace; the last step for a sentence still undecided."""
    done = np.all(trace["finished"] | (trace["scores"] == -np.inf), axis=2)  # [b, t]
    return np.where(done.any(axis=1), done.argmax(axis=1), done.shape[1] - 1)


def assert_same_results(full, compacted, end_token_id=END):
    """The same hypotheses (tests/same_hypotheses.py's rule) and, traced, the same steps up to
    each sentence's deciding step; after it the compacted trace holds what the full search holds
    in every possible slot: the end token, the slot itself as parent, its score, finished.
    Returns the sentences in a float tie."""
    if len(full) == 3:
        return assert_same_hypotheses(hypotheses(*compacted), hypotheses(*full))
    trace, full_trace = compacted[3], full[3]
    decided = decided_after(full_trace)
    tied = assert_same_hypotheses(
        hypotheses(*compacted[:3]), hypotheses(*full[:3]),
        [steps[:last + 1] for steps, last in zip(trace_steps(trace), decided)],
        [steps[:last + 1] for steps, last in zip(trace_steps(full_trace), decided)])
    for row, last in enumerate(decided):
        if row in tied:
            continue
        after = slice(last + 1, None)
        possible = full_trace["scores"][row, after] > -np.inf                  # [t', k]
        slots = np.broadcast_to(np.arange(trace["parent_ids"].shape[2]), possible.shape)
        assert (trace["token_ids"][row, after] == end_token_id).all()
        np.testing.assert_array_equal(trace["parent_ids"][row, after], slots)
        assert trace["finished"][row, after].all()
        np.testing.assert_allclose(trace["scores"][row, after], full_trace["scores"][row, after],
                                   rtol=0, atol=SCORE_TOLERANCE)
        for key, expected in (("token_ids", end_token_id), ("parent_ids", slots),
                              ("finished", True)):
            np.testing.assert_array_equal(full_trace[key][row, after][possible],
                                          np.broadcast_to(expected, possible.shape)[possible],
                                          err_msg="the full search changed a decided " + key)
    return tied


def assert_rows_leave_when_decided(full, compacted, live_rows, tied=()):
    """Each step runs exactly the sentences the full trace shows undecided before it (the
    compacted one's own trace for a sentence in a float tie, whose beams differ)."""
    decided = decided_after(full[3])
    for row in tied:
        decided[row] = decided_after(compacted[3])[row]
    steps = compacted[3]["token_ids"].shape[1]
    assert live_rows == [int((decided >= step).sum()) for step in range(steps)]


@pytest.mark.parametrize("limits", [None, MIXED_LIMITS], ids=["free", "limits"])
@pytest.mark.parametrize("alpha", [0.0, 0.6])
@pytest.mark.parametrize("beam_width", [1, 2, 5, 16])  # 16 > vocab 7
def test_compacted_search_returns_the_full_searchs_hypotheses(beam_width, alpha, limits):
    toy = ToyDecoder(vocab_size=7, seed=3)
    full, compacted, live_rows = run_both(toy.update_fn, toy.initial_state(MIXED_ROWS), 7,
                                          beam_width, alpha, max_lengths=limits)
    tied = assert_same_results(full, compacted)
    assert_rows_leave_when_decided(full, compacted, live_rows, tied)
    assert live_rows[-1] < len(MIXED_ROWS), "no sentence left the batch"


@pytest.mark.parametrize("limits", [None, SOURCE_LENGTHS], ids=["free", "limits"])
@pytest.mark.parametrize("name", sorted(OPTION_SETS))
def test_compacted_search_equals_the_full_one_under_every_option(name, limits):
    # The toy's attention reads the source mask from the state, where compaction drops its rows.
    toy = AttentionToy(vocab_size=6, end_token_id=END, seed=1)
    mask = (np.arange(SOURCE_TIME) < np.array(SOURCE_LENGTHS)[:, None]).astype(np.float32)

    def update_fn(state, ids):
        toy_state = {key: value for key, value in state.items() if key != "source_mask"}
        new_state, logits = toy.tf_update_fn(state["source_mask"][:, 0])(toy_state, ids)
        return dict(new_state, source_mask=state["source_mask"]), logits

    batch_state = dict(toy.initial_state([-0.5, 2.0, 0.0]), source_mask=mask,
                       attention=np.zeros_like(mask))
    for beam_width in (1, 4):
        full, compacted, live_rows = run_both(update_fn, batch_state, 8, beam_width,
                                              OPTION_SETS[name], limits, source_mask=mask)
        tied = assert_same_results(full, compacted)
        assert_rows_leave_when_decided(full, compacted, live_rows, tied)


def test_greedy_compacts_as_the_beam_of_one():
    toy = ToyDecoder(vocab_size=7, seed=5)

    def greedy(update_fn, state, steps, width, *args, **kwargs):
        return greedy_search(update_fn, state, steps, *args, **kwargs)
    full, compacted, live_rows = run_both(toy.update_fn, toy.initial_state(MIXED_ROWS), 7, 1,
                                          Scoring(0.6), MIXED_LIMITS, search=greedy)
    tied = assert_same_results(full, compacted)
    assert_rows_leave_when_decided(full, compacted, live_rows, tied)


@pytest.mark.parametrize("limits", [None, MIXED_LIMITS], ids=["free", "limits"])
def test_sampling_compacts_and_draws_the_same_samples(limits):
    # Each sentence draws from its own seed, so leaving the batch changes none of its draws.
    toy = ToyDecoder(vocab_size=7, seed=3)

    def sample(update_fn, state, steps, width, begin, end, scoring, trace, **kwargs):
        keys = tf.constant(np.arange(len(MIXED_ROWS)) * 7 + 1, tf.int64)
        return sample_search(update_fn, state, steps, width, begin, end, scoring,
                             Sampling(temperature=1.5, top_p=0.9, seed=3), keys, **kwargs)
    full, compacted, live_rows = run_both(toy.update_fn, toy.initial_state(MIXED_ROWS), 9, 4,
                                          Scoring(0.6), limits, trace=False, search=sample)
    assert_same_results(full, compacted)
    assert live_rows == sorted(live_rows, reverse=True) and live_rows[-1] < len(MIXED_ROWS)


def test_untraced_compacted_search_returns_the_same():
    toy = ToyDecoder(vocab_size=11, hidden_size=8, seed=7)
    full, compacted, _ = run_both(toy.update_fn, toy.initial_state(MIXED_ROWS), 9, 4, 0.6,
                                  MIXED_LIMITS, trace=False)
    assert len(compacted) == 3
    assert_same_results(full, compacted)


def test_every_sentence_decided_at_the_first_step_ends_the_loop():
    # Beam 1 and a limit of 1 everywhere: all rows leave after step 0, the loop stops.
    toy = ToyDecoder(vocab_size=7, seed=3)
    full, compacted, live_rows = run_both(toy.update_fn, toy.initial_state(MIXED_ROWS), 5, 1, 0.0,
                                          [1] * len(MIXED_ROWS))
    assert live_rows == [len(MIXED_ROWS)] and compacted[0].shape[-1] == 1
    assert_same_results(full, compacted)


def test_model_search_compacts_on_a_trained_model(tiny_model_dir, tiny_config):
    """The tiny trained model's own update_fn, beams 1 to 16, its sentences' length limits."""
    import os

    from data_pipeline.tokenizer import BOS_ID, EOS_ID, Tokenizer
    from decode.graphs import output_length_limits, pad_batch
    from seq2seq.model_dir import find_checkpoint
    from seq2seq.config import load_config
    from seq2seq.model import Seq2SeqModel
    config = load_config(os.path.join(tiny_model_dir, "config.yaml"))
    tokenizer = Tokenizer.load(tiny_model_dir)
    with open(os.path.join(tiny_config["data"]["data_dir"], "dev.src"), encoding="utf-8") as f:
        sources = [tokenizer.encode_source(line.strip()) for _, line in zip(range(48), f)]
    source_ids, source_length = pad_batch([ids for ids in sources if ids])
    with tf.Graph().as_default(), tf.Session() as session:
        model = Seq2SeqModel(config["model"], tokenizer.source_vocab_size,
                             tokenizer.target_vocab_size)
        encoded = model.encode(tf.constant(source_ids), tf.constant(source_length), False)
        limits = output_length_limits(tf.constant(source_length), config["decode"])
        outputs, live_rows = {}, {}
        for beam_width in (1, 5, 16):
            update_fn, initial_state = model.beam_update_fn(encoded, beam_width,
                                                            with_attention=True)
            live_rows[beam_width] = []
            outputs[beam_width] = [while_loop_beam_search(
                fn, initial_state, tf.reduce_max(limits), beam_width, BOS_ID, EOS_ID, 0.6,
                max_lengths=limits, trace=True, compact=compact) for compact, fn in (
                    (False, update_fn), (True, counting(update_fn, live_rows[beam_width])))]
        tf.train.Saver(model.variables).restore(session, find_checkpoint(tiny_model_dir))
        outputs = session.run(outputs)
    for beam_width, (full, compacted) in outputs.items():
        tied = assert_same_results(full, compacted, EOS_ID)
        assert_rows_leave_when_decided(full, compacted, live_rows[beam_width], tied)
        for row, last in enumerate(decided_after(full[3])):  # attention along each hypothesis
            possible = full[1][row] > -np.inf                                  # [k]
            if row not in tied:
                np.testing.assert_allclose(compacted[3]["attention"][row, possible, :last + 1],
                                           full[3]["attention"][row, possible, :last + 1],
                                           rtol=0, atol=SCORE_TOLERANCE)
