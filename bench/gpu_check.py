"""The GPU check: towers on two logical GPUs carved from one, and GPU decoding, against the CPU.

    python -m bench.gpu_check [--steps 300] [--config configs/default.yaml] [--memory_mb 8192]
        [--work_dir bench/out/gpu_check] [--rehearse]

With an NVIDIA GPU and tensorflow[and-cuda]==2.15.1 (README), each part in a process of its
own: trains `--steps` steps `--num_gpus 2` on two logical GPUs carved from GPU 0 (`--memory_mb`
each), `--num_gpus 1` on the GPU and on the CPU, tracing one step of the two-tower run (tower_i
must have run most of its ops on GPU:i, and nearly all of those it ran on a GPU); decodes the
test set with both beam searches on the GPU and on the CPU; prints tokens/s and sentences/s
against the CPU, and exits 1 if the towers did not run on two devices (docs/BENCHMARKS.md,
"The GPU check"). Without a usable GPU it prints one line saying so and exits 0. `--rehearse`:
every part on the CPU, the towers on two virtual CPU devices (the check's own machinery).
"""

import argparse
import collections
import functools
import glob
import json
import os
import re
import shutil
import sys

from bench import harness
from bench.harness import REPO, cell, ratio

TRACED_STEP = 5  # within the first progress interval, which the rates leave out
PROGRESS_INTERVALS = 6  # train.log_step_count_steps = steps / this
OWN_SHARE = 0.9  # of a tower's ops on devices of the towers' kind, at least this on its own
DECODERS = ("while_loop", "unrolled")


def no_gpu_reason():
    """Why TensorFlow can use no GPU here, or None if it can."""
    import tensorflow.compat.v1 as tf
    if tf.config.list_physical_devices("GPU"):
        return None
    if not tf.test.is_built_with_cuda():
        return ("this TensorFlow is a CPU build; install tensorflow[and-cuda]==2.15.1 on a "
                "machine with an NVIDIA GPU (README) to run it")
    return "TensorFlow finds none (CUDA_VISIBLE_DEVICES=%s)" % os.environ.get(
        "CUDA_VISIBLE_DEVICES", "unset")


def placement_trace(step):
    """A SessionRunHook tracing the `step`-th run (RunMetadata, FULL_TRACE); its
    `.ops_by_tower` is then `ops_by_tower` of that run's step stats."""
    import tensorflow.compat.v1 as tf

    class Hook(tf.train.SessionRunHook):
        def __init__(self):
            self.runs, self.ops_by_tower = 0, {}

        def before_run(self, run_context):
            self.runs += 1
            if self.runs == step:
                return tf.train.SessionRunArgs({}, options=tf.RunOptions(
                    trace_level=tf.RunOptions.FULL_TRACE))
            return None

        def after_run(self, run_context, run_values):
            if self.runs == step:
                self.ops_by_tower = ops_by_tower(run_values.run_metadata.step_stats)
    return Hook()


def ops_by_tower(step_stats):
    """{"tower_i": {device ("GPU:1", "CPU:0"): ops of tower_i/ that ran there}} of a traced
    run's StepStats; the executor's entries only, not the GPU tracer's streams and copies."""
    counts = collections.defaultdict(collections.Counter)
    for device_stats in step_stats.dev_stats:
        device = re.search(r"/device:([A-Z_]+:\d+)$", device_stats.device)
        for node in device_stats.node_stats if device else ():
            tower = re.match(r"tower_\d+(?=/)", node.node_name)
            if tower:
                counts[tower.group(0)][device.group(1)] += 1
    return {tower: dict(devices) for tower, devices in sorted(counts.items())}


def towers_on_their_devices(ops, kind, num_towers=2):
    """(passed, why): tower_i ran most of its ops on `kind`:i, and nearly all (OWN_SHARE) of
    those it ran on `kind` devices (a few are colocated with tower 0's variables)."""
    problems = []
    for tower in range(num_towers):
        devices, own_device = ops.get("tower_%d" % tower, {}), "%s:%d" % (kind, tower)
        own = devices.get(own_device, 0)
        of_kind = sum(count for device, count in devices.items() if device.startswith(kind))
        if own < OWN_SHARE * of_kind or own * 2 <= sum(devices.values()):
            problems.append("tower_%d ran %s" % (tower, devices or "no traced op"))
    return not problems, "; ".join(problems) or "; ".join(
        "tower_%d: %s" % (tower, ", ".join("%d ops on %s" % (count, device) for device, count
                                           in sorted(ops["tower_%d" % tower].items())))
        for tower in range(num_towers))


def summary_values(model_dir, tag):
    """(step, value) of every `tag` scalar in a model directory's event files, by step."""
    import tensorflow.compat.v1 as tf
    values = []
    for path in glob.glob(os.path.join(model_dir, "events.out.tfevents.*")):
        for event in tf.train.summary_iterator(path):
            values += [(event.step, value.simple_value) for value in event.summary.value
                       if value.tag == tag]
    return sorted(values)


def train_part(spec):
    """Trains spec["steps"] steps on spec["towers"] towers into spec["model_dir"]."""
    import tensorflow.compat.v1 as tf
    if spec["split_gpu_mb"]:
        gpu = tf.config.list_physical_devices("GPU")[0]
        tf.config.set_logical_device_configuration(
            gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=spec["split_gpu_mb"])] * 2)
    tf.disable_v2_behavior()
    import train
    from data_pipeline.input import input_fn
    from data_pipeline.prepare import prepare
    from data_pipeline.tokenizer import Tokenizer
    from seq2seq.config import load_config
    from training.model_fn import tower_devices
    steps = spec["steps"]
    config = load_config(spec["config"], overrides={"train": {
        "max_steps": steps, "save_checkpoints_steps": steps, "histogram_steps": 0,
        "log_step_count_steps": max(1, steps // PROGRESS_INTERVALS)}})
    train.write_model_dir(config, spec["model_dir"], Tokenizer.load(prepare(config).data_dir))
    estimator = train.build_estimator(config, spec["model_dir"], spec["towers"])
    trace = placement_trace(TRACED_STEP)
    seconds, _, _ = harness.measure(lambda: estimator.train(input_fn, max_steps=steps,
                                                            hooks=[trace]))
    tf.summary.FileWriterCache.get(spec["model_dir"]).flush()
    rates = [value for _, value in summary_values(spec["model_dir"], "tokens_per_sec")[1:]]
    return {"seconds": seconds, "tokens_per_second": sum(rates) / len(rates) if rates else None,
            "tower_devices": tower_devices(spec["towers"]), "ops_by_tower": trace.ops_by_tower}


def decode_part(spec):
    """Decodes the test set with each of DECODERS: sentences/s of a second pass (the first
    builds the graphs)."""
    import tensorflow.compat.v1 as tf
    from data_pipeline.prepare import prepare
    translator = harness.translator(spec["model_dir"])
    sentences = harness.read_sentences(
        prepare(translator.config, verbose=False).raw_text["test"][0])
    samples = harness.time_rounds({decoder: functools.partial(
        translator.translate, sentences, decoder=decoder) for decoder in DECODERS}, 1)
    return {"sentences": len(sentences), "sentences_per_second": {
        decoder: len(sentences) / runs.wall[0] for decoder, runs in samples.items()},
            "gpus": [device.name for device in tf.config.list_logical_devices("GPU")]}


PARTS = {"train": train_part, "decode": decode_part}


def run_part(name, spec, work_dir, on_gpu):
    """Runs a part in a process of its own (CUDA_VISIBLE_DEVICES="" unless `on_gpu`), its
    stderr in WORK_DIR/NAME.log; returns its result."""
    print("gpu_check: %s ..." % name, flush=True)
    env = dict(os.environ, **({} if on_gpu else {"CUDA_VISIBLE_DEVICES": ""}))
    return harness.child_json(["-m", "bench.gpu_check", "--part", json.dumps(spec)],
                              os.path.join(work_dir, name + ".log"), env)


def report(trained, decoded, devices_kind):
    """The check's table lines and its placement verdict (passed, why)."""
    rates = {name: trained[name]["tokens_per_second"] for name in trained}
    on, off = (decoded[side]["sentences_per_second"] for side in ("gpu", "cpu"))
    lines = [harness.markdown_table(
        ["training (%d steps)" % trained["cpu"]["steps"], "devices", "tokens/s", "against the CPU"],
        ([label, ", ".join(trained[name]["tower_devices"]) if name != "cpu" else "CPU",
          cell(rates[name], "%.0f"), cell(ratio(rates[name], rates["cpu"]), "%.2fx")]
         for name, label in (("two_towers", "--num_gpus 2"), ("one_tower", "--num_gpus 1"),
                             ("cpu", "--num_gpus 1, CPU"))), left=2), "", harness.markdown_table(
        ["decoding %d test sentences" % decoded["cpu"]["sentences"],
         "%s sentences/s" % devices_kind, "CPU sentences/s", "%s / CPU" % devices_kind],
        ([decoder, "%.1f" % on[decoder], "%.1f" % off[decoder],
          cell(ratio(on[decoder], off[decoder]), "%.2fx")] for decoder in DECODERS))]
    passed, why = towers_on_their_devices(trained["two_towers"]["ops_by_tower"], devices_kind)
    return lines, passed, why


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300, help="training steps of each run")
    parser.add_argument("--config", default=os.path.join(REPO, "configs", "default.yaml"))
    parser.add_argument("--memory_mb", type=int, default=8192,
                        help="GPU memory of each of the two logical GPUs")
    parser.add_argument("--work_dir", default=os.path.join(REPO, "bench", "out", "gpu_check"),
                        help="the runs' model directories and logs (emptied first)")
    parser.add_argument("--rehearse", action="store_true",
                        help="run every part on the CPU, the towers on virtual CPU devices")
    parser.add_argument("--part", help=argparse.SUPPRESS)  # a JSON spec: run one part here
    parser.add_argument("--json", help=argparse.SUPPRESS)  # where the part writes its result
    args = parser.parse_args(argv)
    if args.part:
        spec = json.loads(args.part)
        harness.write_json(args.json, PARTS[spec["part"]](spec))
        return 0
    if args.steps < PROGRESS_INTERVALS * 2:
        parser.error("--steps must be at least %d" % (PROGRESS_INTERVALS * 2))
    reason = None if args.rehearse else no_gpu_reason()
    if reason:
        print("gpu_check: no GPU: %s; nothing checked." % reason)
        return 0
    shutil.rmtree(args.work_dir, ignore_errors=True)
    os.makedirs(args.work_dir)
    on_gpu, kind = not args.rehearse, "CPU" if args.rehearse else "GPU"
    trained, decoded = {}, {}
    for name, towers, gpu in (("two_towers", 2, on_gpu), ("one_tower", 1, on_gpu),
                              ("cpu", 1, False)):
        trained[name] = dict(run_part("train_" + name, {
            "part": "train", "config": os.path.abspath(args.config), "steps": args.steps,
            "towers": towers, "model_dir": os.path.join(args.work_dir, name),
            "split_gpu_mb": args.memory_mb if gpu and towers == 2 else 0},
            args.work_dir, gpu), steps=args.steps)
    for side, gpu in (("gpu", on_gpu), ("cpu", False)):
        decoded[side] = run_part("decode_" + side, {
            "part": "decode", "model_dir": os.path.join(args.work_dir, "one_tower")},
            args.work_dir, gpu)
    lines, passed, why = report(trained, decoded, kind)
    print("\n".join(lines))
    print("%s the two towers ran on two devices (step %d traced): %s"
          % ("PASS" if passed else "FAIL", TRACED_STEP, why))
    print("decoding saw GPUs: %s" % (", ".join(decoded["gpu"]["gpus"]) or "none"))
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
