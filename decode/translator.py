"""Translation with a trained model: loaded once, then any number of batches.

From a checkpoint every decoder graph (decode/graphs.py) is built on first use into one
graph run by one session (decode/graph_cache.py); a SavedModel serves the search it was
exported with. Calls are split into length-sorted batches run on threads. The reasons and
timings behind the choices: docs/DECODING-NOTES.md.
"""

import collections
import os

import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.core.protobuf import rewriter_config_pb2

from data_pipeline.tokenizer import BOS_ID, EOS_ID, UNK_ID, Tokenizer
from decode import DECODERS
from decode.batching import call_batch_size, in_batches
from decode.ensemble import build_model, load_configs
from decode.exact import exact_search, expansion_step
from decode.graph_cache import GraphCache
from decode.graphs import (FED_OPTIONS, SearchResult, fields_of, graph_options, graph_shape,
                           output_length_limit, pad_batch, score_encoded, search_encoded,
                           search_result, sentence_trace, unrolled_length_bucket)
from decode.options import OPTIONS, is_int, resolve, shown
from decode.sampling import sentence_keys
from decode.scoring import Scoring
from seq2seq.config import load_config
from seq2seq.model_dir import SERVING_SIGNATURE

EXACT_ROWS_PER_CALL = 512  # prefixes per model call of the exact search (docs/BENCHMARKS.md)

Translation = collections.namedtuple(
    "Translation", "text score n_best unfamiliar trace proven expansions",
    defaults=(False, None, None, None))
Translation.__doc__ = """The best hypothesis's text and score, the n-best `Hypothesis`es, whether
the source is unlike the training data, the DESIGN.md search trace (or None), and for the exact
decoder whether the best is proven and how many prefixes it expanded (else None)."""
Hypothesis = collections.namedtuple("Hypothesis", "text score")


class Translator:
    """Translates with a model, or an ensemble of models; thread-safe (builds take a lock).

    Attributes:
      config, model_name, step (of the checkpoint or SavedModel): the first model's; members:
      {"name", "step"} of each model (decode/ensemble.py; one unless an ensemble);
      source_vocab_size, target_vocab_size;
      decoders: all of DECODERS from a checkpoint, ("while_loop",) from a SavedModel;
      beam_widths: a range, 1..decode.max_beam_width (a SavedModel: its one width);
      can_trace: False for a SavedModel, whose graph returns no trace.
    """

    def __init__(self, model_dir, export_dir=None, checkpoint=None, hparams=""):
        """Loads the config, tokenizer, graph, session and weights.

        Args:
          model_dir: a directory written by train.py, or a list of them (an ensemble); export_dir:
            a SavedModel to serve, or checkpoint: a prefix (a list: one per model directory).
          hparams: "section.key=value,..." overrides of the config (decode's thread keys: of
            the defaults, never of config.yaml).
        Raises:
          ValueError: no model directory or checkpoint, one that does not fit, vocabularies differ.
        """
        self._model_dirs = [model_dir] if isinstance(model_dir, str) else list(model_dir)
        if export_dir and (checkpoint or self._model_dirs[1:]):
            raise ValueError("pass export_dir (one model directory) or checkpoint, not both")
        self._configs = load_configs(self._model_dirs, hparams)
        self.config = self._configs[0]
        threads = load_config(None, hparams)["decode"]
        for key in ("inter_op_threads", "intra_op_threads", "concurrent_batches"):
            self.config["decode"][key] = threads[key]
        self._concurrent_batches = threads["concurrent_batches"] or os.cpu_count() or 1
        self.model_name = self.config["name"]
        self._tokenizer = Tokenizer.load(self._model_dirs[0])
        self.source_vocab_size = self._tokenizer.source_vocab_size
        self.target_vocab_size = self._tokenizer.target_vocab_size
        self._graph = tf.Graph()
        self._session = tf.Session(graph=self._graph, config=tf.ConfigProto(  # Grappler off
            inter_op_parallelism_threads=self.config["decode"]["inter_op_threads"],
            intra_op_parallelism_threads=self.config["decode"]["intra_op_threads"],
            graph_options=tf.GraphOptions(rewrite_options=rewriter_config_pb2.RewriterConfig(
                disable_meta_optimizer=True))))
        if export_dir:
            self._load_saved_model(export_dir)
        else:
            self._load_checkpoint(checkpoint)

    def _load_checkpoint(self, checkpoint):
        """Builds the encoder and restores its variables; the decoders come on demand."""
        decode_params = self.config["decode"]
        self.decoders, self.can_trace, self._exported = DECODERS, True, None
        self.default_beam_width = decode_params["beam_width"]
        self.beam_widths = range(1, decode_params["max_beam_width"] + 1)
        with self._graph.as_default():
            with tf.name_scope("inputs"):
                self._source_ids = tf.placeholder(tf.int32, [None, None], name="source_ids")
                self._source_length = tf.placeholder(tf.int32, [None], name="source_length")
                self._target_ids = tf.placeholder(tf.int32, [None, None], name="target_ids")
                self._target_length = tf.placeholder(tf.int32, [None], name="target_length")
            with tf.name_scope("options"):
                self._fed_options = {name: tf.placeholder_with_default(
                    dtype(decode_params[name]), [], name=name) for name, dtype in FED_OPTIONS.items()}
            self._model, checkpoints, self.members = build_model(
                self._configs, self._model_dirs, checkpoint, self.source_vocab_size,
                self.target_vocab_size)
            self._encoded = self._model.encode(self._source_ids, self._source_length,
                                               training=False)
        self.step = checkpoints[0].step
        self._cache = GraphCache(self._session, checkpoints)

    def _load_saved_model(self, export_dir):
        """Loads a SavedModel's serving signature: the exported while_loop search."""
        if not tf.saved_model.loader.maybe_saved_model_directory(export_dir):
            raise ValueError("%s holds no SavedModel (saved_model.pb)" % export_dir)
        meta_graph = tf.saved_model.loader.load(
            self._session, [tf.saved_model.tag_constants.SERVING], export_dir)
        try:
            signature = meta_graph.signature_def[SERVING_SIGNATURE]
            self._source_ids, self._source_length = (
                self._graph.get_tensor_by_name(signature.inputs[name].name)
                for name in ("source_ids", "source_length"))
            self._exported = [self._graph.get_tensor_by_name(signature.outputs[name].name)
                              for name in ("ids", "scores", "lengths")]
        except KeyError as error:
            raise ValueError("the SavedModel in %s was not exported by train.py: it has no %s"
                             % (export_dir, error)) from None
        self.decoders, self.can_trace, self._fed_options = ("while_loop",), False, {}
        self.default_beam_width = self._exported[1].shape.as_list()[1]  # scores [batch, K]
        self.beam_widths = range(self.default_beam_width, self.default_beam_width + 1)
        self.step = int(self._session.run(tf.train.get_global_step(self._graph)))
        self.members = [{"name": self.model_name, "step": self.step}]
        self._cache = GraphCache(self._session)  # builds nothing: recording_builds stays empty

    @property
    def variants(self):
        """The `Variant`s (decode/graph_cache.py) built so far, in build order."""
        return self._cache.variants

    def recording_builds(self):
        """A block listing the graphs this thread's calls in it needed unbuilt (GraphCache's)."""
        return self._cache.recording_builds()

    def close(self):
        """Frees the session; the translator cannot translate afterwards."""
        self._session.close()

    def tokenize(self, text):
        """Source text -> its list of SentencePiece ids (no begin or end token)."""
        return self._tokenizer.encode_source(text)

    def detokenize(self, ids):
        """Target ids -> text, up to the first end token."""
        return self._tokenizer.decode_target(ids)

    def _ids_of(self, name, texts, source=True):
        """A list of strings -> their ids (sources: non-empty); ValueError names a bad one."""
        if isinstance(texts, str):
            raise ValueError("%s must be a list of strings, got one string "
                             "(wrap a single sentence in a list)" % name)
        token_ids = []
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValueError("%s[%d] must be a string, got %s"
                                 % (name, index, type(text).__name__))
            token_ids.append(self.tokenize(text) if source else
                             self._tokenizer.encode_target(text))
            if source and not token_ids[-1]:
                raise ValueError("%s[%d] is empty (no source tokens)" % (name, index))
        return token_ids

    def resolve_options(self, decoder, options=None):
        """Every decoding option's value for `decoder` ("score": for `score`), `options` (name
        -> value; None: the default) over the config (decode/options.py's `resolve`).
        ValueError names the first bad one; a SavedModel serves the config's options only."""
        resolved = resolve(decoder, options, self.config["decode"],
                           self.config["data"]["max_target_length"])
        changed = [name for name in OPTIONS if resolved[name] != self.config["decode"][name]]
        if self._exported and changed:
            raise ValueError("the exported SavedModel serves the config's decoding options "
                             "only (a checkpoint serves others), got %s %s"
                             % (changed[0], shown(resolved[changed[0]])))
        return resolved

    def check_options(self, decoder, beam_width=None, n_best=1, options=None):
        """The width to decode with (1 for greedy and exact, num_samples for sample).

        decoder: one of `decoders`; beam_width: one of `beam_widths` (checked for greedy too),
        or None: the default (sample and exact take none); n_best: 1..width; options: as
        `resolve_options`. ValueError names the first bad one, its allowed values and the value.
        """
        if decoder not in self.decoders:
            raise ValueError("decoder must be one of %s, got %s"
                             % (", ".join(self.decoders), shown(decoder)))
        resolved = self.resolve_options(decoder, options)
        if decoder in ("sample", "exact") and beam_width is not None:
            raise ValueError("beam_width is not an option of the %s decoder (%s)" % (
                decoder, "num_samples sets how many translations it draws" if decoder == "sample"
                else "it finds the one best translation, starting from the while_loop search "
                     "at decode.beam_width %d" % self.default_beam_width))
        if beam_width is None:
            beam_width = self.default_beam_width
        elif self._exported and is_int(beam_width) and beam_width != self.default_beam_width:
            raise ValueError("the exported SavedModel serves only the while_loop decoder at "
                             "beam_width %d (a checkpoint serves the others), got beam_width %s"
                             % (self.default_beam_width, shown(beam_width)))
        elif not is_int(beam_width) or beam_width not in self.beam_widths:
            raise ValueError("beam_width must be an integer in %d..%d, got %s"
                             % (self.beam_widths[0], self.beam_widths[-1], shown(beam_width)))
        width = {"greedy": 1, "sample": resolved["num_samples"], "exact": 1}.get(decoder,
                                                                               beam_width)
        if not is_int(n_best) or not 1 <= n_best <= width:
            raise ValueError("n_best must be an integer in 1..%d (the %s), got %s" % (
                width, {"greedy": "beam width; greedy decoding keeps one hypothesis",
                        "sample": "number of samples",
                        "exact": "exact search finds the one best translation"}.get(
                            decoder, "beam width"), shown(n_best)))
        return int(width)

    def translate(self, texts, decoder="while_loop", beam_width=None, n_best=1, trace=False,
                  options=None):
        """A list of strings -> a `Translation` each, in order; decoder, beam_width, n_best,
        options: as `check_options` (fewer hypotheses only where fewer are possible)."""
        return self.translate_tokens(self._ids_of("texts", texts), decoder, beam_width, n_best,
                                     trace, options)

    def translate_tokens(self, token_ids, decoder="while_loop", beam_width=None, n_best=1,
                         trace=False, options=None):
        """`translate` for lists of source ids (from `tokenize`), each non-empty."""
        width = self.check_options(decoder, beam_width, n_best, options)
        translations = []
        for ids, (result, sentence_trace) in zip(
                token_ids, self._search(token_ids, decoder, width, trace, options)):
            hypotheses = [Hypothesis(self.detokenize(target_ids), score) for target_ids, score
                          in zip(result.ids[:n_best], result.scores[:n_best])]
            translations.append(Translation(hypotheses[0].text, hypotheses[0].score, hypotheses,
                                            self._tokenizer.is_unfamiliar(ids), sentence_trace,
                                            result.proven, result.expansions))
        return translations

    def search(self, token_ids, decoder="while_loop", beam_width=None, options=None):
        """Tokenized sentences (each non-empty) -> a `SearchResult` each, in input order."""
        width = self.check_options(decoder, beam_width, options=options)
        return [result for result, _ in self._search(token_ids, decoder, width, False, options)]

    def _search(self, token_ids, decoder, width, trace, options):
        """`search` with checked options: a list of (SearchResult, trace or None)."""
        if trace and not self.can_trace:
            raise ValueError("the exported SavedModel returns no trace (a checkpoint does)")
        if trace and decoder in ("sample", "exact"):
            raise ValueError("trace: the %s; trace a beam search or greedy" % (
                "sample decoder draws, it does not search" if decoder == "sample"
                else "exact decoder keeps no beams to trace"))
        for index, ids in enumerate(token_ids):
            if not len(ids):
                raise ValueError("sentence %d has no source tokens" % index)
        options = self.resolve_options(decoder, options)

        def run(batch):
            sentences = [token_ids[index] for index in batch]
            if decoder == "exact":
                return [(SearchResult([found.ids], [found.score], found.proven, found.expansions),
                         None) for found in self._run_exact(sentences, options)]
            outputs = self._run(decoder, width, sentences, trace, options)
            return [(search_result(*(output[row] for output in outputs[:3])),
                     sentence_trace(outputs[3], row, sentence,
                                    *(output[row] for output in outputs[:3]), self._tokenizer)
                     if trace else None) for row, sentence in enumerate(sentences)]
        # The unrolled search builds a graph per length: smaller batches would build more.
        return self._in_batches(token_ids, run, split=decoder != "unrolled")

    def _in_batches(self, token_ids, run, split=True):
        """decode/batching.py's `in_batches` of `run` over `token_ids`, `concurrent_batches` at
        once on threads that record into the caller's `recording_builds`; `split`: a call too
        small to give every thread a full batch is split evenly over them."""
        batch_size = self.config["decode"]["batch_size"]
        if split:
            batch_size = call_batch_size(len(token_ids), batch_size, self._concurrent_batches)
        return in_batches([len(ids) for ids in token_ids], self._cache.recorded_here(run),
                          batch_size, self._concurrent_batches)

    def _feeds(self, sentences, options):
        """The feeds of a batch of source id lists and of the fed decoding options."""
        feeds = dict(zip((self._source_ids, self._source_length), pad_batch(sentences)))
        feeds.update((tensor, options[name]) for name, tensor in self._fed_options.items())
        return feeds

    def _run(self, decoder, beam_width, sentences, trace, options):
        """Source id lists -> ids [batch, K, time], scores [batch, K], lengths [batch, K] (and
        the trace dict), under resolved options."""
        fetches = self._exported
        if not fetches:
            unrolled_length = (unrolled_length_bucket(max(map(len, sentences)),
                                                      self.config["decode"])
                               if decoder == "unrolled" else None)
            key = (decoder, beam_width, unrolled_length, trace, graph_shape(options))
            fetches = self._fetches(key, lambda graph_options: search_encoded(
                self._model, self._encoded, self._source_length, self.config["decode"], *key[:4],
                options=graph_options))
        return self._session.run(fetches, self._feeds(sentences, options))

    def _run_exact(self, sentences, options):
        """The exact search of a batch (decode/exact.py), from the while_loop search's best at
        the default beam width: an `ExactResult` per sentence."""
        beams = self._run("while_loop", self.default_beam_width, sentences, False, options)
        encoded = self._session.run(self._encoded, self._feeds(sentences, options))
        inputs, outputs = self._fetches(
            ("exact", None, None, False, graph_shape(options)._replace(kind=None)),
            lambda graph_options: expansion_step(self._model, self._encoded,
                                                 fields_of(Scoring, graph_options), EOS_ID))

        def expand(rows, states, last_ids, prefixes):
            width = max(len(prefix) for prefix in prefixes)
            padded = np.full([len(prefixes), width], -1, np.int32)  # -1 in front: no piece
            for row, prefix in enumerate(prefixes):
                padded[row, width - len(prefix):] = prefix
            feeds = dict(zip(self._encoded[:3], encoded[:3]))  # memory, keys, mask
            feeds.update({inputs["sentences"]: rows, inputs["last_ids"]: last_ids,
                          inputs["prefixes"]: padded,
                          inputs["prefix_lengths"]: [len(prefix) for prefix in prefixes],
                          self._fed_options["min_length"]: options["min_length"]})
            feeds.update(zip(tf.nest.flatten(inputs["states"]), map(np.stack, zip(*states))))
            found = self._session.run(outputs, feeds)  # a state: a tuple of its flattened rows
            return (list(zip(*tf.nest.flatten(found["states"]))), found["log_probs"],
                    found["end_log_probs"])

        best = [search_result(*beam) for beam in zip(*beams)]
        return exact_search(
            expand, list(zip(*tf.nest.flatten(encoded.initial_state))),
            [output_length_limit(len(sentence), self.config["decode"]) for sentence in sentences],
            [(tuple(result.ids[0]), result.scores[0]) if result.ids else None for result in best],
            fields_of(Scoring, options), BOS_ID, EOS_ID, options["max_expansions"],
            EXACT_ROWS_PER_CALL)

    def _fetches(self, key, build):
        """The fetches of graph `key` (decoder, width, unrolled_length, trace, GraphShape), built
        by `build(options)` on first use (options: `search_encoded`'s for the key)."""
        def build_graph():
            options = graph_options(self._fed_options, key[4])
            if key[0] == "sample":
                options["sentence_keys"] = sentence_keys(self._source_ids, self._source_length)
            return build(options)
        return self._cache.fetches(key, build_graph)

    def score(self, sources, targets, options=None):
        """The model's scores of given translations (DESIGN.md "Scoring a translation").

        Args:
          sources, targets: lists of strings, pairwise (a target may be empty); options:
            length_penalty, length_penalty_kind, coverage_penalty (None: the config's).
        Returns:
          A dict per pair: score, log_prob, length (end token counted), pieces [{piece,
          log_prob}].
        """
        if len(sources) != len(targets):
            raise ValueError("%d sources but %d targets: give one target per source"
                             % (len(sources), len(targets)))
        return self.score_tokens(self._ids_of("sources", sources),
                                 self._ids_of("targets", targets, source=False), options)

    def score_tokens(self, source_ids, target_ids, options=None):
        """`score` for lists of ids: sources non-empty, targets without the end token."""
        if self._exported:
            raise ValueError("scoring needs a checkpoint (the exported SavedModel only searches)")
        options = self.resolve_options("score", options)
        shape = graph_shape(options)._replace(ngram=0, min_length=False)
        fetches = self._fetches(("score", None, None, False, shape), lambda graph_options: (
            score_encoded(self._model, self._encoded, self._target_ids, self._target_length,
                          fields_of(Scoring, graph_options))))

        def run(batch):
            targets = [list(target_ids[index]) + [EOS_ID] for index in batch]
            feeds = self._feeds([source_ids[index] for index in batch], options)
            feeds.update(zip((self._target_ids, self._target_length), pad_batch(targets)))
            piece_log_probs, log_probs, scores = self._session.run(fetches, feeds)
            return [{"score": float(scores[row]), "log_prob": float(log_probs[row]),
                     "length": len(target), "pieces": [
                         {"piece": piece, "log_prob": float(log_prob)} for piece, log_prob
                         in zip(self._tokenizer.target_pieces(target), piece_log_probs[row])]}
                    for row, target in enumerate(targets)]
        return self._in_batches(source_ids, run)

    def warm_up(self, decoders=None, beam_widths=None, max_source_length=None):
        """Builds the graphs of `decoders` (None: all) at `beam_widths` (None: the default;
        sample and exact: theirs) and runs each once; "unrolled" gets every length bucket of
        sources up to `max_source_length` tokens (None: data.max_source_length). Returns the
        new `Variant`s."""
        max_source_length = max_source_length or self.config["data"]["max_source_length"]
        already_built = len(self.variants)
        for decoder in decoders or self.decoders:
            source_lengths = sorted({  # "unrolled": the shortest source of each length bucket
                unrolled_length_bucket(length, self.config["decode"]): length
                for length in range(max_source_length, 0, -1)}.values()) if (
                    decoder == "unrolled") else [1]
            options = {"max_expansions": 1} if decoder == "exact" else None
            for width in sorted({self.check_options(decoder, width, options=options) for width in (
                    beam_widths if beam_widths and decoder not in ("sample", "exact") else [None])}):
                for length in source_lengths:
                    self._search([[UNK_ID] * length], decoder, width, False, options)
        return self.variants[already_built:]
