"""Hot reload: serves a model directory's newest model, built beside the one serving.

A poll stats the files of the model `trained_checkpoint` picks (or of the newest export beside
--export_dir); when they differ from the served ones, a new Translator is built and warmed up
in the poll's thread, then swapped in between batches. Why: docs/SERVING-NOTES.md, "Hot reload".
"""

import collections
import gc
import glob
import logging
import os
import time

from decode.translator import Translator
from server.training_status import has_model_files, trained_checkpoint

LOG = logging.getLogger("seq2seq.serve")

# A model to serve: its checkpoint prefix or SavedModel directory, and its files' stats.
Candidate = collections.namedtuple("Candidate", "path files")


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
    translator = Translator(
        model_dir, export_dir=path if exported else None, checkpoint=None if exported else path,
        hparams="decode.concurrent_batches=1,decode.inter_op_threads=-1,"
                "decode.intra_op_threads=%d" % intra_op_threads)
    try:
        LOG.info("model %s (step %d) restored from %s; building its decoder graphs",
                 translator.model_name, translator.step, path)
        widths = [translator.default_beam_width]
        translator.warm_up([d for d in translator.decoders if d != "unrolled"], widths)
        if warm_up_source_tokens and "unrolled" in translator.decoders:
            translator.warm_up(["unrolled"], widths, max_source_length=warm_up_source_tokens)
    except BaseException:
        translator.close()
        raise
    return translator


class Reloader:
    """Fills a ModelSlot with a model directory's model, then with each newer one `poll` finds.

    Args:
      slot: the server's ModelSlot.
      model_dir: a model directory, perhaps still being trained or not yet created.
      export_dir: serve this SavedModel (and newer ones beside it) instead of checkpoints.
      build: (model_dir, path, exported) -> a warmed-up Translator.
    """

    def __init__(self, slot, model_dir, export_dir=None, build=build_translator):
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
        leaves the served model in place. Returns whether a new model was swapped in."""
        candidate = self.candidate()
        if candidate is None or candidate.files in (self._served, self._failed):
            return False
        started = time.monotonic()
        try:
            translator = self._build(self._model_dir, candidate.path, bool(self._export_dir))
        except Exception as error:  # noqa: BLE001 (a bad checkpoint must not stop the server)
            message = "%s: %s" % (type(error).__name__, str(error).strip().split("\n")[0])
            self._failed = candidate.files
            self._slot.reload_error = {"path": candidate.path, "message": message,
                                       "failed_at": time.time()}
            LOG.error("cannot load %s (%s); %s", candidate.path, message,
                      "still serving step %d" % self._slot.loaded()[0].step if self._slot.ready
                      else "waiting for another checkpoint")
            gc.collect()  # the failed graph and session
            return False
        previous_step = self._slot.loaded()[0].step if self._slot.ready else None
        self._slot.fill(translator)
        self._served, self._failed = candidate.files, None
        LOG.info("model %s (step %d) loaded in %.1fs%s", translator.model_name, translator.step,
                 time.monotonic() - started, "" if previous_step is None else
                 "; it replaces step %d from the next batch on" % previous_step)
        gc.collect()  # the replaced graph, once its batches are done
        return True
