"""serve.py as a real process on 127.0.0.1: start-up, translations, and a graceful stop."""

import glob
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
START_TIMEOUT_S = 180
STOP_TIMEOUT_S = 20


class ServerProcess:
    """`python serve.py` on a free port of 127.0.0.1, its log kept in a file.

    `watch_interval_s` replaces serve.WATCH_INTERVAL_S (2 s between two looks at the model
    directory) for the tests that wait for serve.py to find checkpoints; a serve.py without it
    stops at once (AttributeError), rather than watching at its own pace.
    """

    def __init__(self, model_dir, log_path, extra_args=(), watch_interval_s=None):
        self.log_path = log_path
        self._log = open(log_path, "w", encoding="utf-8")
        serve = ["serve.py"] if watch_interval_s is None else [
            "-c", "import sys, serve; assert serve.WATCH_INTERVAL_S; "
                  "serve.WATCH_INTERVAL_S = %r; sys.exit(serve.main(sys.argv[1:]))"
                  % watch_interval_s]
        self.process = subprocess.Popen(
            [sys.executable, *serve, "--model_dir", model_dir, "--host", "127.0.0.1",
             "--port", "0", "--warm_up_source_tokens", "0", *extra_args],
            cwd=REPO, stdout=subprocess.PIPE, stderr=self._log, text=True)
        first_line = self.process.stdout.readline()
        match = re.match(r"listening on http://127\.0\.0\.1:(\d+)/ \(loading the model\)", first_line)
        assert match, "unexpected first line %r; log: %s" % (first_line, self.log())
        self.port = int(match.group(1))

    def connection(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    def request(self, method, path, body=None):
        """Returns (status, parsed JSON body) of one request on a new connection."""
        connection = self.connection()
        try:
            headers = {"Content-Type": "application/json"} if body is not None else {}
            connection.request(method, path, body=None if body is None else json.dumps(body),
                               headers=headers)
            response = connection.getresponse()
            return response.status, json.loads(response.read())
        finally:
            connection.close()

    def wait_until_ready(self):
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            assert self.process.poll() is None, "serve.py exited early: %s" % self.log()
            if self.request("GET", "/healthz")[0] == 200:
                return
            time.sleep(0.05)
        pytest.fail("serve.py was not ready within %ds: %s" % (START_TIMEOUT_S, self.log()))

    def wait_for_a_running_model_call(self):
        """Waits until /v1/info says a model call is running (a request is being translated)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while self.request("GET", "/v1/info")[1]["batching"]["model_calls_running"] < 1:
            assert time.monotonic() < deadline, "no model call started: %s" % self.log()
            time.sleep(0.02)

    def wait_for_log(self, text):
        deadline = time.monotonic() + START_TIMEOUT_S
        while text not in self.log():
            assert self.process.poll() is None or text in self.log(), self.log()
            assert time.monotonic() < deadline, "no %r in the log: %s" % (text, self.log())
            time.sleep(0.05)

    def log(self):
        self._log.flush()
        with open(self.log_path, encoding="utf-8") as log_file:
            return log_file.read()

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()
        self._log.close()


@pytest.fixture
def server(tiny_model_dir, tmp_path):
    process = ServerProcess(tiny_model_dir, str(tmp_path / "serve.log"))
    yield process
    process.stop()


def test_starts_serves_and_stops_gracefully_on_sigterm(server):
    # The HTTP server is up before the model: 503 while it loads, then 200.
    assert server.request("GET", "/healthz") == (503, {"status": "loading"})
    server.wait_until_ready()
    assert server.process.stdout.readline().strip() == "ready: http://127.0.0.1:%d/" % server.port

    status, body = server.request("POST", "/translate", {"text": "three hundred and twelve"})
    assert status == 200 and body["translations"][0]["text"]
    status, body = server.request("POST", "/translate", {"texts": ["one", "two"], "decoder": "greedy"})
    assert status == 200 and len(body["translations"]) == 2
    status, body = server.request("POST", "/translate", {"text": ""})
    assert (status, body["error"]["code"]) == (400, "bad_request")
    info = server.request("GET", "/v1/info")[1]
    assert info["model"]["step"] > 0
    assert info["limits"]["max_unrolled_tokens"] == 16, "--warm_up_source_tokens 0: the default"

    # Tracing over HTTP: the same translation, with its trace; every translation says
    # whether its source is unfamiliar.
    plain = server.request("POST", "/translate", {"text": "forty two"})[1]["translations"][0]
    status, body = server.request("POST", "/translate", {"text": "forty two", "trace": True})
    assert status == 200 and set(body["translations"][0]["trace"]) >= {"source_pieces", "n_best"}
    assert {k: v for k, v in body["translations"][0].items() if k != "trace"} == plain
    assert plain["unfamiliar"] in (True, False)

    # A body over the limit is refused as soon as its headers arrive.
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw:
        raw.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 20000000\r\n\r\n")
        answer = b""
        while b"}}" not in answer:
            chunk = raw.recv(65536)
            assert chunk, "closed before an answer: %r" % answer
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413 ")
    assert json.loads(answer.partition(b"\r\n\r\n")[2])["error"] == {
        "code": "payload_too_large", "message": "the body is over the limit of 65536 bytes"}

    # A request in a model call (a new beam width: its graph is built first, seconds)
    # when SIGTERM arrives is still answered, then the process exits 0.
    connection = server.connection()
    connection.request("POST", "/translate", body=json.dumps(
        {"texts": ["I bought these two chairs."] * 8, "beam_width": 8,
         "n_best": 8}), headers={"Content-Type": "application/json"})
    server.wait_for_a_running_model_call()
    server.process.send_signal(signal.SIGTERM)
    try:
        response = connection.getresponse()
    except OSError as error:
        pytest.fail("no answer (%s); the server's log: %s" % (error, server.log()))
    body = json.loads(response.read())
    assert response.status == 200, body
    assert len(body["translations"]) == 8 and len(body["translations"][0]["n_best"]) == 8
    assert server.process.wait(timeout=STOP_TIMEOUT_S) == 0
    log = server.log()
    assert log.index("stopping: new connections are refused") < log.index(
        "sentences=8"), "the request was answered after the stop began"
    assert re.search(r"POST /translate 200 [\d.]+ms sentences=8", log)
    assert re.search(r"POST /translate 400 [\d.]+ms sentences=0", log)
    assert "Traceback" not in log


def test_refuses_new_connections_while_draining(server):
    server.wait_until_ready()
    outcome = {}

    def long_request():
        outcome["status"] = server.request("POST", "/translate", {
            "texts": ["Where are the three yellow chairs?"] * 8, "beam_width": 7})[0]

    worker = threading.Thread(target=long_request)
    worker.start()
    server.wait_for_a_running_model_call()
    server.process.send_signal(signal.SIGINT)
    server.wait_for_log("stopping: new connections are refused")
    with pytest.raises(ConnectionRefusedError):
        server.request("GET", "/healthz")
    worker.join(timeout=STOP_TIMEOUT_S)
    assert outcome == {"status": 200}
    assert server.process.wait(timeout=STOP_TIMEOUT_S) == 0
    log = server.log()
    assert log.index("stopping: new connections are refused") < log.index("sentences=8")


def test_a_body_over_the_limit_reaches_urllib_as_the_json_413(server):
    # The client sends all 5 MB before it reads: the server answers at the
    # headers, then reads and discards the rest, so the answer is not lost to a reset.
    server.wait_until_ready()
    body = json.dumps({"text": "x" * (5 * 1024 * 1024)}).encode("utf-8")
    request = urllib.request.Request("http://127.0.0.1:%d/translate" % server.port, data=body,
                                     headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=60)
    assert refused.value.code == 413
    assert json.loads(refused.value.read())["error"] == {
        "code": "payload_too_large", "message": "the body is over the limit of 65536 bytes"}
    assert server.request("GET", "/healthz")[0] == 200, "and serves on"


def test_stops_promptly_while_the_model_is_loading(server):
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=STOP_TIMEOUT_S) == 0


@pytest.mark.parametrize("delay_s", [0.5, 1.5, 3.0])
def test_stops_promptly_while_tensorflow_builds_the_decoder_graphs(tiny_model_dir, tmp_path,
                                                                   delay_s):
    # Interpreter shutdown used to end the loader thread inside TensorFlow's
    # C++ code, which aborted the process ("FATAL: exception not rethrown",
    # exit 134). Where the thread is at a given moment varies, hence three
    # moments of a long warm-up (the unrolled graphs of 128-token sources).
    server = ServerProcess(tiny_model_dir, str(tmp_path / "serve.log"),
                           ["--warm_up_source_tokens", "128"])
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while "building its decoder graphs" not in server.log():
            assert server.process.poll() is None and time.monotonic() < deadline, server.log()
            time.sleep(0.05)
        time.sleep(delay_s)
        assert server.request("GET", "/healthz")[0] == 503, "still warming up"
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=STOP_TIMEOUT_S) == 0, server.log()
    finally:
        server.stop()


def test_serves_an_exported_saved_model(tiny_model_dir, tmp_path):
    export_dir = max(glob.glob(os.path.join(tiny_model_dir, "export", "*")))  # the newest
    # The warm-up builds nothing for a SavedModel (it has no unrolled decoder),
    # but the limit it sets is reported.
    server = ServerProcess(tiny_model_dir, str(tmp_path / "serve.log"),
                           ["--export_dir", export_dir, "--warm_up_source_tokens", "5"])
    try:
        server.wait_until_ready()
        info = server.request("GET", "/v1/info")[1]
        assert info["decoders"] == ["while_loop"]
        assert info["limits"]["max_unrolled_tokens"] == 5
        width = info["defaults"]["beam_width"]
        assert (info["limits"]["min_beam_width"], info["limits"]["max_beam_width"]) == (width, width)
        status, body = server.request("POST", "/translate", {"text": "twenty one"})
        assert status == 200 and body["translations"][0]["text"]
        status, body = server.request("POST", "/translate", {"text": "one", "beam_width": width + 1})
        assert status == 400 and export_dir not in body["error"]["message"]
        assert "serves only the while_loop decoder at beam_width %d" % width \
            in body["error"]["message"]
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=STOP_TIMEOUT_S) == 0
    finally:
        server.stop()


def test_a_directory_without_a_config_is_refused_at_once_without_watching(tmp_path):
    # Watching, the server would wait for training to write it (test_serve_reload.py).
    finished = subprocess.run([sys.executable, "serve.py", "--model_dir", str(tmp_path), "--port", "0",
                               "--no_watch"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert finished.returncode == 2
    assert "config.yaml" in finished.stderr and "train.py" in finished.stderr


def test_a_port_in_use_is_refused_at_once_with_a_message(tiny_model_dir):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        finished = subprocess.run(
            [sys.executable, "serve.py", "--model_dir", tiny_model_dir, "--port", str(port)],
            cwd=REPO, capture_output=True, text=True, timeout=60)
    assert finished.returncode == 2
    assert "cannot listen on 127.0.0.1 port %d" % port in finished.stderr
    assert "Traceback" not in finished.stderr


@pytest.mark.parametrize("flags, message", [
    # The socket layer would take 70000 modulo 65536 and listen on 4464.
    (["--port", "70000"], "a port is 0..65535, got 70000"),
    (["--warm_up_source_tokens", "-1"], "a number of tokens is 0 or more, got -1"),
], ids=["port", "warm_up"])
def test_a_flag_out_of_range_is_refused(tiny_model_dir, flags, message):
    finished = subprocess.run(
        [sys.executable, "serve.py", "--model_dir", tiny_model_dir] + flags,
        cwd=REPO, capture_output=True, text=True, timeout=60)
    assert finished.returncode == 2
    assert message in finished.stderr


def test_nothing_to_serve_without_watching_stops_the_server_with_exit_code_1(tiny_model_dir, tmp_path):
    without_checkpoint = tmp_path / "model"
    without_checkpoint.mkdir()
    for name in os.listdir(tiny_model_dir):
        if name == "config.yaml" or name.endswith(".model"):
            shutil.copy(os.path.join(tiny_model_dir, name), without_checkpoint)
    server = ServerProcess(str(without_checkpoint), str(tmp_path / "serve.log"), ["--no_watch"])
    try:
        assert server.process.wait(timeout=START_TIMEOUT_S) == 1
        assert "holds no checkpoint" in server.log()
    finally:
        server.stop()
