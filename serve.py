"""Serves a trained model over HTTP: the JSON API of DESIGN.md and a web page.

    python serve.py --model_dir runs/default [--host 127.0.0.1] [--port 8080]
                    [--export_dir E] [--no_batching]

The HTTP server (waitress, never Flask's development server) starts at once
and answers GET /healthz with 503 while a background thread loads the model;
the URL is printed again when the model is ready. SIGTERM or SIGINT stops the
server after the requests in flight have been answered. One graph, one
session: the model is loaded once and shared by every request.
"""

import argparse
import logging
import os
import signal
import sys

from seq2seq.config import ConfigError, load_config
from server.app import create_app
from server.graceful_server import GracefulServer
from server.loader import BackgroundLoader
from server.model_slot import ModelSlot

# Waitress threads beyond one per sentence of a full micro-batch: single-sentence
# requests each hold a thread while they wait for their batch, and /healthz and
# the page must still be answered while a full batch waits.
SPARE_THREADS = 4


def port_number(text):
    """argparse type: a TCP port, 0..65535 (the socket layer would wrap 70000 to 4464)."""
    port = int(text)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError("a port is 0..65535, got %s" % text)
    return port


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", required=True, help="a model directory written by train.py")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default: 127.0.0.1, this machine only)")
    parser.add_argument("--port", type=port_number, default=8080, help="port (0: any free port)")
    parser.add_argument("--export_dir", default=None,
                        help="serve this exported SavedModel instead of the latest checkpoint")
    parser.add_argument("--no_batching", action="store_true",
                        help="translate every request alone (same as serve.batch_window_ms: 0)")
    parser.add_argument("--warm_up_source_tokens", type=int, default=16,
                        help="before saying ready, build the unrolled decoder's graphs for "
                             "sources of up to this many tokens (0: none; default: 16)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        # The model directory's own config: the limits the model was set up with.
        config = load_config(os.path.join(args.model_dir, "config.yaml"))
    except ConfigError as error:
        print("serve.py: %s (is %s a model directory written by train.py?)"
              % (error, args.model_dir), file=sys.stderr)
        return 2
    if args.no_batching:
        config["serve"]["batch_window_ms"] = 0.0

    model = ModelSlot()
    app = create_app(model, config)
    try:
        server = GracefulServer(app, args.host, args.port,
                                threads=config["serve"]["max_batch_sentences"] + SPARE_THREADS)
    except (OSError, ValueError) as error:  # ValueError: waitress cannot resolve the host
        print("serve.py: cannot listen on %s port %d: %s" % (args.host, args.port, error),
              file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, server.request_stop)
    signal.signal(signal.SIGINT, server.request_stop)
    print("listening on %s (loading the model)" % server.url, flush=True)

    loader = BackgroundLoader(model, args.model_dir, args.export_dir,
                              warm_up_beam_widths=[config["decode"]["beam_width"]],
                              warm_up_source_tokens=args.warm_up_source_tokens)
    loading = loader.start(on_ready=lambda: print("ready: %s" % server.url, flush=True),
                           on_failure=server.request_stop)
    server.serve()
    logging.getLogger("seq2seq.serve").info("stopped")
    exit_code = 1 if loader.failed else 0
    if loading.is_alive():
        # Interpreter shutdown would end the loader thread wherever it is, and
        # inside TensorFlow's C++ code that aborts the process ("FATAL:
        # exception not rethrown", exit 134): leave without the shutdown.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exit_code)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
