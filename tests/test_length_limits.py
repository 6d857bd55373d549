"""decode.translator's length limits: the Python limits against the graph's, and the unrolled buckets.

`output_length_limit` (Python, what the Translator and the tests compute) and
`output_length_limits` (in the graph, what the searches apply) must never
differ, rounding included: a limit off by one in either would let a search cut
a hypothesis one token earlier or later than every check of it expects. The
ratios below include ones whose products land next to integers (0.3 * 50,
0.3 * 100, ...), where float64 arithmetic rounds otherwise than the float32
both functions use.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from decode.graphs import (UNROLLED_LENGTH_STEP, output_length_limit, output_length_limits,
                           unrolled_length_bucket)

RATIOS = (0.3, 1.1, 1.7, 2.0, 2.37)
EXTRAS = (0, 10)
SOURCE_LENGTHS = np.arange(1, 201, dtype=np.int32)
PARAMS = [{"max_length_ratio": ratio, "max_length_extra": extra}
          for ratio in RATIOS for extra in EXTRAS]


def _param_id(decode_params):
    return "ratio%s-extra%d" % (decode_params["max_length_ratio"],
                                decode_params["max_length_extra"])


@pytest.fixture(scope="module")
def graph_limits():
    """Every PARAMS entry's in-graph limits of SOURCE_LENGTHS, from one session run."""
    graph = tf.Graph()
    with graph.as_default():
        source_length = tf.placeholder(tf.int32, [None], name="source_length")
        fetches = [output_length_limits(source_length, decode_params) for decode_params in PARAMS]
    with tf.Session(graph=graph) as session:
        values = session.run(fetches, {source_length: SOURCE_LENGTHS})
    for value in values:
        assert value.dtype == np.int32 and value.shape == SOURCE_LENGTHS.shape
    return {_param_id(params): value.tolist() for params, value in zip(PARAMS, values)}


@pytest.mark.parametrize("decode_params", PARAMS, ids=_param_id)
def test_python_limits_equal_the_graphs(graph_limits, decode_params):
    python = [output_length_limit(int(n), decode_params) for n in SOURCE_LENGTHS]
    assert all(type(limit) is int for limit in python)
    mismatches = [(int(n), p, g) for n, p, g
                  in zip(SOURCE_LENGTHS, python, graph_limits[_param_id(decode_params)]) if p != g]
    assert not mismatches, "(source length, python, graph): %s" % mismatches[:10]


@pytest.mark.parametrize("decode_params", PARAMS, ids=_param_id)
def test_limits_follow_the_documented_formula(decode_params):
    ratio, extra = decode_params["max_length_ratio"], decode_params["max_length_extra"]
    limits = [output_length_limit(int(n), decode_params) for n in SOURCE_LENGTHS]
    for n, limit in zip(SOURCE_LENGTHS, limits):
        # ceil(ratio * n) + extra, the product in float32: the exact decimal
        # ceiling, or one more where float32(ratio) * n lands just above an
        # integer (0.3 * 50 is 15.000001 in float32: limit 16 + extra).
        exact = math.ceil(Fraction(str(ratio)) * int(n))
        assert limit - extra in (exact, exact + 1), (int(n), limit)
        assert limit >= 1
    assert limits == sorted(limits), "a longer source must never get a shorter limit"


def test_the_cases_include_float32_rounding_ones():
    # Cases where a float64 Python limit would differ from the graph's: without
    # them a limit computed in float64 would pass the comparison above too.
    differing = [(params["max_length_ratio"], int(n)) for params in PARAMS for n in SOURCE_LENGTHS
                 if math.ceil(params["max_length_ratio"] * int(n)) + params["max_length_extra"]
                 != output_length_limit(int(n), params)]
    assert differing, "no case where float64 and float32 round differently"
    # 0.3 * 50: 15.0 in float64, 15.000001 in float32.
    assert (0.3, 50) in differing
    assert output_length_limit(50, {"max_length_ratio": 0.3, "max_length_extra": 0}) == 16


@pytest.mark.parametrize("decode_params", PARAMS, ids=_param_id)
def test_unrolled_bucket_is_the_longest_limit_rounded_up_to_the_step(decode_params):
    buckets = []
    for n in SOURCE_LENGTHS:
        bucket = unrolled_length_bucket(int(n), decode_params)
        limit = output_length_limit(int(n), decode_params)
        assert type(bucket) is int
        assert bucket % UNROLLED_LENGTH_STEP == 0
        # At least the batch's longest limit (a batch whose longest source has
        # n tokens: every sentence's limit is at most this one's), and the
        # smallest such multiple of the step.
        assert limit <= bucket < limit + UNROLLED_LENGTH_STEP
        buckets.append(bucket)
    assert buckets == sorted(buckets)
    # Bounds the number of graphs: one per step of limits, not one per limit.
    limits = {output_length_limit(int(n), decode_params) for n in SOURCE_LENGTHS}
    assert len(set(buckets)) <= -(-(max(limits) - min(limits) + 1) // UNROLLED_LENGTH_STEP) + 1


def test_unrolled_bucket_covers_every_limit_of_a_batch():
    decode_params = {"max_length_ratio": 2.37, "max_length_extra": 10}
    batch = [1, 7, 42, 199, 3]
    bucket = unrolled_length_bucket(max(batch), decode_params)
    assert all(output_length_limit(n, decode_params) <= bucket for n in batch)
