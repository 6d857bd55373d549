"""A search's results from what its steps recorded (each slot's token and parent slot): follow
the parents back from the last step. Shapes as in decode/beam_search.py."""

import numpy as np
import tensorflow.compat.v1 as tf

from seq2seq.common import batch_gather, get_shape


def backtrack(parent_ids, *histories):
    """Each history [t, b, k, ...] along the final hypotheses, following the parent slots
    `parent_ids` [t, b, k] int32 back from every last slot: a list of [t, b, k, ...]."""
    with tf.name_scope("backtrack"):
        _, batch_size, beam_width = get_shape(parent_ids)
        last_slots = tf.tile(tf.range(beam_width)[None], [batch_size, 1])     # [b, k]

        def step_back(carry, step):  # carry[0]: each final hypothesis's slot at this step
            return tuple(batch_gather(values, carry[0]) for values in step)

        return tf.scan(step_back, (parent_ids,) + histories,
                       initializer=(last_slots,) + tuple(h[0] for h in histories),
                       reverse=True, back_prop=False)[1:]


def results(history, scores, lengths, end_token_id, trace, sort=False):
    """The search contract's results from the step records.

    Args:
      history: {"token_ids", and "parent_ids" unless every slot is its own parent: [t, b, k]
        int32; with `trace` "scores", "finished" [t, b, k] and maybe "attention" [t, b, k, src]}.
      scores, lengths: [b, k], the final hypotheses'.
      sort: order each sentence's hypotheses best first (samples, diverse groups, constraints),
        and the trace's last step with them, so that its parents still lead to them.
    Returns:
      (ids [b, k, t] int32, scores [b, k], lengths [b, k]), and the trace dict if `trace`.
    """
    with tf.name_scope("results"):
        paths = [history[key] for key in ("token_ids", "attention") if key in history]
        if lengths.shape[1] != 1 and "parent_ids" in history:  # branches to follow
            paths = backtrack(history["parent_ids"], *paths)
        paths = [tf.transpose(p, [1, 2, 0] + list(range(3, p.shape.ndims))) for p in paths]
        if sort:
            scores, order = tf.nn.top_k(scores, k=get_shape(scores)[1])       # [b, k]
            paths = [batch_gather(path, order) for path in paths]
            lengths = batch_gather(lengths, order)
        possible = tf.greater(scores, -np.inf)  # -inf: beam filler, ids all end, length 0
        ids = tf.where_v2(possible[..., None], paths[0], end_token_id)        # [b, k, t]
        lengths = tf.where_v2(possible, lengths, 0)                            # [b, k]
        if not trace:
            return ids, scores, lengths
        steps = {key: tf.transpose(history[key], [1, 0, 2])                    # [b, t, k]
                 for key in ("token_ids", "parent_ids", "scores", "finished")}
        if sort:
            steps = {key: tf.concat([values[:, :-1], batch_gather(values[:, -1], order)[:, None]],
                                    axis=1) for key, values in steps.items()}
        if len(paths) > 1:
            steps["attention"] = paths[1]                                       # [b, k, t, src]
        return ids, scores, lengths, steps
