"""Decoding speed: both beam searches, greedy, a floor, and tfa's BeamSearchDecoder.

Every variant decodes the same random-weight model (configs/lab.yaml's sizes or --config's) on
the same random source batch, the end token's logit masked to -inf so that every variant runs
exactly `length` steps (--natural_lengths: not masked), in one session, timed side by side; the
table gives the median sentences/s and ratios to tfa:
- while_loop / unrolled / greedy: decode.while_loop_beam_search, decode.rnn_beam_search,
  decode.greedy_search over model.beam_update_fn; "while_loop, compact" with compact=True
  (what compaction costs when no sentence leaves).
- floor: the same per-step arithmetic (the model step, log-softmax, one top_k over beam x
  vocab) in a bare tf.while_loop; "floor, chunked top-k" selects as beam_step does; "model
  only" feeds back each row's argmax.
- tfa: tfa.seq2seq.BeamSearchDecoder driving the very same decoder step as a Keras cell; "tfa,
  own AttentionWrapper": tfa's own decoder of the same sizes, what its users write.
Other sections: "translate" (the search as decode.translate runs it, against tfa), "build"
(graph build time and op count by decode length), "scoring" (the scoring step alone) and
"selection" (the whole search with each selection); docs/BENCHMARKS.md. --isolated N runs each
of --variants in a process of its own, N rounds. TF_ENABLE_ONEDNN_OPTS and ONEDNN_MAX_CPU_ISA
in the environment choose TensorFlow's kernels.

Usage (tfa from requirements-bench.txt):
  .venv/bin/python -m bench.decode_speed [--repeats 7] [--sections selection,throughput,...]
      [--variants while_loop,tfa [--isolated 2]] [--json bench/out/decode_speed.json]
"""

import argparse
import ast
import concurrent.futures
import contextlib
import functools
import os
import re
from unittest import mock

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402
from tensorflow.python.util import _pywrap_util_port  # noqa: E402

from bench import harness  # noqa: E402
from decode import beam_search, greedy_search, rnn_beam_search, while_loop_beam_search  # noqa: E402
from decode import scoring  # noqa: E402
from decode.batching import call_batch_size  # noqa: E402
from seq2seq.common import batch_gather, get_shape, merge_beams, tile_beams  # noqa: E402
from seq2seq.config import DEFAULTS, load_config  # noqa: E402
from seq2seq.model import Seq2SeqModel  # noqa: E402

VOCAB_SIZE = 4000
SOURCE_LENGTH = 20
BEGIN, END = 2, 3  # docs/API.md's SentencePiece ids
LENGTH_PENALTY = 0.6
MODEL_PARAMS = dict(DEFAULTS["model"], embedding_size=128, num_units=256, attention="bahdanau",
                    attention_size=256, dropout=0.0)
# (batch, beam, decode steps)
SIZES = [(32, 5, 40), (1, 5, 40), (32, 10, 60), (64, 10, 60)]
SELECTION_SIZES = [(1, 5, 40), (32, 5, 40)]
BUILD_LENGTHS = [20, 50, 100]
# Whether TensorFlow uses oneDNN, and which instructions oneDNN may use.
ONEDNN_VARIABLES = ("TF_ENABLE_ONEDNN_OPTS", "ONEDNN_MAX_CPU_ISA")


def end_mask():
    """[V] float32 that every variant adds to its logits: -inf at the end token, so decoding runs
    every step; all 0 with --natural_lengths (the same op, and searches stop as they would)."""
    masked = (np.arange(VOCAB_SIZE) == END) & FORCED_LENGTHS
    return np.where(masked, -np.inf, 0.0).astype(np.float32)


def never_ending(update_fn):
    """`update_fn` with end_mask() added to its logits."""
    mask = tf.constant(end_mask())

    def update(state, ids):
        new_state, logits = update_fn(state, ids)
        return new_state, logits + mask
    return update


def encoded_batch(model, batch_size, seed=1):
    """The model's encoding of a random source batch of SOURCE_LENGTH tokens."""
    rng = np.random.RandomState(seed)
    source_ids = rng.randint(4, VOCAB_SIZE, size=[batch_size, SOURCE_LENGTH]).astype(np.int32)
    return model.encode(tf.constant(source_ids), tf.fill([batch_size], SOURCE_LENGTH),
                        training=False)


def build_our_search(search, model, encoded, beam_width, length, beam_update_fn=None,
                     **options):
    """`search` over the model's step (`beam_update_fn`: another checkout's
    Seq2SeqModel.beam_update_fn instead of the model's own), `options` its keywords; a greedy
    `search` takes no beam width: `beam_width` None."""
    update_fn, initial_state = (beam_update_fn or Seq2SeqModel.beam_update_fn)(
        model, encoded, beam_width or 1)
    widths = [beam_width] if beam_width else []
    return search(never_ending(update_fn), initial_state, length, *widths, BEGIN, END,
                  LENGTH_PENALTY, **options)[:2]


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
    """beam_step's selection alone: per-row logsumexp, per-row top-k, then beam x beam.

    Args:
      logits: [batch, beam, vocab]; beam_log_probs: [batch, beam].
      row_top_k: tf.nn.top_k or decode.beam_search.top_k.
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


def textbook_beam_step(update_fn, state, step, end_token_id, options):
    """beam_search.beam_step in one stage (log-softmax, add, one top_k over beam x vocab), for
    the options this bench sets (a length penalty, a length limit): the same BeamState in and
    out, finished hypotheses carried over at their end-token slot."""
    model, logits = update_fn(state.model, state.ids)                          # [b, k, v]
    batch_size, beam_width = get_shape(state.log_probs)
    vocab_size = get_shape(logits)[2]
    is_end = tf.equal(tf.range(vocab_size), end_token_id)                      # [v]
    log_probs = state.log_probs[..., None] + tf.nn.log_softmax(logits)        # [b, k, v]
    if beam_search.carried(state.max_lengths):
        at_limit = tf.greater_equal(step + 1, state.max_lengths)[:, None, None]  # [b, 1, 1]
        log_probs = tf.where_v2(tf.logical_and(at_limit, tf.logical_not(is_end)), -np.inf,
                                log_probs)
    carried = tf.where_v2(is_end, state.log_probs[..., None], -np.inf)        # [b, k, v]
    log_probs = tf.where_v2(state.finished[..., None], carried, log_probs)     # [b, k, v]
    lengths = tf.where_v2(state.finished, state.lengths, step + 1)             # [b, k]
    scores = log_probs / scoring.length_normaliser(lengths, options)[..., None]
    _, best = tf.nn.top_k(tf.reshape(scores, [batch_size, -1]), k=beam_width)  # [b, k]
    parent_ids, token_ids = best // vocab_size, best % vocab_size             # [b, k]
    best_log_probs = batch_gather(tf.reshape(log_probs, [batch_size, -1]), best)  # [b, k]
    return beam_search.extend(state, model, token_ids, best_log_probs, step, end_token_id,
                              parent_ids), parent_ids


SELECTIONS = {  # decode.beam_search's functions swapped for these
    "two stages, chunked top-k (shipped)": {"top_k": beam_search.top_k},
    "two stages, tf.nn.top_k per row": {"top_k": tf.nn.top_k},
    "one stage: log-softmax, top_k over beam x vocab": {"beam_step": textbook_beam_step},
}


def selection_speeds(batch_size, beam_width, length, repeats):
    """Sentences/s and CPU ms per sentence of the whole while_loop search with each of
    SELECTIONS."""
    def build(model, encoded):
        fetches = {}
        for name, replacements in SELECTIONS.items():
            with mock.patch.multiple(beam_search, **replacements):
                fetches[name] = build_our_search(while_loop_beam_search, model, encoded,
                                                 beam_width, length)
        return fetches
    return time_builds(batch_size, repeats, build)


def build_floor(model, encoded, batch_size, beam_width, length, select):
    """The per-step arithmetic of a beam search and nothing else (no scores, no reordering, no
    history): each step runs the model and `select`, and feeds the chosen tokens back."""
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


def tfa_decode(decoder, batch_size, initial_state):
    """The predicted_ids [batch, time, beam] of tfa's BeamSearchDecoder `decoder`.

    Its compiled gather_tree needs CUDA symbols that tensorflow-cpu lacks; its Python one
    compares tensors with ==, object identity in graph mode: here == compares elements."""
    import tensorflow_addons as tfa
    tfa.options.disable_custom_kernel()
    with mock.patch.object(tf.Tensor, "__eq__", tf.equal):
        outputs, _, _ = decoder(None, start_tokens=tf.fill([batch_size], BEGIN), end_token=END,
                                initial_state=initial_state)
    return outputs.predicted_ids


def build_tfa(model, encoded, batch_size, beam_width, length):
    """tfa.seq2seq.BeamSearchDecoder around the same decoder step."""
    import tensorflow_addons as tfa
    tiled = tf.nest.map_structure(lambda t: merge_beams(tile_beams(t, beam_width)), encoded)
    mask = tf.constant(end_mask())

    class DecoderStepCell(tf.keras.layers.Layer):
        """The model's decoder step as a Keras cell: ids in, logits out."""
        state_size = MODEL_PARAMS["num_units"]
        output_size = VOCAB_SIZE

        # Plain graph code: keep Keras from running it through AutoGraph.
        @tf.autograph.experimental.do_not_convert
        def call(self, ids, state, training=None):
            new_state, logits = model.step(tiled, {"h": state}, ids)
            return logits + mask, new_state["h"]

        def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
            raise NotImplementedError("the search starts from the encoder's state")

    decoder = tfa.seq2seq.BeamSearchDecoder(
        DecoderStepCell(), beam_width, embedding_fn=lambda ids: ids,
        length_penalty_weight=LENGTH_PENALTY, maximum_iterations=length, **TFA_OPTIONS)
    return tfa_decode(decoder, batch_size,
                      tfa.seq2seq.tile_batch(encoded.initial_state["h"], beam_width))


def build_tfa_own_cell(encoded, batch_size, beam_width, length):
    """What a tfa user writes, of the model's sizes, over its encoder's output: tfa's
    AttentionWrapper (its attention of the model's kind around a Keras GRUCell, the attention
    layer fed back as input) and a Dense projection whose bias holds end_mask(). A decoder step
    of its own, with weights of its own."""
    import tensorflow_addons as tfa
    tile = functools.partial(tfa.seq2seq.tile_batch, multiplier=beam_width)
    mechanism, size = {"bahdanau": (tfa.seq2seq.BahdanauAttention, "attention_size"),
                       "luong": (tfa.seq2seq.LuongAttention, "num_units")}[
                           MODEL_PARAMS["attention"]]
    cell = tfa.seq2seq.AttentionWrapper(
        tf.keras.layers.GRUCell(MODEL_PARAMS["num_units"]),
        mechanism(MODEL_PARAMS[size], memory=tile(encoded.memory),
                  memory_sequence_length=tf.fill([batch_size * beam_width], SOURCE_LENGTH)),
        attention_layer_size=MODEL_PARAMS["num_units"])
    decoder = tfa.seq2seq.BeamSearchDecoder(
        cell, beam_width, embedding_fn=tf.keras.layers.Embedding(
            VOCAB_SIZE, MODEL_PARAMS["embedding_size"]),
        output_layer=tf.keras.layers.Dense(
            VOCAB_SIZE, bias_initializer=tf.constant_initializer(end_mask())),
        length_penalty_weight=LENGTH_PENALTY, maximum_iterations=length, **TFA_OPTIONS)
    initial_state = cell.get_initial_state(batch_size=batch_size * beam_width, dtype=tf.float32)
    return tfa_decode(decoder, batch_size,
                      initial_state.clone(cell_state=tile(encoded.initial_state["h"])))


AGAINST = None  # --against: the other checkout's decode package and beam_update_fn
SESSION_CONFIG = None  # --threads, --no_grappler: the throughput session's ConfigProto
FORCED_LENGTHS = True  # False with --natural_lengths
VARIANTS = None  # --variants: the names of the variants to build and time (None: all)
TFA_OPTIONS = {}  # --tfa: more keywords for tfa's BeamSearchDecoder


def chosen(builders):
    """{name: fetch} of the builders ({name: function returning a fetch}) that --variants names;
    ValueError if it names one they lack."""
    unknown = set(VARIANTS or ()) - set(builders)
    if unknown:
        raise ValueError("--variants: no %s here; this section has: %s" % (
            ", ".join(sorted(unknown)), ", ".join(builders)))
    return {name: build() for name, build in builders.items()
            if VARIANTS is None or name in VARIANTS}


def sentence_speeds(runs, repeats, batch_size):
    """{name: sentences/s and CPU ms per sentence} of `runs` ({name: function decoding
    `batch_size` sentences}), from the medians of harness.time_rounds (2 warm-up runs)."""
    samples = harness.time_rounds(runs, repeats, warmup=2)
    return {name: {"sentences_per_second": batch_size / harness.median(runs.wall),
                   "cpu_ms_per_sentence": 1000 * harness.median(runs.cpu) / batch_size}
            for name, runs in samples.items()}


def time_builds(batch_size, repeats, build, session_config=None):
    """sentence_speeds of the fetches ({name: fetch}) that `build(model, encoded)` returns over
    a random model and its encoding of a batch of `batch_size`, run in one session."""
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        model = Seq2SeqModel(MODEL_PARAMS, VOCAB_SIZE, VOCAB_SIZE)
        fetches = build(model, encoded_batch(model, batch_size))
        with tf.Session(config=session_config) as session:
            session.run(tf.global_variables_initializer())
            return sentence_speeds({name: functools.partial(session.run, fetch)
                                    for name, fetch in fetches.items()}, repeats, batch_size)


def throughput(batch_size, beam_width, length, repeats):
    """Sentences/s and CPU milliseconds per sentence of every variant at one size."""
    def build(model, encoded):
        ours = functools.partial(build_our_search, model=model, encoded=encoded,
                                 beam_width=beam_width, length=length)
        floor = functools.partial(build_floor, model, encoded, batch_size, beam_width, length)
        builders = {
            "while_loop": lambda: ours(while_loop_beam_search),
            "while_loop, compact": lambda: ours(while_loop_beam_search, compact=True),
            "unrolled": lambda: ours(rnn_beam_search),
            "greedy": lambda: ours(greedy_search, beam_width=None),
            "floor": lambda: floor(one_stage_top_k),
            "model only": lambda: floor(
                lambda logits, *_: tf.argmax(logits, axis=-1, output_type=tf.int32)),
            "floor, chunked top-k": lambda: floor(
                lambda *args: two_stage_top_k(*args, row_top_k=beam_search.top_k)),
            "tfa": lambda: build_tfa(model, encoded, batch_size, beam_width, length),
            "tfa, own AttentionWrapper": lambda: build_tfa_own_cell(encoded, batch_size,
                                                                    beam_width, length),
        }
        if AGAINST:
            searches, beam_update_fn = AGAINST
            for name, search, width in (
                    ("while_loop", searches.while_loop_beam_search, beam_width),
                    ("unrolled", searches.rnn_beam_search, beam_width),
                    ("greedy", searches.greedy_search, None)):
                builders[name + " (--against)"] = functools.partial(
                    ours, search, beam_width=width, beam_update_fn=beam_update_fn)
        return chosen(builders)
    return time_builds(batch_size, repeats, build, SESSION_CONFIG)


def as_translate_runs_it(batch_size, beam_width, length, repeats):
    """"while_loop": the search as `decode.translate` runs a call of `batch_size` sentences
    (batches of `call_batch_size`, one per core at once, in the Translator's session: every op
    in the calling thread, one intra-op thread, Grappler off; compaction on), against "tfa" on
    the whole batch in TensorFlow's default session, what its users get."""
    threads = os.cpu_count()
    chunk = call_batch_size(batch_size, DEFAULTS["decode"]["batch_size"], threads)
    chunks = -(-batch_size // chunk)
    with tf.Graph().as_default(), contextlib.ExitStack() as stack:
        tf.set_random_seed(1)
        model = Seq2SeqModel(MODEL_PARAMS, VOCAB_SIZE, VOCAB_SIZE)
        fetches = chosen({
            "while_loop": lambda: build_our_search(
                while_loop_beam_search, model, encoded_batch(model, chunk), beam_width, length,
                compact=True),
            "tfa": lambda: build_tfa(model, encoded_batch(model, batch_size), batch_size,
                                     beam_width, length)})

        def session(config=None):
            opened = stack.enter_context(tf.Session(config=config))
            opened.run(tf.global_variables_initializer())
            return opened
        # The first session sizes the process's intra-op pool: tfa's first, so it gets
        # TensorFlow's default threads, and ours that pool, not the one thread it has in a
        # process of its own (--isolated).
        runs = {"tfa": functools.partial(session().run, fetches["tfa"])} if "tfa" in fetches else {}
        if "while_loop" in fetches:
            translator_session = session(harness.session_config(-1, 1, grappler=False))
            pool = stack.enter_context(concurrent.futures.ThreadPoolExecutor(threads))
            runs["while_loop"] = lambda: list(pool.map(
                lambda _: translator_session.run(fetches["while_loop"]), range(chunks)))
        return sentence_speeds({name: runs[name] for name in fetches}, repeats, batch_size)


def build_cost(length):
    """Graph build seconds and op count of both searches at one decode length."""
    costs = {}
    for name, search in (("while_loop", while_loop_beam_search), ("unrolled", rnn_beam_search)):
        with tf.Graph().as_default() as graph:
            model = Seq2SeqModel(MODEL_PARAMS, VOCAB_SIZE, VOCAB_SIZE)
            encoded = encoded_batch(model, 32)
            ops_before = len(graph.get_operations())
            seconds, _, _ = harness.measure(
                lambda: build_our_search(search, model, encoded, 5, length))
            costs[name] = {"build_seconds": seconds,
                           "ops": len(graph.get_operations()) - ops_before}
    return costs


def scoring_cost(repeats, batch_size=32, beam_width=5, steps=200):
    """CPU milliseconds per step of the scoring alone, on random logits. Each step's logits
    depend on the previous step's choice (a shift far below float resolution), so the loop can
    neither skip nor overlap selections; "logits only" times that alone and is subtracted.
    CPU time: a burst of load would swamp the wall-clock time of runs this short."""
    with tf.Graph().as_default():
        logits = tf.constant(np.random.RandomState(0).randn(batch_size, beam_width, VOCAB_SIZE),
                             tf.float32)
        beam = beam_search.BeamState(log_probs=tf.zeros([batch_size, beam_width]),
                                     lengths=tf.zeros([batch_size, beam_width], tf.int32),
                                     finished=tf.zeros([batch_size, beam_width], tf.bool),
                                     ids=tf.zeros([batch_size, beam_width], tf.int32))

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
                                                      beam_search.top_k)),
            "beam_search.beam_step (the above + finished hypotheses)": loop(
                lambda shifted, step: beam_search.beam_step(
                    lambda model, ids: (model, shifted), beam, step, END,
                    scoring.as_scoring(LENGTH_PENALTY))[1]),
        }
        with tf.Session() as session:
            cpu = {name: harness.median(runs.cpu) for name, runs in harness.time_rounds(
                {name: functools.partial(session.run, fetch) for name, fetch in fetches.items()},
                repeats, warmup=2).items()}
    baseline = cpu.pop("logits only")
    return {name: 1000 * (seconds - baseline) / steps for name, seconds in cpu.items()}


def isolated(args, section):
    """`section`'s results with each of --variants in a process of its own (this bench with the
    same options), `args.isolated` rounds of them, the order rotating (A B, B A, ...); a
    variant's figures are the medians over its processes, "rounds" lists each process's."""
    options = ["--" + key if value is True else "--%s=%s" % (key, value)
               for key, value in vars(args).items() if value is not None and value is not False
               and key not in ("sections", "variants", "json", "isolated")]
    rounds = {name: [] for name in VARIANTS}
    for index in range(args.isolated):
        for name in harness.rotation(VARIANTS, index):
            rounds[name].append(harness.child_json(
                ["-m", "bench.decode_speed", "--sections", section, "--variants", name, *options]
            )[section])
    for size, entry in enumerate(rounds[VARIANTS[0]][0]):
        speeds = {name: [run[size]["variants"][name] for run in runs]
                  for name, runs in rounds.items()}
        yield dict(entry, rounds=speeds, variants={
            name: {key: harness.median(run[key] for run in runs) for key in runs[0]}
            for name, runs in speeds.items()})


def print_speeds(title, entry, reference):
    speeds = entry["variants"]
    reference = reference if reference in speeds else next(iter(speeds))
    base = speeds[reference]
    print("\n" + title)
    print(harness.markdown_table(
        ["variant", "sentences/s", "vs " + reference, "CPU ms/sentence", "CPU vs " + reference],
        ([name, "%.1f" % speed["sentences_per_second"],
          "%.2fx" % (speed["sentences_per_second"] / base["sentences_per_second"]),
          "%.1f" % speed["cpu_ms_per_sentence"],
          "%.2fx" % (base["cpu_ms_per_sentence"] / speed["cpu_ms_per_sentence"])]
         for name, speed in speeds.items())))
    for name, runs in entry.get("rounds", {}).items():
        if name != reference:
            print("%s / %s, each round's processes: %s" % (name, reference, ", ".join(
                "%.2fx" % (run["sentences_per_second"] / their["sentences_per_second"])
                for run, their in zip(runs, entry["rounds"][reference]))))


SECTIONS = ("selection", "throughput", "translate", "build", "scoring")


def main():
    global AGAINST, SESSION_CONFIG, FORCED_LENGTHS, VARIANTS, TFA_OPTIONS, VOCAB_SIZE, MODEL_PARAMS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per variant and size")
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help="comma-separated, of: %s" % ", ".join(SECTIONS))
    parser.add_argument("--sizes", help="throughput sizes batch:beam:steps,... (default: %s)"
                        % ",".join("%d:%d:%d" % size for size in SIZES))
    parser.add_argument("--variants", help="only these of the throughput and translate "
                        "sections, comma-separated (a name's own comma has a space after it), "
                        "e.g. while_loop,tfa")
    parser.add_argument("--isolated", type=int, metavar="ROUNDS",
                        help="throughput and translate: each of --variants in a process of its "
                             "own, ROUNDS rounds in rotating order")
    parser.add_argument("--natural_lengths", action="store_true",
                        help="leave the end token's logit alone: searches stop as they would "
                             "(default: masked, every variant runs every step)")
    parser.add_argument("--config", help="the model sizes and vocab_size of this config, random "
                        "weights (default: configs/lab.yaml's, the model's of real text)")
    parser.add_argument("--tfa", metavar="KEY=VALUE,...",
                        help="more keywords for tfa's BeamSearchDecoder, Python literals, e.g. "
                             "impute_finished=True,output_time_major=True")
    parser.add_argument("--against", metavar="CHECKOUT",
                        help="also time the searches and beam_update_fn of this checkout "
                             "(e.g. ../baseline, made by `git worktree add ../baseline 72d9ef8`)")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--threads", metavar="INTER/INTRA",
                        help="the throughput session's inter/intra-op threads for every variant, "
                             "e.g. --threads=-1/1, the Translator's default (default: "
                             "TensorFlow's)")
    parser.add_argument("--no_grappler", action="store_true",
                        help="the throughput session without Grappler, as the Translator's")
    args = parser.parse_args()
    if args.threads or args.no_grappler:
        threads = (int(n) for n in (args.threads or "0/0").split("/"))
        SESSION_CONFIG = harness.session_config(*threads, grappler=not args.no_grappler)
    if args.against:
        AGAINST = harness.load_checkout(args.against)
    FORCED_LENGTHS = not args.natural_lengths
    if args.variants:
        VARIANTS = re.split(r",(?! )", args.variants)
    elif args.isolated:
        parser.error("--isolated needs --variants, e.g. --variants while_loop,tfa")
    if args.config:
        config = load_config(args.config)
        VOCAB_SIZE, MODEL_PARAMS = config["data"]["vocab_size"], dict(config["model"], dropout=0.0)
    try:
        TFA_OPTIONS = {key: ast.literal_eval(value) for key, value in (
            item.split("=", 1) for item in args.tfa.split(","))} if args.tfa else {}
    except (ValueError, SyntaxError):
        parser.error("--tfa takes KEY=VALUE,... with Python literals, not %r" % args.tfa)
    sizes = SIZES
    if args.sizes:
        sizes = [tuple(int(n) for n in size.split(":")) for size in args.sizes.split(",")]
    sections = args.sections.split(",")
    tf.disable_v2_behavior()
    # tfa's decoder builds an Assert op it never runs, which TF logs as an error.
    tf.get_logger().setLevel("FATAL")

    results = {"load_average_before": os.getloadavg(), "cpus": os.cpu_count(),
               "onednn": _pywrap_util_port.IsMklEnabled(), "options": vars(args),
               "environment": {key: os.environ.get(key) for key in ONEDNN_VARIABLES},
               "selection": [], "throughput": [], "build": {}, "scoring": {}}
    for section, section_sizes, speeds_of, title, reference in (
            ("selection", SELECTION_SIZES, selection_speeds, "while_loop search by selection: ",
             "two stages, chunked top-k (shipped)"),
            ("throughput", sizes, throughput, "", "tfa"),
            ("translate", sizes, as_translate_runs_it, "as decode.translate runs it: ", "tfa")):
        if section not in sections:
            continue
        entries = (isolated(args, section) if args.isolated and section != "selection" else (
            {"batch": batch_size, "beam": beam_width, "length": length,
             "variants": speeds_of(batch_size, beam_width, length, args.repeats)}
            for batch_size, beam_width, length in section_sizes))
        for entry in entries:
            results.setdefault(section, []).append(entry)
            print_speeds(title + "batch %(batch)d, beam %(beam)d, %(length)d steps" % entry,
                         entry, reference)
    if "build" in sections:
        results["build"] = {length: build_cost(length) for length in BUILD_LENGTHS}
        print("\ngraph build, batch 32, beam 5")
        print(harness.markdown_table(
            ["steps", "while_loop build s", "while_loop ops", "unrolled build s", "unrolled ops"],
            ([length] + [cell for name in ("while_loop", "unrolled") for cell in (
                "%.2f" % cost[name]["build_seconds"], cost[name]["ops"])]
             for length, cost in results["build"].items()), left=0))
    if "scoring" in sections:
        results["scoring"] = scoring_cost(args.repeats)
        print("\nscoring step alone, batch 32, beam 5, vocab %d" % VOCAB_SIZE)
        print(harness.markdown_table(["selection", "CPU ms/step"], (
            [name, "%.2f" % milliseconds] for name, milliseconds in results["scoring"].items())))
    results["load_average_after"] = os.getloadavg()
    print("\nload average before %s, after %s, %d CPUs, oneDNN %s (%s)" % (
        results["load_average_before"], results["load_average_after"], results["cpus"],
        "on" if results["onednn"] else "off", results["environment"]))
    harness.write_json(args.json, results)


if __name__ == "__main__":
    main()
