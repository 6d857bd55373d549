"""Continuous batching: concurrent requests of the same settings share model calls.

Rules and reasons: docs/BENCHMARKS.md, "Serving: continuous batching".
"""

import collections
import threading
import time

# call_seconds: the wall time of the batch's model call, without the wait before it.
Answer = collections.namedtuple("Answer", "results call_seconds")


class BatchFailed(Exception):
    """The model call of a request's batch failed; ``__cause__`` is its exception."""


class _Waiter:
    """One request: its items, and then its answer or its batch's error."""

    def __init__(self, key, items, length):
        self.key, self.items, self.length = key, items, length
        self.batch = None  # the batch this request is to run
        self.answer = self.error = None
        self.wake = threading.Event()


def length_groups(waiters, max_items, step_overhead):
    """Splits requests into groups: one joins when length * items <= longest * (overhead + items).

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
    """Runs submissions in batches, up to `concurrency` at once.

    Args:
      run_batch: (key, items) -> results, one per item, in order.
      concurrency: the most batches running at once (float("inf"): no batching).
      max_batch_items: the most items in one batch (a larger request runs alone).
      step_overhead: `length_groups`' fixed cost of a model step, in sentence-steps.
    """

    def __init__(self, run_batch, concurrency, max_batch_items, step_overhead):
        self._run_batch = run_batch
        self.concurrency = concurrency
        self._max_items = max_batch_items
        self._step_overhead = step_overhead
        self._lock = threading.Lock()
        self._queued = threading.Condition(self._lock)
        self._queue = []  # waiting requests, oldest first
        self._running = 0
        self._totals = {"calls": 0, "items": 0, "seconds": 0.0, "running": 0}

    def totals(self):
        """The model calls so far: calls, items, seconds (overlapping calls add up), running."""
        with self._lock:
            return dict(self._totals)

    def wait_until_queued(self, count, timeout):
        """Waits until `count` requests wait for a slot; returns whether they do."""
        with self._lock:
            return self._queued.wait_for(lambda: len(self._queue) >= count, timeout)

    def submit(self, key, items, length):
        """Returns the Answer for a request's `items` (longest source: `length` tokens).

        Raises:
          BatchFailed: if its batch's call raised (the cause).
        """
        waiter = _Waiter(key, list(items), length)
        with self._lock:
            self._queue.append(waiter)
            if self._running < self.concurrency:  # then the queue held no other request
                self._running += 1
                waiter.batch = self._take_batch()
                waiter.wake.set()
            self._queued.notify_all()
        waiter.wake.wait()
        if waiter.batch is not None:
            self._run(waiter.batch, waiter)
            with self._lock:  # the slot passes to the oldest queued request, if any
                if self._queue:
                    batch = self._take_batch()
                    batch[0].batch = batch
                    batch[0].wake.set()
                else:
                    self._running -= 1
        if waiter.error is not None:
            raise BatchFailed("the model call of this request's batch failed") from waiter.error
        return waiter.answer

    def _take_batch(self):
        """Removes the oldest request's batch from the queue and returns it (under the lock)."""
        oldest = self._queue[0]
        same_key = [waiter for waiter in self._queue if waiter.key == oldest.key]
        batch = next(group for group in length_groups(same_key, self._max_items,
                                                      self._step_overhead) if oldest in group)
        self._queue = [waiter for waiter in self._queue if waiter not in batch]
        return sorted(batch, key=same_key.index)

    def _run(self, batch, runner):
        """Runs one batch, counted, and hands each of its requests its answer or the error."""
        items = [item for waiter in batch for item in waiter.items]
        with self._lock:
            self._totals["running"] += 1
        started = time.perf_counter()
        try:
            results = self._run_batch(batch[0].key, items)
        except Exception as error:
            results = None
            for waiter in batch:
                waiter.error = error
        seconds = time.perf_counter() - started
        with self._lock:
            self._totals["running"] -= 1
            for name, value in (("calls", 1), ("items", len(items)), ("seconds", seconds)):
                self._totals[name] += value
        start = 0
        for waiter in batch:
            if results is not None:
                waiter.answer = Answer(results[start:start + len(waiter.items)], seconds)
                start += len(waiter.items)
            if waiter is not runner:
                waiter.wake.set()
