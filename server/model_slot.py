"""The model being served, swapped between batches, with the example sentences the page offers
beside it: held-out sentences, and the decoding lab's sentences where decoding choices matter."""

import collections
import contextlib
import json
import logging
import os
import threading
import time

from server.request_checks import ApiError

LOG = logging.getLogger("seq2seq.serve")
MAX_EXAMPLES = 8
LAB_REPORT = "lab.json"  # `make lab`'s decode.compare --sweep --exact --json MODEL_DIR/lab.json
MAX_LAB_EXAMPLES = 40
# What ModelSlot.loaded returns: the translator, its page examples and the lab's.
Loaded = collections.namedtuple("Loaded", "translator examples lab_examples")


class ModelSlot:
    """The translator being served and its page examples; `fill` swaps in another between batches.

    Args:
      translator: served at once (None: later, by `fill`).
      waiting: returns the 503 message while no translator is loaded.
      lab_dir: the model directory whose lab.json (`read_lab_examples`) the page offers, or None.
    Attributes:
      loaded_at (unix time), previous_step (of the translator replaced, or None) and
      reload_error ({"path", "message", "failed_at"} of the newest model that failed to load
      since the last fill, or None): for /v1/info, set by fill and by serve.py's reloader.
    """

    def __init__(self, translator=None, waiting=lambda: "the model is still loading; retry "
                 "shortly", lab_dir=None):
        self._lock = threading.Lock()
        self._loaded = None  # a Loaded
        self._batches = collections.Counter()  # translator -> its batches running
        self._waiting, self._lab_dir = waiting, lab_dir
        self.loaded_at = self.previous_step = self.reload_error = None
        if translator is not None:
            self.fill(translator)

    @property
    def ready(self):
        return self._loaded is not None

    def fill(self, translator):
        """Serves `translator` from the next batch on; the one it replaces is closed once the
        batches running on it are done."""
        loaded = Loaded(translator, read_examples(translator.config),
                        read_lab_examples(self._lab_dir) if self._lab_dir else [])
        with self._lock:
            previous, self._loaded = self._loaded, loaded
            self.loaded_at, self.reload_error = time.time(), None
            self.previous_step = previous.translator.step if previous else None
            idle = previous is not None and not self._batches[previous.translator]
        if idle:
            previous.translator.close()

    def loaded(self):
        """Returns the Loaded served, or raises ApiError 503."""
        loaded = self._loaded
        if loaded is None:
            raise ApiError(503, self._waiting())
        return loaded

    @contextlib.contextmanager
    def holding(self):
        """Yields the translator a batch is to run on, kept open until the block ends."""
        with self._lock:
            translator = self.loaded().translator
            self._batches[translator] += 1
        try:
            yield translator
        finally:
            with self._lock:
                self._batches[translator] -= 1
                retired = not self._batches[translator] and \
                    translator is not self._loaded.translator
                if not self._batches[translator]:
                    del self._batches[translator]
            if retired:
                translator.close()


def read_examples(config, limit=MAX_EXAMPLES):
    """Up to `limit` sentences of data.data_dir/test.src (else dev.src), shortest to longest."""
    configured = (config.get("data") or {}).get("data_dir")
    if not configured:
        LOG.info("no example sentences for the page: the config names no data.data_dir")
        return []
    data_dir = os.path.abspath(configured)
    for name in ("test.src", "dev.src"):
        path = os.path.join(data_dir, name)
        if not os.path.isfile(path):
            continue
        try:
            with open(path, encoding="utf-8") as split_file:  # short chips beside full sentences
                sentences = sorted(filter(None, dict.fromkeys(map(str.strip, split_file))), key=len)
        except (OSError, ValueError) as error:  # ValueError: not UTF-8
            LOG.warning("no example sentences: cannot read %s (%s)", path, error)
            return []
        if not sentences:
            LOG.info("no example sentences for the page: %s holds none", path)
        count = min(limit, len(sentences))
        return [sentences[index * len(sentences) // count] for index in range(count)]
    LOG.info("no example sentences for the page: %s holds no test.src or dev.src%s", data_dir,
             "" if os.path.isabs(configured) else
             " (data.data_dir %s is relative to the working directory)" % json.dumps(configured))
    return []


def read_lab_examples(model_dir, limit=MAX_LAB_EXAMPLES):
    """The decoding lab's examples in `model_dir`/lab.json (docs/API.md, the lab's report): up to
    `limit` of {"index", "source", "reference", "kinds", "note"}, the ones of a source, a list
    of kinds and a note; [] without the file (logged when it cannot be read)."""
    path = os.path.join(model_dir, LAB_REPORT)
    if not os.path.isfile(path):
        return []
    try:
        with open(path, encoding="utf-8") as report:
            examples = json.load(report).get("examples") or []
    except (OSError, ValueError, AttributeError) as error:  # AttributeError: not an object
        LOG.warning("no lab examples for the page: cannot read %s (%s)", path, error)
        return []
    kept = [{key: example.get(key) for key in ("index", "source", "reference", "kinds", "note")}
            for example in examples if isinstance(example, dict)
            and isinstance(example.get("source"), str) and isinstance(example.get("kinds"), list)]
    if len(kept) < len(examples):
        LOG.warning("%s: %d of its %d examples lack a source or kinds", path,
                    len(examples) - len(kept), len(examples))
    return kept[:limit]
