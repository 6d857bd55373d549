"""serve.py around a translator that answers at once: what serving costs without decoding.

The same app, validation, batcher and waitress server as serve.py, with the model directory's
tokenizer and options, but `translate_tokens` decodes nothing: each text comes back, tokenized
and detokenized, as its own translation, score 0. Under `python -m bench.serve_load --instant`
it measures the ceiling that HTTP, JSON, validation and thread hand-offs alone leave.

Usage: the arguments of serve.py.
  .venv/bin/python -m bench.instant_server --model_dir runs/serve_small --port 0
"""

import sys

import decode.translator
from decode.translator import Hypothesis, Translation, Translator


class InstantTranslator(Translator):
    """A Translator that checks its options and then decodes nothing."""

    def translate_tokens(self, token_ids, *request, originals=None, **fields):
        """Each sentence's own source tokens, detokenized, as its one hypothesis, score 0, once
        the request is valid (target prefixes, constraints and placeholders ignored)."""
        self.request(*request, sentences=len(token_ids), **fields)
        translations = []
        for ids in token_ids:
            text, pieces = self._tokenizer.decode_source(ids), self._tokenizer.source_pieces(ids)
            translations.append(Translation(text, 0.0, [Hypothesis(text, 0.0, pieces)], False,
                                            pieces=pieces))
        return translations


if __name__ == "__main__":
    # serve.py's loader imports Translator from decode.translator when it runs.
    decode.translator.Translator = InstantTranslator
    import serve
    sys.exit(serve.main())
