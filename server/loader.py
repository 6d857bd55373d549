"""Loads the model in a background thread, so the HTTP server can start first."""

import logging
import threading
import time

LOG = logging.getLogger("seq2seq.serve")


class BackgroundLoader:
    """Builds the Translator, warms it up, and fills a ModelSlot with it.

    Args:
      slot: the server.model_slot.ModelSlot to fill.
      model_dir: the model directory.
      export_dir: a SavedModel to load instead of the best-BLEU checkpoint (else the
        latest), or None.
      warm_up_beam_widths: the beam widths whose graphs are built before the
        server says it is ready, so the first requests pay no graph building.
      warm_up_source_tokens: the unrolled decoder has one graph per output
        length bucket, each seconds to build: build those that sources of up
        to this many tokens need (0: none). The app serves the unrolled
        decoder no longer sources (create_app's max_unrolled_tokens); other
        beam widths build their graphs on first use.
    """

    def __init__(self, slot, model_dir, export_dir, warm_up_beam_widths, warm_up_source_tokens):
        self._slot = slot
        self._model_dir = model_dir
        self._export_dir = export_dir
        self._warm_up_beam_widths = warm_up_beam_widths
        self._warm_up_source_tokens = warm_up_source_tokens
        self.failed = False

    def start(self, on_ready, on_failure):
        """Starts loading; calls on_ready() or on_failure() from the loader thread."""
        # A daemon thread: a stop during loading must not wait for the load.
        thread = threading.Thread(target=self._load, args=(on_ready, on_failure),
                                  name="model-loader", daemon=True)
        thread.start()
        return thread

    def _load(self, on_ready, on_failure):
        started = time.monotonic()
        try:
            # Imported here because importing TensorFlow takes seconds, during
            # which the server is already answering /healthz with 503.
            import tensorflow.compat.v1 as tf
            from decode.translator import Translator

            tf.disable_v2_behavior()
            translator = Translator(self._model_dir, export_dir=self._export_dir)
            LOG.info("model %s (step %d) restored; building its decoder graphs",
                     translator.model_name, translator.step)
            self._warm_up(translator)
        except Exception:  # whatever it is, the server cannot serve without a model
            LOG.exception("loading the model from %s failed", self._model_dir)
            self.failed = True
            on_failure()
            return
        self._slot.fill(translator)
        LOG.info("model %s (step %d) loaded in %.1fs", translator.model_name, translator.step,
                 time.monotonic() - started)
        on_ready()

    def _warm_up(self, translator):
        one_graph_each = [decoder for decoder in translator.decoders if decoder != "unrolled"]
        translator.warm_up(one_graph_each, self._warm_up_beam_widths)
        if self._warm_up_source_tokens > 0 and "unrolled" in translator.decoders:
            translator.warm_up(["unrolled"], self._warm_up_beam_widths,
                               max_source_length=self._warm_up_source_tokens)
