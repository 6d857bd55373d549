"""Decoding with an exported SavedModel: the one variant its signature serves.

`model_fn` exports the while_loop beam search at the config's beam width,
built by `model_search.search_encoded` as the checkpoint backend builds its
variants, so both translate every sentence alike (tests/test_export.py).
"""

import tensorflow.compat.v1 as tf

from decode.session_config import session_config


class SavedModelBackend:
    """A SavedModel's serving signature: the one decoder and beam width it was exported with.

    Same interface as `checkpoint_backend.CheckpointBackend`.

    Attributes:
      decoders: ("while_loop",).
      default_beam_width: the exported beam width K, read from the
        signature's "scores" output, [batch, K].
      beam_widths: range(K, K + 1), the one beam width it serves.
    """

    decoders = ("while_loop",)

    def __init__(self, export_dir, decode_params):
        """Loads the SavedModel into a graph and session of its own.

        Args:
          export_dir: a directory written by the Estimator's export.
          decode_params: the config's "decode" dict (the session's threads).
        Raises:
          ValueError: if it holds no SavedModel, or one without the serving
            signature's inputs and outputs.
        """
        from seq2seq.model_fn import SERVING_SIGNATURE  # which imports decode.translator
        self._export_dir = export_dir
        if not tf.saved_model.loader.maybe_saved_model_directory(export_dir):
            raise ValueError("%s holds no SavedModel (saved_model.pb)" % export_dir)
        self._graph = tf.Graph()
        self._session = tf.Session(graph=self._graph, config=session_config(decode_params))
        meta_graph = tf.saved_model.loader.load(
            self._session, [tf.saved_model.tag_constants.SERVING], export_dir)
        signature = meta_graph.signature_def.get(SERVING_SIGNATURE)
        if signature is None:
            raise ValueError("the SavedModel in %s has no %r signature"
                             % (export_dir, SERVING_SIGNATURE))
        self._signature_name = SERVING_SIGNATURE
        self._inputs = {name: self._tensor(signature.inputs, name)
                        for name in ("source_ids", "source_length")}
        self._outputs = [self._tensor(signature.outputs, name)
                         for name in ("ids", "scores", "lengths")]
        self.default_beam_width = self._outputs[1].shape.as_list()[1]
        if self.default_beam_width is None:
            raise ValueError("the SavedModel in %s does not say its beam width (its scores "
                             "are shaped %s)" % (export_dir, self._outputs[1].shape))
        self.beam_widths = range(self.default_beam_width, self.default_beam_width + 1)
        self._step = int(self._session.run(tf.train.get_global_step(self._graph)))

    def _tensor(self, tensor_infos, name):
        """The graph tensor of a signature's input or output `name`."""
        if name not in tensor_infos:
            raise ValueError("the SavedModel in %s has no %r in its %r signature"
                             % (self._export_dir, name, self._signature_name))
        return self._graph.get_tensor_by_name(tensor_infos[name].name)

    @property
    def step(self):
        """The global step of the exported checkpoint."""
        return self._step

    @property
    def variants(self):
        """Nothing is built: the SavedModel's graph is fixed."""
        return []

    def close(self):
        """Frees the session's resources."""
        self._session.close()

    def check_supported(self, decoder, beam_width):
        """Raises ValueError unless the signature serves this decoder and beam width.

        The message names neither the directory (it reaches HTTP clients, who
        have no business with the server's paths) nor the values asked for
        (the caller adds them, cut short).
        """
        if decoder not in self.decoders or beam_width != self.default_beam_width:
            raise ValueError(
                "the exported SavedModel serves only the %s decoder at beam_width %d (a "
                "checkpoint serves the others)" % (self.decoders[0], self.default_beam_width))

    def run(self, decoder, beam_width, source_ids, source_length, new_variants=None):
        """Decodes one padded batch with the signature; see `CheckpointBackend.run`.

        Its one graph was loaded with it: `new_variants` never receives any.
        """
        del new_variants  # nothing is ever built
        self.check_supported(decoder, beam_width)
        return self._session.run(self._outputs, {self._inputs["source_ids"]: source_ids,
                                                 self._inputs["source_length"]: source_length})
