"""A plain NumPy reference of lexically constrained beam search, written independently of
decode/ (decode/constraints.py is the TensorFlow one).

One sentence at a time, with Python lists, in float64, calling a per-hypothesis step function
`step(state, token) -> (state, logits)`, as tests/numpy_beam_search.py, whose scoring it uses.
Dynamic beam allocation (Post & Vilar 2018) as Hu et al. (2019) vectorise it; a constraint is a
tuple of pieces and a hypothesis holds it when the pieces appear in a row. Each step:

- A hypothesis's bank is the pieces of the constraints it holds plus the longest prefix of an
  unmet constraint that it ends with.
- An alive hypothesis offers its min(k, v) likeliest allowed pieces (ties: the lower id), then
  each unmet constraint's next piece (after its longest matched prefix) not offered yet, if
  allowed. The end token is allowed only once every constraint is met; at the length limit
  only the end token is offered, and taking it with a constraint unmet leaves no hypothesis.
  With `protected` (keep mode) a protected piece is allowed only as a single-piece constraint
  not met yet. A finished hypothesis offers itself.
- Once a candidate has ended with every constraint met, the candidates of lower banks that
  score worse than the best such are dropped.
- The k kept: each bank's best (ties: the candidate offered first), from the highest bank
  down, then each bank's second, and so on.

`enumerate_constrained` is the brute force: every output meeting the constraints, best first.
"""

import numpy as np

from numpy_beam_search import Hypothesis, enumerate_sequences, log_softmax, results, score


def contains(tokens, constraint):
    """Whether the pieces of `constraint` appear in a row in `tokens`."""
    size = len(constraint)
    return any(tuple(tokens[i:i + size]) == tuple(constraint)
               for i in range(len(tokens) - size + 1))


def matched(tokens, constraint):
    """The longest prefix of `constraint` that `tokens` ends with (its length once held)."""
    if contains(tokens, constraint):
        return len(constraint)
    return max(size for size in range(len(constraint) + 1)
               if size <= len(tokens) and tuple(tokens[len(tokens) - size:]) == constraint[:size])


def bank(tokens, constraints):
    """The pieces of the held constraints plus the longest match of an unmet one."""
    held = [len(c) for c in constraints if contains(tokens, c)]
    partial = [matched(tokens, c) for c in constraints if not contains(tokens, c)]
    return sum(held) + max(partial, default=0)


def allowed(tokens, token, end_token_id, constraints, protected):
    """Whether a hypothesis of `tokens` may take `token` next (the length limit aside)."""
    if token == end_token_id:
        return all(contains(tokens, c) for c in constraints)
    if token in protected:
        return (token,) in constraints and not contains(tokens, (token,))
    return True


def offers(tokens, log_probs, beam_width, end_token_id, constraints, protected=()):
    """The pieces an alive hypothesis of `tokens` offers (the length limit aside), in order:
    its min(k, v) likeliest allowed ones, then each unmet constraint's next allowed piece."""
    ok = [t for t in range(len(log_probs))
          if allowed(tokens, t, end_token_id, constraints, protected)]
    offered = sorted(ok, key=lambda t: -log_probs[t])[:min(beam_width, len(log_probs))]
    for c in constraints:
        if not contains(tokens, c):
            piece = c[matched(tokens, c)]
            if piece in ok and piece not in offered:
                offered.append(piece)
    return offered


def constrained_beam_search(step, initial_state, sequence_length, beam_width, begin_token_id,
                            end_token_id, alpha, constraints, max_length=None, protected=()):
    """Constrained beam search over one sentence (see the module's docstring).

    Args:
      constraints: a list of lists of piece ids (may be empty, or hold empty lists).
      max_length: the sentence's limit, end token included (None: sequence_length).
      protected: keep mode's protected piece ids, or ().
    Returns:
      (ids [beam, sequence_length], scores [beam], lengths [beam]) as NumPy arrays, best first;
      rows beyond the hypotheses found have score -inf, ids all end_token_id and length 0.
    """
    constraints = [tuple(c) for c in constraints]
    max_length = sequence_length if max_length is None else min(max_length, sequence_length)
    full = sum(len(c) for c in constraints)
    beam = [Hypothesis((), 0.0, False, initial_state)]
    for position in range(sequence_length):
        candidates = []
        for hypothesis in beam:
            if hypothesis.finished:
                candidates.append(hypothesis)
                continue
            tokens = hypothesis.tokens
            state, logits = step(hypothesis.state, tokens[-1] if tokens else begin_token_id)
            log_probs = log_softmax(logits)
            offered = ([end_token_id] if position + 1 >= max_length else offers(
                tokens, log_probs, beam_width, end_token_id, constraints, protected))
            for token in offered:
                met = all(contains(tokens + (token,), c) for c in constraints)
                log_prob = hypothesis.log_prob + log_probs[token]
                if token == end_token_id and not met:
                    continue  # the length limit ended it unmet: no hypothesis
                candidates.append(Hypothesis(tokens + (token,), log_prob, token == end_token_id,
                                             state))
        banks = [bank(h.tokens, constraints) for h in candidates]
        best_done = max((score(h, alpha) for h, b in zip(candidates, banks)
                         if h.finished and b == full), default=-np.inf)
        by_bank = {}
        for h, b in zip(candidates, banks):
            if score(h, alpha) > -np.inf and (b == full or score(h, alpha) >= best_done):
                by_bank.setdefault(b, []).append(h)
        for members in by_bank.values():
            members.sort(key=lambda h: -score(h, alpha))  # stable: ties in the order offered
        beam = [by_bank[b][rank] for rank in range(beam_width)
                for b in sorted(by_bank, reverse=True) if rank < len(by_bank[b])][:beam_width]
    return results(beam, beam_width, sequence_length, end_token_id, alpha)


def enumerate_constrained(step, initial_state, sequence_length, vocab_size, begin_token_id,
                          end_token_id, alpha, constraints, protected=()):
    """Every output that ends within sequence_length tokens holding every constraint (and,
    with `protected`, each protected piece exactly as often as a single-piece constraint asks:
    once or never), best first, as numpy_beam_search.enumerate_sequences lists them."""
    constraints = [tuple(c) for c in constraints]
    outputs = []
    for ids, output_score, length in enumerate_sequences(
            step, initial_state, sequence_length, vocab_size, begin_token_id, end_token_id,
            alpha, max_length=sequence_length):
        tokens = tuple(ids[:length])
        if all(contains(tokens, c) for c in constraints) and all(
                tokens.count(p) == ((p,) in constraints) for p in protected):
            outputs.append((ids, output_score, length))
    return outputs
