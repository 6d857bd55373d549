"""Plain NumPy references for the decoder tests, written independently of decode/.

Every function works on one batch row at a time with Python lists, in float64,
and calls a per-hypothesis step function `step(state, token) -> (state, logits)`.
`beam_search` is the straightforward algorithm: the full log-softmax, every
beam x vocab candidate in one list, one stable sort. `enumerate_sequences`
scores every possible output for brute-force checks.

All three take an optional `max_length`, a sentence's own length limit (end
token included), modelled on fairseq: at the last allowed step every token
but the end token is dropped *after* the log-softmax, so a forced end token
costs its true log-probability like any other. The searches also take a
`prefix` (CTranslate2's target_prefix): inside it every other token is
dropped the same way, and the limit is raised to leave room for the prefix
and the end token.

What it checks: `decode/beam_search.py` (`beam_step`, the step that
docs/WALKTHROUGH.md section 7 explains) through tests/test_beam_search.py,
test_greedy.py, test_diverse_beam.py, test_target_prefix.py,
test_decoding_options.py, test_epsilon.py and test_exact_search.py.
"""

import collections
import itertools

import numpy as np

Hypothesis = collections.namedtuple("Hypothesis", ["tokens", "log_prob", "finished", "state"])


def log_softmax(logits):
    """log-softmax of a [vocab] vector, in float64."""
    logits = np.asarray(logits, np.float64)
    shifted = logits - logits.max()
    return shifted - np.log(np.exp(shifted).sum())


def length_penalty(length, alpha):
    """((5 + length) / 6) ** alpha."""
    return ((5.0 + length) / 6.0) ** alpha


def score(hypothesis, alpha):
    return hypothesis.log_prob / length_penalty(len(hypothesis.tokens), alpha)


def _padded(tokens, sequence_length, end_token_id):
    return list(tokens) + [end_token_id] * (sequence_length - len(tokens))


def _at_limit(step, max_length):
    """True when the token chosen at `step` (0-based) is the last `max_length` allows."""
    return max_length is not None and step + 1 >= max_length


def _allowed(token, position, end_token_id, max_length, prefix):
    """Whether `token` may be chosen at `position` (0-based): inside the prefix only its
    token, at the limit only the end token, else any."""
    if position < len(prefix):
        return token == prefix[position]
    return token == end_token_id or not _at_limit(position, max_length)


def _room_for(prefix, max_length):
    """The limit, raised to hold the prefix and the end token."""
    return max_length if max_length is None else max(max_length, len(prefix) + 1)


def beam_search(step, initial_state, sequence_length, beam_width, begin_token_id,
                end_token_id, alpha, max_length=None, groups=1, strength=0.0, prefix=()):
    """Beam search over one sentence, with finished hypotheses kept in the beam.

    Each step, a finished hypothesis is one candidate (itself, score unchanged);
    an alive one gives one candidate per token (only the end token, at
    `max_length`). Candidates are listed by (beam, token), stable-sorted by
    score (best first), and the first `beam_width` with a finite score are kept.

    Diverse beam search (`groups` G > 1, Hamming diversity as fairseq's): the
    beam is G groups of beam_width / G, each started from the empty hypothesis;
    group after group, a candidate that extends an alive hypothesis ranks by its
    score minus `strength` times the number of hypotheses of the groups before
    that took its token at this step, and each group keeps its own best. The
    results are all the groups' hypotheses by score (stable: group by group).

    Returns:
      (ids [beam, sequence_length], scores [beam], lengths [beam]) as NumPy
      arrays; rows beyond the possible hypotheses have score -inf, ids all
      end_token_id and length 0.
    """
    max_length = _room_for(prefix, max_length)
    beams = [[Hypothesis((), 0.0, False, initial_state)] for _ in range(groups)]
    for position in range(sequence_length):
        taken = collections.Counter()  # tokens taken at this step by the groups so far
        for group, beam in enumerate(beams):
            candidates = []  # (the score it ranks by, hypothesis)
            for hypothesis in beam:
                if hypothesis.finished:
                    candidates.append((score(hypothesis, alpha), hypothesis))
                    continue
                last = hypothesis.tokens[-1] if hypothesis.tokens else begin_token_id
                state, logits = step(hypothesis.state, last)
                for token, log_prob in enumerate(log_softmax(logits)):
                    if not _allowed(token, position, end_token_id, max_length, prefix):
                        continue
                    new = Hypothesis(hypothesis.tokens + (token,), hypothesis.log_prob + log_prob,
                                     token == end_token_id, state)
                    candidates.append((score(new, alpha) - strength * taken[token], new))
            candidates = [c for c in candidates if c[0] > -np.inf]
            candidates.sort(key=lambda c: -c[0])  # list.sort is stable
            beams[group] = [h for _, h in candidates[:beam_width // groups]]
            taken.update(h.tokens[-1] for h in beams[group] if len(h.tokens) == position + 1)
    return results(sum(beams, []), beam_width, sequence_length, end_token_id, alpha)


def results(beam, beam_width, sequence_length, end_token_id, alpha):
    """The contract's (ids [beam_width, sequence_length], scores, lengths) of the hypotheses
    `beam`, best first, filled to `beam_width` with impossible ones (-inf, all end token)."""
    beam = sorted(beam, key=lambda h: -score(h, alpha))
    ids = [_padded(h.tokens, sequence_length, end_token_id) for h in beam]
    scores = [score(h, alpha) for h in beam]
    lengths = [len(h.tokens) for h in beam]
    for _ in range(beam_width - len(beam)):
        ids.append([end_token_id] * sequence_length)
        scores.append(-np.inf)
        lengths.append(0)
    return np.array(ids).reshape(beam_width, sequence_length), np.array(scores), np.array(lengths)


def greedy(step, initial_state, sequence_length, begin_token_id, end_token_id, alpha,
           max_length=None, prefix=()):
    """Greedy decoding of one sentence: (ids [sequence_length], score, length)."""
    state, tokens, log_prob = initial_state, [], 0.0
    max_length = _room_for(prefix, max_length)
    while len(tokens) < sequence_length and end_token_id not in tokens:
        state, logits = step(state, tokens[-1] if tokens else begin_token_id)
        log_probs = log_softmax(logits)
        tokens.append(max((token for token in range(len(log_probs)) if _allowed(
            token, len(tokens), end_token_id, max_length, prefix)), key=lambda t: log_probs[t]))
        log_prob += log_probs[tokens[-1]]
    return (np.array(_padded(tokens, sequence_length, end_token_id)),
            log_prob / length_penalty(len(tokens), alpha), len(tokens))


def enumerate_sequences(step, initial_state, sequence_length, vocab_size, begin_token_id,
                        end_token_id, alpha, max_length=None):
    """Every possible output of one sentence, best first.

    The outputs are the sequences that end with the end token after at most
    `sequence_length` tokens, and at most `max_length` if given (and hold it
    nowhere else), plus all `sequence_length`-token sequences without it
    unless `max_length` forces them to end by then.

    Returns:
      A list of (ids padded to sequence_length, score, length), best first.
    """
    others = [t for t in range(vocab_size) if t != end_token_id]
    ends_by = sequence_length if max_length is None else min(sequence_length, max_length)
    sequences = [prefix + (end_token_id,)
                 for length in range(ends_by)
                 for prefix in itertools.product(others, repeat=length)]
    if max_length is None or sequence_length < max_length:
        sequences += list(itertools.product(others, repeat=sequence_length))
    results = []
    for tokens in sequences:
        state, last, log_prob = initial_state, begin_token_id, 0.0
        for token in tokens:
            state, logits = step(state, last)
            log_prob += log_softmax(logits)[token]
            last = token
        results.append((_padded(tokens, sequence_length, end_token_id),
                        log_prob / length_penalty(len(tokens), alpha), len(tokens)))
    results.sort(key=lambda result: -result[1])
    return results
