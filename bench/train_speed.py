"""Training speed: this model (1 and 2 towers) against Keras and PyTorch peers, same batches.

TRAIN batches (rows divisible by 2: both tower counts see identical data) are drawn once and
saved; each variant trains on them in a process of its own, the variants taking turns,
`--repeats` rounds (docs/BENCHMARKS.md, "Training speed"):
  ours_1     training.model_fn's TRAIN graph on one device in a tf.Session (train.py's update
             without the Estimator's hooks); ours_2: each batch over 2 towers on 2 virtual CPUs.
  keras      a tf.keras peer of the same sizes and architecture (keras_model), model.fit in TF2
             mode; favoured: no label smoothing, a constant learning rate.
  ours_4k    ours_1 with a 4000-wide vocabulary, as the PyTorch peer's (the ids stay below the
             config's 1000); ours_peer: ours_4k at the peer's sizes (PEER_MODEL).
  torch      bench/torch_peer.py, vocabulary 4000, torch.set_num_threads(2); torch_1t: one
             thread.
Tokens are real source + target tokens (target with its EOS), as the training progress line
counts them, and source tokens alone (the PyTorch toolkit's unit); the first `--warmup` steps
are not timed; rates per wall-clock second and per CPU-second of the process (all threads).
--baseline DIR also runs each "ours" variant from another checkout (e.g. a git worktree of an
older commit) as "<variant>@base", on the same batches, with DIR's config file of the same
name and this tree's prepared data_dir.

Usage (the torch variants need requirements-bench.txt):
  .venv/bin/python -m bench.train_speed [--config configs/default.yaml]
      [--steps 20] [--warmup 5] [--repeats 1] [--variants ours_4k,ours_peer,torch,torch_1t]
      [--baseline ../baseline] [--json bench/out/train_speed.json]
"""

import argparse
import contextlib
import functools
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from bench import harness

VARIANTS = ("ours_1", "ours_2", "keras", "ours_4k", "ours_peer", "torch", "torch_1t")
PEER_VOCAB_SIZE = 4000
# ours_peer's overrides of the config's "model" section: bench/torch_peer.RecurrentModel's sizes.
PEER_MODEL = {"embedding_size": 256, "encoder_units": 256, "num_units": 256, "attention_size": 256}
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


def rates(batches, step_end_clocks, warmup):
    """Tokens (and source tokens) per wall-clock second and per CPU-second of the steps after
    `warmup`, from the end of the last warm-up step to the end of the last step."""
    timed = batches[warmup:len(step_end_clocks)]
    tokens = sum(num_tokens(b) for b in timed)
    source_tokens = sum(int(b["source_length"].sum()) for b in timed)
    wall = step_end_clocks[-1][0] - step_end_clocks[warmup - 1][0]
    cpu = step_end_clocks[-1][1] - step_end_clocks[warmup - 1][1]
    return {"tokens_per_second": tokens / wall, "tokens_per_cpu_second": tokens / cpu,
            "source_tokens_per_second": source_tokens / wall,
            "source_tokens_per_cpu_second": source_tokens / cpu,
            "seconds": wall, "cpu_seconds": cpu, "steps": len(step_end_clocks) - warmup}


def run_ours(config, batches, num_towers, vocab_size=None):
    """Trains training.model_fn's graph on `batches`, the vocabularies `vocab_size` wide if
    given (else the tokenizer's); returns (each step's end, harness.clock(); the number of
    trainable parameters)."""
    from unittest import mock

    import tensorflow.compat.v1 as tf
    from data_pipeline.tokenizer import Tokenizer
    from training.model_fn import model_fn, session_config

    tf.disable_v2_behavior()
    model_dir = tempfile.mkdtemp()
    Tokenizer.load(config["data"]["data_dir"]).copy_to(model_dir)  # model_fn's vocabulary
    wide_vocabulary = contextlib.nullcontext()
    if vocab_size:
        wide_vocabulary = mock.patch.multiple(
            Tokenizer, source_vocab_size=property(lambda self: vocab_size),
            target_vocab_size=property(lambda self: vocab_size))
    with tf.Graph().as_default(), wide_vocabulary:
        tf.set_random_seed(config["train"]["seed"])
        placeholders = {key: tf.placeholder(tf.int32, [None] * batches[0][key].ndim, name=key)
                        for key in BATCH_KEYS}
        features = {key: placeholders[key] for key in BATCH_KEYS[:2]}
        labels = {key: placeholders[key] for key in BATCH_KEYS[2:]}
        spec = model_fn(features, labels, tf.estimator.ModeKeys.TRAIN,
                        dict(config, num_towers=num_towers),
                        tf.estimator.RunConfig(model_dir=model_dir))
        parameters = sum(v.shape.num_elements() for v in tf.trainable_variables())
        with tf.Session(config=session_config(num_towers)) as session:
            session.run(tf.global_variables_initializer())
            times = []
            for batch in batches:
                session.run(spec.train_op, {placeholders[key]: batch[key] for key in BATCH_KEYS})
                times.append(harness.clock())
    return times, parameters


def run_torch(config, batches, num_threads):
    """Trains bench/torch_peer.py's model on `batches`, vocabulary PEER_VOCAB_SIZE; returns
    what run_ours does."""
    import torch

    from bench import torch_peer

    torch.set_num_threads(num_threads)
    ids = ("source_ids", "target_input", "target_output")
    assert max(int(b[key].max()) for b in batches for key in ids) < PEER_VOCAB_SIZE
    model, train_step = torch_peer.make_trainer(
        PEER_VOCAB_SIZE, config["train"]["learning_rate"], config["train"]["clip_gradient_norm"],
        seed=config["train"]["seed"], label_smoothing=config["train"]["label_smoothing"],
        dropout=config["model"]["dropout"])
    times = []
    for batch in batches:
        train_step(batch)
        times.append(harness.clock())
    return times, torch_peer.num_parameters(model)


def keras_model(vocab_size, model_params):
    """The Keras peer, seq2seq.model's sizes and architecture: shared embedding, bidirectional
    GRU encoder, tanh bridge, GRU decoder, additive attention over the decoder states, tanh
    pre-output layer, vocabulary projection, dropout on embeddings and pre-output."""
    import tensorflow as tf2

    layers = tf2.keras.layers
    units, dropout = model_params["num_units"], model_params["dropout"]
    source = layers.Input([None], dtype="int32", name="source_ids")
    target_input = layers.Input([None], dtype="int32", name="target_input")
    embedding = layers.Embedding(vocab_size, model_params["embedding_size"], mask_zero=True)
    memory, forward, backward = layers.Bidirectional(layers.GRU(
        model_params.get("encoder_units") or units // 2, return_sequences=True,
        return_state=True))(
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


def run_keras(config, batches):
    """Trains the Keras peer with model.fit on `batches`; returns what run_ours does."""
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
    dataset = tf2.data.Dataset.from_generator(examples, output_signature=((matrix, matrix), matrix))
    times = []

    class StepTimes(tf2.keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            times.append(harness.clock())

    model.fit(dataset, epochs=1, steps_per_epoch=len(batches), verbose=0, callbacks=[StepTimes()])
    return times, model.count_params()


def worker(variant, config_path, hparams, batches_path, warmup):
    """Runs one variant in this process and prints its result as one JSON line."""
    from seq2seq.config import load_config

    config = load_config(config_path, hparams)
    batches = load_batches(batches_path)
    if variant == "keras":
        times, parameters = run_keras(config, batches)
    elif variant in ("torch", "torch_1t"):
        times, parameters = run_torch(config, batches, 1 if variant == "torch_1t" else 2)
    elif variant == "ours_4k":
        times, parameters = run_ours(config, batches, 1, PEER_VOCAB_SIZE)
    elif variant == "ours_peer":
        config = dict(config, model=dict(config["model"], **PEER_MODEL))
        times, parameters = run_ours(config, batches, 1, PEER_VOCAB_SIZE)
    else:
        times, parameters = run_ours(config, batches, int(variant[-1]))
    print(json.dumps(dict(rates(batches, times, warmup), variant=variant, parameters=parameters)))


def ratio_lines(median):
    """'a/b x.xx' for the pairs of variants the module doc compares, where both ran."""
    pairs = [("ours_1", "keras"), ("ours_2", "keras"), ("ours_2", "ours_1")]
    pairs += [(v, v + "@base") for v in VARIANTS if v.startswith("ours")]
    pairs += [(ours, peer) for peer in ("torch", "torch_1t")
              for ours in ("ours_4k", "ours_peer", "ours_1")]
    return ["%s/%s %.2f" % (a, b, median[a] / median[b])
            for a, b in pairs if a in median and b in median]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/default.yaml")
    parser.add_argument("--hparams", default="")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per variant")
    parser.add_argument("--warmup", type=int, default=5,
                        help="untimed steps first, >= 1")
    parser.add_argument("--repeats", type=int, default=1, help="runs of every variant, interleaved")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help="comma-separated, from: " + ", ".join(VARIANTS))
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--baseline", help="another checkout to run the ours variants from too")
    parser.add_argument("--worker", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--batches", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.warmup < 1:  # the timed part starts after a warm-up step or batch
        parser.error("--warmup must be at least 1, got %d" % args.warmup)
    if args.worker:
        worker(args.worker, args.config, args.hparams, args.batches, args.warmup)
        return
    variants = [v for v in args.variants.split(",") if v]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error("unknown variants: %s" % ", ".join(unknown))
    if args.baseline:
        variants = [name for v in variants for name in
                    ([v, v + "@base"] if v.startswith("ours") else [v])]

    from data_pipeline.prepare import prepare
    from seq2seq.config import load_config

    config = load_config(args.config, args.hparams)
    prepare(config, verbose=False)
    units = ("tokens_per_second", "source_tokens_per_second", "tokens_per_cpu_second",
             "source_tokens_per_cpu_second")
    with tempfile.TemporaryDirectory() as scratch:
        batches_path = os.path.join(scratch, "batches.npz")
        dump_batches(config, args.warmup + args.steps, batches_path)
        batches = load_batches(batches_path)
        print("%s: %d batches, %.0f pairs, %.0f tokens and %.0f source tokens per batch on average"
              % (args.config, len(batches), np.mean([len(b["source_length"]) for b in batches]),
                 np.mean([num_tokens(b) for b in batches]),
                 np.mean([b["source_length"].sum() for b in batches])), flush=True)

        def run(variant):
            """One run of `variant` in a process of its own; "@base": in --baseline's checkout."""
            name, _, base = variant.partition("@")
            data_dir = "data.data_dir=" + os.path.abspath(config["data"]["data_dir"])
            child = subprocess.run(
                [sys.executable, "-m", "bench.train_speed", "--worker", name,
                 "--config", args.config, "--hparams",
                 ",".join(filter(None, [args.hparams, base and data_dir])),
                 "--batches", batches_path, "--warmup", str(args.warmup)],
                cwd=args.baseline if base else None, capture_output=True, text=True)
            if child.returncode:  # e.g. torch missing: requirements-bench.txt
                raise RuntimeError("variant %s failed (exit code %d):\n%s"
                                   % (variant, child.returncode, child.stderr[-3000:]))
            output = child.stdout
            result = dict(json.loads(output.strip().splitlines()[-1]), variant=variant)
            print("%-9s %8.0f tokens/s  %8.0f source tokens/s  %8.0f tokens/CPU-s  "
                  "(%d steps in %.1f s, %.1f CPU-s; %d parameters)"
                  % (variant, result["tokens_per_second"], result["source_tokens_per_second"],
                     result["tokens_per_cpu_second"], result["steps"], result["seconds"],
                     result["cpu_seconds"], result["parameters"]), flush=True)
            return result
        results = {variant: samples.results for variant, samples in harness.time_rounds(
            {variant: functools.partial(run, variant) for variant in variants}, args.repeats,
            warmup=0).items()}
    median = {unit: {variant: harness.median(r[unit] for r in runs)
                     for variant, runs in results.items()} for unit in units}
    for unit in units:
        m = median[unit]
        print("median %s: %s" % (unit, ", ".join("%s %.0f" % item for item in m.items())))
        if ratio_lines(m):
            print("  ratios: " + ", ".join(ratio_lines(m)))
    harness.write_json(args.json, {"config": args.config, "hparams": args.hparams,
                                   "steps": args.steps, "warmup": args.warmup,
                                   "variants": variants, "runs": results, "median": median})


if __name__ == "__main__":
    main()
