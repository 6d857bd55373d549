"""decode.beam_search.top_k (the chunked top-k) against tf.nn.top_k, ties included."""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from decode.beam_search import top_k


@pytest.mark.parametrize("shape, k, chunked", [
    ((3, 4, 400), 5, True),
    ((2, 2000), 10, True),      # no beam dimension
    ((2, 3, 7), 3, False),      # too short to chunk: tf.nn.top_k
    ((2, 3, 401), 5, False),    # 401 is prime: tf.nn.top_k
])
@pytest.mark.parametrize("distinct_values", [3, 1000000])  # 3: ties everywhere
def test_equals_tf_top_k_ties_included(shape, k, chunked, distinct_values):
    values = np.random.RandomState(0).randint(distinct_values, size=shape).astype(np.float32)
    values[..., :shape[-1] // 2] -= 1.0  # the best in the second half: a tie order matters
    with tf.Graph().as_default() as graph:
        inputs = tf.constant(values)
        outputs = top_k(inputs, k)
        assert chunked == any(op.type == "Max" for op in graph.get_operations())
        with tf.Session() as session:
            got, expected = session.run([outputs, tf.nn.top_k(inputs, k)])
    np.testing.assert_array_equal(got[1], expected[1])
    np.testing.assert_array_equal(got[0], expected[0])


def chunks_of(length, k):
    """The [chunks, size] that top_k reshapes `length` values into for a top-`k`, or None."""
    with tf.Graph().as_default() as graph:
        top_k(tf.zeros([2, length]), k)
        maxima = [op for op in graph.get_operations() if op.type == "Max"]
        return maxima[0].inputs[0].shape.as_list()[1:] if maxima else None


def test_chunk_size_minimises_the_elements_left_to_sort():
    assert chunks_of(4000, 5) == [160, 25]  # 160 chunk maxima + 5 * 25 candidates
    assert chunks_of(7, 3) is None          # prime
    assert chunks_of(40, 5) is None         # less than 4x fewer elements: not worth it


def test_a_tensor_k_is_tf_top_k():
    # beam_step's k when the vocabulary size is known only at run time.
    values = np.random.RandomState(1).randint(3, size=(2, 3, 400)).astype(np.float32)
    with tf.Graph().as_default():
        inputs = tf.constant(values)
        k = tf.minimum(5, tf.shape(inputs)[-1])
        with tf.Session() as session:
            got, expected = session.run([top_k(inputs, k), tf.nn.top_k(inputs, 5)])
    np.testing.assert_array_equal(got[1], expected[1])
    np.testing.assert_array_equal(got[0], expected[0])


def test_the_benchmarks_selection_floors_pick_what_one_top_k_picks():
    """bench.decode_speed's two-stage floor must select what one top-k over beam x vocab does,
    or its "floor" and scoring-step figures would time a cheaper wrong computation."""
    from bench import decode_speed
    rng = np.random.RandomState(7)
    batch_size, beam_width = 3, 5
    # Distinct values: no ties, so the indices are unique.
    logits = rng.permutation(batch_size * beam_width * decode_speed.VOCAB_SIZE).astype(
        np.float32).reshape([batch_size, beam_width, decode_speed.VOCAB_SIZE]) / 1000.0
    beam_log_probs = -rng.rand(batch_size, beam_width).astype(np.float32) * 3.0
    with tf.Graph().as_default():
        logits, beam_log_probs = tf.constant(logits), tf.constant(beam_log_probs)
        picks = [decode_speed.one_stage_top_k(logits, beam_log_probs, beam_width),
                 decode_speed.two_stage_top_k(logits, beam_log_probs, beam_width, tf.nn.top_k),
                 decode_speed.two_stage_top_k(logits, beam_log_probs, beam_width, top_k)]
        with tf.Session() as session:
            one_stage, with_nn_top_k, with_chunked = session.run(picks)
    assert one_stage.tolist() == with_nn_top_k.tolist() == with_chunked.tolist()


def test_k_of_one_is_the_first_maximum():
    # Greedy decoding's top-1: argmax, which must break ties as tf.nn.top_k does.
    values = np.random.RandomState(2).randint(3, size=(4, 2, 50)).astype(np.float32)
    with tf.Graph().as_default():
        inputs = tf.constant(values)
        with tf.Session() as session:
            got, expected = session.run([top_k(inputs, 1), tf.nn.top_k(inputs, 1)])
    np.testing.assert_array_equal(got[1], expected[1])
    np.testing.assert_array_equal(got[0], expected[0])
