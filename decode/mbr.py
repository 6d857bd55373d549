"""Minimum Bayes risk (MBR) decoding: the candidate the model's own samples agree with most.

A candidate's expected utility is its mean utility against pseudo-references drawn from the
model (Eikema & Aziz 2020; Freitag et al. 2022). It reranks decoded text, so it is NumPy and
sacrebleu only; the choices and the reasons: docs/DECODING-NOTES.md.
"""

import collections

import numpy as np
from sacrebleu.metrics import BLEU, CHRF

UTILITIES = {"chrf": CHRF, "bleu": lambda: BLEU(effective_order=True)}  # sentence-level, 0..100

MbrCandidate = collections.namedtuple("MbrCandidate", "index text score expected_utility")
MbrResult = collections.namedtuple("MbrResult", "index text expected_utility candidates utilities")
MbrResult.__doc__ = """The chosen candidate's index, text and expected utility; every
`MbrCandidate` (its index among the candidates, text, model score, expected utility), best first;
and the utilities [candidates, pseudo-references] float64, in the order given."""


def utility_matrix(candidates, references, utility="chrf"):
    """U [len(candidates), len(references)] float64, U[c, r] = utility(candidates[c] against
    references[r]); a repeated text is scored once, its row or column repeated."""
    if utility not in UTILITIES:
        raise ValueError("unknown MBR utility %r; the utilities are %s"
                         % (utility, ", ".join(UTILITIES)))
    metric = UTILITIES[utility]()  # one per call: the server calls from many threads
    rows, row_of = np.unique(candidates, return_inverse=True)
    columns, column_of = np.unique(references, return_inverse=True)
    distinct = np.array([[metric.sentence_score(row, [column]).score for column in columns]
                         for row in rows], np.float64).reshape(len(rows), len(columns))
    return distinct[np.ix_(row_of, column_of)]


def mbr_choose(candidates, candidate_scores, pseudo_references, utility="chrf"):
    """The candidate of highest expected utility: its mean utility against every
    pseudo-reference, each copy of a repeated one counted, itself included when the pools are
    the same. Ties: the higher model score, then the earlier candidate.

    Args:
      candidates: [C] texts; candidate_scores: [C] their model scores;
      pseudo_references: [R] texts, R >= 1; utility: a name of UTILITIES.
    Returns:
      An MbrResult.
    """
    if len(candidates) != len(candidate_scores) or not candidates or not pseudo_references:
        raise ValueError("MBR needs candidates (%d), as many scores (%d) and pseudo-references "
                         "(%d)" % (len(candidates), len(candidate_scores), len(pseudo_references)))
    utilities = utility_matrix(candidates, pseudo_references, utility)
    expected = utilities.mean(axis=1)                                            # [C]
    order = sorted(range(len(candidates)), key=lambda c: (-expected[c], -candidate_scores[c], c))
    ranked = [MbrCandidate(c, candidates[c], float(candidate_scores[c]), float(expected[c]))
              for c in order]
    return MbrResult(order[0], candidates[order[0]], ranked[0].expected_utility, ranked, utilities)


def oracle_choice(candidates, reference, utility="chrf"):
    """(index, utility) of the candidate closest to the reference (ties: the earlier): what
    a perfect reranker of these candidates would pick."""
    utilities = utility_matrix(candidates, [reference], utility)[:, 0]
    best = int(np.argmax(utilities))
    return best, float(utilities[best])


def rerank(candidates, pseudo_references, detokenize, utility="chrf"):
    """MBR over a sentence's search results: `candidates` (a decode.graphs.SearchResult) reordered
    best first by `mbr_choose` against `pseudo_references`' (another), both `detokenize`d (ids
    -> text), the MbrResult as its `mbr`."""
    result = mbr_choose([detokenize(ids) for ids in candidates.ids], candidates.scores,
                        [detokenize(ids) for ids in pseudo_references.ids], utility)
    order = [candidate.index for candidate in result.candidates]
    return candidates._replace(ids=[candidates.ids[index] for index in order],
                               scores=[candidates.scores[index] for index in order], mbr=result)


def mbr_fields(result):
    """A Translation's mbr fields of an MbrResult (None: none): expected_utility, candidates
    (MbrCandidates, best first) and utilities (lists, the candidates in their `index` order)."""
    if result is None:
        return {}
    return dict(expected_utility=result.expected_utility, candidates=result.candidates,
                utilities=result.utilities.tolist())
