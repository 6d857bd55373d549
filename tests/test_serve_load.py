"""The load generator's asyncio HTTP client, against a small fake of serve.py.

The fake answers /translate in serve.py's shape (JSON with Content-Length,
keep-alive, the time in the app) and GET /v1/info with serve.py's model-call
counts, and has paths that misbehave on purpose. No model is needed.
"""

import asyncio
import json
import os
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from bench import harness, serve_load

SENTENCES = ["one small step", "the cat sat", "a b c"]
IN_APP_MS = 1.5
CALL_SECONDS = 0.001


def fake_translation(text):
    return {"text": text.upper(), "score": -float(len(text))}


class FakeServeHandler(BaseHTTPRequestHandler):
    """/translate as serve.py answers it; other paths misbehave as their names say."""

    protocol_version = "HTTP/1.1"  # keep-alive unless an answer says otherwise
    counts_lock = threading.Lock()
    translations = 0  # every translated text is a model call of its own

    def do_GET(self):
        if self.path == "/v1/info":
            with self.counts_lock:
                calls = FakeServeHandler.translations
            self.send_json(200, {"batching": {"model_calls": calls, "sentences": calls,
                                              "model_call_seconds": calls * CALL_SECONDS}})

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/translate":
            self.translate(body)
        elif self.path == "/whoami":
            # The client's port: the same for every request on one connection.
            self.send_json(200, {"port": self.client_address[1]})
        elif self.path == "/close":
            self.send_json(200, {"port": self.client_address[1]}, close=True)
        elif self.path == "/no_length":
            # Stays open: a client that waits for the end of the body would hang.
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b'{"partial": ')
            self.wfile.flush()
        elif self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"2\r\n{}\r\n0\r\n\r\n")
        elif self.path == "/crash":
            self.send_json(500, {"error": {"code": "internal_error", "message": "boom"}})
        elif self.path == "/plain":
            self.send_body(400, b"Bad Request", "text/plain")
        elif self.path == "/no_translations":
            self.send_json(200, {"translation": "not the shape"})

    def translate(self, body):
        """Translates exactly {"text": non-empty} sent as JSON; refuses everything else."""
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        if (self.headers["Content-Type"] != "application/json" or not isinstance(request, dict)
                or set(request) != {"text"} or not request["text"]):
            self.send_json(400, {"error": {"code": "bad_request", "message": "no"}})
        else:
            with self.counts_lock:
                FakeServeHandler.translations += 1
            self.send_json(200, {"translations": [fake_translation(request["text"])],
                                 "elapsed_ms": IN_APP_MS})

    def send_json(self, status, value, close=False):
        self.send_body(status, json.dumps(value).encode("utf-8"), "application/json", close)

    def send_body(self, status, body, content_type, close=False):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def fake_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeServeHandler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


class FakeServer:
    """What run_phase needs of harness.Server."""

    def __init__(self, port):
        self.port = port

    def cpu_seconds(self):
        return 0.0


def post(path, body=b"{}"):
    return serve_load.Request("POST", path, body, "application/json", None)


def exchange_all(port, requests):
    """Sends `requests` over one Connection; each answer, or the exception it raised."""
    async def run():
        connection = serve_load.Connection(port)
        answers = []
        for request in requests:
            try:
                answers.append(await connection.exchange(serve_load.encode_request(request, port)))
            except serve_load.CONNECTION_FAILURES as error:
                answers.append(error)
                connection.close()
        connection.close()
        return answers
    return asyncio.run(run())


def test_encode_request_is_a_complete_http_request():
    request = serve_load.translation_request("the cat")
    encoded = serve_load.encode_request(request, 8080)
    head, body = encoded.split(b"\r\n\r\n", 1)
    assert head.split(b"\r\n") == [b"POST /translate HTTP/1.1", b"Host: 127.0.0.1:8080",
                                   b"Content-Type: application/json",
                                   b"Content-Length: %d" % len(request.body)]
    assert body == request.body


def test_status_and_body_over_one_kept_alive_connection(fake_server):
    port = fake_server.server_address[1]
    first, second, translated = exchange_all(
        port, [post("/whoami"), post("/whoami"), serve_load.translation_request("the cat")])
    assert first[0] == second[0] == 200
    assert json.loads(first[1]) == json.loads(second[1])  # the same client port: reused
    assert translated[0] == 200
    assert json.loads(translated[1])["translations"] == [fake_translation("the cat")]


def test_connection_close_from_the_server_opens_a_new_connection(fake_server):
    port = fake_server.server_address[1]
    closing, after = exchange_all(port, [post("/close"), post("/whoami")])
    assert closing[0] == after[0] == 200
    assert json.loads(closing[1]) != json.loads(after[1])


def test_a_4xx_json_error_is_an_answer(fake_server):
    port = fake_server.server_address[1]
    (status, body), = exchange_all(port, [serve_load.invalid_requests()[0]])
    assert status == 400
    assert "error" in json.loads(body)


@pytest.mark.parametrize("path, reason", [("/no_length", "without Content-Length"),
                                          ("/chunked", "Transfer-Encoding: chunked")])
def test_an_answer_without_content_length_fails_at_once(fake_server, path, reason):
    port = fake_server.server_address[1]
    failure, after = exchange_all(port, [post(path), post("/whoami")])
    assert isinstance(failure, serve_load.ResponseError)
    assert reason in str(failure)
    assert after[0] == 200  # the next request gets a new connection


def test_run_phase_counts_every_kind_of_answer(fake_server, capsys):
    port = fake_server.server_address[1]
    plan = serve_load.plan_requests(SENTENCES, 40)
    references = {sentence: fake_translation(sentence) for sentence in SENTENCES}
    references["the cat sat"] = {"text": "SOMETHING ELSE", "score": -11.0}
    plan += [post("/crash"), post("/no_length")]
    result = serve_load.run_phase("on", FakeServer(port), plan, 4, references)
    wrong = sum(request.sentence == "the cat sat" for request in plan)
    assert (result.requests, result.client_errors, result.server_errors,
            result.connection_failures, result.mismatches) == (42, 8, 1, 1, wrong)
    assert len(result.latencies_ms) == 32
    # Only the right answers' time in the app; the server counted every translation.
    assert result.in_app_ms == [IN_APP_MS] * (32 - wrong)
    assert result.model_calls == result.sentences == 32
    assert result.model_call_seconds == pytest.approx(32 * CALL_SECONDS)
    assert result.seconds > 0 and result.client_cpu_s > 0
    assert "without Content-Length" in capsys.readouterr().err


def test_answers_that_are_not_the_json_a_check_reads_are_wrong_answers(fake_server):
    port = fake_server.server_address[1]
    valid = serve_load.Request("POST", "/no_translations", b"{}", "application/json", SENTENCES[0])
    plan = [post("/plain"), valid, post("/translate", b"[]")]
    references = {SENTENCES[0]: fake_translation(SENTENCES[0])}
    result = serve_load.run_phase("on", FakeServer(port), plan, 1, references)
    # A text/plain 4xx, a 200 of another shape; the JSON 400 for "[]" is right.
    assert (result.client_errors, result.connection_failures, result.mismatches) == (2, 0, 2)


def test_cpu_cost_ratio_compares_requests_per_server_cpu_second_at_the_most_clients():
    def phase(mode, clients, requests, server_cpu_s):
        return serve_load.PhaseResult(mode, clients, requests, 1.0, server_cpu_s, 0.1, [1.0],
                                      [0.5], requests, requests, 0.5, 0, 0, 0, 0)
    results = [phase("on", 1, 100, 1.0), phase("off", 1, 100, 0.5),
               phase("on", 32, 900, 1.0), phase("off", 32, 300, 1.5)]
    assert serve_load.cpu_cost_ratio(results) == (32, pytest.approx(4.5))
    assert serve_load.cpu_cost_ratio(results[:1] + results[2:3]) is None


def test_the_table_row_derives_the_mean_batch_and_the_calls_running():
    result = serve_load.PhaseResult("on", 32, 1000, 2.0, 1.0, 0.2, [10.0, 20.0, 30.0], [4.0, 6.0, 8.0],
                                    125, 800, 1.5, 200, 0, 0, 0)
    header, _, row = serve_load.table([result]).splitlines()
    cells = dict(zip([name.strip() for name in header.strip("|").split("|")],
                     [value.strip() for value in row.strip("|").split("|")]))
    assert cells["requests/s"] == "500.0"
    assert cells["p50 ms"] == "20.0"
    assert cells["in-app p50 ms"] == "6.0"
    assert cells["sentences/model call"] == "6.4"
    assert cells["model calls running"] == "0.75"


def empty_phase(mode, clients):
    """A phase in which every request failed: no latencies, no time in the app, no CPU tick."""
    return serve_load.PhaseResult(mode, clients, 100, 1.0, 0.0, 0.0, [], [], 0, 0, 0.0,
                                  20, 0, 80, 0)


def test_a_phase_with_nothing_measured_reads_n_a_in_the_table():
    header, _, row = serve_load.table([empty_phase("on", 32)]).splitlines()
    cells = dict(zip([name.strip() for name in header.strip("|").split("|")],
                     [value.strip() for value in row.strip("|").split("|")]))
    for name in ("requests/server CPU-s", "p50 ms", "p95 ms", "p99 ms", "in-app p50 ms"):
        assert cells[name] == "n/a"
    assert cells["requests/s"] == "100.0"
    assert cells["connection failures"] == "80"


def test_verdicts_fail_what_could_not_be_measured():
    results = [empty_phase("on", 1), empty_phase("off", 1),
               empty_phase("on", 32), empty_phase("off", 32)]
    # No valid answer, so no p99 / p50, and an off phase that took no time.
    results[3] = results[3]._replace(seconds=0.0)
    checks = serve_load.verdicts(results)
    assert [(measured, passed) for _, measured, passed in checks] == [
        ("0 / 320 / 0", False), ("1.00x", True), ("not measured", False),
        ("not measured", False)]
    assert serve_load.cpu_cost_ratio(results) == (32, None)


def test_one_empty_percentile_fails_only_its_own_check():
    fast = serve_load.PhaseResult("on", 1, 100, 1.0, 1.0, 0.1, [1.0], [0.5], 100, 100, 0.5,
                                  0, 0, 0, 0)
    results = [fast, empty_phase("on", 32)]
    checks = dict((description, (measured, passed))
                  for description, measured, passed in serve_load.verdicts(results))
    assert checks["batching on: p99 at 32 clients <= 3x their mean latency"] == (
        "not measured", False)


def start(code, log_path, timeout_s):
    """A harness.Server running the Python `code` (given serve.py's --host and --port), or the
    error it raised."""
    try:
        return harness.Server([], str(log_path), program=["-c", code], timeout_s=timeout_s), None
    except RuntimeError as error:
        return None, error


def open_descriptors_to(path):
    """How many of this process's file descriptors point at `path`."""
    return sum(os.path.realpath(os.path.join("/proc/self/fd", name)) == os.path.realpath(path)
               for name in os.listdir("/proc/self/fd")
               if os.path.exists(os.path.join("/proc/self/fd", name)))


def test_a_server_that_hangs_while_loading_is_killed_after_the_start_timeout(tmp_path):
    log_path, pid_path = tmp_path / "server.log", tmp_path / "pid"
    started = time.monotonic()
    server, error = start("import os, sys, time; open(%r, 'w').write(str(os.getpid())); "
                          "print('loading', file=sys.stderr, flush=True); time.sleep(60)"
                          % str(pid_path), log_path, 0.5)
    assert time.monotonic() - started < 30
    assert error is not None and str(log_path) in str(error)
    assert "not ready within 0.5 s" in str(error)
    with pytest.raises(ProcessLookupError):  # killed, and waited for
        os.kill(int(pid_path.read_text()), 0)
    assert open_descriptors_to(log_path) == 0
    assert log_path.read_text() == "loading\n"


def test_a_server_that_exits_while_loading_fails_at_once(tmp_path):
    log_path = tmp_path / "server.log"
    started = time.monotonic()
    server, error = start("import sys; sys.exit('no model here')", log_path, 60)
    assert time.monotonic() - started < 30
    assert error is not None and "it exited (exit code 1)" in str(error)
    assert str(log_path) in str(error)
    assert open_descriptors_to(log_path) == 0
    assert "no model here" in log_path.read_text()


READY_ON_SECOND_ASK = """
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
class Healthz(BaseHTTPRequestHandler):
    asked = 0
    def do_GET(self):
        Healthz.asked += 1
        ready = self.path == "/healthz" and Healthz.asked > 1
        body = b'{"status": "%s"}' % (b"ok" if ready else b"loading")
        self.send_response(200 if ready else 503)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
HTTPServer((sys.argv[sys.argv.index("--host") + 1], int(sys.argv[sys.argv.index("--port") + 1])),
           Healthz).serve_forever()
"""


def test_a_server_is_started_once_healthz_answers_200(tmp_path):
    server, error = start(READY_ON_SECOND_ASK, tmp_path / "log", 30)
    assert error is None
    assert harness.get_json(server.port, "/healthz") == (200, {"status": "ok"})
    assert server.stop() == -signal.SIGTERM
    assert open_descriptors_to(tmp_path / "log") == 0


@pytest.mark.parametrize("count", [1, 2, 20, 1600])
def test_percentiles_are_numpys_nearest(count):
    values = sorted(np.random.RandomState(count).rand(count).tolist())
    for fraction in (0.5, 0.95, 0.99):
        assert harness.percentile(values, fraction) == np.percentile(
            values, fraction * 100, method="nearest")
