"""GracefulServer: waitress's own refusals (before the app runs) are JSON errors too."""

import json
import socket
import threading
import time

import pytest
from flask import Flask, jsonify, request

from server.graceful_server import GracefulServer

MAX_BODY_BYTES = 1000


@pytest.fixture
def server():
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES

    @app.get("/healthz")
    def healthz():
        return jsonify(status="ok")

    @app.post("/echo")
    def echo():
        return jsonify(bytes=len(request.get_data()))

    server = GracefulServer(app, "127.0.0.1", 0, threads=2, max_body_bytes=MAX_BODY_BYTES)
    thread = threading.Thread(target=server.serve)
    thread.start()
    yield server
    server.request_stop()
    thread.join(timeout=30)
    assert not thread.is_alive()


def exchange(server, raw_request, timeout_s=30):
    """Sends raw bytes on a new connection and reads one response.

    Returns (status, headers with lower-case names, body bytes).
    """
    port = int(server.url.rsplit(":", 1)[1].strip("/"))
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as connection:
        connection.sendall(raw_request)
        response = b""
        # Read no further than the response: a server that refuses a request
        # before reading all of it closes with unread data, and the kernel
        # then resets the connection.
        while not _complete(response):
            chunk = connection.recv(65536)
            assert chunk, "the server closed the connection before a whole response"
            response += chunk
    head, _, body = response.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value for name, value in (line.split(": ", 1) for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def _complete(response):
    head, separator, body = response.partition(b"\r\n\r\n")
    if not separator:
        return False
    length = [line.split(b":", 1)[1] for line in head.split(b"\r\n")
              if line.lower().startswith(b"content-length:")]
    return len(body) >= int(length[0])


@pytest.mark.parametrize("raw_request, status, code", [
    (b"GET /healthz HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n", 400, "bad_request"),
    (b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 300000 + b"\r\n\r\n", 431,
     "request_header_fields_too_large"),
    (b"POST /healthz HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501,
     "not_implemented"),
])
def test_requests_waitress_refuses_get_a_json_error(server, raw_request, status, code):
    got_status, headers, body = exchange(server, raw_request)
    assert got_status == status
    assert headers["content-type"] == "application/json"
    assert len(body) == int(headers["content-length"])
    error = json.loads(body)["error"]
    assert error["code"] == code and error["message"]
    # The server goes on serving.
    assert exchange(server, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")[:1] \
        == (200,)


def assert_serves(server):
    assert exchange(server, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")[:1] \
        == (200,)


def post(length, body=b""):
    return (b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Connection: close\r\nContent-Length: %d\r\n\r\n" % length) + body


def test_a_body_over_the_limit_is_refused_at_the_headers(server):
    # Headers announcing 20 MB and no body at all: waitress's default limit
    # (1 GiB) would wait for the body to arrive before the app could refuse it.
    started = time.monotonic()
    status, headers, body = exchange(server, post(20000000), timeout_s=10)
    assert time.monotonic() - started < 5
    assert status == 413
    assert headers["content-type"] == "application/json"
    # The app's own 413: the same code and message (tests/test_serve_api.py).
    assert json.loads(body) == {"error": {
        "code": "payload_too_large",
        "message": "the body is over the limit of %d bytes" % MAX_BODY_BYTES}}
    assert_serves(server)


def test_the_limit_is_the_apps_one_byte_for_byte(server):
    status, _, body = exchange(server, post(MAX_BODY_BYTES, b"x" * MAX_BODY_BYTES))
    assert (status, json.loads(body)) == (200, {"bytes": MAX_BODY_BYTES})
    status, _, body = exchange(server, post(MAX_BODY_BYTES + 1))
    assert status == 413 and json.loads(body)["error"]["code"] == "payload_too_large"
    assert_serves(server)
