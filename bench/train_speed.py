"""Training speed: this model (1 and 2 towers) against a Keras peer, same batches.

The batches are drawn once from data_pipeline.input (TRAIN mode, rows
divisible by 2 so that both tower counts see identical data) and saved; each
variant then trains on the same list in its own process, the same run:

  ours_1   seq2seq.model_fn's TRAIN graph on one device, in a tf.Session
           (what train.py runs, without the Estimator's hooks).
  ours_2   the same, each batch split over 2 towers on 2 virtual CPU devices.
  keras    a tf.keras GRU encoder-decoder of the same sizes and the same
           architecture (shared embedding, bidirectional GRU encoder with
           num_units / 2 per direction, tanh bridge, GRU decoder, additive
           attention over the decoder states with attention_size projections,
           tanh pre-output layer of num_units, vocabulary projection, dropout on
           embeddings and pre-output), trained with model.fit in TF2 mode
           (its train step compiled with tf.function, the way Keras is meant
           to run), Adam with the same learning rate and global-norm clipping.

Differences that favour Keras: no label smoothing (Keras's sparse
cross-entropy has none) and a constant learning rate.

Tokens are real source + target tokens (target with its EOS), the unit of the
training progress line. The first `--warmup` steps (graph building, tracing,
the first allocation) are not timed. Two rates are given: tokens per second of
wall-clock time, and tokens per CPU-second of the process (all its threads),
which other jobs on a shared machine disturb far less and which measures the
work each implementation does for the same batches.

Usage:
  .venv/bin/python -m bench.train_speed [--config configs/default.yaml]
      [--steps 20] [--warmup 5] [--repeats 1] [--json bench/out/train_speed.json]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

VARIANTS = ("ours_1", "ours_2", "keras")
BATCH_KEYS = ("source_ids", "source_length", "target_input", "target_output", "target_length")


def dump_batches(config, count, path):
    """Saves `count` TRAIN batches (rows divisible by 2) to an .npz file."""
    import tensorflow.compat.v1 as tf
    from data_pipeline.input import TRAIN, make_dataset

    tf.disable_v2_behavior()
    with tf.Graph().as_default():
        features, labels = tf.data.make_one_shot_iterator(
            make_dataset(dict(config, num_towers=2), "train", TRAIN)).get_next()
        batch = dict(features, **labels)
        with tf.Session() as session:
            batches = [session.run(batch) for _ in range(count)]
    np.savez(path, **{"%d/%s" % (i, key): batch[key]
                      for i, batch in enumerate(batches) for key in BATCH_KEYS})


def load_batches(path):
    """The batches of `dump_batches`, as a list of dicts of arrays."""
    arrays = np.load(path)
    count = len(arrays.files) // len(BATCH_KEYS)
    return [{key: arrays["%d/%s" % (i, key)] for key in BATCH_KEYS} for i in range(count)]


def num_tokens(batch):
    return int(batch["source_length"].sum() + batch["target_length"].sum())


def step_clock():
    """(wall-clock seconds, CPU seconds of this process), read at the end of a step."""
    return time.perf_counter(), time.process_time()


def rates(batches, step_end_clocks, warmup):
    """Tokens of the timed steps per wall-clock second and per CPU-second.

    The timed steps are those after `warmup`, timed from the end of the last
    warm-up step to the end of the last step.
    """
    tokens = sum(num_tokens(b) for b in batches[warmup:len(step_end_clocks)])
    wall = step_end_clocks[-1][0] - step_end_clocks[warmup - 1][0]
    cpu = step_end_clocks[-1][1] - step_end_clocks[warmup - 1][1]
    return {"tokens_per_second": tokens / wall, "tokens_per_cpu_second": tokens / cpu,
            "seconds": wall, "cpu_seconds": cpu, "steps": len(step_end_clocks) - warmup}


def run_ours(config, batches, num_towers, warmup):
    """Trains seq2seq's model_fn graph on `batches`; returns each step's `step_clock()`."""
    import tensorflow.compat.v1 as tf
    from data_pipeline.tokenizer import Tokenizer
    from seq2seq import towers
    from seq2seq.model_fn import model_fn

    tf.disable_v2_behavior()
    model_dir = tempfile.mkdtemp()
    Tokenizer.load(config["data"]["data_dir"]).copy_to(model_dir)  # model_fn's vocabulary
    with tf.Graph().as_default():
        tf.set_random_seed(config["train"]["seed"])
        placeholders = {key: tf.placeholder(tf.int32, [None] * batches[0][key].ndim, name=key)
                        for key in BATCH_KEYS}
        features = {key: placeholders[key] for key in BATCH_KEYS[:2]}
        labels = {key: placeholders[key] for key in BATCH_KEYS[2:]}
        spec = model_fn(features, labels, tf.estimator.ModeKeys.TRAIN,
                        dict(config, num_towers=num_towers),
                        tf.estimator.RunConfig(model_dir=model_dir))
        with tf.Session(config=towers.session_config(num_towers)) as session:
            session.run(tf.global_variables_initializer())
            times = []
            for batch in batches:
                session.run(spec.train_op, {placeholders[key]: batch[key] for key in BATCH_KEYS})
                times.append(step_clock())
    return times


def keras_model(vocab_size, model_params):
    """The Keras peer: same sizes and architecture as seq2seq.model (see module doc)."""
    import tensorflow as tf2

    layers = tf2.keras.layers
    units, dropout = model_params["num_units"], model_params["dropout"]
    source = layers.Input([None], dtype="int32", name="source_ids")
    target_input = layers.Input([None], dtype="int32", name="target_input")
    embedding = layers.Embedding(vocab_size, model_params["embedding_size"], mask_zero=True)
    memory, forward, backward = layers.Bidirectional(layers.GRU(
        units // 2, return_sequences=True, return_state=True))(
            layers.Dropout(dropout)(embedding(source)))
    initial_state = layers.Dense(units, activation="tanh")(
        layers.Concatenate()([forward, backward]))
    states = layers.GRU(units, return_sequences=True)(
        layers.Dropout(dropout)(embedding(target_input)), initial_state=initial_state)
    query = layers.Dense(model_params["attention_size"], use_bias=False)(states)
    keys = layers.Dense(model_params["attention_size"])(memory)
    context = layers.AdditiveAttention()([query, memory, keys])
    pre_output = layers.Dense(units, activation="tanh")(layers.Concatenate()([states, context]))
    logits = layers.Dense(vocab_size)(layers.Dropout(dropout)(pre_output))
    return tf2.keras.Model([source, target_input], logits)


def run_keras(config, batches, warmup):
    """Trains the Keras peer with model.fit on `batches`; returns each step's `step_clock()`."""
    import tensorflow as tf2
    from data_pipeline.tokenizer import Tokenizer

    tf2.random.set_seed(config["train"]["seed"])
    vocab_size = Tokenizer.load(config["data"]["data_dir"]).target_vocab_size
    model = keras_model(vocab_size, config["model"])
    model.compile(
        optimizer=tf2.keras.optimizers.Adam(config["train"]["learning_rate"],
                                            global_clipnorm=config["train"]["clip_gradient_norm"]),
        loss=tf2.keras.losses.SparseCategoricalCrossentropy(from_logits=True))

    def examples():
        for batch in batches:
            yield (batch["source_ids"], batch["target_input"]), batch["target_output"]

    matrix = tf2.TensorSpec([None, None], tf2.int32)
    dataset = tf2.data.Dataset.from_generator(
        examples, output_signature=((matrix, matrix), matrix))
    times = []

    class StepTimes(tf2.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            times.append(step_clock())

    model.fit(dataset, epochs=1, steps_per_epoch=len(batches), verbose=0, callbacks=[StepTimes()])
    return times


def worker(variant, config_path, hparams, batches_path, warmup):
    """Runs one variant in this process and prints its result as one JSON line."""
    from seq2seq.config import load_config

    config = load_config(config_path, hparams)
    batches = load_batches(batches_path)
    if variant == "keras":
        times = run_keras(config, batches, warmup)
    else:
        times = run_ours(config, batches, int(variant[-1]), warmup)
    print(json.dumps(dict(rates(batches, times, warmup), variant=variant)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/default.yaml")
    parser.add_argument("--hparams", default="")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per variant")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    parser.add_argument("--repeats", type=int, default=1, help="runs of every variant, interleaved")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--worker", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--batches", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.config, args.hparams, args.batches, args.warmup)
        return

    from data_pipeline.prepare import prepare
    from seq2seq.config import load_config

    config = load_config(args.config, args.hparams)
    prepare(config, verbose=False)
    results = {variant: [] for variant in VARIANTS}
    units = ("tokens_per_second", "tokens_per_cpu_second")
    with tempfile.TemporaryDirectory() as scratch:
        batches_path = os.path.join(scratch, "batches.npz")
        dump_batches(config, args.warmup + args.steps, batches_path)
        batches = load_batches(batches_path)
        print("%s: %d batches, %.0f pairs and %.0f tokens per batch on average"
              % (args.config, len(batches), np.mean([len(b["source_length"]) for b in batches]),
                 np.mean([num_tokens(b) for b in batches])))
        for _ in range(args.repeats):
            for variant in VARIANTS:
                output = subprocess.run(
                    [sys.executable, "-m", "bench.train_speed", "--worker", variant,
                     "--config", args.config, "--hparams", args.hparams,
                     "--batches", batches_path, "--warmup", str(args.warmup)],
                    check=True, capture_output=True, text=True).stdout
                result = json.loads(output.strip().splitlines()[-1])
                results[variant].append(result)
                print("%-7s %8.0f tokens/s  %8.0f tokens/CPU-s  (%d steps in %.1f s, %.1f CPU-s)"
                      % (variant, result["tokens_per_second"], result["tokens_per_cpu_second"],
                         result["steps"], result["seconds"], result["cpu_seconds"]))
    median = {unit: {variant: float(np.median([r[unit] for r in runs]))
                     for variant, runs in results.items()} for unit in units}
    for unit in units:
        m = median[unit]
        print("median %s: %s; ours_1/keras %.2f, ours_2/keras %.2f, ours_2/ours_1 %.2f"
              % (unit, ", ".join("%s %.0f" % item for item in m.items()),
                 m["ours_1"] / m["keras"], m["ours_2"] / m["keras"], m["ours_2"] / m["ours_1"]))
    if args.json:
        os.makedirs(os.path.dirname(args.json) or ".", exist_ok=True)
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"config": args.config, "hparams": args.hparams, "steps": args.steps,
                       "warmup": args.warmup, "runs": results, "median": median}, f, indent=2)


if __name__ == "__main__":
    main()
