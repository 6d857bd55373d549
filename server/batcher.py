"""Continuous batching: concurrent requests of the same settings share model calls, each call
logged on request (the rules: docs/SERVING-NOTES.md; the figures: docs/BENCHMARKS.md)."""

import collections
import itertools
import json
import logging
import math
import threading
import time

LOG = logging.getLogger("seq2seq.serve")
# call_seconds: the wall time of the batch's model call, without the wait before it.
Answer = collections.namedtuple("Answer", "results call_seconds")
# One model call as the batch log records it.
Call = collections.namedtuple("Call", "started slot idle_seconds wall_seconds cpu_seconds error")


class BatchFailed(Exception):
    """The model call of a request's batch failed; ``__cause__`` is its exception."""


class _Waiter:
    """One request: its items, and then its batch to run, its answer or its batch's error."""

    def __init__(self, key, items, length):
        self.key, self.items, self.length = key, items, length
        self.arrived = time.perf_counter()
        self.batch = self.slot = None  # the batch it runs; (slot index, idle seconds) or Nones
        self.answer = self.error = None
        self.done = False
        self.wake = threading.Event()  # a batch to run, the answer, or a hold to re-check


def length_groups(waiters, max_items, step_overhead):
    """Splits requests of one key (.items, .length), shortest first, into lists of at most
    `max_items` items (a larger request alone): one joins when length * items <= longest *
    (step_overhead + items), step_overhead being a model step's fixed cost in sentence-steps."""
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

    A request at an idle server runs at once. A slot that is free while others are busy
    starts a batch once the queue holds its fair share of the items queued and running,
    ceil((queued + running) / (busy slots + 1)), or `hold_seconds` after the later of its
    freeing and the oldest request's arrival; it takes at most that share (whole requests).

    Args:
      run_batch: (key, items) -> results, one per item, in order.
      concurrency: the most batches running at once (float("inf"): no batching, no hold).
      max_batch_items: the most items in one batch (a larger request runs alone).
      step_overhead: `length_groups`' fixed cost of a model step, in sentence-steps.
      hold_seconds: the longest a free slot beside busy ones waits for its share (0: it
        takes every queued request of the oldest one's group at once).
      batch_log: a path that gets one JSON line per model call (`BatchLog`); "": none.
    """

    def __init__(self, run_batch, concurrency, max_batch_items, step_overhead,
                 hold_seconds=0.0, batch_log=""):
        self._run_batch, self.concurrency = run_batch, concurrency
        self._max_items, self._step_overhead = max_batch_items, step_overhead
        self._hold_seconds = 0.0 if math.isinf(concurrency) else hold_seconds
        self._log = BatchLog(batch_log) if batch_log else None
        self._lock = threading.Lock()
        self._queued = threading.Condition(self._lock)
        self._queue = []  # waiting requests, oldest first
        self._running = self._running_items = 0
        created = time.perf_counter()  # free slots: [index, freed at], longest free first
        self._free_slots = [] if math.isinf(concurrency) else [
            [index, created] for index in range(concurrency)]
        self._totals = collections.Counter(calls=0, items=0, seconds=0.0)

    def totals(self):
        """The model calls so far: calls, items, seconds (overlapping calls add up), running."""
        with self._lock:
            return dict(self._totals, running=self._running)

    def wait_until_queued(self, count, timeout):
        """Waits until `count` requests wait for a slot; returns whether they do."""
        with self._lock:
            return self._queued.wait_for(lambda: len(self._queue) >= count, timeout)

    def submit(self, key, items, length):
        """Returns the Answer for a request's `items` (longest source: `length` tokens), or
        raises BatchFailed if its batch's call raised."""
        waiter = _Waiter(key, list(items), length)
        with self._lock:
            self._queue.append(waiter)
            timeout = self._dispatch(waiter)
            self._queued.notify_all()
        while True:
            waiter.wake.wait(timeout)
            waiter.wake.clear()  # then the checks: a wake after them is not lost
            if waiter.batch is not None or waiter.done:
                break
            with self._lock:
                timeout = self._dispatch(waiter)
        if waiter.batch is not None:
            self._run(waiter)
        if waiter.error is not None:
            raise BatchFailed("the model call of this request's batch failed") from waiter.error
        return waiter.answer

    def _dispatch(self, waiter):
        """Starts the batches the rule allows on free slots (under the lock); returns how long
        `waiter`, the calling thread's queued request (or None), waits before it checks again
        (None: until woken)."""
        now = time.perf_counter()
        while self._queue and self._running < self.concurrency:
            share = math.inf  # the most items the batch takes
            if self._running and self._hold_seconds:  # a free slot beside busy ones
                queued_items = sum(len(queued.items) for queued in self._queue)
                share = -(-(queued_items + self._running_items) // (self._running + 1))
                deadline = max(self._queue[0].arrived, self._free_slots[0][1]) + self._hold_seconds
                if queued_items < share and now < deadline:  # it holds
                    if self._queue[0] is not waiter:  # the oldest re-checks at the deadline
                        self._queue[0].wake.set()
                    return deadline - now
            batch = self._take_batch(share)
            slot = self._free_slots.pop(0) if self._free_slots else None
            self._running += 1
            self._running_items += sum(len(queued.items) for queued in batch)
            batch[0].batch = batch  # its first request runs it
            batch[0].slot = (slot[0], now - slot[1]) if slot else (None, None)
            batch[0].wake.set()
        return None

    def _take_batch(self, max_items):
        """Removes the oldest request's batch, of at most `max_items` items but at least that
        request, from the queue and returns it (under the lock)."""
        oldest = self._queue[0]
        same_key = [waiter for waiter in self._queue if waiter.key == oldest.key]
        group = next(group for group in length_groups(same_key, self._max_items,
                                                      self._step_overhead) if oldest in group)
        group.sort(key=same_key.index)
        totals = itertools.accumulate(len(waiter.items) for waiter in group)
        batch = [waiter for waiter, total in zip(group, totals) if total <= max_items] or group[:1]
        self._queue = [waiter for waiter in self._queue if waiter not in batch]
        return batch

    def _run(self, runner):
        """Runs `runner`'s batch, frees its slot and hands each request its answer or the error."""
        batch = runner.batch
        items = [item for waiter in batch for item in waiter.items]
        started_at, started, started_cpu = time.time(), time.perf_counter(), time.thread_time()
        results = error = None
        try:
            results = self._run_batch(runner.key, items)
        except Exception as caught:
            error = caught
        seconds = time.perf_counter() - started
        call = Call(started_at, *runner.slot, seconds, time.thread_time() - started_cpu, error)
        with self._lock:
            self._totals.update(calls=1, items=len(items), seconds=seconds)
            self._running -= 1
            self._running_items -= len(items)
            if call.slot is not None:
                self._free_slots.append([call.slot, time.perf_counter()])
            self._dispatch(None)
        start = 0
        for waiter in batch:
            waiter.error = error
            if results is not None:
                waiter.answer = Answer(results[start:start + len(waiter.items)], seconds)
                start += len(waiter.items)
            if waiter is not runner:
                waiter.done = True
                waiter.wake.set()
        if self._log is not None:
            self._log.write(runner.key, items, results or [], call)


class BatchLog:
    """Appends a JSON line per model call to `path` (opened per line: it may be moved away),
    for `python -m bench.replay_batches`; a ValueError if it cannot be appended to."""

    def __init__(self, path):
        try:
            open(path, "a", encoding="utf-8").close()
        except OSError as error:
            raise ValueError("serve.batch_log: cannot append to %s: %s" % (path, error)) from None
        self.path = path
        self._lock = threading.Lock()

    def write(self, key, items, results, call):
        """Appends the line of a `Call` of a batch's Items under `key` (their DecodeRequest), which
        gave ItemResults (none if it failed); a failed write is logged, not raised."""
        translations = [result.translation for result in results]
        traces = [translation.trace for translation in translations if translation.trace]
        record = dict(
            time=round(call.started, 6), slot=call.slot,
            idle_seconds=None if call.idle_seconds is None else round(call.idle_seconds, 6),
            wall_seconds=round(call.wall_seconds, 6), cpu_seconds=round(call.cpu_seconds, 6),
            decoder=key.decoder, beam_width=key.searched_beam_width, trace=key.trace,
            options=list(key.used_options().items()),
            n_best=max(item.n_best for item in items), size=len(items),
            source_lengths=[len(item.ids) for item in items],
            output_words=[len(translation.text.split()) for translation in translations],
            steps=max(len(trace["steps"]) for trace in traces) if traces else None,
            graphs_built=results[0].graphs_built if results else None,
            model_step=results[0].step if results else None,
            error=None if call.error is None else repr(call.error),
            source_ids=[[int(token) for token in item.ids] for item in items])
        for name, field in (("target_prefixes", "prefix"), ("constraints", "constraints")):
            if any(getattr(item, field) for item in items):
                record[name] = [getattr(item, field) for item in items]
        with self._lock:
            try:
                with open(self.path, "a", encoding="utf-8") as log_file:
                    log_file.write(json.dumps(record) + "\n")
            except OSError as error:
                LOG.warning("serve.batch_log: cannot append to %s: %s", self.path, error)
