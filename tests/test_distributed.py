"""Between-graph replicated training: chief, worker and parameter server on 127.0.0.1.

Three `train.py` processes with TF_CONFIG, as on three machines: a chief with `--num_gpus 2` (two
virtual CPU devices), a worker with one tower. The Estimator's parameter server runs
`server.join()` forever, so the test stops it once the chief and the worker have finished.
"""

import json
import os
import re
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import tensorflow.compat.v1 as tf

import train
from data_pipeline.tokenizer import Tokenizer

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The worker starts 5 s after the chief (train_and_evaluate) and joins by step 80 or so here: it
# must get steps too.
MAX_STEPS = 200
TIMEOUT_SECS = 300  # a bound for a hung run; the cluster takes 15-25 s on a quiet machine


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def _tail(path, lines=15):
    with open(path, encoding="utf-8", errors="replace") as f:
        return "".join(f.readlines()[-lines:])


@pytest.fixture(scope="module")
def cluster(tiny_config, tiny_data, tmp_path_factory):
    """One run of a chief on two towers, a worker on one and a parameter server (the two tower
    counts meet in one cluster, each in its own task): (model_dir, {task: its log's path})."""
    directory = tmp_path_factory.mktemp("cluster")
    chief_port, worker_port, ps_port = _free_ports(3)
    addresses = {"chief": ["127.0.0.1:%d" % chief_port],
                 "worker": ["127.0.0.1:%d" % worker_port],
                 "ps": ["127.0.0.1:%d" % ps_port]}
    model_dir = str(directory / "model")
    command = [sys.executable, os.path.join(REPO, "train.py"),
               "--config", os.path.join(REPO, "configs", "tiny.yaml"),
               "--model_dir", model_dir,
               "--hparams", "data.data_dir=%s" % tiny_config["data"]["data_dir"],
               "--max_steps", str(MAX_STEPS)]

    processes, logs = {}, {}
    try:
        for task, num_gpus in (("ps", 1), ("chief", 2), ("worker", 1)):
            env = dict(os.environ, TF_CONFIG=json.dumps(
                {"cluster": addresses, "task": {"type": task, "index": 0}}))
            logs[task] = str(directory / ("%s.log" % task))
            with open(logs[task], "w") as log:
                processes[task] = subprocess.Popen(command + ["--num_gpus", str(num_gpus)],
                                                   env=env, cwd=REPO, stdout=log,
                                                   stderr=subprocess.STDOUT)
        deadline = time.time() + TIMEOUT_SECS
        while any(processes[task].poll() is None for task in ("chief", "worker")):
            assert processes["ps"].poll() is None, "the ps stopped:\n" + _tail(logs["ps"])
            assert time.time() < deadline, "timed out:\n" + _tail(logs["chief"])
            time.sleep(0.1)
        for task in ("chief", "worker"):
            assert processes[task].returncode == 0, "%s failed:\n%s" % (task, _tail(logs[task]))
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
    return model_dir, logs


def test_chief_worker_and_ps_train_together(cluster):
    model_dir, logs = cluster
    global_step = tf.train.load_checkpoint(model_dir).get_tensor(tf.GraphKeys.GLOBAL_STEP)
    assert global_step >= MAX_STEPS, _tail(logs["chief"])
    # The chief alone could reach MAX_STEPS: the worker must have trained too.
    with open(logs["worker"], encoding="utf-8", errors="replace") as worker_log:
        assert re.search(r"step \d+/%d " % MAX_STEPS, worker_log.read()), _tail(logs["worker"])
    # Only the chief writes the model directory and exports.
    assert os.path.exists(os.path.join(model_dir, "config.yaml"))
    assert os.listdir(os.path.join(model_dir, "export"))


def test_the_chief_splits_each_batch_over_its_towers(cluster):
    """Each tower of the chief on its own device, beside a worker of one tower."""
    model_dir, _ = cluster
    with open(os.path.join(model_dir, "graph.pbtxt"), encoding="utf-8") as graph:
        text = graph.read()
    assert 'name: "tower_1/' in text and 'device: "/job:chief/task:0/device:CPU:1"' in text


def run_a_worker_without_its_chief(written, directory, ports, tiny_config, tiny_data):
    """train.py as the worker of a chief that never comes; `ports`: the chief's and the
    worker's; `written`: the model directory was written first, as by an earlier run's chief.
    Returns (the finished process, the seconds it ran, the chief's address)."""
    config = os.path.join(REPO, "configs", "tiny.yaml")
    if written:  # as a chief writes it first (a trained model would only slow the test)
        train.write_model_dir(tiny_config, str(directory / "model"),
                              Tokenizer.load(tiny_data.data_dir))
        config = str(directory / "model" / "config.yaml")  # its data_dir: prepared already
    chief = "127.0.0.1:%d" % ports[0]
    env = dict(os.environ, TF_CONFIG=json.dumps({
        "cluster": {"chief": [chief], "worker": ["127.0.0.1:%d" % ports[1]]},
        "task": {"type": "worker", "index": 0}}))
    started = time.monotonic()
    finished = subprocess.run(
        [sys.executable, os.path.join(REPO, "train.py"), "--config", config,
         "--model_dir", str(directory / "model"), "--chief_timeout_secs", "1",
         "--max_steps", "100000"],  # beyond the copy's checkpoint: the worker has steps to train
        env=env, cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT_SECS)
    return finished, time.monotonic() - started, chief


@pytest.fixture(scope="module")
def workers_without_their_chief(tiny_config, tiny_data, tmp_path_factory):
    """Both cases of run_a_worker_without_its_chief at once (each mostly waits):
    {written: its result}."""
    ports = _free_ports(4)
    with ThreadPoolExecutor(2) as pool:
        runs = {written: pool.submit(run_a_worker_without_its_chief, written,
                                     tmp_path_factory.mktemp("chiefless"), chief_and_worker,
                                     tiny_config, tiny_data)
                for written, chief_and_worker in ((False, ports[:2]), (True, ports[2:]))}
    return {written: run.result() for written, run in runs.items()}


@pytest.mark.parametrize("written", [False, True], ids=["empty model_dir", "written earlier"])
def test_a_worker_without_its_chief_stops_naming_it(written, workers_without_their_chief):
    """No chief at its address: the worker gives up after --chief_timeout_secs with one error
    line that names the chief, not a hang and not a traceback; also when an earlier run wrote
    the model directory, so that the worker goes on to wait for the chief's session."""
    finished, waited, chief = workers_without_their_chief[written]
    assert finished.returncode == 1, finished.stderr
    assert "error: the chief (%s)" % chief in finished.stderr
    assert "--chief_timeout_secs" in finished.stderr and "Traceback" not in finished.stderr
    assert waited < 120, "it waited %.0f s for a 1 s limit" % waited
