"""Translation with a trained model: loaded once, then any number of batches.

From a checkpoint each decoder graph (decode/graphs.py) is built on first use into one graph
and session (decode/graph_cache.py); a SavedModel serves the search it was exported with.
"""

import functools
import os

import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.core.protobuf import rewriter_config_pb2

from data_pipeline.tokenizer import BOS_ID, EOS_ID, UNK_ID, Tokenizer
from decode.batching import call_batch_size, in_batches
from decode.ensemble import build_model, load_configs
from decode.exact import exact_search, expansion_step
from decode.graph_cache import GraphCache
from decode.graphs import (Hypothesis, SearchResult, Translation, fields_of, pad_batch,
                           score_encoded, search_encoded, search_result, sentence_trace,
                           unrolled_length_bucket)
from decode.mbr import mbr_fields, rerank
from decode.pieces import END_PIECE, Pieces
from decode.request import DECODERS, DecodeRequest, Served, decode_request, score_request
from decode.sampling import sentence_keys
from decode.scoring import Scoring
from seq2seq.config import load_config
from seq2seq.decoding_options import OPTIONS, limits, uses
from seq2seq.model_dir import SERVING_SIGNATURE


class Translator(Pieces):
    """Translates with a model, or an ensemble of models; thread-safe (builds take a lock). Its
    base class (decode/pieces.py) reads what it is handed as ids.

    Attributes:
      config, model_name, step: the first model's; members: {"name", "step"} of each model;
      source_vocab_size, target_vocab_size, default_beam_width, protected_tokens (0: none);
      decoders: all of DECODERS from a checkpoint, ("while_loop",) from a SavedModel;
      beam_widths: a range, 1..decode.max_beam_width (a SavedModel: its one width);
      can_trace: False for a SavedModel, whose graph returns no trace;
      served: all of these as the context a DecodeRequest is validated in (decode/request.py).
    """

    def __init__(self, model_dir, export_dir=None, checkpoint=None, hparams=""):
        """Loads the config, tokenizer, graph, session and weights.

        Args:
          model_dir: a directory written by train.py, or a list of them (an ensemble).
          export_dir: a SavedModel to serve; or checkpoint: a prefix (a list: one per model_dir).
          hparams: "section.key=value,..." config overrides (decode's thread keys override the
            defaults, never config.yaml).
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
        super().__init__(Tokenizer.load(self._model_dirs[0]))
        self.source_vocab_size = self._tokenizer.source_vocab_size
        self.target_vocab_size = self._tokenizer.target_vocab_size
        self.protected_tokens = self._tokenizer.protected_tokens
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
        self.served = Served(self.config["decode"], limits(
            self.config["decode"], self.config["data"]["max_target_length"]), self.decoders,
            self.beam_widths, self.default_beam_width, self.can_trace, bool(self._exported))

    def _load_checkpoint(self, checkpoint):
        """Builds the encoder and restores its variables; the decoders come on demand."""
        self.decoders, self.can_trace, self._exported = DECODERS, True, None
        self.default_beam_width = self.config["decode"]["beam_width"]
        self.beam_widths = range(1, self.config["decode"]["max_beam_width"] + 1)
        with self._graph.as_default():
            with tf.name_scope("inputs"):
                self._source_ids = tf.placeholder(tf.int32, [None, None], name="source_ids")
                self._source_length = tf.placeholder(tf.int32, [None], name="source_length")
                self._target_ids = tf.placeholder(tf.int32, [None, None], name="target_ids")
                self._target_length = tf.placeholder(tf.int32, [None], name="target_length")
                self._forced_inputs = {  # what a batch's sentences may force: search_encoded's Args
                    name: tf.placeholder(tf.int32, [None] * rank, name=name) for name, rank in
                    (("target_prefix", 2), ("constraints", 3), ("protected_ids", 2))}
                self._max_lengths = tf.placeholder(tf.int32, [None], name="max_lengths")
            with tf.name_scope("options"):
                self._fed_options = {name: tf.placeholder(uses(name).fed, [], name=name)
                                     for name in OPTIONS if uses(name).fed}
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

    def request(self, decoder="while_loop", beam_width=None, n_best=1, trace=False, options=None,
                target_prefixes=None, sentences=1, constraints=None):
        """The DecodeRequest of these arguments (decode/request.py's fields; target_prefixes and
        constraints: None, or one per of `sentences` as `prefix_ids` and a list of
        `constraint_ids` take them), or `decoder` itself if it is one. ValueError names the first
        bad one, its allowed values and the value."""
        if isinstance(decoder, DecodeRequest):
            return decoder
        return decode_request(self.served, dict(
            options or {}, decoder=decoder, beam_width=beam_width, n_best=n_best, trace=trace,
            target_prefix=self._prefixes(target_prefixes, sentences),
            constraints=self._constraints(constraints, sentences)))

    def translate(self, texts, *request, **fields):
        """A list of strings -> a `Translation` each, in order, as the DecodeRequest `request` (or
        one built of these arguments by `request`) asks; fewer hypotheses only where fewer exist.
        Each text's placeholders and tags come back as written."""
        return self.translate_tokens(self._texts("texts", texts), *request, originals=[
            self.placeholders(text) for text in texts], **fields)

    def translate_tokens(self, token_ids, *request, originals=None, **fields):
        """`translate` for lists of source ids (from `tokenize`), each non-empty; originals:
        None, or per sentence its `placeholders`, put back in place of the protected tokens."""
        request = self.request(*request, sentences=len(token_ids), **fields)
        originals = originals or [()] * len(token_ids)
        translations = []
        for ids, (result, found_trace), placeholders in zip(
                token_ids, self._search(token_ids, request, originals), originals):
            hypotheses = [  # every search ends each hypothesis, at its length limit if not before
                Hypothesis(self._text(target_ids, placeholders), score,
                           self._tokenizer.target_pieces(target_ids) + [END_PIECE])
                for target_ids, score in zip(result.ids[:request.n_best],
                                             result.scores[:request.n_best])]
            translations.append(Translation(
                hypotheses[0].text, hypotheses[0].score, hypotheses,
                self._tokenizer.is_unfamiliar(ids), found_trace, result.proven,
                result.expansions, hypotheses[0].pieces, **mbr_fields(result.mbr)))
        return translations

    def search(self, token_ids, decoder="while_loop", beam_width=None, options=None):
        """Source id lists -> a `SearchResult` each (decoder: a DecodeRequest, or `request`'s)."""
        request = self.request(decoder, beam_width, options=options)
        return [result for result, _ in self._search(token_ids, request)]

    def _text(self, ids, originals=()):
        """Target ids -> text, a protected token as `originals` says (if the model has them)."""
        text = self.detokenize(ids)
        return self._tokenizer.restore(text, originals) if self.protected_tokens else text

    def _search(self, token_ids, request, originals=None):
        """`search` under `request` (MBR's texts: `_text`): (SearchResult, trace or None) each."""
        for index, ids in enumerate(token_ids):
            if not len(ids):
                raise ValueError("sentence %d has no source tokens" % index)
        decoder, originals = request.decoder, originals or [()] * len(token_ids)

        def run(batch):
            sentences = [token_ids[index] for index in batch]
            call = request.for_sentences(batch)
            if decoder == "exact":
                return [(SearchResult([found.ids], [found.score], found.proven, found.expansions),
                         None) for found in self._run_exact(sentences, call)]
            if decoder == "mbr":  # reranked here, outside any lock
                samples = self._results("sample", request.num_samples, sentences, call)
                candidates = samples if request.draws_samples else self._results(
                    "while_loop", request.width, sentences, call)
                return [(rerank(*pair, functools.partial(self._text, originals=originals[index]),
                                request.mbr_utility), None)
                        for index, pair in zip(batch, zip(candidates, samples))]
            outputs = self._run(decoder, request.width, sentences, call)
            return [(search_result(*beam), sentence_trace(outputs[3], row, sentence, *beam,
                                                          self._tokenizer)
                     if request.trace else None)
                    for row, (sentence, beam) in enumerate(zip(sentences, zip(*outputs[:3])))]
        # The unrolled search builds a graph per length: smaller batches would build more.
        return self._in_batches(token_ids, run, split=decoder != "unrolled")

    def _in_batches(self, token_ids, run, split=True):
        """decode/batching.py's `in_batches`, recording into the caller's `recording_builds`."""
        batch_size = self.config["decode"]["batch_size"]
        if split:
            batch_size = call_batch_size(len(token_ids), batch_size, self._concurrent_batches)
        return in_batches([len(ids) for ids in token_ids], self._cache.recorded_here(run),
                          batch_size, self._concurrent_batches)

    def _feeds(self, sentences, request):
        """The feeds of a batch of source id lists and of the request's fed decoding options."""
        feeds = dict(zip((self._source_ids, self._source_length), pad_batch(sentences)))
        values = request.feeds()
        feeds.update((placeholder, values[name])  # a SavedModel has none
                     for name, placeholder in self._fed_options.items())
        return feeds

    def _results(self, decoder, width, sentences, request):
        """`_run`'s outputs as a SearchResult per sentence."""
        return [search_result(*beam) for beam in zip(*self._run(
            decoder, width, sentences, request)[:3])]

    def _run(self, decoder, beam_width, sentences, request):
        """Source id lists -> ids [b, K, t], scores [b, K], lengths [b, K] (and the trace dict)
        of `decoder` at `beam_width` under `request` (made for these sentences)."""
        feeds = self._feeds(sentences, request)
        if self._exported:
            return self._session.run(self._exported, feeds)
        forced, limits = self._forced(sentences, request, self.config["decode"])
        feeds.update((self._forced_inputs[name], values) for name, values in forced.items())
        feeds[self._max_lengths] = limits
        unrolled_length = unrolled_length_bucket(
            max(map(len, sentences)), self.config["decode"], max(limits)) if (
            decoder == "unrolled") else None
        key = (decoder, beam_width, unrolled_length, request.trace,
               tuple(sorted(forced)) + request.graph_key())

        def build():
            options = request.graph_options(self._fed_options)
            if decoder == "sample":
                options["sentence_keys"] = sentence_keys(self._source_ids, self._source_length)
            return search_encoded(
                self._model, self._encoded, self._source_length, self.config["decode"], decoder,
                beam_width, unrolled_length, request.trace, options, max_lengths=self._max_lengths,
                **{name: self._forced_inputs[name] for name in forced})
        return self._session.run(self._cache.fetches(key, build), feeds)

    def _run_exact(self, sentences, request):
        """decode/exact.py's search of a batch (prefixes forced as the beam searches force them),
        from the while_loop search's best at the default beam width: an `ExactResult` each."""
        prefixes = request.target_prefix or [()] * len(sentences)
        best = self._results("while_loop", self.default_beam_width, sentences, request)
        encoded = self._session.run(self._encoded, self._feeds(sentences, request))
        inputs, outputs = self._cache.fetches(
            ("exact", None, None, False, request.graph_key(("no_repeat_ngram_size", "min_length"))),
            lambda: expansion_step(self._model, self._encoded, fields_of(
                Scoring, request.graph_options(self._fed_options)), EOS_ID))

        def expand(rows, states, last_ids, hypotheses):
            padded = pad_batch([ids[::-1] for ids in hypotheses], -1)[0][:, ::-1]  # -1 first
            feeds = dict(zip(self._encoded[:3], encoded[:3]))  # memory, keys, mask
            feeds.update({inputs["sentences"]: rows, inputs["last_ids"]: last_ids,
                          inputs["prefixes"]: padded,
                          inputs["prefix_lengths"]: [len(ids) for ids in hypotheses],
                          inputs["forced_ids"]: [
                              prefixes[row][len(ids)] if len(ids) < len(prefixes[row]) else -1
                              for row, ids in zip(rows, hypotheses)],
                          self._fed_options["min_length"]: request.min_length})
            feeds.update(zip(tf.nest.flatten(inputs["states"]), map(np.stack, zip(*states))))
            found = self._session.run(outputs, feeds)  # a state: a tuple of its flattened rows
            return (list(zip(*tf.nest.flatten(found["states"]))), found["log_probs"],
                    found["end_log_probs"])

        return exact_search(
            expand, list(zip(*tf.nest.flatten(encoded.initial_state))),
            self._forced(sentences, request, self.config["decode"])[1],
            [(tuple(result.ids[0]), result.scores[0]) if result.ids else None for result in best],
            fields_of(Scoring, dict(request)), BOS_ID, EOS_ID, request.max_expansions)

    def score_request(self, options=None):
        """decode/request.py's `score_request` of `options` for this model."""
        return score_request(self.served, options)

    def score(self, sources, targets, options=None, target_pieces=None):
        """The model's scores of given translations (docs/API.md "HTTP API", POST /score).

        Args:
          sources, targets: lists of strings, pairwise (a target may be empty).
          options: length_penalty, length_penalty_kind, coverage_penalty (None: the config's),
            or the DecodeRequest of `score_request`.
          target_pieces: None, or per pair the target pieces to score in place of its target
            text's (a Translation's `pieces`; None: the text's; targets may be None if none is).
        Returns:
          A dict per pair: score, log_prob, length (end token counted), pieces [{piece,
          log_prob}].
        """
        request = self.score_request(options)
        return self.score_tokens(self._texts("sources", sources), self._targets(
            len(sources), targets, target_pieces), request)

    def score_tokens(self, source_ids, target_ids, options=None):
        """`score` for lists of ids: sources non-empty, targets without the end token."""
        request = self.score_request(options)
        fetches = self._cache.fetches(
            ("score", None, None, False, request.graph_key(("length_penalty_kind",
                                                             "coverage_penalty"))),
            lambda: score_encoded(self._model, self._encoded, self._target_ids,
                                  self._target_length, fields_of(
                                      Scoring, request.graph_options(self._fed_options))))

        def run(batch):
            targets = [list(target_ids[index]) + [EOS_ID] for index in batch]
            feeds = self._feeds([source_ids[index] for index in batch], request)
            feeds.update(zip((self._target_ids, self._target_length), pad_batch(targets)))
            piece_log_probs, log_probs, scores = self._session.run(fetches, feeds)
            return [{"score": float(scores[row]), "log_prob": float(log_probs[row]),
                     "length": len(target), "pieces": [
                         {"piece": piece, "log_prob": float(log_prob)} for piece, log_prob
                         in zip(self._tokenizer.target_pieces(target), piece_log_probs[row])]}
                    for row, target in enumerate(targets)]
        return self._in_batches(source_ids, run)

    def warm_up(self, decoders=None, beam_widths=None, max_source_length=None):
        """Builds and runs once the graphs of `decoders` (None: all) at `beam_widths` (None: the
        default; sample, exact, mbr: theirs), "unrolled" at every length bucket up to
        `max_source_length` tokens (None: data.max_source_length); returns the new `Variant`s."""
        max_source_length = max_source_length or self.config["data"]["max_source_length"]
        already_built = len(self.variants)
        for decoder in decoders or self.decoders:
            source_lengths = [1]
            if decoder == "unrolled":  # the shortest source of each length bucket
                shortest = {unrolled_length_bucket(length, self.config["decode"]): length
                            for length in range(max_source_length, 0, -1)}
                source_lengths = sorted(shortest.values())
            options = {"max_expansions": 1} if decoder == "exact" else None
            widths = [None] if decoder in ("sample", "exact", "mbr") else beam_widths or [None]
            requests = {request.width: request for request in (
                self.request(decoder, width, options=options) for width in widths)}
            for _, request in sorted(requests.items()):
                for length in source_lengths:
                    self._search([[UNK_ID] * length], request)
        return self.variants[already_built:]
