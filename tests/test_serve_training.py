"""GET /v1/training: the trainer's status file as the server reports it, and a dead trainer."""

import json
import os
import subprocess
import sys
import time

import pytest

from seq2seq.config import load_config
from server.app import create_app
from server.model_slot import ModelSlot

EVALUATION = {"step": 500, "loss": 1.5, "dev_bleu": 41.2, "dev_perplexity": 3.1,
              "examples": [{"source": "twenty one", "translation": "vinte e um"}]}


def training(model_dir, status=None):
    """GET /v1/training's (status code, body) with `status` as the status file (None: none)."""
    if status is not None:
        with open(os.path.join(model_dir, "training_status.json"), "w") as status_file:
            json.dump(status, status_file)
    app = create_app(ModelSlot(), load_config(None), model_dir=str(model_dir))
    response = app.test_client().get("/v1/training")
    return response.status_code, response.get_json()


def status_of(pid, **fields):
    return dict({"running": True, "pid": pid, "started_at": time.time() - 60,
                 "updated_at": time.time(), "step": 800, "max_steps": 3000,
                 "steps_per_second": 4.0, "eta_seconds": 550.0, "stopped": None,
                 "evaluations": [EVALUATION]}, **fields)


def test_a_model_directory_without_a_status_file_is_not_training(tmp_path):
    assert training(tmp_path) == (200, {
        "running": False, "step": None, "max_steps": None, "evaluations": [],
        "serving_step": None, "eta_seconds": None, "steps_per_second": None, "stopped": None,
        "updated_at": None})


def test_a_running_trainer_is_reported_as_its_status_file_says(tmp_path):
    status, body = training(tmp_path, status_of(os.getpid()))
    assert status == 200
    assert {key: body[key] for key in ("running", "step", "max_steps", "evaluations",
                                       "serving_step", "eta_seconds")} == {
        "running": True, "step": 800, "max_steps": 3000, "evaluations": [EVALUATION],
        "serving_step": None, "eta_seconds": 550.0}


def test_a_finished_training_says_why_it_stopped(tmp_path):
    body = training(tmp_path, status_of(os.getpid(), running=False, step=1500,
                                        stopped="early_stopping", eta_seconds=None))[1]
    assert (body["running"], body["step"], body["stopped"]) == (False, 1500, "early_stopping")


def process_state(pid):
    """The state letter /proc gives process `pid` (R, S, Z...)."""
    with open("/proc/%d/stat" % pid) as stat:
        return stat.read().rpartition(")")[2].split()[0]


@pytest.mark.parametrize("reaped", [True, False], ids=["exited", "zombie"])
def test_a_trainer_whose_process_is_gone_is_not_running(tmp_path, reaped):
    # "running" true in a file its process can no longer update: it died (killed, crashed).
    # A child that exited but is not yet reaped is a zombie: gone too.
    trainer = subprocess.Popen([sys.executable, "-c", "pass"])
    if reaped:
        trainer.wait()
    else:
        deadline = time.monotonic() + 30
        while process_state(trainer.pid) != "Z":
            assert time.monotonic() < deadline, "the child did not exit"
            time.sleep(0.05)
    try:
        body = training(tmp_path, status_of(trainer.pid))[1]
    finally:
        trainer.wait()
    assert (body["running"], body["eta_seconds"], body["step"]) == (False, None, 800)
    assert body["evaluations"] == [EVALUATION], "what it did is still shown"


def test_a_status_file_that_is_not_json_reads_as_none(tmp_path):
    (tmp_path / "training_status.json").write_text("{\"running\": tr")
    assert training(tmp_path)[1]["running"] is False
