"""Continuous batching: concurrent requests with the same settings share model calls.

A request that finds a free slot (fewer than `concurrency` batches running)
runs at once, with whatever else is queued. Otherwise it queues; when a batch
ends, its slot passes to the oldest queued request, whose batch is every
queued request of the same key that fits (`max_batch_items`, and the length
rule of `length_groups`). docs/BENCHMARKS.md ("Serving") has the reasons
and the measurements.
"""

import collections
import threading
import time

# results: run_batch's results for the submitted items; call_seconds: the wall time of
# the call that computed them (the whole batch's, without the wait before it).
Answer = collections.namedtuple("Answer", "results call_seconds")


class BatchFailed(Exception):
    """The model call of a request's batch failed; ``__cause__`` is its exception."""


class CallCounts:
    """Totals over the model calls: calls, items and seconds (thread-safe)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._totals = {"calls": 0, "items": 0, "seconds": 0.0}

    def timed_call(self, run_batch, key, items):
        """Returns the Answer of run_batch(key, items), counted whether or not it fails."""
        started = time.perf_counter()
        try:
            results = run_batch(key, items)
        finally:
            seconds = time.perf_counter() - started
            with self._lock:
                self._totals["calls"] += 1
                self._totals["items"] += len(items)
                self._totals["seconds"] += seconds
        return Answer(results, seconds)

    def totals(self):
        """{"calls", "items", "seconds"} so far (seconds add up calls that overlapped)."""
        with self._lock:
            return dict(self._totals)


class _Waiter:
    """One request: its items, and then its answer or its batch's error."""

    def __init__(self, key, items, length):
        self.key, self.items, self.length = key, items, length
        self.batch = None  # set when this request is to run a batch
        self.answer = self.error = None
        self.wake = threading.Event()


def length_groups(waiters, max_items, step_overhead):
    """Splits requests into batches by length where one batch would cost more.

    A batch runs as many steps as its longest source, each costing about
    `step_overhead + sentences` (in one sentence's step cost). Walking the
    requests from shortest to longest, one joins the current group when that
    costs less than a group of its own: length * n <= longest * (step_overhead + n).

    Args:
      waiters: requests of one key (.items, .length).
      max_items: the most items in a group (a larger request is a group alone).
      step_overhead: a model step's fixed cost, in sentence-steps.
    Returns:
      A list of lists of waiters.
    """
    groups, items, longest = [], 0, 0
    for waiter in sorted(waiters, key=lambda waiter: waiter.length):
        if groups and items + len(waiter.items) <= max_items and \
                waiter.length * items <= longest * (step_overhead + items):
            groups[-1].append(waiter)
            items += len(waiter.items)
        else:
            groups.append([waiter])
            items = len(waiter.items)
        longest = waiter.length
    return groups


class Batcher:
    """Runs submissions in batches, up to `concurrency` at once (see the module doc).

    Args:
      run_batch: (key, items) -> results, one per item, in order.
      concurrency: the most batches running at once.
      max_batch_items: the most items in one batch (a larger request runs alone).
      step_overhead: `length_groups`' fixed cost of a model step, in sentence-steps.
    """

    def __init__(self, run_batch, concurrency, max_batch_items, step_overhead):
        self._run_batch = run_batch
        self._concurrency = concurrency
        self._max_items = max_batch_items
        self._step_overhead = step_overhead
        self._lock = threading.Lock()
        self._queue = []  # waiting requests, oldest first
        self._running = 0
        self.counts = CallCounts()
        self.queued = threading.Condition(self._lock)  # notified when a request queues

    def wait_until_queued(self, count, timeout):
        """Waits until `count` requests wait for a slot; returns whether they do."""
        with self._lock:
            return self.queued.wait_for(lambda: len(self._queue) >= count, timeout)

    def submit(self, key, items, length):
        """Returns the Answer for `items` (a request's, of source length `length`).

        Raises:
          BatchFailed: if its batch's call raised (the cause).
        """
        waiter = _Waiter(key, list(items), length)
        with self._lock:
            self._queue.append(waiter)
            if self._running < self._concurrency:
                self._running += 1
                waiter.batch = self._take_batch()
                waiter.wake.set()
            self.queued.notify_all()
        waiter.wake.wait()
        if waiter.batch is not None:
            self._run(waiter.batch, waiter)
            with self._lock:
                successor = None
                if self._queue:
                    batch = self._take_batch()
                    successor, successor.batch = batch[0], batch
                else:
                    self._running -= 1
            if successor is not None:
                successor.wake.set()
        if waiter.error is not None:
            raise BatchFailed("the model call of this request's batch failed") from waiter.error
        return waiter.answer

    def _take_batch(self):
        """Removes and returns the oldest request's batch from the queue (under the lock)."""
        oldest = self._queue[0]
        same_key = [waiter for waiter in self._queue if waiter.key == oldest.key]
        batch = next(group for group in length_groups(same_key, self._max_items,
                                                      self._step_overhead) if oldest in group)
        batch.sort(key=self._queue.index)
        chosen = set(map(id, batch))
        self._queue = [waiter for waiter in self._queue if id(waiter) not in chosen]
        return batch

    def _run(self, batch, runner):
        """Runs one batch and hands each of its requests its answer or the error."""
        items = [item for waiter in batch for item in waiter.items]
        try:
            answer = self.counts.timed_call(self._run_batch, batch[0].key, items)
            start = 0
            for waiter in batch:
                waiter.answer = Answer(answer.results[start:start + len(waiter.items)],
                                       answer.call_seconds)
                start += len(waiter.items)
        except Exception as error:  # whatever failed, every request of the batch hears of it
            for waiter in batch:
                waiter.error = error
        for waiter in batch:
            if waiter is not runner:
                waiter.wake.set()


class Unbatched:
    """Runs every submission alone, in its caller's thread (for comparison)."""

    def __init__(self, run_batch):
        self._run_batch = run_batch
        self.counts = CallCounts()

    def submit(self, key, items, length):
        """Returns the Answer of run_batch(key, items)."""
        return self.counts.timed_call(self._run_batch, key, list(items))
