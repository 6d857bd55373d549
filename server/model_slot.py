"""The translator the server answers with, once it has been loaded.

The HTTP server starts before the model is loaded (so that /healthz can say
503 meanwhile); a loader thread fills the slot, request handlers read it.
Filling is one attribute assignment, which is atomic: no lock is needed.
"""

import collections

from server.examples import read_examples

# A translator and the example sentences of its held-out split (server.examples).
Loaded = collections.namedtuple("Loaded", ["translator", "examples"])


class ModelNotReady(Exception):
    """The translator is still loading."""


class ModelSlot:
    """Holds one translator; empty until :meth:`fill` is called.

    Args:
      translator: a translator to start with (tests), or None.
    """

    def __init__(self, translator=None):
        self._loaded = None
        if translator is not None:
            self.fill(translator)

    @property
    def ready(self):
        return self._loaded is not None

    def fill(self, translator):
        """Makes `translator` the one every later request uses.

        Its example sentences are read here, once, with the model.
        """
        self._loaded = Loaded(translator, read_examples(translator.config))

    def loaded(self):
        """Returns the Loaded translator and examples, or raises ModelNotReady."""
        loaded = self._loaded
        if loaded is None:
            raise ModelNotReady("the model is still loading; retry shortly")
        return loaded

    def get(self):
        """Returns the translator, or raises ModelNotReady."""
        return self.loaded().translator
