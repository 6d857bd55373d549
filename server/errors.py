"""The one shape every error takes on the wire.

DESIGN.md: ``{"error": {"code": ..., "message": ...}}``, never HTML and never a
traceback. Request handling raises :class:`ApiError`; the app turns it (and
every other failure) into :func:`error_response`. Requests that never reach
the app (malformed HTTP, headers over waitress's limit, an unknown transfer
encoding) get the same shape from `server.graceful_server`, through
:func:`error_document`.
"""

from flask import jsonify

# The error code for each status the server answers with. One code per status
# keeps clients simple: the status says what kind of failure, the message which.
CODES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    431: "request_header_fields_too_large",
    500: "internal_error",
    501: "not_implemented",
    503: "unavailable",
}


class ApiError(Exception):
    """A request the server refuses, with the status and message to send back."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


def body_over_limit_message(max_body_bytes):
    """The 413 message, the same whether the app or waitress refuses the body."""
    return "the body is over the limit of %d bytes" % max_body_bytes


def error_document(status, message):
    """The JSON-serialisable error body for `status` (a key of CODES; "error" for any other)."""
    return {"error": {"code": CODES.get(status, "error"), "message": message}}


def error_response(status, message):
    """Returns the JSON error response for `status` (a key of CODES), in a Flask app."""
    response = jsonify(error_document(status, message))
    response.status_code = status
    return response
