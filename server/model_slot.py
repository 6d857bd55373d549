"""The model being served, swapped between batches for each newer one its model directory holds
(docs/SERVING-NOTES.md, "Hot reload"), with the page's examples: held-out and lab sentences."""

import collections
import contextlib
import gc
import glob
import json
import logging
import os
import threading
import time

from server.request_checks import ApiError
from server.training_status import has_model_files, trained_checkpoint, waiting_message

LOG = logging.getLogger("seq2seq.serve")
MAX_EXAMPLES = 8
LAB_REPORT = "lab.json"  # `make lab`'s lab.compare --sweep --exact --json MODEL_DIR/lab.json
MAX_LAB_EXAMPLES = 40
# What ModelSlot.loaded returns: the translator, its page examples and the lab's.
Loaded = collections.namedtuple("Loaded", "translator examples lab_examples")
# A model to serve: its checkpoint prefix or SavedModel directory, and its files' stats.
Candidate = collections.namedtuple("Candidate", "path files")


class ModelSlot:
    """The translator being served and its page examples; `fill` swaps in another between batches.

    Args:
      translator: served at once (None: later, by `fill`).
      model_dir: the model directory whose training the 503 message follows, or None.
      lab_dir: the model directory whose lab.json (`read_lab_examples`) the page offers, or None.
    Attributes (/v1/info's): loaded_at (unix time), previous_step (the replaced translator's)
      and reload_error ({"path", "message", "failed_at"} of the last failed load since a fill).
    """

    def __init__(self, translator=None, model_dir=None, lab_dir=None):
        self._lock = threading.Lock()
        self._loaded = None  # a Loaded
        self._batches = collections.Counter()  # translator -> its batches running
        self._model_dir, self._lab_dir = model_dir, lab_dir
        self.loaded_at = self.previous_step = self.reload_error = None
        if translator is not None:
            self.fill(translator)

    ready = property(lambda self: self._loaded is not None, doc="Whether a model is served.")

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
        """Returns the Loaded served, or raises ApiError 503 saying what training is doing or
        why loading failed."""
        if self._loaded is None:
            waiting = waiting_message(self._model_dir) if self._model_dir else None
            if waiting is None and self.reload_error:
                waiting = "cannot load %s (%s); waiting for a newer model" % (
                    self.reload_error["path"], self.reload_error["message"])
            raise ApiError(503, waiting or "the model is still loading; retry shortly")
        return self._loaded

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
                self._batches -= collections.Counter([translator])  # a count of 0: dropped
                retired = translator not in self._batches and (
                    translator is not self._loaded.translator)
            if retired:
                translator.close()


def read_examples(config, limit=MAX_EXAMPLES):
    """Up to `limit` sentences of data.data_dir/test.src (else dev.src), shortest to longest."""
    configured = (config.get("data") or {}).get("data_dir")
    if not configured:
        LOG.info("no example sentences for the page: the config names no data.data_dir")
        return []
    data_dir = os.path.abspath(configured)
    splits = (os.path.join(data_dir, name) for name in ("test.src", "dev.src"))
    for path in filter(os.path.isfile, splits):
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


def read_lab_examples(model_dir):
    """Up to MAX_LAB_EXAMPLES of the lab's examples in `model_dir`/lab.json (docs/API.md), each
    {"index", "source", "reference", "kinds", "note"}, those with a source and kinds; [] without."""
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
    return kept[:MAX_LAB_EXAMPLES]


def file_stats(paths, root):
    """((path relative to `root`, size, mtime_ns), ...) of the files that exist, sorted."""
    stats = []
    for path in sorted(paths):
        try:
            stat = os.stat(path)
        except OSError:  # deleted since listed
            continue
        stats.append((os.path.relpath(path, root), stat.st_size, stat.st_mtime_ns))
    return tuple(stats)


def newest_export(export_dir):
    """`export_dir`, or the newest SavedModel beside it if its name is a timestamp."""
    parent, name = os.path.split(os.path.normpath(export_dir))
    if not name.isdigit():
        return export_dir
    newer = [entry for entry in os.listdir(parent) if entry.isdigit() and int(entry) > int(name)
             and os.path.isfile(os.path.join(parent, entry, "saved_model.pb"))]
    return os.path.join(parent, max(newer, key=int)) if newer else export_dir


def build_translator(model_dir, path, exported, intra_op_threads, warm_up_source_tokens):
    """A Translator of the checkpoint (or SavedModel) at `path`, its default-width graphs built
    and run once (the unrolled decoder's for sources of up to `warm_up_source_tokens`)."""
    from decode.translator import Translator  # imports TensorFlow: serve.py's loader thread
    translator = Translator(
        model_dir, export_dir=path if exported else None, checkpoint=None if exported else path,
        hparams="decode.concurrent_batches=1,decode.inter_op_threads=-1,"
                "decode.intra_op_threads=%d" % intra_op_threads)
    try:
        LOG.info("model %s (step %d) restored from %s; building its decoder graphs",
                 translator.model_name, translator.step, path or " + ".join(model_dir))
        widths = [translator.default_beam_width]
        translator.warm_up([d for d in translator.decoders if d != "unrolled"], widths)
        if warm_up_source_tokens and "unrolled" in translator.decoders:
            translator.warm_up(["unrolled"], widths, max_source_length=warm_up_source_tokens)
    except BaseException:
        translator.close()
        raise
    return translator


class Reloader:
    """Fills `slot` (a ModelSlot) with the model of `model_dir` (perhaps not yet created), or
    the SavedModel `export_dir`, then with each newer one `poll` finds; `build(model_dir, path,
    exported)` returns a warmed-up Translator."""

    def __init__(self, slot, model_dir, export_dir, build):
        self._slot, self._model_dir, self._export_dir = slot, model_dir, export_dir
        self._build = build
        self._served = self._failed = None  # Candidate.files
        self._said = None  # the last waiting line logged, not repeated

    def candidate(self):
        """The Candidate the model directory serves now, or None while it has none."""
        if self._export_dir:
            path = newest_export(self._export_dir)
            return Candidate(path, file_stats(glob.glob(os.path.join(path, "**"), recursive=True),
                                              os.path.dirname(path)))
        waiting = "waiting for train.py to write config.yaml and the tokenizer into %s"
        if has_model_files(self._model_dir):
            path = trained_checkpoint(self._model_dir)
            if path:
                files = (glob.glob(glob.escape(path) + ".index")
                         + glob.glob(glob.escape(path) + ".data-*"))
                return Candidate(path, file_stats(files, os.path.dirname(path)))
            waiting = "%s holds no checkpoint past step 0 yet; waiting for training's first"
        if waiting != self._said:
            LOG.info(waiting, self._model_dir)
            self._said = waiting
        return None

    def poll(self):
        """Loads the candidate unless it is the served one or has failed as it is; a failure
        leaves the served model in place."""
        candidate = self.candidate()
        if candidate is None or candidate.files in (self._served, self._failed):
            return
        started = time.monotonic()
        served_step = self._slot.loaded().translator.step if self._slot.ready else None
        try:
            translator = self._build(self._model_dir, candidate.path, bool(self._export_dir))
        except Exception as error:  # noqa: BLE001 (a bad checkpoint must not stop the server)
            message = "%s: %s" % (type(error).__name__, str(error).strip().split("\n")[0])
            self._failed = candidate.files
            self._slot.reload_error = {"path": candidate.path, "message": message,
                                       "failed_at": time.time()}
            LOG.error("cannot load %s (%s); %s", candidate.path, message,
                      "waiting for another checkpoint" if served_step is None
                      else "still serving step %d" % served_step)
            gc.collect()  # the failed graph and session
            return
        self._slot.fill(translator)
        self._served, self._failed = candidate.files, None
        LOG.info("model %s (step %d) loaded in %.1fs%s", translator.model_name, translator.step,
                 time.monotonic() - started, "" if served_step is None else
                 "; it replaces step %d from the next batch on" % served_step)
        gc.collect()  # the replaced graph, once its batches are done
