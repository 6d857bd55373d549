"""SentencePiece training, the one wrapper (training, decoding, serving) and familiarity.

Files: ``spm.model`` (joint) or ``source.model`` + ``target.model``, and ``tokenizer.json``
(source lower-casing, the protected tokens the training text holds, the familiarity bigram
model). Why: docs/DATA-NOTES.md.
"""

import collections
import io
import json
import math
import os
import re
import shutil
import unicodedata

import sentencepiece as spm

from data_pipeline import placeholders
from seq2seq.config import ConfigError

PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3
JOINT_MODEL, SOURCE_MODEL, TARGET_MODEL = "spm.model", "source.model", "target.model"
OPTIONS = "tokenizer.json"
FLAGGED_SHARE = 0.01  # of each calibration set's sources over the familiarity threshold
MIN_CALIBRATION = 20  # sources a calibration set needs, else no familiarity (docs/DATA-NOTES.md)
PRIOR_PIECES = 2  # pieces at the training sources' mean cost that every score starts with
_KEPT_FROM_NFKC = re.compile("([ºª｟｠])")  # NFKC would turn "1º" into "1o", "｟0｠" into "⦅0⦆"
_INVISIBLE = ("Cc", "Cf")  # controls; zero-width spaces, direction marks, BOMs, soft hyphens


class Tokenizer:
    """SentencePiece for the source and the target text; made by load() or train_tokenizer()."""

    def __init__(self, model_files, options_file):
        self.model_files = model_files  # the source model [, the target model], tokenizer.json
        processors = [spm.SentencePieceProcessor(model_file=path) for path in model_files]
        self._source, self._target = processors[0], processors[-1]
        self.options = {}
        if os.path.isfile(options_file):
            with open(options_file, encoding="utf-8") as f:
                self.options = json.load(f)
            self.model_files.append(options_file)
        familiarity = self.options.get("familiarity")
        self._familiarity = _Familiarity(familiarity) if familiarity else None
        self.source_vocab_size = self._source.get_piece_size()
        self.target_vocab_size = self._target.get_piece_size()
        self.protected_tokens = self.options.get("protected_tokens", 0)  # how many ｟k｠ training saw

    @classmethod
    def load(cls, directory):
        """Loads spm.model, else source.model and target.model, and tokenizer.json if there."""
        joint, source, target, options = (os.path.join(directory, name) for name in (
            JOINT_MODEL, SOURCE_MODEL, TARGET_MODEL, OPTIONS))
        if os.path.isfile(joint):
            return cls([joint], options)
        if os.path.isfile(source) and os.path.isfile(target):
            return cls([source, target], options)
        raise FileNotFoundError("no SentencePiece model in %s: expected %s, or %s and %s"
                                % (directory, JOINT_MODEL, SOURCE_MODEL, TARGET_MODEL))

    def protect(self, text):
        """placeholders.protect up to protected_tokens: (what to encode_source, their text)."""
        return placeholders.protect(text, self.protected_tokens)

    def restore(self, text, originals):
        """A decoded translation with each ｟k｠ back as originals[k] (placeholders.restore)."""
        return placeholders.restore(text, originals)

    def protected_target_ids(self, source_ids):
        """The target ids of the protected tokens among a source's ids, in order."""
        pieces = self.source_pieces(_content_ids(source_ids))
        return [self._target.piece_to_id(piece) for piece in pieces if piece in placeholders.TOKENS]

    def encode_source(self, text):
        """Source text -> list of int ids, without BOS or EOS."""
        text = model_text(text)
        return self._source.encode(text.lower() if self.options.get("lowercase_source") else text)

    def encode_target(self, text):
        """Target text -> list of int ids, without BOS or EOS."""
        return self._target.encode(model_text(text))

    def decode_source(self, ids):
        return self._source.decode(_content_ids(ids))

    def decode_target(self, ids):
        """Target ids -> text: stops at the first EOS_ID, drops PAD_ID and BOS_ID."""
        return self._target.decode(_content_ids(ids))

    def source_pieces(self, ids):
        """Source ids -> their pieces, e.g. ["▁Show", "</s>"] (special ids included)."""
        return [self._source.id_to_piece(int(token)) for token in ids]

    def target_pieces(self, ids):
        """Target ids -> their SentencePiece pieces."""
        return [self._target.id_to_piece(int(token)) for token in ids]

    def unfamiliarity(self, source_ids):
        """A source's mean -log P per piece, PRIOR_PIECES typical ones included (higher: odder)."""
        return self._familiarity.score(source_ids) if self._familiarity else 0.0

    def is_unfamiliar(self, source_ids):
        """Whether a source (ids) is unlike the training sources: above the calibrated threshold,
        or half of it or more <unk> (characters training never saw: a short source's score is
        pulled towards the prior); False without familiarity."""
        familiarity, content = self._familiarity, _content_ids(source_ids)
        return bool(familiarity) and (2 * content.count(UNK_ID) >= len(content) or
                                      familiarity.score(source_ids) > familiarity.threshold)

    def encoding(self):
        """What decides the ids of a text: the models and the lower-casing (not the familiarity)."""
        return [self._source.serialized_model_proto(), self._target.serialized_model_proto(),
                bool(self.options.get("lowercase_source"))]

    def copy_to(self, directory):
        """Copies model_files into `directory` under the names load() expects; returns them."""
        os.makedirs(directory, exist_ok=True)
        copies = [os.path.join(directory, os.path.basename(path)) for path in self.model_files]
        for path, copy in zip(self.model_files, copies):
            if os.path.realpath(copy) != os.path.realpath(path):  # a symbolic link is no copy
                shutil.copyfile(path, copy)
        return copies


def train_tokenizer(pairs, directory, vocab_size, model_type, joint, lowercase_source=False,
                    calibration=()):
    """Trains the SentencePiece model(s) and the familiarity model into `directory`.

    Args:
      pairs: list of (source, target) training sentences.
      directory: where spm.model (or source.model, target.model) and tokenizer.json go.
      vocab_size: pieces per model, a soft limit (a small corpus gets fewer).
      model_type: "unigram" or "bpe".
      joint: one model for both sides, or one per side.
      lowercase_source: fold the source to lower case, in training and encoding.
      calibration: lists of sources, e.g. the held-out ones of each kind: the familiarity
        threshold flags at most FLAGGED_SHARE of each list (no familiarity model when none
        holds MIN_CALIBRATION sources).
    Returns:
      The Tokenizer.
    """
    os.makedirs(directory, exist_ok=True)
    fold = str.lower if lowercase_source else str
    sources = [fold(model_text(source)) for source, _ in pairs]
    text = "\n".join(sources)
    options = {"lowercase_source": bool(lowercase_source),
               "protected_tokens": sum(token in text for token in placeholders.TOKENS)}
    targets = [model_text(target) for _, target in pairs]
    models = [(JOINT_MODEL, sources + targets)] if joint else [(SOURCE_MODEL, sources),
                                                               (TARGET_MODEL, targets)]
    for name, sentences in models:
        _train_model(sentences, os.path.join(directory, name), vocab_size, model_type)
    if any(len(group) >= MIN_CALIBRATION for group in calibration):
        source_file = os.path.join(directory, JOINT_MODEL if joint else SOURCE_MODEL)
        source_model = spm.SentencePieceProcessor(model_file=source_file)
        familiarity = _Familiarity.fit(source_model.encode(sources))
        scores = [sorted(familiarity.score(source_model.encode(fold(model_text(source))))
                         for source in group) for group in calibration if group]
        familiarity.data["threshold"] = max(group[len(group) - 1 - int(len(group) * FLAGGED_SHARE)]
                                            for group in scores)
        options["familiarity"] = familiarity.data
    with open(os.path.join(directory, OPTIONS), "w", encoding="utf-8") as f:
        json.dump(options, f, sort_keys=True)
    return Tokenizer.load(directory)


class _Familiarity:
    """An interpolated (Witten-Bell) piece bigram model of the training sources."""

    def __init__(self, data):
        self.data = data  # tokenizer.json's: unigrams {"id": count}, bigrams {"id id": count}...
        self.unigrams = {int(piece): count for piece, count in data["unigrams"].items()}
        self.bigrams = {tuple(map(int, key.split())): count
                        for key, count in data["bigrams"].items()}
        self.threshold = data.get("threshold", math.inf)
        self.prior, self.prior_pieces = data.get("prior", 0.0), data.get("prior_pieces", 0)
        self.total = sum(self.unigrams.values())
        self.context, self.followers = collections.Counter(), collections.Counter()  # c(v), T(v)
        for (previous, _), count in self.bigrams.items():
            self.context[previous] += count
            self.followers[previous] += 1

    @classmethod
    def fit(cls, sources_ids):
        unigrams, bigrams = collections.Counter(), collections.Counter()
        for ids in sources_ids:
            ids = [BOS_ID] + list(ids) + [EOS_ID]
            unigrams.update(str(piece) for piece in ids[1:])
            bigrams.update("%d %d" % pair for pair in zip(ids, ids[1:]))
        model = cls({"unigrams": unigrams, "bigrams": bigrams})
        costs = sum(count * model.cost(*pair) for pair, count in model.bigrams.items())
        return cls(dict(model.data, prior=costs / unigrams.total(), prior_pieces=PRIOR_PIECES))

    def cost(self, previous, piece):
        """-log P(piece | previous): Witten-Bell over add-one unigrams (seen pieces, one unseen)."""
        probability = (self.unigrams.get(piece, 0) + 1) / (self.total + len(self.unigrams) + 1)
        seen, distinct = self.context[previous], self.followers[previous]
        if seen:
            weight = seen / (seen + distinct)
            bigram = self.bigrams.get((previous, piece), 0) / seen
            probability = weight * bigram + (1 - weight) * probability
        return -math.log(probability)

    def score(self, source_ids):
        """The mean cost of a source's pieces (its end included) and of prior_pieces at prior."""
        ids = [BOS_ID] + _content_ids(source_ids) + [EOS_ID]
        total = sum(self.cost(previous, piece) for previous, piece in zip(ids, ids[1:]))
        return (total + self.prior_pieces * self.prior) / (len(ids) - 1 + self.prior_pieces)


def model_text(text):
    """`text` as the models see it: NFKC but for º, ª and the protected tokens' brackets, no
    invisible characters, one space."""
    parts = _KEPT_FROM_NFKC.split(text)
    parts[::2] = [unicodedata.normalize("NFKC", part) for part in parts[::2]]
    text = "".join(parts)
    if not text.isprintable():
        text = "".join(char for char in text
                       if char.isspace() or unicodedata.category(char) not in _INVISIBLE)
    return " ".join(text.split())


def _train_model(sentences, path, vocab_size, model_type):
    """Trains a model on `sentences` (already model_text: identity rule) and writes it to `path`."""
    model = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences), normalization_rule_name="identity",
            model_writer=model, model_type=model_type, vocab_size=vocab_size,
            hard_vocab_limit=False, user_defined_symbols=placeholders.TOKENS, pad_id=PAD_ID,
            unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID,
            character_coverage=1.0, split_digits=True, minloglevel=2)
    except RuntimeError as e:
        needed = re.search(r"smaller than required_chars\. \d+ vs (\d+)", str(e))
        if needed:  # its advice names a flag of its own trainer, not of this project
            raise ConfigError("data.vocab_size %d is too small for the training text: each of its "
                              "characters and the special pieces needs a piece, %s in all; raise "
                              "data.vocab_size" % (vocab_size, needed.group(1))) from e
        raise
    with open(path, "wb") as f:
        f.write(model.getvalue())


def _content_ids(ids):
    """The ids before the first EOS_ID, without PAD_ID and BOS_ID, as Python ints."""
    ids = [int(token) for token in ids]
    ids = ids[:ids.index(EOS_ID)] if EOS_ID in ids else ids
    return [token for token in ids if token not in (PAD_ID, BOS_ID)]
