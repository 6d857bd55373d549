"""bench.gpu_check here (no GPU), its placement check on a real traced run, and the towers'
view of a GPU split into logical ones."""

import subprocess
import sys

import pytest
import tensorflow.compat.v1 as tf

from conftest import REPO

from bench.gpu_check import ops_by_tower, towers_on_their_devices
from training.model_fn import session_config, tower_devices


@pytest.mark.skipif(bool(tf.config.list_physical_devices("GPU")),
                    reason="with a GPU, python -m bench.gpu_check runs the whole check")
def test_without_a_gpu_the_check_says_so_in_one_line_and_exits_0():
    finished = subprocess.run([sys.executable, "-m", "bench.gpu_check"], cwd=REPO,
                              capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.count("\n") == 1
    assert finished.stdout.startswith("gpu_check: no GPU: ")


def traced_towers(devices):
    """ops_by_tower of one traced run of two matmul towers placed on `devices`."""
    with tf.Graph().as_default():
        weights, outputs = tf.placeholder(tf.float32, [2, 2]), []
        for index, device in enumerate(devices):
            with tf.device(device), tf.name_scope("tower_%d" % index):
                scaled = weights * (index + 1.0)  # towers that differ: none is merged away
                outputs.append(tf.reduce_sum(tf.matmul(tf.matmul(scaled, weights), weights)))
        metadata = tf.RunMetadata()
        with tf.Session(config=session_config(2)) as session:
            session.run(tf.add_n(outputs), {weights: [[1.0, 2.0], [3.0, 4.0]]},
                        run_metadata=metadata,
                        options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE))
    return ops_by_tower(metadata.step_stats)


def test_the_placement_check_passes_towers_on_their_own_devices_and_fails_shared_ones():
    apart = traced_towers(["/cpu:0", "/cpu:1"])
    assert set(apart) == {"tower_0", "tower_1"}
    assert set(apart["tower_0"]) == {"CPU:0"} and set(apart["tower_1"]) == {"CPU:1"}
    passed, why = towers_on_their_devices(apart, "CPU")
    assert passed and "tower_1: " in why and "ops on CPU:1" in why
    passed, why = towers_on_their_devices(traced_towers(["/cpu:0", "/cpu:0"]), "CPU")
    assert not passed and why.startswith("tower_1 ran {'CPU:0': ")


def test_a_gpu_split_into_two_logical_ones_gives_two_towers_their_virtual_devices(monkeypatch):
    # No GPU here: the physical GPU and its split are what tf.config would report.
    monkeypatch.setattr(tf.config, "list_physical_devices",
                        lambda kind=None: ["GPU:0"] if kind == "GPU" else [])
    monkeypatch.setattr(tf.config, "get_logical_device_configuration", lambda device: [
        tf.config.LogicalDeviceConfiguration(memory_limit=1024)] * 2)
    monkeypatch.setattr(tf.test, "is_built_with_cuda", lambda: True)
    assert tower_devices(2) == ["/gpu:0", "/gpu:1"]
    for towers in (1, 2):
        [virtual] = session_config(towers).gpu_options.experimental.virtual_devices
        assert list(virtual.memory_limit_mb) == [1024, 1024]
