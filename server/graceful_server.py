"""Waitress with a graceful stop, JSON errors and a 413 lingering close (docs/SERVING-NOTES.md)."""

import json
import logging
import socket
import threading
import time

import waitress
from waitress import wasyncore
from waitress.channel import HTTPChannel
from waitress.task import ErrorTask

from server.request_checks import BODY_OVER_LIMIT, error_document

LOG = logging.getLogger("seq2seq.serve")
POLL_TIMEOUT_S = 1.0
DRAIN_POLL_TIMEOUT_S = 0.05
DRAIN_TIMEOUT_S = 30.0  # the longest a stop waits for in-flight requests
LINGER_BYTES = 64 * 1024 * 1024  # the most of a refused body read and discarded
LINGER_S = 30.0


class JsonErrorTask(ErrorTask):
    """Waitress's answer to a request it could not parse, as a JSON error."""

    def execute(self):
        error = self.request.error
        if error.code == 413:
            message = BODY_OVER_LIMIT % (self.channel.adj.max_request_body_size - 1)
            self.channel.linger = True
        else:
            message = "%s: %s" % (error.reason, error.body)
        libretranslate = getattr(self.request, "path", "").startswith("/libretranslate/")
        body = json.dumps(error_document(error.code, message, libretranslate)).encode("utf-8")
        self.status = "%d %s" % (error.code, error.reason)
        self.response_headers.append(("Content-Type", "application/json"))
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


class JsonErrorChannel(HTTPChannel):
    """A waitress connection whose own errors are JSON, lingering after a 413."""

    error_task_class = JsonErrorTask
    linger = False  # set by a 413: half-close and drain the body instead of closing
    linger_until = None
    drained = 0

    def handle_close(self):
        if self.linger and self.linger_until is None and self.connected:
            try:
                self.socket.shutdown(socket.SHUT_WR)  # the client reads the 413, then EOF
                self.linger_until = time.monotonic() + LINGER_S
                self.will_close = False
                return
            except OSError:
                pass
        super().handle_close()

    def readable(self):
        return True if self.linger_until is not None else super().readable()

    def writable(self):
        return self.will_close if self.linger_until is not None else super().writable()

    def handle_read(self):
        if self.linger_until is None:
            return super().handle_read()
        try:
            data = self.socket.recv(65536)
        except OSError:
            data = b""
        self.drained += len(data)
        if not data or self.drained > LINGER_BYTES or time.monotonic() > self.linger_until:
            super().handle_close()


class GracefulServer:
    """A waitress server of `app` on host:port (0: any free port) handling `threads` requests at
    once, bodies of up to `max_body_bytes` (larger: 413 at the headers); see `request_stop`."""

    def __init__(self, app, host, port, threads, max_body_bytes):
        self._stopping = threading.Event()
        self._socket_map = {}
        self._server = waitress.create_server(app, map=self._socket_map, host=host, port=port,
                                              threads=threads,
                                              max_request_body_size=max_body_bytes + 1)
        self._server.channel_class = JsonErrorChannel
        host = self._server.effective_host
        self.url = "http://%s:%s/" % ("[%s]" % host if ":" in host else host,
                                      self._server.effective_port)

    def request_stop(self, *_signal_args):
        """Asks serve() to finish in-flight requests and return (a signal handler)."""
        self._stopping.set()
        self._server.pull_trigger()

    def serve(self):
        """Serves until request_stop() is called and the drain is over."""
        while not self._stopping.is_set():
            wasyncore.loop(timeout=POLL_TIMEOUT_S, map=self._socket_map, use_poll=True, count=1)
        wasyncore.dispatcher.close(self._server)  # the listening socket, not the trigger
        LOG.info("stopping: new connections are refused; finishing the requests in flight")
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while time.monotonic() <= deadline:
            wasyncore.loop(timeout=DRAIN_POLL_TIMEOUT_S, map=self._socket_map, use_poll=True,
                           count=1)
            if not any(channel.requests or channel.total_outbufs_len
                       for channel in list(self._server.active_channels.values())):
                break
        self._server.task_dispatcher.shutdown()
        wasyncore.close_all(self._socket_map)
