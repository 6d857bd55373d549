"""Seq2SeqModel: variable sharing, one step template for every path, padding, beams, learning."""

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from seq2seq.common import tile_beams
from seq2seq.losses import sequence_cross_entropy, token_mean
from seq2seq.model import Seq2SeqModel

VOCAB = 11
BOS, EOS = 2, 3

PARAMS = {
    "embedding_size": 6,
    "num_units": 8,
    "encoder_layers": 1,
    "attention": "bahdanau",
    "attention_size": 5,
    "share_embeddings": True,
    "tie_output_projection": False,
    # Nonzero, so that the tests see that training=False turns dropout off.
    "dropout": 0.3,
}

VARIANTS = {
    "bahdanau": {},
    "luong": {"attention": "luong"},
    "separate_tied_2_layers": {"share_embeddings": False, "tie_output_projection": True,
                               "encoder_layers": 2},
    # Each encoder direction 6 wide: a 12-wide memory under an 8-wide decoder.
    "encoder_units_6": {"encoder_units": 6},
    "encoder_units_6_luong": {"encoder_units": 6, "attention": "luong"},
}


def make_params(variant):
    return dict(PARAMS, **VARIANTS[variant])


def random_batch(rng, lengths, time=None):
    """[batch, time] ids in [4, VOCAB), 0-padded after each length."""
    time = time or max(lengths)
    ids = rng.randint(4, VOCAB, [len(lengths), time]).astype(np.int32)
    for row, length in zip(ids, lengths):
        row[length:] = 0
    return ids, np.array(lengths, np.int32)


def build_paths(model, source, source_length, target):
    """Calls every entry point once; returns the tensors."""
    enc = model.encode(tf.constant(source), tf.constant(source_length), training=False)
    logits = model.teacher_forced_logits(enc, tf.constant(target), training=False)
    _, step_logits = model.step(enc, enc.initial_state, tf.constant(target[:, 0]))
    update_fn, initial_state = model.beam_update_fn(enc, beam_width=2)
    beam_state = tf.nest.map_structure(lambda t: tf.stack([t, t], axis=1), initial_state)
    _, beam_logits = update_fn(beam_state, tf.constant(np.stack([target[:, :1]] * 2, 1)[:, :, 0]))
    return enc, logits, step_logits, beam_logits


@pytest.mark.parametrize("variant, half", [("bahdanau", 4), ("encoder_units_6", 6)])
def test_variables_are_created_once_and_named_by_component(variant, half):
    """half: each encoder direction's size (num_units // 2 unless encoder_units is set)."""
    rng = np.random.RandomState(0)
    source, source_length = random_batch(rng, [3, 5])
    target, _ = random_batch(rng, [4, 2])
    with tf.Graph().as_default():
        model = Seq2SeqModel(make_params(variant), VOCAB, VOCAB)
        assert not tf.global_variables()  # Templates create variables on first call.
        build_paths(model, source, source_length, target)
        first = {v.op.name: v.shape.as_list() for v in tf.trainable_variables()}
        build_paths(model, source, source_length, target)  # google/seq2seq issue #261.
        assert {v.op.name: v.shape.as_list() for v in tf.trainable_variables()} == first
        assert {v.op.name for v in model.variables} == set(first)

    e, h, a, v = 6, 8, 5, VOCAB
    m = 2 * half  # The memory width.
    assert first == {
        "seq2seq/embeddings/shared/table": [v, e],
        "seq2seq/encoder/layer_0/forward/input_projection/kernel": [e, 3 * half],
        "seq2seq/encoder/layer_0/forward/input_projection/bias": [3 * half],
        "seq2seq/encoder/layer_0/forward/recurrent/kernel": [half, 3 * half],
        "seq2seq/encoder/layer_0/forward/recurrent/bias": [3 * half],
        "seq2seq/encoder/layer_0/backward/input_projection/kernel": [e, 3 * half],
        "seq2seq/encoder/layer_0/backward/input_projection/bias": [3 * half],
        "seq2seq/encoder/layer_0/backward/recurrent/kernel": [half, 3 * half],
        "seq2seq/encoder/layer_0/backward/recurrent/bias": [3 * half],
        "seq2seq/decoder/bridge/kernel": [m, h],
        "seq2seq/decoder/bridge/bias": [h],
        "seq2seq/decoder/gru/input_projection/kernel": [e, 3 * h],
        "seq2seq/decoder/gru/input_projection/bias": [3 * h],
        "seq2seq/decoder/gru/recurrent/kernel": [h, 3 * h],
        "seq2seq/decoder/gru/recurrent/bias": [3 * h],
        "seq2seq/decoder/attention/key_projection/kernel": [m, a],
        "seq2seq/decoder/attention/key_projection/bias": [a],
        "seq2seq/decoder/attention/query_projection/kernel": [h, a],
        "seq2seq/decoder/attention/score/v": [a],
        "seq2seq/decoder/output_projection/pre_output/kernel": [h + m, h],
        "seq2seq/decoder/output_projection/pre_output/bias": [h],
        "seq2seq/decoder/output_projection/logits/kernel": [h, v],
        "seq2seq/decoder/output_projection/logits/bias": [v],
    }


def test_encode_is_one_name_scope_that_leaves_variable_names_alone():
    """TensorBoard shows one "encode" box per call; the variables, and so the
    checkpoints written before the scope existed, keep their names (pinned
    above): a name scope names ops, tf.get_variable ignores it."""
    source, source_length = random_batch(np.random.RandomState(0), [3, 5])
    with tf.Graph().as_default() as graph:
        model = Seq2SeqModel(PARAMS, VOCAB, VOCAB)
        for _ in range(2):
            model.encode(tf.constant(source, name="source_ids"),
                         tf.constant(source_length, name="source_length"), training=False)
        roots = {op.name.split("/")[0] for op in graph.get_operations()}
        variable_ops = {op.name for v in tf.global_variables()
                        for op in graph.get_operations() if op.name.startswith(v.op.name)}
        in_model_scope = {op.name for op in graph.get_operations()
                          if op.name.startswith("seq2seq/")}
        variable_names = {v.op.name for v in tf.global_variables()}
    assert roots == {"source_ids", "source_length", "source_ids_1", "source_length_1",
                     "seq2seq", "encode", "encode_1"}
    # Under the model's scope: the variables and their initialisers only.
    assert in_model_scope == variable_ops
    assert {name.split("/")[1] for name in variable_names} == {"embeddings", "encoder", "decoder"}


def test_beam_update_fn_hands_the_encoder_output_back_as_it_got_it():
    """The memory, keys and mask travel in the state, tiled by the search like the rest, and
    come back unchanged: a search reorders no such entry and gathers it only to drop rows."""
    source, source_length = random_batch(np.random.RandomState(0), [3, 5])
    with tf.Graph().as_default():
        model = Seq2SeqModel(PARAMS, VOCAB, VOCAB)
        enc = model.encode(tf.constant(source), tf.constant(source_length), training=False)
        update_fn, initial_state = model.beam_update_fn(enc, beam_width=3)
        assert initial_state["h"] is enc.initial_state["h"]
        assert set(initial_state["encoder"]) == {"memory", "keys", "mask"}
        for name, value in initial_state["encoder"].items():
            assert value is getattr(enc, name)  # untiled: the search tiles it
        beam_state = tf.nest.map_structure(lambda t: tile_beams(t, 3), initial_state)
        new_state, _ = update_fn(beam_state, tf.fill([2, 3], BOS))
        assert new_state["encoder"] is beam_state["encoder"]


def three_argmax_steps_in_a_while_loop(update_fn, initial_state):
    """Runs a beam-of-2 update_fn for 3 argmax steps in tf.while_loop; (state, ids [2, 2])."""
    def body(time, state, ids):
        state, logits = update_fn(state, ids)
        return time + 1, state, tf.argmax(logits, -1, output_type=tf.int32)

    beam_state = tf.nest.map_structure(lambda t: tf.stack([t, t], axis=1), initial_state)
    _, state, ids = tf.while_loop(lambda time, *_: time < 3, body,
                                  (tf.constant(0), beam_state, tf.fill([2, 2], BOS)))
    return state, ids


def test_a_first_step_inside_a_while_loop_creates_the_same_variables():
    """How a beam search meets the decoder: its first call inside tf.while_loop."""
    source, source_length = random_batch(np.random.RandomState(0), [3, 5])
    names = []
    for first_call_in_loop in (False, True):
        with tf.Graph().as_default(), tf.Session() as sess:
            model = Seq2SeqModel(make_params("separate_tied_2_layers"), VOCAB, VOCAB)
            enc = model.encode(tf.constant(source), tf.constant(source_length), training=False)
            if not first_call_in_loop:
                model.step(enc, enc.initial_state, tf.fill([2], BOS))
            _, ids = three_argmax_steps_in_a_while_loop(*model.beam_update_fn(enc, beam_width=2))
            sess.run(tf.global_variables_initializer())
            assert sess.run(ids).shape == (2, 2)
            names.append(sorted(v.op.name for v in model.variables))
    assert names[0] == names[1]


def test_variants_share_variables_and_two_models_do_not():
    rng = np.random.RandomState(0)
    source, source_length = random_batch(rng, [3, 5])
    target, _ = random_batch(rng, [4, 2])
    with tf.Graph().as_default():
        counts = []
        for variant in ("luong", "separate_tied_2_layers"):
            model = Seq2SeqModel(make_params(variant), VOCAB, VOCAB)
            build_paths(model, source, source_length, target)
            count = len(tf.trainable_variables())
            build_paths(model, source, source_length, target)
            assert len(tf.trainable_variables()) == count
            counts.append(len(model.variables))
        scopes = {v.op.name.split("/")[0] for v in tf.trainable_variables()}
    assert scopes == {"seq2seq", "seq2seq_1"}
    # Luong: no query projection, v or key bias (23 - 3). Separate tied, 2 layers:
    # +1 table, +8 encoder, -1 logits kernel.
    assert counts == [20, 31]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_teacher_forcing_equals_step_by_step_decoding(variant):
    rng = np.random.RandomState(1)
    source, source_length = random_batch(rng, [5, 3, 4])
    target, _ = random_batch(rng, [6, 6, 6])
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.set_random_seed(1)
        model = Seq2SeqModel(make_params(variant), VOCAB, VOCAB)
        enc = model.encode(tf.constant(source), tf.constant(source_length), training=False)
        teacher_forced = model.teacher_forced_logits(enc, tf.constant(target), training=False)
        state, step_logits = enc.initial_state, []
        for t in range(target.shape[1]):
            state, logits = model.step(enc, state, tf.constant(target[:, t]))
            step_logits.append(logits)
        sess.run(tf.global_variables_initializer())
        expected, got = sess.run([teacher_forced, tf.stack(step_logits, axis=1)])
    assert expected.shape == (3, 6, VOCAB)
    np.testing.assert_allclose(got, expected, atol=1e-5)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_sentence_does_not_depend_on_its_batch_padding(variant):
    rng = np.random.RandomState(2)
    source, source_length = random_batch(rng, [3])
    target, target_length = random_batch(rng, [4])
    long_source, _ = random_batch(rng, [7])
    long_target, _ = random_batch(rng, [9])
    padded_source = np.zeros([2, 7], np.int32)
    padded_source[0, :3], padded_source[1] = source[0], long_source[0]
    padded_target = np.zeros([2, 9], np.int32)
    padded_target[0, :4], padded_target[1] = target[0], long_target[0]

    with tf.Graph().as_default(), tf.Session() as sess:
        model = Seq2SeqModel(make_params(variant), VOCAB, VOCAB)

        def run(source, source_length, target):
            enc = model.encode(tf.constant(source), tf.constant(source_length), training=False)
            logits = model.teacher_forced_logits(enc, tf.constant(target), training=False)
            return enc.memory, enc.initial_state["h"], logits

        alone = run(source, source_length, target)
        batched = run(padded_source, np.array([3, 7], np.int32), padded_target)
        sess.run(tf.global_variables_initializer())
        (memory, initial, logits), (memory_b, initial_b, logits_b) = sess.run([alone, batched])

    half = make_params(variant).get("encoder_units") or PARAMS["num_units"] // 2
    assert memory.shape[-1] == 2 * half
    assert initial.shape[-1] == PARAMS["num_units"]
    np.testing.assert_allclose(memory_b[0, :3], memory[0], atol=1e-6)
    np.testing.assert_array_equal(memory_b[0, 3:], 0.0)
    np.testing.assert_allclose(initial_b[0], initial[0], atol=1e-6)
    np.testing.assert_allclose(logits_b[0, :4], logits[0], atol=1e-5)


def test_beam_update_fn_is_the_step_on_merged_beams():
    batch, beam = 2, 3
    rng = np.random.RandomState(3)
    source, source_length = random_batch(rng, [4, 2])
    ids = rng.randint(0, VOCAB, [batch, beam]).astype(np.int32)
    state = {"h": rng.randn(batch, beam, PARAMS["num_units"]).astype(np.float32)}
    with tf.Graph().as_default(), tf.Session() as sess:
        model = Seq2SeqModel(PARAMS, VOCAB, VOCAB)
        enc = model.encode(tf.constant(source), tf.constant(source_length), training=False)
        update_fn, initial_state = model.beam_update_fn(enc, beam)
        encoder = tf.nest.map_structure(lambda t: tile_beams(t, beam), initial_state["encoder"])
        new_state, logits = update_fn({"h": tf.constant(state["h"]), "encoder": encoder},
                                      tf.constant(ids))
        # The reference: beam row b * beam + k is sentence b's row, decoded by `step`.
        rows = np.repeat(np.arange(batch), beam)
        merged = enc._replace(**{field: tf.gather(getattr(enc, field), rows)
                                 for field in ("memory", "keys", "mask")})
        reference = model.step(merged, {"h": tf.constant(state["h"].reshape(batch * beam, -1))},
                               tf.constant(ids.reshape(-1)))
        sess.run(tf.global_variables_initializer())
        (new_state, logits), (ref_state, ref_logits), initial = sess.run(
            [(new_state["h"], logits), reference, initial_state])

    assert initial["h"].shape == (batch, PARAMS["num_units"])
    assert new_state.shape == (batch, beam, PARAMS["num_units"])
    assert logits.shape == (batch, beam, VOCAB)
    np.testing.assert_allclose(new_state.reshape(batch * beam, -1), ref_state["h"], atol=1e-6)
    np.testing.assert_allclose(logits.reshape(batch * beam, -1), ref_logits, atol=1e-6)


def test_dropout_is_active_only_when_training():
    with tf.Graph().as_default(), tf.Session() as sess:
        model = Seq2SeqModel(PARAMS, VOCAB, VOCAB)
        logits = {}
        for training in (False, True):
            enc = model.encode(tf.constant([[4, 5, 6]]), tf.constant([3]), training)
            logits[training] = model.teacher_forced_logits(enc, tf.constant([[BOS, 7]]), training)
        sess.run(tf.global_variables_initializer())
        evaluation = [sess.run(logits[False]) for _ in range(2)]
        train = [sess.run(logits[True]) for _ in range(2)]
    np.testing.assert_array_equal(evaluation[0], evaluation[1])
    assert not np.allclose(train[0], train[1])


def test_a_tiny_model_learns_to_reverse_sequences():
    """Gradients reach every part: the reversal needs encoder, attention and decoder."""
    rng = np.random.RandomState(4)

    def batch(size=32):
        lengths = rng.randint(2, 6, size)
        source, _ = random_batch(rng, list(lengths), time=5)
        target = np.zeros([size, 7], np.int32)
        target[:, 0] = BOS
        for row, length in enumerate(lengths):
            target[row, 1:length + 1] = source[row, :length][::-1]
            target[row, length + 1] = EOS
        return source, lengths.astype(np.int32), target, (lengths + 1).astype(np.int32)

    params = dict(PARAMS, embedding_size=16, num_units=32, attention_size=16, dropout=0.0)
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.set_random_seed(4)
        source = tf.placeholder(tf.int32, [None, None])
        source_length = tf.placeholder(tf.int32, [None])
        target = tf.placeholder(tf.int32, [None, None])
        target_length = tf.placeholder(tf.int32, [None])
        model = Seq2SeqModel(params, VOCAB, VOCAB)
        enc = model.encode(source, source_length, training=True)
        logits = model.teacher_forced_logits(enc, target[:, :-1], training=True)
        cross_entropy = sequence_cross_entropy(logits, target[:, 1:], target_length)
        loss = token_mean(cross_entropy.loss_sum, cross_entropy.num_tokens)
        train_op = tf.train.AdamOptimizer(0.02).minimize(loss, var_list=model.variables)
        sess.run(tf.global_variables_initializer())
        placeholders = (source, source_length, target, target_length)
        for _ in range(200):
            sess.run(train_op, dict(zip(placeholders, batch())))
        final_loss = np.mean([sess.run(loss, dict(zip(placeholders, batch(64)))) for _ in range(3)])
    assert final_loss < 0.05


@pytest.mark.parametrize("variant", ["bahdanau", "luong"])
def test_beam_update_fn_with_attention_adds_the_step_weights_only(variant):
    """with_attention=True: the same h and logits, plus the step's attention
    [batch, K, src_time], zero on padding and summing to 1 over the valid
    positions; with it False the state holds "h" and the encoder output (the graph of before)."""
    batch, beam = 2, 3
    rng = np.random.RandomState(5)
    source, source_length = random_batch(rng, [4, 2], time=6)
    ids = rng.randint(0, VOCAB, [batch, beam]).astype(np.int32)
    h = rng.randn(batch, beam, PARAMS["num_units"]).astype(np.float32)
    with tf.Graph().as_default() as graph, tf.Session() as sess:
        model = Seq2SeqModel(make_params(variant), VOCAB, VOCAB)
        enc = model.encode(tf.constant(source), tf.constant(source_length), training=False)
        plain_fn, plain_initial = model.beam_update_fn(enc, beam)
        encoder = tf.nest.map_structure(lambda t: tile_beams(t, beam), plain_initial["encoder"])
        plain = plain_fn({"h": tf.constant(h), "encoder": encoder}, tf.constant(ids))
        count = len(tf.trainable_variables())
        ops_before = len(graph.get_operations())
        plain_fn({"h": tf.constant(h), "encoder": encoder}, tf.constant(ids))
        plain_ops = len(graph.get_operations()) - ops_before
        traced_fn, traced_initial = model.beam_update_fn(enc, beam, with_attention=True)
        traced = traced_fn({"h": tf.constant(h), "attention": tf.zeros([batch, beam, 6]),
                            "encoder": encoder}, tf.constant(ids))
        assert len(tf.trainable_variables()) == count  # the same templates
        assert set(plain[0]) == {"h", "encoder"} and set(traced[0]) == {"h", "attention",
                                                                        "encoder"}
        assert set(traced_initial) == {"h", "attention", "encoder"}
        sess.run(tf.global_variables_initializer())
        plain, traced, initial = sess.run([plain, traced, traced_initial])
        # Beside the traced one, the plain update_fn adds the ops it added before.
        ops_before = len(graph.get_operations())
        plain_fn({"h": tf.constant(h), "encoder": encoder}, tf.constant(ids))
        assert len(graph.get_operations()) - ops_before == plain_ops

    np.testing.assert_array_equal(traced[1], plain[1])
    np.testing.assert_array_equal(traced[0]["h"], plain[0]["h"])
    attention = traced[0]["attention"]
    assert attention.shape == (batch, beam, 6) and attention.dtype == np.float32
    valid = np.arange(6)[None, None, :] < source_length[:, None, None]
    np.testing.assert_array_equal(attention[~np.broadcast_to(valid, attention.shape)], 0.0)
    np.testing.assert_allclose(attention.sum(-1), 1.0, atol=1e-6)
    assert (attention[np.broadcast_to(valid, attention.shape)] > 0).all()
    np.testing.assert_array_equal(initial["attention"], np.zeros([batch, 6]))
    np.testing.assert_array_equal(initial["h"].shape, (batch, PARAMS["num_units"]))


def test_beam_update_fn_with_attention_runs_in_a_while_loop():
    """The state structure stays the same across steps, as tf.while_loop needs."""
    source, source_length = random_batch(np.random.RandomState(6), [3, 5])
    with tf.Graph().as_default(), tf.Session() as sess:
        model = Seq2SeqModel(PARAMS, VOCAB, VOCAB)
        enc = model.encode(tf.constant(source), tf.constant(source_length), training=False)
        state, _ = three_argmax_steps_in_a_while_loop(
            *model.beam_update_fn(enc, 2, with_attention=True))
        sess.run(tf.global_variables_initializer())
        attention = sess.run(state["attention"])
    assert attention.shape == (2, 2, 5)
    np.testing.assert_allclose(attention.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(attention[0, :, 3:], 0.0)
