"""The one rule by which two decodes of the same sentences on different batch shapes agree.

Matrix products round differently with the batch's shape (a sentence alone or in a batch,
compacted or not, split over threads, served in a batch of requests, unrolled or in a
while_loop), and differently again on each instruction set: oneDNN and Eigen pick their kernels
by both. Scores then differ by about 1e-6, and which CPU's rounding matches which is chance, so
floats compared bit for bit across shapes pass on one CPU and fail on another. The rule:

- every score (a log-probability, normalised or not) within SCORE_TOLERANCE, absolute, and so
  every other float of a hypothesis (its attention);
- every hypothesis (its ids up to its length, or its text) exactly, except where a float tie
  explains the difference: hypotheses within SCORE_TOLERANCE of each other swapped slots, or
  the last slot (the edge of the beam, or of the n-best list) went to another candidate within
  SCORE_TOLERANCE of it. Each tie is reported as a FloatTie warning (pytest's warnings summary)
  naming the sentence and step;
- with traces, each step likewise: its slots' tokens, parents and finished flags exactly, its
  scores within SCORE_TOLERANCE. After a tie the two searches hold different beams, so that
  sentence's later steps and its hypotheses are not compared.

Decodes on the same shapes (traced or not, run twice) are still compared exactly.
"""

import warnings

import numpy as np

SCORE_TOLERANCE = 1e-5


class FloatTie(UserWarning):
    """Two decodes kept different candidates whose scores tie within SCORE_TOLERANCE."""


def hypotheses(ids, scores, lengths, attention=None):
    """Per sentence, its hypotheses best first as (key, score[, attention]) for
    `assert_same_hypotheses`, from a search's outputs.

    Args:
      ids: [batch, beam, time] int; scores, lengths: [batch, beam].
      attention: optional [batch, beam, time', source] floats, compared as scores are.
    Returns:
      A list per sentence of (its ids up to its length, score[, attention]) per slot.
    """
    return [[(tuple(ids[row, slot, :lengths[row, slot]].tolist()), scores[row, slot])
             + (() if attention is None else (attention[row, slot],))
             for slot in range(ids.shape[1])] for row in range(ids.shape[0])]


def n_best(translations):
    """Per sentence, its n-best as (text, score), from Translations or from their JSON."""
    return [[(h["text"], h["score"]) if isinstance(h, dict) else (h.text, h.score)
             for h in (t["n_best"] if isinstance(t, dict) else t.n_best)] for t in translations]


def trace_steps(trace):
    """Per sentence, per step, its slots as ((token, parent, finished), score), from a search's
    trace {"token_ids", "parent_ids", "finished", "scores": [batch, time, beam]}."""
    keys = np.stack([trace["token_ids"], trace["parent_ids"], trace["finished"]], -1).tolist()
    return [[list(zip(map(tuple, step_keys), step_scores))
             for step_keys, step_scores in zip(row_keys, row_scores)]
            for row_keys, row_scores in zip(keys, trace["scores"])]


def json_trace(trace):
    """One sentence's docs/API.md search trace (JSON) as (its steps as `trace_steps` gives them,
    its n-best as (pieces, score, attention) with the last step's scores)."""
    steps = [[((piece, parent, finished), -np.inf if score is None else score)
              for piece, parent, finished, score in zip(
                  step["pieces"], step["parents"], step["finished"], step["scores"])]
             for step in trace["steps"]]
    n_best = [(tuple(hypothesis["pieces"]), score, np.array(hypothesis["attention"]))
              for hypothesis, (_, score) in zip(trace["n_best"], steps[-1])]
    return steps, n_best


def assert_same_hypotheses(got, want, got_steps=None, want_steps=None):
    """Asserts that two decodes of the same sentences agree by the module's rule.

    Args:
      got, want: per sentence, its hypotheses best first, each (key, score, *floats): the key
        compared exactly (ids up to the length, a text), the floats (attention) as the score is.
      got_steps, want_steps: optional traces, per sentence, per step, its slots as
        ((token, parent, finished), score) (`trace_steps`, `json_trace`).
    Returns:
      The set of the sentences in which a float tie was found.
    """
    assert len(got) == len(want), "%d sentences, expected %d" % (len(got), len(want))
    tied = set()
    for sentence in range(len(got)):
        if got_steps is not None:
            for step, (got_slots, want_slots) in enumerate(zip(got_steps[sentence],
                                                                want_steps[sentence])):
                if _tie_in(got_slots, want_slots, "sentence %d, step %d" % (sentence, step)):
                    tied.add(sentence)
                    break
            else:
                assert len(got_steps[sentence]) == len(want_steps[sentence]), \
                    "sentence %d: %d steps, expected %d" % (
                        sentence, len(got_steps[sentence]), len(want_steps[sentence]))
        if sentence not in tied and _tie_in(got[sentence], want[sentence],
                                            "sentence %d" % sentence):
            tied.add(sentence)
    return tied


def assert_same_trace(got, want):
    """Two docs/API.md search traces (JSON) of one sentence: the same keys and source pieces,
    steps and n-best by the module's rule. Returns whether a float tie was found."""
    assert sorted(got) == sorted(want) and got["source_pieces"] == want["source_pieces"]
    (got_steps, got_n_best), (want_steps, want_n_best) = json_trace(got), json_trace(want)
    return bool(assert_same_hypotheses([got_n_best], [want_n_best], [got_steps], [want_steps]))


def _tie_in(got, want, where):
    """Compares two rankings (slots best first of (key, score, *floats)); whether a float
    tie explains the keys in which they differ. Fails where none does."""
    assert len(got) == len(want), "%s: %d slots, expected %d" % (where, len(got), len(want))
    np.testing.assert_allclose([slot[1] for slot in got], [slot[1] for slot in want], rtol=0,
                               atol=SCORE_TOLERANCE, err_msg=where + ": scores")
    differ = [slot for slot in range(len(got)) if got[slot][0] != want[slot][0]]
    for slot in sorted(set(range(len(got))) - set(differ)):
        for got_floats, want_floats in zip(got[slot][2:], want[slot][2:]):
            np.testing.assert_allclose(got_floats, want_floats, rtol=0, atol=SCORE_TOLERANCE,
                                       err_msg="%s, slot %d" % (where, slot))
    if not differ:
        return False
    only_got = {got[slot][0] for slot in differ} - {want[slot][0] for slot in differ}
    only_want = {want[slot][0] for slot in differ} - {got[slot][0] for slot in differ}
    assert only_got <= {got[-1][0]} and only_want <= {want[-1][0]}, (
        "%s: slots %s hold other hypotheses, and no float tie explains it:\n got %s\nwant %s"
        % (where, differ, [got[slot][:2] for slot in differ], [want[slot][:2] for slot in differ]))
    warnings.warn(FloatTie("%s: a float tie at slots %s: %s against %s" % (
        where, differ, [got[slot][:2] for slot in differ], [want[slot][:2] for slot in differ])))
    return True
