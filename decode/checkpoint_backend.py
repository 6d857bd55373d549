"""Decoding from a checkpoint: every decoder variant, built on demand into one graph.

The encoder is built once, at construction; each (decoder, beam width,
unrolled length) variant is added to the same graph the first time it is
asked for, by `model_search.search_encoded`, cached, and run by the one
session from then on.
"""

import collections
import threading
import time

import tensorflow.compat.v1 as tf

from decode import DECODERS
from decode.length_limits import unrolled_length_bucket
from decode.session_config import session_config
from seq2seq.best_checkpoint import best_checkpoint_dir
from seq2seq.model import Seq2SeqModel

Variant = collections.namedtuple(
    "Variant", "decoder beam_width unrolled_length build_seconds num_ops")
Variant.__doc__ = """A decoder graph the checkpoint backend has built.

Fields:
  decoder: "while_loop", "unrolled" or "greedy".
  beam_width: its beam width (1 for greedy).
  unrolled_length: the unrolled search's number of steps (its length
    bucket); None for the others, whose loop bound is computed from the batch
    in the graph.
  build_seconds: the wall time spent adding its ops to the graph.
  num_ops: how many ops building it added to the graph.
"""


def find_checkpoint(model_dir):
    """The checkpoint a model directory serves: its best-BLEU one if it keeps one.

    Args:
      model_dir: a directory written by train.py.
    Returns:
      A checkpoint path prefix.
    Raises:
      ValueError: if the directory holds no checkpoint.
    """
    best_dir = best_checkpoint_dir(model_dir)
    path = tf.train.latest_checkpoint(best_dir) if best_dir else None
    path = path or tf.train.latest_checkpoint(model_dir)
    if not path:
        raise ValueError("%s holds no checkpoint: train a model into it first "
                         "(python train.py --model_dir %s)" % (model_dir, model_dir))
    return path


class CheckpointBackend:
    """Every decoder variant, built on demand into one graph and run by one session.

    The decoder's variables only appear with the first variant built, so
    variables are restored as the builds create them, by loading the
    checkpoint's values into the session (a Saver per build would add
    save/restore ops and blur every variant's op count).

    Attributes:
      decoders: DECODERS, all of them.
      default_beam_width: the config's decode.beam_width.
    """

    decoders = DECODERS

    def __init__(self, config, source_vocab_size, target_vocab_size, checkpoint):
        """Builds the encoder and restores its variables.

        Args:
          config: the model directory's resolved config.
          source_vocab_size, target_vocab_size: the vocabulary sizes.
          checkpoint: a checkpoint path prefix.
        """
        self.default_beam_width = config["decode"]["beam_width"]
        self._decode_params = config["decode"]
        self._reader = tf.train.load_checkpoint(checkpoint)
        self._checkpoint = checkpoint
        self._lock = threading.Lock()
        self._built = {}  # (decoder, beam_width, unrolled_length) -> (fetches, Variant)
        self._restored = set()
        self._graph = tf.Graph()
        with self._graph.as_default():
            with tf.name_scope("inputs"):
                self._source_ids = tf.placeholder(tf.int32, [None, None], name="source_ids")
                self._source_length = tf.placeholder(tf.int32, [None], name="source_length")
            self._model = Seq2SeqModel(config["model"], source_vocab_size, target_vocab_size)
            self._encoded = self._model.encode(
                self._source_ids, self._source_length, training=False)
        self._session = tf.Session(graph=self._graph, config=session_config(config["decode"]))
        self._restore_new_variables()

    @property
    def step(self):
        """The checkpoint's global step."""
        return int(self._reader.get_tensor(tf.GraphKeys.GLOBAL_STEP))

    @property
    def variants(self):
        """The `Variant`s built so far, in build order."""
        return [variant for _, variant in list(self._built.values())]

    def close(self):
        """Frees the session's resources."""
        self._session.close()

    def check_supported(self, decoder, beam_width):
        """Any decoder and beam width can be built from a checkpoint."""
        del decoder, beam_width  # all supported

    def run(self, decoder, beam_width, source_ids, source_length, new_variants=None):
        """Decodes one padded batch.

        Args:
          decoder: one of DECODERS.
          beam_width: K (1 for greedy).
          source_ids: [batch, src_time] int32, PAD_ID-padded.
          source_length: [batch] int32, every length >= 1.
          new_variants: None, or a list that receives the `Variant` of the
            graph this batch needs if the call found it not yet built (it
            built it, or waited while a concurrent call built it).
        Returns:
          (ids [batch, K, time] int32, scores [batch, K] float32,
           lengths [batch, K] int32), as the decoder contract defines them.
        """
        unrolled_length = (unrolled_length_bucket(int(source_length.max()), self._decode_params)
                           if decoder == "unrolled" else None)
        fetches = self._fetches(decoder, beam_width, unrolled_length, new_variants)
        return self._session.run(fetches, {self._source_ids: source_ids,
                                           self._source_length: source_length})

    def _fetches(self, decoder, beam_width, unrolled_length, new_variants):
        """The cached (ids, scores, lengths) of a variant, built on first use
        (its Variant then appended to `new_variants`, if given)."""
        key = (decoder, beam_width, unrolled_length)
        built = self._built.get(key)
        if built is None:
            # Double-checked: a variant enters `_built` only once it is built
            # and restored, so readers outside the lock never see half of one.
            with self._lock:
                built = self._built.get(key)
                if built is None:
                    built = self._build(decoder, beam_width, unrolled_length)
                    self._restore_new_variables()
                    self._built[key] = built
            if new_variants is not None:
                new_variants.append(built[1])
        return built[0]

    def _build(self, decoder, beam_width, unrolled_length):
        """Adds one decoder variant to the graph; returns (fetches, Variant)."""
        start_seconds, start_ops = time.perf_counter(), len(self._graph.get_operations())
        from decode.translator import search_encoded  # which imports this module
        with self._graph.as_default():
            fetches = search_encoded(self._model, self._encoded, self._source_length,
                                     self._decode_params, decoder, beam_width,
                                     unrolled_length=unrolled_length)
        variant = Variant(decoder, beam_width, unrolled_length,
                          build_seconds=time.perf_counter() - start_seconds,
                          num_ops=len(self._graph.get_operations()) - start_ops)
        return fetches, variant

    def _restore_new_variables(self):
        """Loads the checkpoint's values into the variables not yet restored."""
        for variable in self._graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES):
            name = variable.op.name
            if name in self._restored:
                continue
            if not self._reader.has_tensor(name):
                raise ValueError("checkpoint %s has no variable %s: was it trained with "
                                 "a different model config?" % (self._checkpoint, name))
            value = self._reader.get_tensor(name)
            if list(value.shape) != variable.shape.as_list():
                raise ValueError("checkpoint %s holds %s with shape %s, the config's model "
                                 "needs %s" % (self._checkpoint, name, list(value.shape),
                                               variable.shape.as_list()))
            variable.load(value, self._session)
            self._restored.add(name)
