"""Waitress with a graceful stop: finish what is in flight, then return.

Waitress's own ``run()`` stops on KeyboardInterrupt by waiting for its worker
threads, but the answers those threads produce are written to the sockets by
the main loop, which has already stopped: in-flight requests lose their
responses. So this class runs waitress's loop itself, one poll at a time, and
on a stop request:

1. closes the listening socket (new connections are refused at once),
2. keeps polling until no connection has a request queued, being computed
   or not yet fully sent (at most ``drain_timeout_s``; a keep-alive client
   that goes on sending requests meanwhile is served until then),
3. stops the worker threads and closes the remaining idle connections.

``request_stop`` only sets a flag and wakes the loop, so it is safe as a
signal handler and from any thread.

Requests that waitress refuses itself, before the app sees them (a malformed
request line or header, headers over its 256 KB limit, an unknown transfer
encoding, a body over the limit), get DESIGN.md's JSON error too, rather than
waitress's text/plain.

The body limit is enforced by waitress, at the headers: a Content-Length over
it is answered 413 at once, before a byte of the body is read (the app's own
limit, Flask's MAX_CONTENT_LENGTH, applies only once the server has read the
whole body into memory, and waitress's default limit is 1 GiB).
"""

import json
import threading
import time

import waitress
from waitress import wasyncore
from waitress.channel import HTTPChannel
from waitress.task import ErrorTask

from server.errors import body_over_limit_message, error_document

# How long one poll may sleep when nothing happens; a stop request wakes it anyway.
POLL_TIMEOUT_S = 1.0
DRAIN_POLL_TIMEOUT_S = 0.05


class JsonErrorTask(ErrorTask):
    """Waitress's answer to a request it could not parse, as a JSON error."""

    def execute(self):
        error = self.request.error  # a waitress.utilities.Error: code, reason, body
        if error.code == 413:
            # The app's own 413 message: the limit, not waitress's off-by-one threshold.
            message = body_over_limit_message(self.channel.adj.max_request_body_size - 1)
        else:
            message = "%s: %s" % (error.reason, error.body)
        body = json.dumps(error_document(error.code, message))
        body = body.encode("utf-8")
        self.status = "%d %s" % (error.code, error.reason)
        self.response_headers.append(("Content-Type", "application/json"))
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


class JsonErrorChannel(HTTPChannel):
    """A waitress connection whose own errors are JSON."""

    error_task_class = JsonErrorTask


class GracefulServer:
    """A waitress server on one socket, stopped by :meth:`request_stop`.

    Args:
      app: the WSGI application.
      host, port: where to listen (port 0: any free port).
      threads: waitress worker threads, i.e. requests handled at once.
      max_body_bytes: the largest request body; a larger one is answered 413
        as soon as its headers are read (the config's serve.max_body_bytes,
        the app's own limit).
      drain_timeout_s: the longest a stop waits for in-flight requests.
    """

    def __init__(self, app, host, port, threads, max_body_bytes, drain_timeout_s=30.0):
        self._stopping = threading.Event()
        self._socket_map = {}
        self._drain_timeout_s = drain_timeout_s
        # Waitress refuses a body of max_request_body_size bytes or more; the
        # app, one over max_body_bytes: the + 1 makes both mean "over the limit".
        self._server = waitress.create_server(app, map=self._socket_map, host=host, port=port,
                                              threads=threads,
                                              max_request_body_size=max_body_bytes + 1)
        self._server.channel_class = JsonErrorChannel

    @property
    def url(self):
        host = self._server.effective_host
        if ":" in host:
            host = "[%s]" % host
        return "http://%s:%s/" % (host, self._server.effective_port)

    def request_stop(self, *_signal_args):
        """Asks serve() to finish in-flight requests and return."""
        self._stopping.set()
        self._server.pull_trigger()

    def serve(self):
        """Serves until request_stop() is called and the drain is over."""
        while not self._stopping.is_set():
            wasyncore.loop(timeout=POLL_TIMEOUT_S, map=self._socket_map, use_poll=True, count=1)
        # The base class's close() closes the listening socket only; the
        # server's own close() would also close the trigger that worker
        # threads still pull to hand their answers to this loop.
        wasyncore.dispatcher.close(self._server)
        deadline = time.monotonic() + self._drain_timeout_s
        while True:
            wasyncore.loop(timeout=DRAIN_POLL_TIMEOUT_S, map=self._socket_map, use_poll=True,
                           count=1)
            if not self._has_unfinished_requests() or time.monotonic() > deadline:
                break
        self._server.task_dispatcher.shutdown()
        wasyncore.close_all(self._socket_map)

    def _has_unfinished_requests(self):
        # A channel keeps a request in `requests` from the moment it is parsed
        # until its answer is in the output buffer, which the loop then sends.
        return any(channel.requests or channel.total_outbufs_len
                   for channel in list(self._server.active_channels.values()))

