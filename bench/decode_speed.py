"""Decoding speed: both beam searches, greedy, a floor, and tfa's BeamSearchDecoder.

Every variant decodes the same random-weight model (seq2seq.model.Seq2SeqModel:
bi-GRU encoder, GRU decoder with Bahdanau attention) on the same random
source batch, with the end token's logit masked to -inf so that every variant
runs exactly `length` steps. In one process and one session, the variants are
timed in round-robin repetitions (so that load from other processes hits all
of them alike); the table gives median sentences/s and ratios to tfa.

- while_loop / unrolled / greedy: decode.while_loop_beam_search,
  decode.rnn_beam_search, decode.greedy_search over model.beam_update_fn.
- floor: the same per-step arithmetic (GRU, attention, projection,
  log-softmax, one top_k over beam x vocab) in a bare tf.while_loop without
  any beam bookkeeping (no scores, no state reordering, no history);
  "floor, chunked top-k" selects as decode.scoring does (per-row logsumexp,
  chunked top-k per row, then beam x beam); "model only" feeds back each
  row's argmax: the model's share of the time.
- tfa: tfa.seq2seq.BeamSearchDecoder (tensorflow-addons 0.23) driving the very
  same decoder step, wrapped as a Keras cell.

Also: graph build time and op count of both searches against the decode
length, and the scoring step alone (decode.scoring.select_best against the
straightforward one-stage scoring it replaces).

Usage (about 4 minutes on 2 cores):
  .venv/bin/pip install -r requirements-bench.txt
  .venv/bin/python -m bench.decode_speed [--repeats 7] [--json bench/out/decode_speed.json]
"""

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

from decode import greedy_search, rnn_beam_search, scoring, top_k, while_loop_beam_search  # noqa: E402,E501
from seq2seq.common import batch_gather, get_shape, merge_beams, tile_beams  # noqa: E402
from seq2seq.config import DEFAULTS  # noqa: E402
from seq2seq.model import Seq2SeqModel  # noqa: E402

VOCAB_SIZE = 4000
SOURCE_LENGTH = 20
BEGIN, END = 2, 3  # DESIGN.md's SentencePiece ids
LENGTH_PENALTY = 0.6
MODEL_PARAMS = dict(DEFAULTS["model"], embedding_size=128, num_units=256, attention="bahdanau",
                    attention_size=256, dropout=0.0)
# (batch, beam, decode steps)
SIZES = [(32, 5, 40), (1, 5, 40), (32, 10, 60)]
BUILD_LENGTHS = [20, 50, 100]


def never_ending(update_fn):
    """`update_fn` with the end token's logit at -inf: decoding runs every step."""
    end_mask = tf.constant(np.where(np.arange(VOCAB_SIZE) == END, -np.inf, 0.0), tf.float32)

    def update(state, ids):
        new_state, logits = update_fn(state, ids)
        return new_state, logits + end_mask
    return update


def encoded_batch(model, batch_size, seed=1):
    """The model's encoding of a random source batch of SOURCE_LENGTH tokens."""
    rng = np.random.RandomState(seed)
    source_ids = rng.randint(4, VOCAB_SIZE, size=[batch_size, SOURCE_LENGTH]).astype(np.int32)
    return model.encode(tf.constant(source_ids), tf.fill([batch_size], SOURCE_LENGTH),
                        training=False)


def build_our_search(search, model, encoded, beam_width, length):
    update_fn, initial_state = model.beam_update_fn(encoded, beam_width)
    return search(never_ending(update_fn), initial_state, length, beam_width, BEGIN, END,
                  LENGTH_PENALTY)[:2]


def build_greedy(model, encoded, length):
    update_fn, initial_state = model.beam_update_fn(encoded, 1)
    return greedy_search(never_ending(update_fn), initial_state, length, BEGIN, END,
                         LENGTH_PENALTY)[:2]


def one_stage_top_k(logits, beam_log_probs, beam_width):
    """The straightforward selection: full log-softmax, one tf.nn.top_k over beam x vocab.

    Args:
      logits: [batch, beam, vocab]; beam_log_probs: [batch, beam].
    Returns:
      [batch, beam] int32 indices into beam x vocab.
    """
    batch_size = get_shape(logits)[0]
    scores = beam_log_probs[..., None] + tf.nn.log_softmax(logits)
    return tf.nn.top_k(tf.reshape(scores, [batch_size, -1]), k=beam_width)[1]


def two_stage_top_k(logits, beam_log_probs, beam_width, row_top_k):
    """select_best's arithmetic alone: per-row logsumexp, per-row top-k, then beam x beam.

    Args:
      logits: [batch, beam, vocab]; beam_log_probs: [batch, beam].
      row_top_k: tf.nn.top_k or decode.top_k.top_k.
    Returns:
      [batch, beam] int32 indices into beam x vocab.
    """
    batch_size = get_shape(logits)[0]
    row_logits, row_tokens = row_top_k(logits, beam_width)
    scores = beam_log_probs[..., None] + (
        row_logits - tf.reduce_logsumexp(logits, axis=-1, keepdims=True))
    _, best = tf.nn.top_k(tf.reshape(scores, [batch_size, -1]), k=beam_width)
    parents = best // beam_width
    return parents * VOCAB_SIZE + batch_gather(tf.reshape(row_tokens, [batch_size, -1]), best)


def build_floor(model, encoded, batch_size, beam_width, length, select):
    """The per-step arithmetic of a beam search and nothing else.

    No scores are accumulated, no state is reordered, no history is kept:
    each step runs the model and `select`, and feeds the chosen tokens back.
    """
    update_fn, initial_state = model.beam_update_fn(encoded, beam_width)
    update_fn = never_ending(update_fn)
    zero_scores = tf.zeros([batch_size, beam_width])

    def body(step, state, ids):
        state, logits = update_fn(state, ids)
        return step + 1, state, select(logits, zero_scores, beam_width) % VOCAB_SIZE

    state = tf.nest.map_structure(lambda s: tile_beams(s, beam_width), initial_state)
    _, _, ids = tf.while_loop(
        lambda step, *_: step < length, body,
        (tf.constant(0), state, tf.fill([batch_size, beam_width], BEGIN)), back_prop=False)
    return ids


def build_tfa(model, encoded, batch_size, beam_width, length):
    """tfa.seq2seq.BeamSearchDecoder around the same decoder step."""
    import tensorflow_addons as tfa

    # Its compiled gather_tree needs CUDA symbols that tensorflow-cpu lacks;
    # the Python version runs once per decode, after the loop.
    tfa.options.disable_custom_kernel()
    tiled = tf.nest.map_structure(lambda t: merge_beams(tile_beams(t, beam_width)), encoded)
    end_mask = tf.constant(np.where(np.arange(VOCAB_SIZE) == END, -np.inf, 0.0), tf.float32)

    class DecoderStepCell(tf.keras.layers.Layer):
        """The model's decoder step as a Keras cell: ids in, logits out."""
        state_size = MODEL_PARAMS["num_units"]
        output_size = VOCAB_SIZE

        # Plain graph code: keep Keras from running it through AutoGraph.
        @tf.autograph.experimental.do_not_convert
        def call(self, ids, state, training=None):
            new_state, logits = model.step(tiled, {"h": state}, ids)
            return logits + end_mask, new_state["h"]

        def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
            raise NotImplementedError("the search starts from the encoder's state")

    decoder = tfa.seq2seq.BeamSearchDecoder(
        DecoderStepCell(), beam_width, embedding_fn=lambda ids: ids,
        length_penalty_weight=LENGTH_PENALTY, maximum_iterations=length)
    outputs, _, _ = decoder(None, start_tokens=tf.fill([batch_size], BEGIN), end_token=END,
                            initial_state=tfa.seq2seq.tile_batch(encoded.initial_state["h"],
                                                                 beam_width))
    return outputs.predicted_ids


def time_variants(session, fetches, repeats, warmup=2):
    """Median wall-clock and CPU seconds per run of every fetch, timed round-robin.

    The order rotates every repetition, so that no variant always runs right
    after the same other one. CPU time (all threads of this process) moves
    less than wall-clock time when other processes load the machine.

    Returns:
      ({name: median wall seconds}, {name: median CPU seconds}).
    """
    names = list(fetches)
    for _ in range(warmup):
        for name in names:
            session.run(fetches[name])
    wall = {name: [] for name in names}
    cpu = {name: [] for name in names}
    for repeat in range(repeats):
        for name in names[repeat % len(names):] + names[:repeat % len(names)]:
            wall_start, cpu_start = time.perf_counter(), time.process_time()
            session.run(fetches[name])
            wall[name].append(time.perf_counter() - wall_start)
            cpu[name].append(time.process_time() - cpu_start)
    return ({name: statistics.median(times) for name, times in wall.items()},
            {name: statistics.median(times) for name, times in cpu.items()})


def throughput(batch_size, beam_width, length, repeats):
    """Sentences/s and CPU milliseconds per sentence of every variant at one size."""
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        model = Seq2SeqModel(MODEL_PARAMS, VOCAB_SIZE, VOCAB_SIZE)
        encoded = encoded_batch(model, batch_size)
        fetches = {
            "while_loop": build_our_search(while_loop_beam_search, model, encoded, beam_width,
                                           length),
            "unrolled": build_our_search(rnn_beam_search, model, encoded, beam_width, length),
            "greedy": build_greedy(model, encoded, length),
            "floor": build_floor(model, encoded, batch_size, beam_width, length,
                                 one_stage_top_k),
            "model only": build_floor(
                model, encoded, batch_size, beam_width, length,
                lambda logits, *_: tf.argmax(logits, axis=-1, output_type=tf.int32)),
            "floor, chunked top-k": build_floor(
                model, encoded, batch_size, beam_width, length,
                lambda *args: two_stage_top_k(*args, row_top_k=top_k.top_k)),
            "tfa": build_tfa(model, encoded, batch_size, beam_width, length),
        }
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            wall, cpu = time_variants(session, fetches, repeats)
    return {name: {"sentences_per_second": batch_size / wall[name],
                   "cpu_ms_per_sentence": 1000 * cpu[name] / batch_size} for name in fetches}


def build_cost(length):
    """Graph build seconds and op count of both searches at one decode length."""
    costs = {}
    for name, search in (("while_loop", while_loop_beam_search), ("unrolled", rnn_beam_search)):
        with tf.Graph().as_default() as graph:
            model = Seq2SeqModel(MODEL_PARAMS, VOCAB_SIZE, VOCAB_SIZE)
            encoded = encoded_batch(model, 32)
            ops_before = len(graph.get_operations())
            start = time.perf_counter()
            build_our_search(search, model, encoded, 5, length)
            costs[name] = {"build_seconds": time.perf_counter() - start,
                           "ops": len(graph.get_operations()) - ops_before}
    return costs


def scoring_cost(repeats, batch_size=32, beam_width=5, steps=200):
    """CPU milliseconds per step of the scoring alone, on random logits.

    Each step's logits depend on the previous step's choice (by a shift far
    below float resolution), so that the loop can neither skip nor overlap
    the selections; "logits only" times that dependency alone, and is
    subtracted from the others. CPU time: these runs are short enough for a
    burst of load from other processes to swamp their wall-clock time.
    """
    with tf.Graph().as_default():
        logits = tf.constant(np.random.RandomState(0).randn(batch_size, beam_width, VOCAB_SIZE),
                             tf.float32)
        beam = scoring.Beam(log_probs=tf.zeros([batch_size, beam_width]),
                            lengths=tf.zeros([batch_size, beam_width], tf.int32),
                            finished=tf.zeros([batch_size, beam_width], tf.bool))

        def loop(select):
            def body(step, previous):
                shifted = logits + 1e-30 * tf.cast(previous[..., None], tf.float32)
                return step + 1, select(shifted, step)
            return tf.while_loop(lambda step, _: step < steps, body,
                                 (tf.constant(0), tf.zeros([batch_size, beam_width], tf.int32)),
                                 back_prop=False)[1]

        fetches = {
            "logits only": loop(lambda shifted, step: tf.argmax(shifted, -1, output_type=tf.int32)),
            "one stage: log-softmax, tf.nn.top_k over beam x vocab": loop(
                lambda shifted, step: one_stage_top_k(shifted, beam.log_probs, beam_width)),
            "two stages, tf.nn.top_k per row": loop(
                lambda shifted, step: two_stage_top_k(shifted, beam.log_probs, beam_width,
                                                      tf.nn.top_k)),
            "two stages, chunked top-k per row": loop(
                lambda shifted, step: two_stage_top_k(shifted, beam.log_probs, beam_width,
                                                      top_k.top_k)),
            "scoring.select_best (the above + finished hypotheses)": loop(
                lambda shifted, step: scoring.select_best(shifted, beam, step, END,
                                                          LENGTH_PENALTY).parent_ids),
        }
        with tf.Session() as session:
            _, cpu = time_variants(session, fetches, repeats)
    baseline = cpu.pop("logits only")
    return {name: 1000 * (seconds - baseline) / steps for name, seconds in cpu.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per variant and size")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    tf.disable_v2_behavior()
    # tfa's decoder builds an Assert op it never runs, which TF logs as an error.
    tf.get_logger().setLevel("FATAL")

    results = {"load_average_before": os.getloadavg(), "cpus": os.cpu_count(),
               "throughput": [], "build": {}, "scoring": {}}
    for batch_size, beam_width, length in SIZES:
        speeds = throughput(batch_size, beam_width, length, args.repeats)
        results["throughput"].append({"batch": batch_size, "beam": beam_width,
                                      "length": length, "variants": speeds})
        tfa = speeds["tfa"]
        print("\nbatch %d, beam %d, %d steps" % (batch_size, beam_width, length))
        print("| variant | sentences/s | vs tfa | CPU ms/sentence | CPU vs tfa |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for name, speed in speeds.items():
            print("| %s | %.1f | %.2fx | %.1f | %.2fx |" % (
                name, speed["sentences_per_second"],
                speed["sentences_per_second"] / tfa["sentences_per_second"],
                speed["cpu_ms_per_sentence"],
                tfa["cpu_ms_per_sentence"] / speed["cpu_ms_per_sentence"]))
    print("\ngraph build, batch 32, beam 5")
    print("| steps | while_loop build s | while_loop ops | unrolled build s | unrolled ops |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for length in BUILD_LENGTHS:
        cost = results["build"][length] = build_cost(length)
        print("| %d | %.2f | %d | %.2f | %d |" % (
            length, cost["while_loop"]["build_seconds"], cost["while_loop"]["ops"],
            cost["unrolled"]["build_seconds"], cost["unrolled"]["ops"]))
    results["scoring"] = scoring_cost(args.repeats)
    print("\nscoring step alone, batch 32, beam 5, vocab %d" % VOCAB_SIZE)
    print("| selection | CPU ms/step |")
    print("| --- | ---: |")
    for name, milliseconds in results["scoring"].items():
        print("| %s | %.2f |" % (name, milliseconds))
    results["load_average_after"] = os.getloadavg()
    print("\nload average before %s, after %s, %d CPUs" % (
        results["load_average_before"], results["load_average_after"], results["cpus"]))
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
