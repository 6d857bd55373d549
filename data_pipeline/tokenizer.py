"""The one SentencePiece wrapper, used by training, decoding and serving.

A tokenizer is one joint model (``spm.model``) or one model per side
(``source.model`` and ``target.model``). Encoding adds no begin or end token:
the input pipeline and the decoders place BOS_ID and EOS_ID themselves. The
models see text through model_text, in training as in encoding.
"""

import os
import re
import shutil
import unicodedata

import sentencepiece as spm

PAD_ID = 0
UNK_ID = 1
BOS_ID = 2
EOS_ID = 3

JOINT_MODEL = "spm.model"
SOURCE_MODEL = "source.model"
TARGET_MODEL = "target.model"

# NFKC, the core of SentencePiece's default normalisation rule (nmt_nfkc),
# turns the ordinal indicators into letters: Portuguese "1º de maio" and "nº"
# would decode as "1o de maio" and "no". So the models are trained without a
# rule of their own ("identity") and are given model_text(text) instead.
_ORDINAL_INDICATORS = re.compile("([ºª])")
# Unicode categories of invisible characters: controls, and format characters
# such as zero-width spaces, direction marks, byte-order marks, soft hyphens.
_INVISIBLE = ("Cc", "Cf")


class Tokenizer:
    """Encodes source text and decodes target ids with SentencePiece.

    Args:
      source_model: path of the source-side (or joint) SentencePiece model.
      target_model: path of the target-side model, or None when the source
        model is a joint one.
    """

    def __init__(self, source_model, target_model=None):
        self._source = _load_processor(source_model)
        self._target = _load_processor(target_model) if target_model else self._source
        self._files = [source_model] + ([target_model] if target_model else [])
        # The names Tokenizer.load looks for, which copies are written under.
        self._file_names = [SOURCE_MODEL, TARGET_MODEL] if target_model else [JOINT_MODEL]

    @classmethod
    def load(cls, directory):
        """Loads the model(s) found in `directory`.

        Uses ``spm.model`` when it exists, else ``source.model`` and
        ``target.model``.

        Raises:
          FileNotFoundError: naming the directory and the files looked for.
        """
        joint = os.path.join(directory, JOINT_MODEL)
        if os.path.isfile(joint):
            return cls(joint)
        source, target = (os.path.join(directory, name) for name in (SOURCE_MODEL, TARGET_MODEL))
        if os.path.isfile(source) and os.path.isfile(target):
            return cls(source, target)
        raise FileNotFoundError("no SentencePiece model in %s: expected %s, or %s and %s"
                                % (directory, JOINT_MODEL, SOURCE_MODEL, TARGET_MODEL))

    @property
    def model_files(self):
        """The paths of the model file(s): one when joint, else source and target."""
        return list(self._files)

    @property
    def source_vocab_size(self):
        return self._source.get_piece_size()

    @property
    def target_vocab_size(self):
        return self._target.get_piece_size()

    def encode_source(self, text):
        """Source text -> list of int ids, without BOS or EOS."""
        return self._source.encode(model_text(text))

    def encode_target(self, text):
        """Target text -> list of int ids, without BOS or EOS."""
        return self._target.encode(model_text(text))

    def decode_source(self, ids):
        """Source ids -> text; see decode_target for the treatment of special ids."""
        return self._source.decode(_content_ids(ids))

    def decode_target(self, ids):
        """Target ids -> text: stops at the first EOS_ID, drops PAD_ID and BOS_ID.

        Args:
          ids: a sequence of ints (a list or a 1-D NumPy array).
        """
        return self._target.decode(_content_ids(ids))

    def copy_to(self, directory):
        """Copies the model file(s) into `directory`, so that it can translate alone.

        The copies have the names Tokenizer.load(directory) looks for.

        Returns:
          The paths of the copies.
        """
        os.makedirs(directory, exist_ok=True)
        copies = []
        for path, name in zip(self._files, self._file_names):
            copy = os.path.join(directory, name)
            # realpath: the same file reached through a symbolic link is no copy.
            if os.path.realpath(copy) != os.path.realpath(path):
                shutil.copyfile(path, copy)
            copies.append(copy)
        return copies


def model_text(text):
    """`text` as the SentencePiece models see it, in training and encoding.

    NFKC (no-break spaces become spaces, full-width letters ASCII) except for
    the ordinal indicators º and ª; invisible characters are dropped, as
    nmt_nfkc drops them, rather than becoming <unk> pieces; every run of
    whitespace becomes one space.
    """
    parts = _ORDINAL_INDICATORS.split(text)
    parts[::2] = [unicodedata.normalize("NFKC", part) for part in parts[::2]]
    text = "".join(parts)
    if not text.isprintable():  # the rare slow path: look at each character
        text = "".join(char for char in text
                       if char.isspace() or unicodedata.category(char) not in _INVISIBLE)
    return " ".join(text.split())


def _load_processor(path):
    if not os.path.isfile(path):
        raise FileNotFoundError("SentencePiece model not found: %s" % path)
    return spm.SentencePieceProcessor(model_file=path)


def _content_ids(ids):
    """The ids before the first EOS_ID, without PAD_ID and BOS_ID, as Python ints."""
    content = []
    for token in ids:
        token = int(token)
        if token == EOS_ID:
            break
        if token not in (PAD_ID, BOS_ID):
            content.append(token)
    return content
