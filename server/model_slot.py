"""The translator the server answers with, once it has been loaded.

The HTTP server starts before the model is loaded (so that /healthz can say
503 meanwhile); a loader thread fills the slot, request handlers read it.
Filling is one attribute assignment, which is atomic: no lock is needed.
"""


class ModelNotReady(Exception):
    """The translator is still loading."""


class ModelSlot:
    """Holds one translator; empty until :meth:`fill` is called.

    Args:
      translator: a translator to start with (tests), or None.
    """

    def __init__(self, translator=None):
        self._translator = translator

    @property
    def ready(self):
        return self._translator is not None

    def fill(self, translator):
        """Makes `translator` the one every later request uses."""
        self._translator = translator

    def get(self):
        """Returns the translator, or raises ModelNotReady."""
        translator = self._translator
        if translator is None:
            raise ModelNotReady("the model is still loading; retry shortly")
        return translator
