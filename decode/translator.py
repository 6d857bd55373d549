"""Translation with a trained model: loaded once, then any number of batches.

From a checkpoint every decoder graph is built on first use into one graph run
by one session; a SavedModel serves the search it was exported with. Each
sentence has its own length limit, so its translation never depends on its
batch. The reasons and timings behind the choices: docs/DECODING-NOTES.md.
"""

import collections
import concurrent.futures
import contextlib
import json
import numbers
import os
import threading
import time

import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.core.protobuf import rewriter_config_pb2

from data_pipeline.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Tokenizer
from decode import DECODERS, greedy_search, rnn_beam_search, while_loop_beam_search
from decode.exact import exact_search, expansion_step
from decode.options import OPTIONS, SCORING_OPTIONS, resolve
from decode.score import SCORE_OPTIONS, score_encoded
from decode.sampling import Sampling, sample_search, sentence_keys
from decode.scoring import Scoring, tracks_coverage
from seq2seq.config import load_config
from seq2seq.model import Seq2SeqModel

UNROLLED_LENGTH_STEP = 8  # the unrolled search is built for lengths rounded up to a multiple
EXACT_ROWS_PER_CALL = 512  # prefixes per model call of the exact search (docs/BENCHMARKS.md)
SERVING_SIGNATURE = tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY  # of train.py's exports
BEST_DIR, PREVIOUS_SUFFIX = "best", ".old"  # MODEL_DIR/best/: the best-BLEU checkpoint

Translation = collections.namedtuple(
    "Translation", "text score n_best unfamiliar trace proven expansions",
    defaults=(False, None, None, None))
Translation.__doc__ = """The best hypothesis's text and score, the n-best `Hypothesis`es, whether
the source is unlike the training data, the DESIGN.md search trace (or None), and for the exact
decoder whether the best is proven and how many prefixes it expanded (else None)."""
Hypothesis = collections.namedtuple("Hypothesis", "text score")
# One sentence's beam, best first, without the impossible (-inf) hypotheses: target id
# lists (end token left out) and scores; the exact decoder's proven and expansions.
SearchResult = collections.namedtuple("SearchResult", "ids scores proven expansions",
                                      defaults=(None, None))
# A decoder graph built from a checkpoint (unrolled_length None but for "unrolled").
Variant = collections.namedtuple(
    "Variant", "decoder beam_width unrolled_length trace shape build_seconds num_ops")
# The decoding options that shape a graph (the others are fed to it): length_penalty_kind,
# no_repeat_ngram_size, and whether the coverage penalty and minimum length are on.
GraphShape = collections.namedtuple("GraphShape", "kind ngram coverage min_length")
FED_OPTIONS = {"length_penalty": np.float32, "coverage_penalty": np.float32,
               "min_length": np.int32, "temperature": np.float32, "top_k": np.int32,
               "top_p": np.float32, "seed": np.int64}


def is_int(value):
    """True for a Python or NumPy integer, False for a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def shown(value, limit=40):
    """A value as an error message shows it: its JSON (or repr) cut to `limit` characters;
    an integer of more than 15 digits described, not written out."""
    if is_int(value):
        return "an integer of more than 15 digits" if abs(value) >= 10 ** 15 else str(int(value))
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def output_length_limit(source_length, decode_params):
    """The most target tokens (end token included) for a source of `source_length` tokens:
    ceil(max_length_ratio * source_length) + max_length_extra, in float32 as in the graph."""
    scaled = np.float32(decode_params["max_length_ratio"]) * np.float32(source_length)
    return int(np.ceil(scaled)) + decode_params["max_length_extra"]


def output_length_limits(source_length, decode_params):
    """`output_length_limit` in the graph: [batch] int32 source lengths -> [batch] int32."""
    with tf.name_scope("output_length_limits"):
        scaled = tf.ceil(decode_params["max_length_ratio"] * tf.cast(source_length, tf.float32))
        return tf.cast(scaled, tf.int32) + decode_params["max_length_extra"]


def unrolled_length_bucket(max_source_length, decode_params):
    """The unrolled search's steps for a batch whose longest source has this many tokens."""
    length = output_length_limit(max_source_length, decode_params)
    return -(-length // UNROLLED_LENGTH_STEP) * UNROLLED_LENGTH_STEP


def search_encoded(model, encoder_output, source_length, decode_params, decoder, beam_width,
                   unrolled_length=None, trace=False, options=None):
    """The n-best translations of an encoded batch, each within its sentence's length limit.

    Args:
      model, encoder_output: a `Seq2SeqModel` and its `encode(..., training=False)`.
      source_length: [batch] int32; decode_params: the config's "decode" dict.
      decoder: one of DECODERS but "exact" (`Translator._run_exact`); beam_width: K (1 for
        greedy, the samples for sample).
      unrolled_length: the unrolled search's steps (`unrolled_length_bucket`), else None.
      trace: also return the search's trace dict, with the attention (decode/beam_search.py).
      options: decoding options (decode/options.py) over decode_params': values or scalar
        tensors, but length_penalty_kind and no_repeat_ngram_size, which shape the graph;
        the sample decoder also needs "sentence_keys" ([batch] int64, decode/sampling.py).
    Returns:
      ids [batch, K, time] int32, scores [batch, K] float32 best first, lengths
      [batch, K] int32 counting the end token, and with `trace` the trace dict.
    """
    params = dict(decode_params, **(options or {}))
    scoring = Scoring(*(params[name] for name in SCORING_OPTIONS))
    coverage = tracks_coverage(scoring)
    scope = "%s_beam%d" % (decoder, beam_width) + (
        "_len%d" % unrolled_length if unrolled_length else "") + ("_trace" if trace else "")
    with tf.name_scope(scope):  # e.g. unrolled_beam4_len24
        limits = output_length_limits(source_length, decode_params)          # [batch]
        update_fn, initial_state = model.beam_update_fn(encoder_output, beam_width,
                                                        with_attention=trace or coverage)
        common = dict(max_lengths=limits, source_mask=encoder_output.mask if coverage else None)
        if decoder == "unrolled":
            return rnn_beam_search(update_fn, initial_state, unrolled_length, beam_width,
                                   BOS_ID, EOS_ID, scoring, trace=trace, **common)
        max_length = tf.reduce_max(limits, name="max_output_length")  # every sentence's bound
        if decoder == "sample":
            sampling = Sampling(*(params[name] for name in Sampling._fields))
            return sample_search(update_fn, initial_state, max_length, beam_width, BOS_ID, EOS_ID,
                                 scoring, sampling, params["sentence_keys"], **common)
        if decoder == "greedy":
            return greedy_search(update_fn, initial_state, max_length, BOS_ID, EOS_ID, scoring,
                                 trace=trace, **common)
        return while_loop_beam_search(update_fn, initial_state, max_length, beam_width,
                                      BOS_ID, EOS_ID, scoring, trace=trace, **common)


def best_checkpoint_dir(model_dir):
    """MODEL_DIR/best, else MODEL_DIR/best.old (an update died between its renames), else None."""
    best_dir = os.path.join(model_dir, BEST_DIR)
    return next((directory for directory in (best_dir, best_dir + PREVIOUS_SUFFIX)
                 if os.path.isdir(directory)), None)


def find_checkpoint(model_dir):
    """The checkpoint a model directory serves: its best-BLEU one, else its latest."""
    best_dir = best_checkpoint_dir(model_dir)
    path = (tf.train.latest_checkpoint(best_dir) if best_dir else None) or (
        tf.train.latest_checkpoint(model_dir))
    if not path:
        raise ValueError("%s holds no checkpoint: train a model into it first "
                         "(python train.py --model_dir %s)" % (model_dir, model_dir))
    return path


def length_sorted_batches(lengths, batch_size):
    """Lists of at most `batch_size` indices into `lengths`, shortest first, ties in order."""
    order = sorted(range(len(lengths)), key=lambda index: lengths[index])
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def pad_batch(sequences):
    """Lists of ids -> (ids [batch, max_len] int32 padded with PAD_ID, lengths [batch] int32)."""
    lengths = np.array([len(sequence) for sequence in sequences], np.int32)
    ids = np.full([len(sequences), lengths.max()], PAD_ID, np.int32)
    for row, sequence in enumerate(sequences):
        ids[row, :len(sequence)] = sequence
    return ids, lengths


class Translator:
    """Translates with a model directory's model; thread-safe (graphs are built under a lock).

    Attributes:
      config, model_name, step (of the checkpoint or SavedModel),
      source_vocab_size, target_vocab_size;
      decoders: all of DECODERS from a checkpoint, ("while_loop",) from a SavedModel;
      beam_widths: a range, 1..decode.max_beam_width (a SavedModel: its one width);
      can_trace: False for a SavedModel, whose graph returns no trace.
    """

    def __init__(self, model_dir, export_dir=None, checkpoint=None, hparams=""):
        """Loads the config, tokenizer, graph, session and weights.

        Args:
          model_dir: a directory written by train.py.
          export_dir: a SavedModel to serve instead of a checkpoint; or checkpoint:
            a checkpoint path prefix instead of `find_checkpoint(model_dir)`.
          hparams: "section.key=value,..." overrides of the model directory's config.
            decode.concurrent_batches and decode.*_threads come from the defaults and hparams
            only, never from config.yaml: they fit the machine that decodes, not the model.
        Raises:
          ValueError: not a model directory, no checkpoint, or one that does not fit.
        """
        config_path = os.path.join(model_dir, "config.yaml")
        if not os.path.isfile(config_path):
            raise ValueError("%s has no config.yaml: is it a model directory written by "
                             "train.py?" % model_dir)
        if export_dir and checkpoint:
            raise ValueError("pass export_dir or checkpoint, not both")
        self.config = load_config(config_path, hparams)
        threads = load_config(None, hparams)["decode"]
        for key in ("inter_op_threads", "intra_op_threads", "concurrent_batches"):
            self.config["decode"][key] = threads[key]
        self._concurrent_batches = threads["concurrent_batches"] or os.cpu_count() or 1
        self.model_name = self.config["name"]
        self._tokenizer = Tokenizer.load(model_dir)
        self.source_vocab_size = self._tokenizer.source_vocab_size
        self.target_vocab_size = self._tokenizer.target_vocab_size
        self._recordings = threading.local()  # .lists: this thread's recording_builds lists
        self._lock = threading.Lock()
        self._built = {}  # (decoder, width, unrolled_length, trace, GraphShape) -> (fetches, Variant)
        self._graph = tf.Graph()
        self._session = tf.Session(graph=self._graph, config=tf.ConfigProto(  # Grappler off
            inter_op_parallelism_threads=self.config["decode"]["inter_op_threads"],
            intra_op_parallelism_threads=self.config["decode"]["intra_op_threads"],
            graph_options=tf.GraphOptions(rewrite_options=rewriter_config_pb2.RewriterConfig(
                disable_meta_optimizer=True))))
        if export_dir:
            self._load_saved_model(export_dir)
        else:
            self._load_checkpoint(checkpoint or find_checkpoint(model_dir))

    def _load_checkpoint(self, checkpoint):
        """Builds the encoder and restores its variables; the decoders come on demand."""
        decode_params = self.config["decode"]
        self.decoders, self.can_trace, self._exported = DECODERS, True, None
        self.default_beam_width = decode_params["beam_width"]
        self.beam_widths = range(1, decode_params["max_beam_width"] + 1)
        self._checkpoint, self._reader = checkpoint, tf.train.load_checkpoint(checkpoint)
        self.step = int(self._reader.get_tensor(tf.GraphKeys.GLOBAL_STEP))
        self._restored = set()
        with self._graph.as_default():
            with tf.name_scope("inputs"):
                self._source_ids = tf.placeholder(tf.int32, [None, None], name="source_ids")
                self._source_length = tf.placeholder(tf.int32, [None], name="source_length")
                self._target_ids = tf.placeholder(tf.int32, [None, None], name="target_ids")
                self._target_length = tf.placeholder(tf.int32, [None], name="target_length")
            with tf.name_scope("options"):
                self._fed_options = {name: tf.placeholder_with_default(
                    dtype(decode_params[name]), [], name=name) for name, dtype in FED_OPTIONS.items()}
            self._model = Seq2SeqModel(self.config["model"], self.source_vocab_size,
                                       self.target_vocab_size)
            self._encoded = self._model.encode(self._source_ids, self._source_length,
                                               training=False)
        self._restore_new_variables()

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
        self.decoders, self.can_trace = ("while_loop",), False
        self.default_beam_width = self._exported[1].shape.as_list()[1]  # scores [batch, K]
        self.beam_widths = range(self.default_beam_width, self.default_beam_width + 1)
        self.step = int(self._session.run(tf.train.get_global_step(self._graph)))

    def _restore_new_variables(self):
        """Loads the checkpoint's values into the variables the last build created."""
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

    @property
    def variants(self):
        """The `Variant`s built so far, in build order."""
        return [variant for _, variant in list(self._built.values())]

    @contextlib.contextmanager
    def recording_builds(self):
        """Yields a list that receives the `Variant` of every graph that this thread's calls
        inside the block needed and found not yet built (built, or waited for); blocks nest."""
        built = []
        recordings = self._recordings.__dict__.setdefault("lists", [])
        recordings.append(built)
        try:
            yield built
        finally:
            recordings[:] = [recording for recording in recordings if recording is not built]

    def close(self):
        """Frees the session; the translator cannot translate afterwards."""
        self._session.close()

    def tokenize(self, text):
        """Source text -> its list of SentencePiece ids (no begin or end token)."""
        return self._tokenizer.encode_source(text)

    def detokenize(self, ids):
        """Target ids -> text, up to the first end token."""
        return self._tokenizer.decode_target(ids)

    def resolve_options(self, decoder, options=None):
        """Every decoding option's value for `decoder` (decode/options.py's `resolve`):
        `options` (name -> value, None: the default) over the config. ValueError names the
        first bad one; a SavedModel serves the default options only."""
        resolved = resolve(decoder, options or {}, self.config["decode"],
                           self.config["data"]["max_target_length"], shown)
        if self._exported:
            changed = [name for name in OPTIONS if resolved[name] != self.config["decode"][name]]
            if changed:
                raise ValueError("the exported SavedModel serves the config's decoding options "
                                 "only (a checkpoint serves others), got %s %s"
                                 % (changed[0], shown(resolved[changed[0]])))
        return resolved

    def check_options(self, decoder, beam_width=None, n_best=1, options=None):
        """Returns the width to decode with (1 for greedy and exact, num_samples for sample):
        decoder one of `decoders`, beam_width one of `beam_widths` (checked for greedy too) or
        None (the default; sample and exact take none), n_best 1..width, options as
        `resolve_options`. ValueError names the option, its values, the value cut short."""
        if decoder not in self.decoders:
            raise ValueError("decoder must be one of %s, got %s"
                             % (", ".join(self.decoders), shown(decoder)))
        resolved = self.resolve_options(decoder, options)
        if decoder == "sample" and beam_width is not None:
            raise ValueError("beam_width is not an option of the sample decoder (num_samples "
                             "sets how many translations it draws)")
        if decoder == "exact" and beam_width is not None:
            raise ValueError("beam_width is not an option of the exact decoder (it finds the one "
                             "best translation, starting from the while_loop search at "
                             "decode.beam_width %d)" % self.default_beam_width)
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

    def search(self, token_ids, decoder="while_loop", beam_width=None, options=None):
        """Tokenized sentences (each non-empty) -> a `SearchResult` each, in input order."""
        width = self.check_options(decoder, beam_width, options=options)
        return [result for result, _ in self._search(
            token_ids, decoder, width, False, self.resolve_options(decoder, options))]

    def _search(self, token_ids, decoder, beam_width, trace, options):
        """`search` with checked options: a list of (SearchResult, trace or None)."""
        if trace and not self.can_trace:
            raise ValueError("the exported SavedModel returns no trace (a checkpoint does)")
        if trace and decoder == "sample":
            raise ValueError("trace: the sample decoder draws, it does not search; trace a "
                             "beam search or greedy")
        if trace and decoder == "exact":
            raise ValueError("trace: the exact decoder keeps no beams to trace; trace a beam "
                             "search or greedy")
        for index, ids in enumerate(token_ids):
            if not len(ids):
                raise ValueError("sentence %d has no source tokens" % index)
        results = [None] * len(token_ids)
        batches = length_sorted_batches([len(ids) for ids in token_ids],
                                        self.config["decode"]["batch_size"])

        def run(batch, lists=self._recordings.__dict__.get("lists", [])):
            self._recordings.lists = lists  # the caller's recording_builds, on a pool thread
            if decoder == "exact":
                return self._run_exact(*pad_batch([token_ids[i] for i in batch]), options)
            return self._run(decoder, beam_width, *pad_batch([token_ids[i] for i in batch]),
                             trace, options)
        with concurrent.futures.ThreadPoolExecutor(self._concurrent_batches) as pool:
            runs = pool.map(run, batches) if len(batches) > 1 else map(run, batches)
            for batch, outputs in zip(batches, runs):
                if decoder == "exact":
                    for index, result in zip(batch, outputs):
                        results[index] = (SearchResult([result.ids], [result.score],
                                                       result.proven, result.expansions), None)
                    continue
                ids, scores, lengths = outputs[:3]
                for row, index in enumerate(batch):
                    results[index] = (_search_result(ids[row], scores[row], lengths[row]),
                                      self._sentence_trace(outputs[3], row, token_ids[index],
                                                           ids[row], scores[row], lengths[row])
                                      if trace else None)
        return results

    def _run(self, decoder, beam_width, source_ids, source_length, trace=False, options=None):
        """source_ids [batch, src_time], source_length [batch] -> ids [batch, K, time],
        scores [batch, K], lengths [batch, K] (and the trace dict), building on first use;
        options: resolved decoding options (None: the config's)."""
        feeds = {self._source_ids: source_ids, self._source_length: source_length}
        fetches = self._exported
        if not fetches:
            options = options or self.resolve_options(decoder)
            unrolled_length = (unrolled_length_bucket(int(source_length.max()),
                                                      self.config["decode"])
                               if decoder == "unrolled" else None)
            shape = GraphShape(options["length_penalty_kind"], options["no_repeat_ngram_size"],
                               options["coverage_penalty"] > 0, options["min_length"] > 0)
            key = (decoder, beam_width, unrolled_length, trace, shape)
            fetches = self._fetches(key, lambda: search_encoded(
                self._model, self._encoded, self._source_length, self.config["decode"], *key[:4],
                options=self._graph_options(decoder, shape)))
            feeds.update((tensor, options[name]) for name, tensor in self._fed_options.items())
        return self._session.run(fetches, feeds)

    def _run_exact(self, source_ids, source_length, options):
        """The exact search of a batch (decode/exact.py): an `ExactResult` per sentence, from
        the while_loop search's best at the default beam width."""
        ids, scores, lengths = self._run("while_loop", self.default_beam_width, source_ids,
                                         source_length, options=options)
        feeds = {self._source_ids: source_ids, self._source_length: source_length}
        encoded = self._session.run(self._encoded, feeds)
        shape = GraphShape(None, options["no_repeat_ngram_size"], False, options["min_length"] > 0)
        graph_options = self._graph_options("exact", shape)
        scoring = Scoring(*(graph_options[name] for name in SCORING_OPTIONS))
        inputs, outputs = self._fetches(("exact", None, None, False, shape), lambda: (
            expansion_step(self._model, self._encoded, scoring, EOS_ID)))

        def expand(sentences, states, last_ids, prefixes):
            width = max(len(prefix) for prefix in prefixes)
            padded = np.full([len(prefixes), width], -1, np.int32)  # -1 in front: no piece
            for row, prefix in enumerate(prefixes):
                padded[row, width - len(prefix):] = prefix
            feeds = {self._encoded.memory: encoded.memory, self._encoded.keys: encoded.keys,
                     self._encoded.mask: encoded.mask, inputs["sentences"]: sentences,
                     inputs["last_ids"]: last_ids, inputs["prefixes"]: padded,
                     inputs["prefix_lengths"]: [len(prefix) for prefix in prefixes],
                     self._fed_options["min_length"]: options["min_length"]}
            feeds.update(zip(tf.nest.flatten(inputs["states"]), map(np.stack, zip(*states))))
            found = self._session.run(outputs, feeds)  # a state: a tuple of its flattened rows
            return (list(zip(*tf.nest.flatten(found["states"]))), found["log_probs"],
                    found["end_log_probs"])

        return exact_search(
            expand, list(zip(*tf.nest.flatten(encoded.initial_state))),
            [output_length_limit(length, self.config["decode"]) for length in source_length],
            [_best_hypothesis(_search_result(ids[row], scores[row], lengths[row]))
             for row in range(len(ids))],
            Scoring(*(options[name] for name in SCORING_OPTIONS)), BOS_ID, EOS_ID,
            options["max_expansions"], EXACT_ROWS_PER_CALL)

    def _fetches(self, key, build):
        """A variant's fetches, built by `build()` on first use; a graph not yet built goes
        (once) to this thread's `recording_builds` lists, shared with the pool threads of its
        call. key: (decoder, width, unrolled_length, trace, GraphShape)."""
        built = self._built.get(key)
        if built is None:
            with self._lock:  # a variant enters _built only once built and restored
                built = self._built.get(key)
                if built is None:
                    started, start_ops = time.perf_counter(), len(self._graph.get_operations())
                    with self._graph.as_default():
                        fetches = build()
                    variant = Variant(*key, build_seconds=time.perf_counter() - started,
                                      num_ops=len(self._graph.get_operations()) - start_ops)
                    self._restore_new_variables()
                    built = self._built[key] = (fetches, variant)
                for recording in getattr(self._recordings, "lists", ()):  # under the lock: once
                    recording.extend([] if built[1] in recording else [built[1]])
        return built[0]

    def score(self, sources, targets, options=None):
        """The model's scores of given translations (DESIGN.md "Scoring a translation").

        Args:
          sources, targets: lists of strings, pairwise; a target may be empty (the end token
            alone). options: length_penalty, length_penalty_kind, coverage_penalty (None: the
            config's).
        Returns:
          A dict per pair: score, log_prob, length (end token counted), pieces [{piece,
          log_prob}].
        """
        if len(sources) != len(targets):
            raise ValueError("%d sources but %d targets: give one target per source"
                             % (len(sources), len(targets)))
        source_ids = []
        for name, texts in (("sources", sources), ("targets", targets)):
            for index, text in enumerate(texts):
                if not isinstance(text, str):
                    raise ValueError("%s[%d] must be a string, got %s"
                                     % (name, index, type(text).__name__))
        for index, text in enumerate(sources):
            source_ids.append(self.tokenize(text))
            if not source_ids[-1]:
                raise ValueError("sources[%d] is empty (no source tokens)" % index)
        return self.score_tokens(source_ids, [self._tokenizer.encode_target(text)
                                              for text in targets], options)

    def score_tokens(self, source_ids, target_ids, options=None):
        """`score` for lists of ids: sources non-empty, targets without the end token."""
        unused = sorted(set(name for name, value in (options or {}).items() if value is not None)
                        - set(SCORE_OPTIONS))
        if unused:
            raise ValueError("%s does not change a score; the scoring options are %s"
                             % (unused[0], ", ".join(SCORE_OPTIONS)))
        if self._exported:
            raise ValueError("scoring needs a checkpoint (the exported SavedModel only searches)")
        options = self.resolve_options("while_loop", options)
        shape = GraphShape(options["length_penalty_kind"], 0, options["coverage_penalty"] > 0, False)

        def build():
            graph_options = self._graph_options("score", shape)
            return score_encoded(self._model, self._encoded, self._target_ids, self._target_length,
                                 Scoring(*(graph_options[name] for name in SCORING_OPTIONS)))
        fetches = self._fetches(("score", None, None, False, shape), build)
        results = []
        for batch in length_sorted_batches([len(ids) for ids in source_ids],
                                           self.config["decode"]["batch_size"]):
            targets = [list(target_ids[index]) + [EOS_ID] for index in batch]
            feeds = dict(zip((self._source_ids, self._source_length),
                             pad_batch([source_ids[index] for index in batch])))
            feeds.update(zip((self._target_ids, self._target_length), pad_batch(targets)))
            feeds.update((tensor, options[name]) for name, tensor in self._fed_options.items())
            piece_log_probs, log_probs, scores = self._session.run(fetches, feeds)
            for row, (index, target) in enumerate(zip(batch, targets)):
                pieces = self._tokenizer.target_pieces(target)
                results.append((index, {
                    "score": float(scores[row]), "log_prob": float(log_probs[row]),
                    "length": len(target), "pieces": [
                        {"piece": piece, "log_prob": float(log_prob)}
                        for piece, log_prob in zip(pieces, piece_log_probs[row])]}))
        return [result for _, result in sorted(results, key=lambda pair: pair[0])]

    def _graph_options(self, decoder, shape):
        """search_encoded's options for a GraphShape: the fed placeholders, the shaping values."""
        options = dict(self._fed_options, length_penalty_kind=shape.kind,
                       no_repeat_ngram_size=shape.ngram)
        if not shape.coverage:
            options["coverage_penalty"] = 0.0
        if not shape.min_length:
            options["min_length"] = 0
        if decoder == "sample":
            options["sentence_keys"] = sentence_keys(self._source_ids, self._source_length)
        return options

    def _sentence_trace(self, trace, row, source_ids, ids, scores, lengths):
        """DESIGN.md's search trace of batch row `row` (source_ids unpadded; its ids [K, time],
        scores [K], lengths [K]), its steps up to the first at which every slot has finished."""
        pieces = self._tokenizer.target_pieces
        finite = np.isfinite(trace["scores"][row])                              # [time, K]
        done = np.all(trace["finished"][row] | ~finite, axis=1)                 # [time]
        steps = int(np.argmax(done)) + 1 if done.any() else len(done)
        return {
            "source_pieces": self._tokenizer.source_pieces(source_ids),
            "steps": [{"pieces": pieces(trace["token_ids"][row, step]),
                       "parents": trace["parent_ids"][row, step].tolist(),
                       "scores": [float(score) if ok else None for score, ok
                                  in zip(trace["scores"][row, step], finite[step])],
                       "finished": trace["finished"][row, step].tolist()}
                      for step in range(steps)],
            "n_best": [{"pieces": pieces(ids[slot, :lengths[slot]]),
                        "attention": trace["attention"][row, slot, :lengths[slot],
                                                        :len(source_ids)].tolist()}
                       for slot in range(len(scores)) if np.isfinite(scores[slot])]}

    def translate(self, texts, decoder="while_loop", beam_width=None, n_best=1, trace=False,
                  options=None):
        """A list of strings -> a list of `Translation` (with its trace if `trace`), in order.

        decoder, beam_width, n_best, options: as for `check_options` (fewer than n_best
        hypotheses only where fewer are possible). ValueError for a bad option or text.
        """
        width = self.check_options(decoder, beam_width, n_best, options)  # before tokenizing
        if isinstance(texts, str):
            raise ValueError("texts must be a list of strings, got one string "
                             "(wrap a single sentence in a list)")
        token_ids = []
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValueError("texts[%d] must be a string, got %s"
                                 % (index, type(text).__name__))
            token_ids.append(self.tokenize(text))
            if not token_ids[-1]:
                raise ValueError("texts[%d] is empty (no source tokens)" % index)
        return self._translate_tokens(token_ids, decoder, width, n_best, trace, options)

    def translate_tokens(self, token_ids, decoder="while_loop", beam_width=None, n_best=1,
                         trace=False, options=None):
        """`translate` for lists of source ids (from `tokenize`), each non-empty."""
        width = self.check_options(decoder, beam_width, n_best, options)
        return self._translate_tokens(token_ids, decoder, width, n_best, trace, options)

    def _translate_tokens(self, token_ids, decoder, width, n_best, trace, options):
        translations = []
        for ids, (result, sentence_trace) in zip(token_ids, self._search(
                token_ids, decoder, width, trace, self.resolve_options(decoder, options))):
            hypotheses = [Hypothesis(self.detokenize(target_ids), score) for target_ids, score
                          in zip(result.ids[:n_best], result.scores[:n_best])]
            translations.append(Translation(hypotheses[0].text, hypotheses[0].score, hypotheses,
                                            self._tokenizer.is_unfamiliar(ids), sentence_trace,
                                            result.proven, result.expansions))
        return translations

    def warm_up(self, decoders=None, beam_widths=None, max_source_length=None):
        """Builds the graphs of `decoders` (None: all) at `beam_widths` (None: the default;
        exact: at the default) and runs each once; "unrolled" gets every length bucket of
        sources up to `max_source_length` tokens (None: data.max_source_length). Returns the
        new `Variant`s."""
        max_source_length = max_source_length or self.config["data"]["max_source_length"]
        already_built = len(self.variants)
        for decoder in decoders or self.decoders:
            if decoder == "exact":  # its step graph, and the while_loop search it starts from
                self._search([[UNK_ID]], "exact", 1, False,
                             self.resolve_options("exact", {"max_expansions": 1}))
                continue
            source_lengths = sorted({  # "unrolled": the shortest source of each length bucket
                unrolled_length_bucket(length, self.config["decode"]): length
                for length in range(max_source_length, 0, -1)}.values()) if (
                    decoder == "unrolled") else [1]
            for beam_width in sorted({self.check_options(decoder, width) for width in (
                    beam_widths if beam_widths and decoder != "sample" else [None])}):
                for length in source_lengths:
                    self._run(decoder, beam_width, np.full([1, length], UNK_ID, np.int32),
                              np.array([length], np.int32))
        return self.variants[already_built:]


def _search_result(ids, scores, lengths):
    """A `SearchResult` from one sentence's ids [K, time], scores [K] and lengths [K]."""
    hypotheses, finite_scores = [], []
    for beam_ids, score, length in zip(ids, scores, lengths):
        if np.isfinite(score):
            tokens = beam_ids[:length].tolist()
            hypotheses.append(tokens[:-1] if tokens and tokens[-1] == EOS_ID else tokens)
            finite_scores.append(float(score))
    return SearchResult(hypotheses, finite_scores)


def _best_hypothesis(result):
    """A `SearchResult`'s best as (ids tuple, score), or None if it holds none."""
    return (tuple(result.ids[0]), result.scores[0]) if result.ids else None
