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

    def translate_tokens(self, token_ids, decoder="while_loop", beam_width=None, n_best=1,
                         trace=False, options=None):
        """Each sentence's own source tokens, detokenized, as its one hypothesis, score 0."""
        self.check_options(decoder, beam_width, n_best, options)
        return [Translation(text, 0.0, [Hypothesis(text, 0.0)], False, None)
                for text in (self._tokenizer.decode_source(ids) for ids in token_ids)]


if __name__ == "__main__":
    # serve.py's loader imports Translator from decode.translator when it runs.
    decode.translator.Translator = InstantTranslator
    import serve
    sys.exit(serve.main())
