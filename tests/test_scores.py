"""A reported score is the model's probability of the ids reported with it.

Every other Translator-level test compares decoder paths that share one
scoring step (`decode.beam_search.beam_step`), so a scoring error common to all
of them would pass. Here each hypothesis the Translator returns is rescored
independently: in a graph of its own, by teacher forcing the model on
[BOS] + ids, summing the log-softmax of ids + [EOS] (in float64, in numpy) and
dividing by the GNMT length penalty ((5 + L) / 6) ** alpha, L = len(ids) + 1.

Hypotheses cut off by their sentence's length limit are included on purpose:
the searches force the end token there, and it must cost its true
log-probability (`beam_step` in decode/beam_search.py), which a search that
masked the logits before normalising would not charge.
"""

import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from data_pipeline.tokenizer import BOS_ID, EOS_ID, PAD_ID, Tokenizer
from decode.graphs import output_length_limit
from decode.translator import Translator
from seq2seq.config import load_config
from seq2seq.model import Seq2SeqModel
from seq2seq.model_dir import find_checkpoint

NUM_SENTENCES = 40
BEAM_WIDTHS = (1, 3)
TOLERANCE = 1e-4
# The model directory's own limits (ratio 2, extra 10), and short ones, under
# which most hypotheses end at their limit, with another length penalty.
HPARAMS = ("", "decode.max_length_ratio=0.5,decode.max_length_extra=1,decode.length_penalty=1.0")


class TeacherForcedScorer:
    """The model of a model directory, restored in a graph of its own, scoring given targets."""

    def __init__(self, model_dir):
        config = load_config(os.path.join(model_dir, "config.yaml"))
        tokenizer = Tokenizer.load(model_dir)
        self._graph = tf.Graph()
        with self._graph.as_default():
            self._source_ids = tf.placeholder(tf.int32, [None, None])
            self._source_length = tf.placeholder(tf.int32, [None])
            self._target_input = tf.placeholder(tf.int32, [None, None])
            model = Seq2SeqModel(config["model"], tokenizer.source_vocab_size,
                                 tokenizer.target_vocab_size)
            encoded = model.encode(self._source_ids, self._source_length, training=False)
            self._logits = model.teacher_forced_logits(encoded, self._target_input, training=False)
            variables = tf.global_variables()
            assert variables, "the model created no variables"
            saver = tf.train.Saver(variables)
        self._session = tf.Session(graph=self._graph)
        saver.restore(self._session, find_checkpoint(model_dir))

    def close(self):
        self._session.close()

    def log_probs(self, source, hypotheses):
        """Each hypothesis's sum of log p(token), over its ids and the end token.

        Args:
          source: one sentence's source ids.
          hypotheses: lists of target ids, without begin or end token.
        Returns:
          A float64 array, one sum per hypothesis.
        """
        targets = [list(ids) + [EOS_ID] for ids in hypotheses]
        time = max(len(target) for target in targets)
        target_input = np.full([len(targets), time], PAD_ID, np.int32)
        for row, target in enumerate(targets):
            target_input[row, :len(target)] = [BOS_ID] + target[:-1]
        # The same source on every row: no source padding to rely on.
        logits = self._session.run(self._logits, {
            self._source_ids: np.tile(np.array([source], np.int32), [len(targets), 1]),
            self._source_length: np.full([len(targets)], len(source), np.int32),
            self._target_input: target_input})
        logits = logits.astype(np.float64)
        shifted = logits - logits.max(axis=-1, keepdims=True)
        log_softmax = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
        return np.array([log_softmax[row, np.arange(len(target)), target].sum()
                         for row, target in enumerate(targets)])


@pytest.fixture(scope="module")
def dev_token_ids(tiny_model_dir, tiny_data):
    tokenizer = Tokenizer.load(tiny_model_dir)
    with open(tiny_data.raw_text["dev"][0], encoding="utf-8") as f:
        sentences = [line.strip() for line in f if line.strip()][:NUM_SENTENCES]
    assert len(sentences) == NUM_SENTENCES
    return [tokenizer.encode_source(text) for text in sentences]


@pytest.fixture(scope="module")
def scorer(tiny_model_dir):
    scorer = TeacherForcedScorer(tiny_model_dir)
    yield scorer
    scorer.close()


@pytest.mark.parametrize("hparams", HPARAMS, ids=("model_limits", "short_limits"))
def test_every_score_is_the_models_log_probability_of_its_ids(
        tiny_model_dir, dev_token_ids, scorer, hparams):
    decode_params = load_config(os.path.join(tiny_model_dir, "config.yaml"), hparams)["decode"]
    alpha = decode_params["length_penalty"]
    translator = Translator(tiny_model_dir, hparams=hparams)
    try:
        results = {beam_width: translator.search(dev_token_ids, "while_loop", beam_width)
                   for beam_width in BEAM_WIDTHS}
    finally:
        translator.close()

    checked = 0
    at_limit = dict.fromkeys(BEAM_WIDTHS, 0)
    errors = []
    for beam_width, beam_results in results.items():
        for index, (source, result) in enumerate(zip(dev_token_ids, beam_results)):
            assert 1 <= len(result.ids) == len(result.scores) <= beam_width
            limit = output_length_limit(len(source), decode_params)
            for ids in result.ids:
                assert EOS_ID not in ids and BOS_ID not in ids and PAD_ID not in ids, ids
                assert len(ids) + 1 <= limit, (index, ids, limit)
            lengths = np.array([len(ids) + 1 for ids in result.ids])
            expected = scorer.log_probs(source, result.ids) / ((5.0 + lengths) / 6.0) ** alpha
            for rank, (ids, score, want) in enumerate(zip(result.ids, result.scores, expected)):
                checked += 1
                at_limit[beam_width] += len(ids) + 1 == limit
                if not abs(score - want) <= TOLERANCE:
                    errors.append("beam %d, sentence %d, rank %d, %d of %d tokens: reported "
                                  "%.6f, model %.6f" % (beam_width, index, rank, len(ids) + 1,
                                                        limit, score, want))
    assert not errors, "%d of %d scores differ:\n%s" % (len(errors), checked,
                                                         "\n".join(errors[:20]))
    assert checked >= NUM_SENTENCES * len(BEAM_WIDTHS)
    # On the tiny model about half the hypotheses run to their limit (most
    # under the short limits), and the rest end by themselves.
    assert all(at_limit.values()), \
        "no hypothesis ended at its length limit: the forced end went unchecked (%s)" % at_limit
    assert sum(at_limit.values()) < checked, \
        "every hypothesis ended at its limit: none ended by itself"
