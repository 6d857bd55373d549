"""Serves a trained model over HTTP: the JSON API of DESIGN.md and a web page.

    python serve.py --model_dir runs/default [--host 127.0.0.1] [--port 8080]
                    [--export_dir E] [--no_batching] [--warm_up_source_tokens N]

The HTTP server (waitress, never Flask's development server) starts at once
and answers GET /healthz with 503 while a background thread loads the model;
the URL is printed again when the model is ready. SIGTERM or SIGINT stops the
server after the requests in flight have been answered. One graph, one
session: the model is loaded once and shared by every request.

The unrolled decoder has one graph per beam width and output length bucket,
each seconds to build: it serves sources of up to --warm_up_source_tokens
tokens (default 16), whose graphs at the default beam width are built before
the server says it is ready; longer sources are a 400 (use while_loop). With
--warm_up_source_tokens 0 no graph is built at the start (the quickest
start, for development and tests) and the unrolled decoder serves up to the
default 16 tokens, building each graph on first use.
"""

import argparse
import logging
import os
import signal
import sys

from seq2seq.config import ConfigError, load_config
from server.app import DEFAULT_MAX_UNROLLED_TOKENS, create_app
from server.graceful_server import GracefulServer
from server.loader import BackgroundLoader
from server.model_slot import ModelSlot

# Waitress threads beyond one per sentence of a full micro-batch: single-sentence
# requests each hold a thread while they wait for their batch, so that a full
# batch can gather, and a few more let /healthz and the page be answered beside
# it. Only beside it: waitress queues requests first in, first out, so with more
# requests in flight than threads (max_batch_sentences + SPARE_THREADS) a
# /healthz waits behind those that came before it.
SPARE_THREADS = 4
# Waitress reads and answers every request on one I/O thread, which needs the
# GIL like the request threads do: handing the GIL over every 1 ms rather than
# Python's 5 ms gets it there sooner. Six load runs at 32 clients, alternating
# with 5 ms in both orders (docs/BENCHMARKS.md): 8-41% more requests/s with
# batching on and 7-39% with it off, in every pair.
GIL_SWITCH_INTERVAL_S = 0.001


def port_number(text):
    """argparse type: a TCP port, 0..65535 (the socket layer would wrap 70000 to 4464)."""
    port = int(text)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError("a port is 0..65535, got %s" % text)
    return port


def token_count(text):
    """argparse type: a number of tokens, 0 or more."""
    count = int(text)
    if count < 0:
        raise argparse.ArgumentTypeError("a number of tokens is 0 or more, got %s" % text)
    return count


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", required=True, help="a model directory written by train.py")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default: 127.0.0.1, this machine only)")
    parser.add_argument("--port", type=port_number, default=8080, help="port (0: any free port)")
    parser.add_argument("--export_dir", default=None,
                        help="serve this exported SavedModel instead of the best-BLEU checkpoint "
                             "(MODEL_DIR/best/, else the latest)")
    parser.add_argument("--no_batching", action="store_true",
                        help="translate every request alone (same as serve.batch_window_ms: 0)")
    parser.add_argument("--warm_up_source_tokens", type=token_count,
                        default=DEFAULT_MAX_UNROLLED_TOKENS,
                        help="the unrolled decoder serves sources of up to this many tokens, "
                             "and its graphs for them are built before the server says it is "
                             "ready (default: %d; 0: build none at the start, serve up to %d "
                             "tokens, building graphs on first use)"
                             % (DEFAULT_MAX_UNROLLED_TOKENS, DEFAULT_MAX_UNROLLED_TOKENS))
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
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
    app = create_app(model, config, max_unrolled_tokens=(args.warm_up_source_tokens
                                                         or DEFAULT_MAX_UNROLLED_TOKENS))
    try:
        server = GracefulServer(app, args.host, args.port,
                                threads=config["serve"]["max_batch_sentences"] + SPARE_THREADS,
                                max_body_bytes=config["serve"]["max_body_bytes"])
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
