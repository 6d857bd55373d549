"""Serves a trained model over HTTP: the JSON API of DESIGN.md and a web page.

/healthz answers 503 until the model is loaded ("ready: URL" is printed then).
SIGTERM or SIGINT stops the server once the requests in flight are answered.
"""

import argparse
import logging
import os
import signal
import sys
import threading
import time

from seq2seq.config import ConfigError, load_config
from server.app import DEFAULT_MAX_UNROLLED_TOKENS, ModelSlot, create_app
from server.graceful_server import GracefulServer

LOG = logging.getLogger("seq2seq.serve")
SPARE_THREADS = 4  # waitress threads beyond a full batch's, for /healthz and the page
GIL_SWITCH_INTERVAL_S = 0.001  # waitress's I/O thread gets the GIL sooner (BENCHMARKS.md)


def bounded_int(low, high, range_text):
    """An argparse type: an int in low..high (a port of 70000 would wrap to 4464)."""

    def parse(text):
        if not low <= int(text) <= high:
            raise argparse.ArgumentTypeError("%s, got %s" % (range_text, text))
        return int(text)
    return parse


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", required=True,
                        help="a model directory written by train.py")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default: 127.0.0.1, this machine only)")
    parser.add_argument("--port", type=bounded_int(0, 65535, "a port is 0..65535"), default=8080,
                        help="port (0: any free port)")
    parser.add_argument("--export_dir", default=None,
                        help="serve this exported SavedModel instead of the best-BLEU checkpoint "
                             "(MODEL_DIR/best/, else the latest)")
    parser.add_argument("--no_batching", action="store_true",
                        help="translate every request alone, concurrently (serve.batching: false)")
    parser.add_argument("--warm_up_source_tokens",
                        type=bounded_int(0, float("inf"), "a number of tokens is 0 or more"),
                        default=DEFAULT_MAX_UNROLLED_TOKENS,
                        help="the unrolled decoder serves sources of up to N tokens, its graphs "
                             "built before 'ready' (default: %(default)s; 0: none built, "
                             "16 served)")
    return parser.parse_args(argv)


def load_model(slot, args, config, server):
    """Loads the Translator and its default-width graphs into `slot`, else stops `server`."""
    started = time.monotonic()
    try:
        import tensorflow.compat.v1 as tf  # seconds: /healthz already answers 503 meanwhile
        from decode.translator import Translator

        tf.disable_v2_behavior()
        translator = Translator(args.model_dir, export_dir=args.export_dir, hparams=(
            "decode.concurrent_batches=1,decode.inter_op_threads=-1,decode.intra_op_threads=%d"
            % config["serve"]["intra_op_threads"]))
        LOG.info("model %s (step %d) restored; building its decoder graphs",
                 translator.model_name, translator.step)
        widths = [config["decode"]["beam_width"]]
        translator.warm_up([d for d in translator.decoders if d != "unrolled"], widths)
        if args.warm_up_source_tokens and "unrolled" in translator.decoders:
            translator.warm_up(["unrolled"], widths, max_source_length=args.warm_up_source_tokens)
    except Exception:
        LOG.exception("loading the model from %s failed", args.model_dir)
        server.request_stop()
        return
    slot.fill(translator)
    LOG.info("model %s (step %d) loaded in %.1fs", translator.model_name, translator.step,
             time.monotonic() - started)
    print("ready: %s" % server.url, flush=True)


def main(argv=None):
    args = parse_args(argv)
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = load_config(os.path.join(args.model_dir, "config.yaml"))
    except ConfigError as error:
        print("serve.py: %s (is %s a model directory written by train.py?)"
              % (error, args.model_dir), file=sys.stderr)
        return 2
    if args.no_batching:
        config["serve"]["batching"] = False
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
    loading = threading.Thread(target=load_model, args=(model, args, config, server),
                               name="model-loader", daemon=True)
    loading.start()
    server.serve()
    LOG.info("stopped")
    exit_code = 1 if not (model.ready or loading.is_alive()) else 0  # 1: the load failed
    if loading.is_alive():  # stopped while loading: see docs/SERVING-NOTES.md
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exit_code)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
