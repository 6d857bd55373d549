"""Translation with a trained model: loaded once, then any number of batches.

`Translator` reads a model directory once (config, SentencePiece models, the
checkpoint or a SavedModel) and then translates any number of batches with
any decoder variant. It never reloads per call, the mistake tensorflow/nmt's
users most complained about. What runs the graph is a backend:
- `checkpoint_backend.CheckpointBackend`: every variant, each added to one
  graph the first time it is asked for, cached, and run by one session:
  - "while_loop": `while_loop_beam_search`, one graph per beam width; the
    most tokens to generate is a tensor computed from the batch.
  - "unrolled": `rnn_beam_search`, one graph per beam width and length
    bucket (the unrolled graph's size is its length, a Python int).
  - "greedy": `greedy_search`, one graph.
- `saved_model_backend.SavedModelBackend`: the exported while_loop search at
  its one beam width.

The Translator itself tokenizes, batches sentences by length (sorted by
source tokens, batches of `decode.batch_size`, so that little padding is
encoded and few steps are run for sentences that finished long ago), and
assembles each sentence's n-best list, in input order. Length limits are per
sentence; see `decode.length_limits`.

Graphs built on demand cost seconds, which a caller timing its call should
know: `Translator.recording_builds` names the graphs built for the calls a
thread makes inside it (the server reports them with each answer).
"""

import collections
import contextlib
import os
import threading

import numpy as np

import tensorflow.compat.v1 as tf

from data_pipeline.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Tokenizer
from decode import DECODERS, greedy_search, rnn_beam_search, while_loop_beam_search
from decode.checkpoint_backend import CheckpointBackend, find_checkpoint
from decode.checks import is_int, shown
from decode.length_limits import output_length_limits, unrolled_length_bucket
from decode.saved_model_backend import SavedModelBackend
from seq2seq.config import load_config

Translation = collections.namedtuple("Translation", "text score n_best")
Translation.__doc__ = """One sentence's translation.

Fields:
  text: the best hypothesis's text (n_best[0].text).
  score: its score (n_best[0].score).
  n_best: a list of `Hypothesis`, best first.
"""

Hypothesis = collections.namedtuple("Hypothesis", "text score")
Hypothesis.__doc__ = """One hypothesis: its text and its length-penalised log-probability."""

SearchResult = collections.namedtuple("SearchResult", "ids scores")
SearchResult.__doc__ = """One sentence's beam, before detokenization.

Fields:
  ids: a list of up to beam_width lists of target token ids, best first, the
    end token and anything after it left out.
  scores: a list of as many finite floats, best first.

Fewer than beam_width hypotheses come back only when fewer are possible (a
beam wider than the sequences a length limit allows): the decoders fill such
slots with score -inf, which is no hypothesis (and no JSON number).
"""


def search_encoded(model, encoder_output, source_length, decode_params, decoder, beam_width,
                   unrolled_length=None, trace=False):
    """The n-best translations of an encoded batch, each within its sentence's length limit.

    Args:
      model: a `Seq2SeqModel`.
      encoder_output: `model.encode(..., training=False)`, [batch, ...] tensors.
      source_length: [batch] int32, the source lengths the limits come from.
      decode_params: the config's "decode" dict (length_penalty,
        max_length_ratio, max_length_extra).
      decoder: one of DECODERS.
      beam_width: K, a Python int >= 1; 1 for "greedy".
      unrolled_length: for "unrolled" only, the Python int number of steps
        to build: at least the batch's longest limit, as
        `length_limits.unrolled_length_bucket` gives it (fewer steps would
        cut hypotheses short; more change nothing).
      trace: also return the search's trace (see `decode.beam_search`), with
        the attention of the returned hypotheses.
    Returns:
      (ids [batch, K, time] int32, scores [batch, K] float32 best first,
       lengths [batch, K] int32 counting the end token), as the decoder
      contract defines them; every hypothesis ends with the end token; and
      with `trace`, the trace dict as a fourth element.
    Raises:
      ValueError: for an unknown decoder, a greedy beam width other than 1,
        or an `unrolled_length` given to (or missing from) the wrong decoder.
    """
    if decoder not in DECODERS:
        raise ValueError("decoder must be one of %s, got %r" % (", ".join(DECODERS), decoder))
    if decoder == "greedy" and beam_width != 1:
        raise ValueError("greedy decoding has beam width 1, got %r" % (beam_width,))
    if (decoder == "unrolled") != (unrolled_length is not None):
        raise ValueError("unrolled_length is needed by the unrolled decoder and only by it, "
                         "got %r for %s" % (unrolled_length, decoder))
    alpha = decode_params["length_penalty"]
    scope = "%s_beam%d" % (decoder, beam_width) + (
        "_len%d" % unrolled_length if unrolled_length else "")  # e.g. unrolled_beam4_len24
    with tf.name_scope(scope):
        # Each sentence's own limit, applied by the search itself: at a
        # sentence's last allowed step its hypotheses can only end, and the
        # end token is scored with its log-probability under the model.
        limits = output_length_limits(source_length, decode_params)          # [batch]
        traced = {"trace": True} if trace else {}
        update_fn, initial_state = model.beam_update_fn(
            encoder_output, beam_width, **({"with_attention": True} if trace else {}))
        if decoder == "unrolled":
            return rnn_beam_search(update_fn, initial_state, unrolled_length, beam_width,
                                   BOS_ID, EOS_ID, length_penalty=alpha, max_lengths=limits, **traced)
        # By its longest limit every hypothesis of the batch has ended, so
        # this batch-wide bound changes no sentence's result.
        max_length = tf.reduce_max(limits, name="max_output_length")
        if decoder == "greedy":
            return greedy_search(update_fn, initial_state, max_length, BOS_ID, EOS_ID,
                                 length_penalty=alpha, max_lengths=limits, **traced)
        return while_loop_beam_search(update_fn, initial_state, max_length, beam_width,
                                      BOS_ID, EOS_ID, length_penalty=alpha, max_lengths=limits, **traced)


def length_sorted_batches(lengths, batch_size):
    """Groups sentence indices into batches of similar length.

    Args:
      lengths: one length per sentence.
      batch_size: the most sentences per batch.
    Returns:
      A list of lists of indices into `lengths`: every index once, shortest
      sentences first, ties in input order.
    """
    order = sorted(range(len(lengths)), key=lambda index: lengths[index])
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def pad_batch(sequences):
    """Pads token id lists into a batch.

    Args:
      sequences: a non-empty list of lists of int.
    Returns:
      (ids [batch, max_len] int32 padded with PAD_ID, lengths [batch] int32).
    """
    lengths = np.array([len(sequence) for sequence in sequences], np.int32)
    ids = np.full([len(sequences), lengths.max()], PAD_ID, np.int32)
    for row, sequence in enumerate(sequences):
        ids[row, :len(sequence)] = sequence
    return ids, lengths


class Translator:
    """Translates text with a model directory's model; see the module docstring.

    Thread-safe: several threads may call `translate` and `translate_tokens`
    at once (the checkpoint backend builds graphs under a lock; `Session.run`
    is thread-safe).

    Attributes:
      config: the model directory's resolved config.
      model_name: config["name"].
      step: the global step of the checkpoint (or SavedModel) in use.
      source_vocab_size, target_vocab_size: the SentencePiece vocabulary sizes.
      decoders: the decoders it serves: all three from a checkpoint, the
        exported one from a SavedModel.
      beam_widths: the beam widths it accepts, a `range`: 1..decode.max_beam_width
        from a checkpoint (for every decoder: greedy then decodes at 1), the
        exported one from a SavedModel. What `check_options` enforces.
    """

    def __init__(self, model_dir, export_dir=None, checkpoint=None, hparams=""):
        """Loads the model: config, tokenizer, graph, session and weights.

        Args:
          model_dir: a directory written by train.py (config.yaml, the
            SentencePiece model(s), checkpoints).
          export_dir: a SavedModel to serve instead of a checkpoint; then
            only the decoder and beam width its signature offers.
          checkpoint: a checkpoint path prefix to restore instead of the
            model directory's best-BLEU checkpoint (MODEL_DIR/best/), or
            its latest when it keeps no best one.
          hparams: "section.key=value,..." overrides of the model
            directory's config, e.g. "decode.inter_op_threads=0" (see
            `decode.session_config` for what the thread keys can change).
        Raises:
          ValueError: if the directory is not a model directory, holds no
            checkpoint, or the checkpoint does not fit the config;
            seq2seq.config.ConfigError (a ValueError) for bad hparams.
        """
        config_path = os.path.join(model_dir, "config.yaml")
        if not os.path.isfile(config_path):
            raise ValueError("%s has no config.yaml: is it a model directory written by "
                             "train.py?" % model_dir)
        if export_dir and checkpoint:
            raise ValueError("pass export_dir or checkpoint, not both")
        self.config = load_config(config_path, hparams)
        self.model_name = self.config["name"]
        self._tokenizer = Tokenizer.load(model_dir)
        self.source_vocab_size = self._tokenizer.source_vocab_size
        self.target_vocab_size = self._tokenizer.target_vocab_size
        if export_dir:
            self._backend = SavedModelBackend(export_dir, self.config["decode"])
            self.beam_widths = self._backend.beam_widths
        else:
            self._backend = CheckpointBackend(
                self.config, self.source_vocab_size, self.target_vocab_size,
                checkpoint or find_checkpoint(model_dir))
            self.beam_widths = range(1, self.config["decode"]["max_beam_width"] + 1)
        # Per thread: the lists of the `recording_builds` blocks it is in.
        self._recordings = threading.local()
        self.decoders = self._backend.decoders
        self.step = self._backend.step

    @property
    def variants(self):
        """The `checkpoint_backend.Variant`s (decoder graphs) built so far, in build order."""
        return self._backend.variants

    @contextlib.contextmanager
    def recording_builds(self):
        """Records the decoder graphs built for this thread's calls inside the block.

        Yields a list that receives the `Variant` of every graph a call of
        this thread (inside the block) needed and found not yet built: the
        call built it, or waited while a concurrent call built it. Either
        way its time includes the build. Per thread, so calls of other
        threads running meanwhile are not counted; blocks may nest.

        Example:
          with translator.recording_builds() as built:
              translator.translate_tokens(token_ids, "unrolled", 9)
          print("%d graph(s) built" % len(built))
        """
        built = []
        recordings = self._recordings.__dict__.setdefault("lists", [])
        recordings.append(built)
        try:
            yield built
        finally:
            # By identity: two lists of the same graphs are equal.
            recordings[:] = [recording for recording in recordings if recording is not built]

    def close(self):
        """Frees the session's resources; the translator cannot translate afterwards."""
        self._backend.close()

    def tokenize(self, text):
        """Source text -> its list of SentencePiece ids (no begin or end token)."""
        return self._tokenizer.encode_source(text)

    def detokenize(self, ids):
        """Target ids -> text, up to the first end token."""
        return self._tokenizer.decode_target(ids)

    def check_options(self, decoder, beam_width=None, n_best=1):
        """Validates translation options and resolves the default beam width.

        The one check of the options: the public methods call it once, and
        what they call after it takes the options as valid.

        Args:
          decoder: one of `decoders`.
          beam_width: one of `beam_widths`, or None for the default (the
            config's decode.beam_width, or a SavedModel's own). Checked for
            every decoder; greedy then decodes at 1.
          n_best: how many hypotheses to return, 1..beam_width (1 for greedy).
        Returns:
          The beam width to decode with (1 for greedy).
        Raises:
          ValueError: naming the bad option and its allowed values; the
            value is shown cut short (an HTTP client's value must not come
            back whole).
        """
        if decoder not in self.decoders:
            raise ValueError("decoder must be one of %s, got %s"
                             % (", ".join(self.decoders), shown(decoder)))
        if beam_width is None:
            beam_width = self._backend.default_beam_width
        else:
            self._check_beam_width(decoder, beam_width)
        if decoder == "greedy":
            beam_width = 1
        if not is_int(n_best) or not 1 <= n_best <= beam_width:
            raise ValueError("n_best must be an integer in 1..%d (the beam width%s), got %s"
                             % (beam_width, "; greedy decoding keeps one hypothesis"
                                if decoder == "greedy" else "", shown(n_best)))
        return int(beam_width)

    def _check_beam_width(self, decoder, beam_width):
        """Raises ValueError unless `beam_width` is one of `beam_widths`."""
        if is_int(beam_width):
            try:
                self._backend.check_supported(decoder, beam_width)  # a SavedModel's one width
            except ValueError as error:
                raise ValueError("%s, got beam_width %s" % (error, shown(beam_width))) from None
            if beam_width in self.beam_widths:
                return
        raise ValueError("beam_width must be an integer in %d..%d, got %s"
                         % (self.beam_widths[0], self.beam_widths[-1], shown(beam_width)))

    def search(self, token_ids, decoder="while_loop", beam_width=None):
        """Decodes tokenized sentences, batched by length.

        Args:
          token_ids: a list of source token id lists, each non-empty.
          decoder: one of `decoders`.
          beam_width: as for `check_options`.
        Returns:
          A list of `SearchResult`, in input order.
        Raises:
          ValueError: for bad options or a sentence without tokens.
        """
        return self._search(token_ids, decoder, self.check_options(decoder, beam_width))

    def _search(self, token_ids, decoder, beam_width):
        """`search` with options already checked (beam_width resolved)."""
        for index, ids in enumerate(token_ids):
            if not len(ids):
                raise ValueError("sentence %d has no source tokens" % index)
        results = [None] * len(token_ids)
        for batch in length_sorted_batches([len(ids) for ids in token_ids],
                                           self.config["decode"]["batch_size"]):
            source_ids, source_length = pad_batch([token_ids[index] for index in batch])
            ids, scores, lengths = self._run(decoder, beam_width, source_ids, source_length)
            for row, index in enumerate(batch):
                results[index] = _search_result(ids[row], scores[row], lengths[row])
        return results

    def _run(self, decoder, beam_width, source_ids, source_length):
        """The backend's run of one padded batch; a graph it found not yet built
        goes to this thread's `recording_builds` lists."""
        new_variants = []
        outputs = self._backend.run(decoder, beam_width, source_ids, source_length, new_variants)
        for built in getattr(self._recordings, "lists", ()):
            built.extend(new_variants)
        return outputs

    def translate(self, texts, decoder="while_loop", beam_width=None, n_best=1):
        """Translates sentences.

        Args:
          texts: a list of strings, one sentence each.
          decoder: "while_loop", "unrolled" or "greedy".
          beam_width: one of `beam_widths`, None for the default; checked
            for greedy too, which then decodes at 1.
          n_best: hypotheses per sentence, 1..beam_width (1 for greedy); fewer
            come back only where fewer are possible (see `SearchResult`).
        Returns:
          A list of `Translation`, one per text, in input order.
        Raises:
          ValueError: for a bad option, a text that is not a string, or one
            without source tokens (empty or blank).
        """
        # Options first: a bad option is reported before any text is tokenized.
        beam_width = self.check_options(decoder, beam_width, n_best)
        if isinstance(texts, str):
            raise ValueError("texts must be a list of strings, got one string "
                             "(wrap a single sentence in a list)")
        token_ids = []
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValueError("texts[%d] must be a string, got %s"
                                 % (index, type(text).__name__))
            ids = self.tokenize(text)
            if not ids:
                raise ValueError("texts[%d] is empty (no source tokens)" % index)
            token_ids.append(ids)
        return self._translate_tokens(token_ids, decoder, beam_width, n_best)

    def translate_tokens(self, token_ids, decoder="while_loop", beam_width=None, n_best=1):
        """`translate` for sentences already tokenized (by `tokenize`).

        For callers that tokenize anyway, e.g. to check a token limit, so that
        no sentence is encoded twice.

        Args:
          token_ids: a list of source token id lists, each non-empty.
          decoder, beam_width, n_best: as for `translate`.
        Returns:
          A list of `Translation`, one per sentence, in input order.
        Raises:
          ValueError: for a bad option or a sentence without tokens.
        """
        return self._translate_tokens(token_ids, decoder,
                                      self.check_options(decoder, beam_width, n_best), n_best)

    def _translate_tokens(self, token_ids, decoder, beam_width, n_best):
        """`translate_tokens` with options already checked (beam_width resolved)."""
        translations = []
        for result in self._search(token_ids, decoder, beam_width):
            n_best_list = [Hypothesis(self.detokenize(ids), score)
                           for ids, score in zip(result.ids[:n_best], result.scores[:n_best])]
            translations.append(Translation(n_best_list[0].text, n_best_list[0].score, n_best_list))
        return translations

    def warm_up(self, decoders=None, beam_widths=None, max_source_length=None):
        """Builds decoder variants now, and runs each once, so no request waits for them.

        The first `Session.run` of new ops also costs extra (TensorFlow prunes
        and optimises the graph for each new set of fetches): running each
        variant once on a dummy sentence pays that here too.

        Args:
          decoders: the decoders to build (None: all of `decoders`).
          beam_widths: the beam widths to build (None: the default one);
            greedy is built once whatever they are.
          max_source_length: for "unrolled", build every length bucket that
            sources of up to this many tokens need (None: the config's
            data.max_source_length). Each bucket is a graph of its own.
        Returns:
          The `Variant`s this call built.
        Raises:
          ValueError: for a decoder or beam width that cannot be served.
        """
        max_source_length = max_source_length or self.config["data"]["max_source_length"]
        already_built = len(self.variants)
        for decoder in decoders or self.decoders:
            widths = {self.check_options(decoder, width) for width in beam_widths or [None]}
            for beam_width in sorted(widths):
                for source_length in _warm_up_source_lengths(
                        decoder, max_source_length, self.config["decode"]):
                    self._run(decoder, beam_width, np.full([1, source_length], UNK_ID, np.int32),
                              np.array([source_length], np.int32))
        return self.variants[already_built:]


def _warm_up_source_lengths(decoder, max_source_length, decode_params):
    """One source length per graph `decoder` needs for sources up to the given length."""
    if decoder != "unrolled":
        return [1]
    first_length_of_bucket = {}
    for length in range(1, max_source_length + 1):
        first_length_of_bucket.setdefault(unrolled_length_bucket(length, decode_params), length)
    return sorted(first_length_of_bucket.values())


def _search_result(ids, scores, lengths):
    """A `SearchResult` from one sentence's [K, time] ids, [K] scores and [K]
    lengths, without the impossible (score -inf) hypotheses."""
    hypotheses, finite_scores = [], []
    for beam_ids, score, length in zip(ids, scores, lengths):
        if not np.isfinite(score):
            continue
        tokens = beam_ids[:length].tolist()
        if tokens and tokens[-1] == EOS_ID:
            tokens.pop()
        hypotheses.append(tokens)
        finite_scores.append(float(score))
    return SearchResult(hypotheses, finite_scores)
