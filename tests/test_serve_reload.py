"""Training while serving: serve.py waits for training's first checkpoint, then switches to
each better one between batches, and keeps its model when a new one fails to load."""

import gc
import glob
import json
import os
import shutil
import threading
import time
import weakref

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from server.model_slot import ModelSlot
from tests.test_serve_process import ServerProcess

WAIT_S = 90
SENTENCE = "twenty one"
WATCH_S = 0.25  # between serve.py's looks at the model directory (2 s outside the tests)


def copy_model_files(tiny_model_dir, model_dir):
    """What train.py writes before its first checkpoint: config.yaml and the tokenizer."""
    os.makedirs(model_dir, exist_ok=True)
    for name in ("config.yaml", "spm.model", "tokenizer.json"):
        shutil.copy2(os.path.join(tiny_model_dir, name), model_dir)


def checkpoint_files(tiny_model_dir, step):
    return glob.glob(os.path.join(tiny_model_dir, "model.ckpt-%d.*" % step))


def install_latest(tiny_model_dir, model_dir, step, saved_as=None):
    """Copies checkpoint `step` into `model_dir` as its latest (named as step `saved_as`), as
    tf.train.Saver leaves it."""
    name = "model.ckpt-%d" % (step if saved_as is None else saved_as)
    for path in checkpoint_files(tiny_model_dir, step):
        shutil.copy2(path, os.path.join(model_dir, name + path.rpartition("-%d" % step)[2]))
    tf.train.update_checkpoint_state(model_dir, name)


def install_best(model_dir, write_checkpoint):
    """Replaces MODEL_DIR/best/ as training's best-checkpoint rule does: a staging directory
    that `write_checkpoint(staging)` fills (it returns the checkpoint's name), then renames."""
    best = os.path.join(model_dir, "best")
    staging = best + ".tmp"
    os.makedirs(staging)
    name = write_checkpoint(staging)
    tf.train.update_checkpoint_state(staging, name)
    if os.path.exists(best):
        os.replace(best, best + ".old")
    os.replace(staging, best)
    shutil.rmtree(best + ".old", ignore_errors=True)
    return os.path.join(best, name)


def copied(tiny_model_dir, step, damage=None):
    """A write_checkpoint that copies checkpoint `step`, then damages its data file: "corrupt"
    (zeros, the same size: the model's weights sit among the optimizer's) or "partial" (cut to
    half)."""

    def write_checkpoint(staging):
        for path in checkpoint_files(tiny_model_dir, step):
            shutil.copy2(path, staging)
        data = glob.glob(os.path.join(staging, "model.ckpt-%d.data-*" % step))[0]
        with open(data, "r+b") as data_file:
            size = data_file.seek(0, os.SEEK_END)
            if damage == "corrupt":
                data_file.seek(0)
                data_file.write(bytes(size))
            elif damage == "partial":
                data_file.truncate(size // 2)
        return "model.ckpt-%d" % step
    return write_checkpoint


def other_shape(tiny_model_dir, step, saved_as):
    """A write_checkpoint that saves checkpoint `step`'s variables, with one more row in each
    embedding (a model of another vocabulary), as checkpoint `saved_as`."""

    def write_checkpoint(staging):
        reader = tf.train.load_checkpoint(os.path.join(tiny_model_dir, "model.ckpt-%d" % step))
        with tf.Graph().as_default():
            variables = {}
            for name in reader.get_variable_to_shape_map():
                value = reader.get_tensor(name)
                if "embedding" in name and value.ndim == 2:
                    value = np.concatenate([value, value[:1]])
                variables[name] = tf.Variable(value, name="v%d" % len(variables))
            with tf.Session() as session:
                session.run(tf.global_variables_initializer())
                tf.train.Saver(variables).save(session, os.path.join(staging, "model.ckpt"),
                                               global_step=saved_as, write_meta_graph=False)
        return "model.ckpt-%d" % saved_as
    return write_checkpoint


def write_status(model_dir, **fields):
    status = dict({"running": True, "pid": os.getpid(), "started_at": time.time(),
                   "updated_at": time.time(), "step": 0, "max_steps": 400,
                   "steps_per_second": None, "eta_seconds": None, "stopped": None,
                   "evaluations": []}, **fields)
    with open(os.path.join(model_dir, "training_status.json.tmp"), "w") as status_file:
        json.dump(status, status_file)
    os.replace(os.path.join(model_dir, "training_status.json.tmp"),
               os.path.join(model_dir, "training_status.json"))


def wait_until(condition, server, what):
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert server.process.poll() is None, "serve.py exited: %s" % server.log()
        assert time.monotonic() < deadline, "%s did not happen: %s" % (what, server.log())
        time.sleep(0.1)


def served_step(server):
    status, body = server.request("POST", "/translate", {"text": SENTENCE})
    assert status == 200, body
    return body["model"]["step"]


@pytest.fixture
def start_server(tmp_path):
    servers = []

    def start(model_dir):
        servers.append(ServerProcess(str(model_dir), str(tmp_path / "serve.log"),
                                     watch_interval_s=WATCH_S))
        return servers[-1]
    yield start
    for server in servers:
        server.stop()


def test_waits_for_training_then_switches_to_each_better_checkpoint_without_a_failed_request(
        tiny_model_dir, tmp_path, start_server):
    model_dir = str(tmp_path / "model")  # training has not created it yet
    server = start_server(model_dir)
    status, body = server.request("POST", "/translate", {"text": SENTENCE})
    assert status == 503 and "waiting for training" in body["error"]["message"]
    assert "config.yaml" in body["error"]["message"]
    status, training = server.request("GET", "/v1/training")
    assert status == 200 and (training["running"], training["evaluations"]) == (False, [])

    # Training has prepared its data and runs: 4 steps done at 2 steps/s, the first
    # checkpoint comes at save_checkpoints_steps (10): in about 3 s.
    copy_model_files(tiny_model_dir, model_dir)
    write_status(model_dir, step=4, steps_per_second=2.0)
    message = server.request("POST", "/translate", {"text": SENTENCE})[1]["error"]["message"]
    assert "training has started (step 4 of 400)" in message
    assert "the first model will be ready in about 3 s (step 10)" in message
    # tf.estimator's checkpoint of step 0, written as training starts, is not served.
    install_latest(tiny_model_dir, model_dir, 380, saved_as=0)
    time.sleep(4 * WATCH_S)  # polls more
    status, body = server.request("POST", "/translate", {"text": SENTENCE})
    assert status == 503 and "training has started (step 4 of 400)" in body["error"]["message"]

    install_latest(tiny_model_dir, model_dir, 380)
    server.wait_until_ready()
    assert server.process.stdout.readline().strip() == "ready: http://127.0.0.1:%d/" % server.port
    assert served_step(server) == 380

    answers, stop = [], threading.Event()

    def client():  # one request after another, all through the switches
        while not stop.is_set():
            status, body = server.request("POST", "/translate", {"text": SENTENCE})
            answers.append((status, body["model"]["step"] if status == 200 else body,
                            body["translations"][0]["score"] if status == 200 else None))
    clients = [threading.Thread(target=client) for _ in range(2)]
    for thread in clients:
        thread.start()
    try:
        for step in (390, 400):
            installed = time.time()
            install_best(model_dir, copied(tiny_model_dir, step))
            wait_until(lambda: any(answer[1] == step for answer in answers[-3:]), server,
                       "a switch to step %d" % step)
            time.sleep(0.5)  # answers from the new model only
    finally:
        stop.set()
        for thread in clients:
            thread.join(timeout=WAIT_S)
    assert [answer for answer in answers if answer[0] != 200] == []
    # Each answer names the step that made it: one score per step (batch-mates change the
    # rounding, 1e-6), and three steps that score apart.
    scores = {}
    for _, step, score in answers:
        scores.setdefault(step, []).append(score)
    assert sorted(scores) == [380, 390, 400]
    assert all(max(found) - min(found) < 1e-4 for found in scores.values()), scores
    means = sorted(np.mean(found) for found in scores.values())
    assert min(np.diff(means)) > 1e-3, "the three models score alike: %s" % means
    info = server.request("GET", "/v1/info")[1]
    assert (info["model"]["step"], info["previous_step"], info["reload_error"]) == (400, 390, None)
    assert installed <= info["loaded_at"] <= time.time()
    training = server.request("GET", "/v1/training")[1]
    assert (training["running"], training["step"], training["serving_step"]) == (True, 4, 400)
    assert "Traceback" not in server.log()


def test_a_checkpoint_that_fails_to_load_leaves_the_served_model_in_place(
        tiny_model_dir, tmp_path, start_server):
    model_dir = str(tmp_path / "model")
    copy_model_files(tiny_model_dir, model_dir)
    install_best(model_dir, copied(tiny_model_dir, 380))
    server = start_server(model_dir)
    server.wait_until_ready()
    for step, write_checkpoint, reason in (
            (390, copied(tiny_model_dir, 390, "corrupt"), "Checksum does not match"),
            (400, copied(tiny_model_dir, 400, "partial"), "Read less bytes than requested"),
            (410, other_shape(tiny_model_dir, 400, 410), "with shape")):
        path = install_best(model_dir, write_checkpoint)
        wait_until(lambda: (server.request("GET", "/v1/info")[1]["reload_error"] or {}).get(
            "path") == path, server, "the failure of %s in /v1/info" % path)
        info = server.request("GET", "/v1/info")[1]
        assert reason in info["reload_error"]["message"]
        assert (info["model"]["step"], served_step(server)) == (380, 380)
    time.sleep(4 * WATCH_S)  # polls more: a failed checkpoint is not tried again while unchanged
    assert server.log().count("cannot load %s" % path) == 1
    assert "still serving step 380" in server.log() and "Traceback" not in server.log()

    install_best(model_dir, copied(tiny_model_dir, 400))  # its files change: tried again
    wait_until(lambda: served_step(server) == 400, server, "the switch to step 400")
    info = server.request("GET", "/v1/info")[1]
    assert (info["previous_step"], info["reload_error"]) == (380, None)


def test_a_replaced_model_is_closed_once_its_batches_are_done_and_then_freed(tiny_model_dir):
    from decode.translator import Translator

    def load(step):
        return Translator(tiny_model_dir,
                          checkpoint=os.path.join(tiny_model_dir, "model.ckpt-%d" % step))
    slot = ModelSlot(load(380))
    old = weakref.ref(slot.loaded()[0])
    started, release = threading.Event(), threading.Event()

    def batch():
        with slot.holding() as translator:
            started.set()
            release.wait(WAIT_S)
            translator.translate([SENTENCE])  # still open: its batch holds it

    running = threading.Thread(target=batch)
    running.start()
    started.wait(WAIT_S)
    slot.fill(load(390))
    assert not old()._session._closed, "closed under its running batch"
    with slot.holding() as translator:
        assert translator.step == 390, "a new batch runs on the new model"
    assert slot.previous_step == 380
    release.set()
    running.join(WAIT_S)
    assert old() is None or old()._session._closed
    gc.collect()
    assert old() is None, "the replaced translator (its graph and session) is still referenced"
