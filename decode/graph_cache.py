"""One graph and session for a model's decoder graphs, each built on first use and its new
variables restored from the checkpoint; thread-safe."""

import collections
import contextlib
import contextvars
import threading
import time

import tensorflow.compat.v1 as tf

# A decoder graph built (unrolled_length None but for "unrolled"; shape: the options shaping it).
Variant = collections.namedtuple(
    "Variant", "decoder beam_width unrolled_length trace shape build_seconds num_ops")


class CheckpointValues:
    """A checkpoint's values, loaded into the variables under `scope` as builds create them,
    each from its name with `scope` replaced by `saved_scope` (e.g. "member_1/" by "seq2seq/")."""

    def __init__(self, checkpoint, scope="", saved_scope=""):
        self.checkpoint, self._scope, self._saved_scope = checkpoint, scope, saved_scope
        self._reader = tf.train.load_checkpoint(checkpoint)
        self.step = int(self._reader.get_tensor(tf.GraphKeys.GLOBAL_STEP))
        self._restored = set()

    def restore_new(self, session):
        """Loads the variables under the scope not yet restored; ValueError names one the
        checkpoint lacks or holds in another shape."""
        for variable in session.graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES):
            name = variable.op.name
            if name in self._restored or not name.startswith(self._scope):
                continue
            saved = self._saved_scope + name[len(self._scope):]
            if not self._reader.has_tensor(saved):
                raise ValueError("checkpoint %s has no variable %s: was it trained with "
                                 "a different model config?" % (self.checkpoint, saved))
            value = self._reader.get_tensor(saved)
            if list(value.shape) != variable.shape.as_list():
                raise ValueError("checkpoint %s holds %s with shape %s, the config's model "
                                 "needs %s" % (self.checkpoint, saved, list(value.shape),
                                               variable.shape.as_list()))
            variable.load(value, session)
            self._restored.add(name)


class GraphCache:
    """Graphs by key, each built once into `session`'s graph and restored from `checkpoints`
    (`CheckpointValues`; the graph built so far is restored at once)."""

    def __init__(self, session, checkpoints=()):
        self._session, self._checkpoints = session, list(checkpoints)
        self._lock = threading.Lock()
        self._built = {}  # key -> (fetches, Variant)
        self._recordings = contextvars.ContextVar("recordings", default=())  # open blocks
        self._restore_new()

    def _restore_new(self):
        for checkpoint in self._checkpoints:
            checkpoint.restore_new(self._session)

    @property
    def variants(self):
        """The `Variant`s built so far, in build order."""
        return [variant for _, variant in list(self._built.values())]

    @contextlib.contextmanager
    def recording_builds(self):
        """Yields a list of the `Variant` of each graph this thread's calls in the block needed
        unbuilt (built, or waited for); blocks nest."""
        built = []
        token = self._recordings.set(self._recordings.get() + (built,))
        try:
            yield built
        finally:
            self._recordings.reset(token)

    def recorded_here(self, run):
        """`run` wrapped to record its builds, on any thread, into this thread's open blocks."""
        context = contextvars.copy_context()  # each call its own copy: calls may run at once
        return lambda *args: context.copy().run(run, *args)

    def fetches(self, key, build):
        """The fetches of graph `key` (a Variant's first five fields), made by `build()` on first
        use and recorded (once) in this thread's `recording_builds`."""
        built = self._built.get(key)
        if built is None:
            with self._lock:  # a graph enters _built only once built and restored
                built = self._built.get(key)
                if built is None:
                    graph = self._session.graph
                    started, start_ops = time.perf_counter(), len(graph.get_operations())
                    with graph.as_default():
                        fetches = build()
                    variant = Variant(*key, build_seconds=time.perf_counter() - started,
                                      num_ops=len(graph.get_operations()) - start_ops)
                    self._restore_new()
                    built = self._built[key] = (fetches, variant)
                for recording in self._recordings.get():  # under the lock: once
                    if built[1] not in recording:
                        recording.append(built[1])
        return built[0]
