"""Trains the SentencePiece model(s) from the training split."""

import io
import os

import sentencepiece as spm

from data_pipeline.tokenizer import (
    BOS_ID, EOS_ID, JOINT_MODEL, PAD_ID, SOURCE_MODEL, TARGET_MODEL, UNK_ID, Tokenizer, model_text)
from seq2seq.config import ConfigError


def train_tokenizer(pairs, directory, vocab_size, model_type, joint):
    """Trains one joint model or one model per side and saves it in `directory`.

    The vocabulary size is a soft limit (``hard_vocab_limit=false``): a corpus
    with fewer distinct pieces than requested gets a smaller vocabulary rather
    than an error, so one config serves corpora of any size. The embedded
    corpus, built from a few hundred words, has about 1,100 pieces; callers
    read the real size from the returned Tokenizer.

    Args:
      pairs: list of (source, target) training sentences.
      directory: where spm.model (joint) or source.model and target.model go.
      vocab_size: the requested number of pieces per model.
      model_type: "unigram" or "bpe".
      joint: one model for both sides, or one per side.
    Returns:
      The Tokenizer over the new model(s).
    Raises:
      ValueError: a vocabulary too small to hold the corpus's characters.
    """
    os.makedirs(directory, exist_ok=True)
    sources = [source for source, _ in pairs]
    targets = [target for _, target in pairs]
    if joint:
        path = os.path.join(directory, JOINT_MODEL)
        _train_model(sources + targets, path, vocab_size, model_type)
        return Tokenizer(path)
    source_path = os.path.join(directory, SOURCE_MODEL)
    target_path = os.path.join(directory, TARGET_MODEL)
    _train_model(sources, source_path, vocab_size, model_type)
    _train_model(targets, target_path, vocab_size, model_type)
    return Tokenizer(source_path, target_path)


def _train_model(sentences, path, vocab_size, model_type):
    """Trains from memory and writes the serialised model to `path` only."""
    model = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=(model_text(sentence) for sentence in sentences),
            # The text is normalised by model_text, as Tokenizer encodes it.
            normalization_rule_name="identity",
            model_writer=model,
            model_type=model_type,
            vocab_size=vocab_size,
            hard_vocab_limit=False,
            pad_id=PAD_ID, unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID,
            # Every character of these alphabetic languages gets a piece, so
            # no accented letter of the training text decodes to <unk>.
            character_coverage=1.0,
            # Digits are single pieces: amounts and dates are then copied
            # digit by digit instead of memorised as multi-digit pieces.
            split_digits=True,
            minloglevel=2)
    except RuntimeError as e:
        if "smaller than required_chars" in str(e):
            raise ConfigError("data.vocab_size %d is too small for the characters of the training "
                             "text (SentencePiece: %s)" % (vocab_size, str(e).split("] ")[-1])) from e
        raise
    with open(path, "wb") as f:
        f.write(model.getvalue())
