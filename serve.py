"""Serves a trained model, or an ensemble of models, over HTTP: docs/API.md's JSON API and a page.

/healthz answers 503 until a model is loaded ("ready: URL" is printed then); the server waits
for training's first checkpoint and switches to each better one, an ensemble is loaded once.
SIGTERM or SIGINT stops it once the requests in flight are answered (docs/SERVING-NOTES.md).
"""

import argparse
import functools
import logging
import os
import signal
import sys
import threading

from seq2seq.config import ConfigError, load_config
from seq2seq.model_dir import CONFIG_FILE
from server.app import DEFAULT_MAX_UNROLLED_TOKENS, create_app
from server.graceful_server import GracefulServer
from server.model_slot import ModelSlot, Reloader, build_translator

LOG = logging.getLogger("seq2seq.serve")
SPARE_THREADS = 4  # waitress threads beyond a full batch's, for /healthz and the page
GIL_SWITCH_INTERVAL_S = 0.001  # waitress's I/O thread gets the GIL sooner (SERVING-NOTES.md)
WATCH_INTERVAL_S = 2.0  # between two looks at the model directory's checkpoint files


def bounded_int(low, high, range_text):
    """An argparse type: an int in low..high (a port of 70000 would wrap to 4464)."""
    def parse(text):
        if not low <= int(text) <= high:
            raise argparse.ArgumentTypeError("%s, got %s" % (range_text, text))
        return int(text)
    return parse


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", required=True, action="append",
                        help="a model directory written by train.py; given again, the models "
                             "decode as an ensemble, loaded once (no --export_dir, no watching)")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default: 127.0.0.1, this machine only)")
    parser.add_argument("--port", type=bounded_int(0, 65535, "a port is 0..65535"), default=8080,
                        help="port (0: any free port)")
    parser.add_argument("--export_dir",
                        help="serve this exported SavedModel instead of the best-BLEU checkpoint "
                             "(MODEL_DIR/best/, else the latest), then each newer export beside it")
    parser.add_argument("--no_watch", action="store_true",
                        help="load the model once, exiting if there is none (default: wait "
                             "for it, then switch to each better one or newer export)")
    parser.add_argument("--no_batching", action="store_true",
                        help="translate every request alone, concurrently (serve.batching: false)")
    parser.add_argument("--warm_up_source_tokens", default=DEFAULT_MAX_UNROLLED_TOKENS,
                        type=bounded_int(0, float("inf"), "a number of tokens is 0 or more"),
                        help="the unrolled decoder serves sources of up to N tokens, built "
                             "before 'ready' (default: %(default)s; 0: none built, 16 served)")
    args = parser.parse_args(argv)
    args.ensemble = len(args.model_dir) > 1
    if args.export_dir and args.ensemble:
        parser.error("--export_dir serves one model directory's SavedModel, not an ensemble")
    return args


def serve_models(model, args, config, server, stopping):
    """Fills `model` with the model directory's model, then (unless --no_watch) with each newer
    one, until `stopping` is set; an ensemble once. Stops `server` if that finds nothing."""
    try:
        import tensorflow.compat.v1 as tf  # seconds: /healthz already answers 503 meanwhile
        import decode.translator  # noqa: F401 (the decoders: a failure here stops the server)
    except Exception:
        LOG.exception("cannot import TensorFlow or the decoders")
        server.request_stop()
        return
    tf.disable_v2_behavior()
    build = functools.partial(build_translator, warm_up_source_tokens=args.warm_up_source_tokens,
                              intra_op_threads=config["serve"]["intra_op_threads"])
    if args.ensemble:
        LOG.info("an ensemble of %d models: loaded once, not watched for newer checkpoints",
                 len(args.model_dir))
        try:
            model.fill(build(args.model_dir, None, False))
            print("ready: %s" % server.url, flush=True)
        except Exception:  # noqa: BLE001 (said, then the server stops)
            LOG.exception("cannot load the ensemble of %s; stopping", ", ".join(args.model_dir))
            server.request_stop()
        return
    reloader, last_failure = Reloader(model, args.model_dir[0], args.export_dir, build), None
    while True:
        was_ready = model.ready
        try:
            reloader.poll()
        except Exception as error:  # noqa: BLE001 (the server serves on; logged once)
            if repr(error) != last_failure:
                LOG.exception("watching %s failed; trying again every %.0fs", args.model_dir[0],
                              WATCH_INTERVAL_S)
                last_failure = repr(error)
        if model.ready and not was_ready:
            print("ready: %s" % server.url, flush=True)
        if args.no_watch or stopping.wait(WATCH_INTERVAL_S):
            break
    if args.no_watch and not model.ready:
        LOG.error("nothing to serve from %s; stopping (--no_watch)", args.model_dir[0])
        server.request_stop()


def main(argv=None):
    args = parse_args(argv)
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    once = args.no_watch or args.ensemble
    config_path = os.path.join(args.model_dir[0], CONFIG_FILE)
    waits = not (once or args.export_dir or os.path.isfile(config_path))
    try:  # no config.yaml yet (training prepares its data first): the serve defaults
        config = load_config(None if waits else config_path)
    except ConfigError as error:
        print("serve.py: %s (is %s a model directory written by train.py?)"
              % (error, args.model_dir[0]), file=sys.stderr)
        return 2
    if args.ensemble:  # before listening: the models must read and write the same pieces
        from decode.ensemble import load_configs  # imports TensorFlow: seconds
        try:
            load_configs(args.model_dir)
        except ValueError as error:
            print("serve.py: %s" % error, file=sys.stderr)
            return 2
    if args.no_batching:
        config["serve"]["batching"] = False
    model_dir = None if args.ensemble else args.model_dir[0]
    model = ModelSlot(model_dir=None if args.export_dir else model_dir, lab_dir=model_dir)
    app = create_app(model, config, args.warm_up_source_tokens or DEFAULT_MAX_UNROLLED_TOKENS,
                     model_dir=model_dir)
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
    stopping = threading.Event()
    loading = threading.Thread(target=serve_models, args=(model, args, config, server, stopping),
                               name="model-loader", daemon=True)
    loading.start()
    server.serve()
    LOG.info("stopped")
    stopping.set()
    loading.join(timeout=1.0)  # returns at once unless a model is being built
    if loading.is_alive():  # stopped while loading: see docs/SERVING-NOTES.md
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return 1 if once and not model.ready else 0


if __name__ == "__main__":
    sys.exit(main())
