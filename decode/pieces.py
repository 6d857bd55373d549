"""The Translator's text side (its base class): what callers hand it, as ids (texts, their
placeholders protected; target pieces, a translation's own `pieces`, to score; target prefixes and
constraints), what a batch of them forces, and ids back to text; bad input is a ValueError naming
the argument, index and value.
"""

from data_pipeline.placeholders import TOKENS
from data_pipeline.tokenizer import EOS_ID, UNK_ID, model_text
from decode.graphs import output_length_limit, pad_batch, pad_constraints
from decode.request import shown
from seq2seq.decoding_options import takes

END_PIECE = "</s>"


class Pieces:
    """A tokenizer's texts and target pieces as ids, checked."""

    def __init__(self, tokenizer):
        self._tokenizer = tokenizer
        self._piece_ids = {piece: index for index, piece in enumerate(
            tokenizer.target_pieces(range(tokenizer.target_vocab_size)))}
        self._protected_ids = [self._piece_ids[token]
                               for token in TOKENS[:tokenizer.protected_tokens]]

    def tokenize(self, text):
        """Source text -> its ids (no begin or end token), each placeholder and tag a protected
        token (for a model trained with them: data_pipeline/placeholders.py)."""
        return self._tokenizer.encode_source(self._tokenizer.protect(text)[0])

    def placeholders(self, text):
        """The placeholders and tags `tokenize` protects in `text`, in order (`originals`)."""
        return self._tokenizer.protect(text)[1]

    def detokenize(self, ids):
        """Target ids -> text, up to the first end token."""
        return self._tokenizer.decode_target(ids)

    def target_ids(self, target, name):
        """A target text or pieces (a last "</s>" dropped) -> its ids; ValueError naming `name`."""
        if isinstance(target, str):
            return self._tokenizer.encode_target(target)
        return self._ids(target, name)

    def prefix_ids(self, prefix, name):
        """The target ids a target prefix forces: None or "" (none), a text (no character the
        target vocabulary lacks) or a list of target pieces (no "</s>"); ValueError naming
        `name`."""
        if prefix is not None and not isinstance(prefix, str):
            return self._ids(prefix, name, may_end=False)
        ids, encode = self._tokenizer.encode_target(prefix or ""), self._tokenizer.encode_target
        if UNK_ID in ids:
            raise ValueError("%s %s holds characters the target vocabulary lacks: %s" % (
                name, shown(prefix), " ".join(sorted(
                    {char for char in model_text(prefix) if UNK_ID in encode(char)})) or "?"))
        return ids

    def constraint_ids(self, constraint, name):
        """`prefix_ids` for a constraint, which must not be empty."""
        ids = self.prefix_ids(constraint, name)
        if not ids:
            raise ValueError("%s is empty: a constraint needs at least one piece" % name)
        return ids

    def _texts(self, name, texts, source=True):
        """A list of strings -> their ids (sources: non-empty)."""
        if isinstance(texts, str):
            raise ValueError("%s must be a list of strings, got one string "
                             "(wrap a single sentence in a list)" % name)
        encode = self.tokenize if source else self._tokenizer.encode_target
        token_ids = []
        for index, text in enumerate(texts):
            if not isinstance(text, str):
                raise ValueError("%s[%d] must be a string, got %s"
                                 % (name, index, type(text).__name__))
            token_ids.append(encode(text))
            if source and not token_ids[-1]:
                raise ValueError("%s[%d] is empty (no source tokens)" % (name, index))
        return token_ids

    def _targets(self, count, targets, target_pieces):
        """The target ids of `count` pairs: target_pieces[i]'s, or where it (or the list) is None
        the text targets[i]'s (targets may be None if no entry is)."""
        for name, values in (("targets", targets), ("target_pieces", target_pieces)):
            if values is not None and len(values) != count:
                raise ValueError("%d sources but %d %s: give one per source"
                                 % (count, len(values), name))
        given = target_pieces or [None] * count
        texts = self._texts("targets", targets or ["" if pieces is not None else None
                                                   for pieces in given], source=False)
        return [ids if pieces is None else self._ids(pieces, "target_pieces[%d]" % index)
                for index, (ids, pieces) in enumerate(zip(texts, given))]

    def _ids(self, pieces, name, may_end=True):
        """A list of target pieces -> their ids, without a last "</s>" (`may_end`: allowed).
        Any target piece but "</s>" may come elsewhere (a model may emit "<pad>" or "<s>")."""
        if not isinstance(pieces, (list, tuple)):
            raise ValueError("%s must be a list of target pieces, got %s" % (name, shown(pieces)))
        pieces = list(pieces)[:-1] if may_end and list(pieces[-1:]) == [END_PIECE] else pieces
        ids = [self._piece_ids.get(piece) if isinstance(piece, str) else None for piece in pieces]
        for index, (piece, piece_id) in enumerate(zip(pieces, ids)):
            if piece_id in (None, EOS_ID):
                raise ValueError("%s[%d] is %s, %s" % (name, index, shown(piece), (
                    "not a piece of the target vocabulary" if piece_id is None else
                    "which ends a translation: it may only come last" if may_end
                    else "which ends a translation")))
        return ids

    def _prefixes(self, target_prefixes, count):
        """None (no prefixes), or the ids of `count` target prefixes (`prefix_ids`)."""
        if target_prefixes is not None and (isinstance(target_prefixes, str) or
                                            len(target_prefixes) != count):
            raise ValueError("target_prefixes must be a list of one prefix per sentence (%d), "
                             "got %s" % (count, shown(target_prefixes)))
        return target_prefixes and [self.prefix_ids(prefix, "target_prefixes[%d]" % index)
                                    for index, prefix in enumerate(target_prefixes)]

    def _constraints(self, constraints, count):
        """None (no constraints), or per sentence of `count` the ids of its constraints: None or
        a list of `constraint_ids`."""
        if constraints is None:
            return None
        if isinstance(constraints, str) or len(constraints) != count:
            raise ValueError("constraints must be a list of one list per sentence (%d), got %s"
                             % (count, shown(constraints)))
        for index, given in enumerate(constraints):
            if isinstance(given, str):
                raise ValueError("constraints[%d] must be a list of constraints, got one string "
                                 "(wrap it in a list)" % index)
        return [[self.constraint_ids(each, "constraints[%d][%d]" % (index, position))
                 for position, each in enumerate(given or ())]
                for index, given in enumerate(constraints)]

    def _forced(self, sentences, request, decode_params):
        """What a batch (source id lists) forces under `request`, made for it: search_encoded's
        inputs, padded ({name: array}: target_prefix [b, p], constraints [b, C, L], protected_ids
        [b, P]; keep mode without diverse groups makes each protected token of a source one more
        constraint and blocks the others), and each sentence's length limit, raised to hold its
        forced pieces and the end token."""
        prefixes, forced = request.target_prefix or [()] * len(sentences), {}
        if request.target_prefix:
            forced["target_prefix"] = pad_batch(prefixes, -1)[0]
        constraints = request.constraints or [()] * len(sentences)
        if self._protected_ids and takes(request.decoder, "placeholders") and (
                request.placeholders == "keep" and request.diverse_beam_groups == 1):
            constraints = [list(given) + [[piece] for piece in self._tokenizer.protected_target_ids(
                ids)] for ids, given in zip(sentences, constraints)]
            forced["protected_ids"] = [self._protected_ids] * len(sentences)
        if any(constraints):  # none: the protected pieces blocked, with no constrained step
            forced["constraints"] = pad_constraints(constraints)
        return forced, [output_length_limit(len(ids), decode_params, len(prefix) + sum(
            map(len, given))) for ids, prefix, given in zip(sentences, prefixes, constraints)]
