"""Micro-batching: concurrent requests with the same settings share one model call.

A tiny model on a CPU spends most of a call on per-call overhead (feeding,
the decoder loop's bookkeeping), so 32 sentences in one call cost little more
than one. The batcher gathers requests briefly and runs them together.

Policy (one queue per settings key, e.g. (decoder, beam_width)):

* The first request to reach an idle key becomes that key's *leader*. It waits
  up to ``window_s`` after its arrival, or less once the queue holds
  ``max_batch_items`` items, then takes whole requests from the front of the
  queue (first come, first served) up to ``max_batch_items`` items (at least
  one request, however large) and runs them as one batch, on its own thread.
* A key runs one batch at a time: requests that arrive meanwhile queue up.
  When the batch ends, the leader hands the lead to the oldest request still
  queued, which starts the next batch at once (those requests have already
  waited a whole batch), and returns its own results. No caller ever runs a
  batch that does not hold its own request, so nobody is kept working for
  others after its answer is ready.
* Keys are independent: each has its own leader, so a long beam-16 batch never
  holds back a greedy request; their batches run concurrently on the shared
  session (TensorFlow sessions are thread-safe). A request therefore waits at
  most ``window_s`` plus, if its own key is busy, the rest of that key's
  running batch (and, when more than ``max_batch_items`` items of its key
  are queued ahead of it, the batches that serve them first).
* Results are split back in order, with the wall time of the model call
  that computed them. If a batch fails, every request in it gets a
  :class:`BatchFailed` of its own, caused by the batch's exception (one
  exception object raised in several threads would gather every thread's
  frames in its one traceback, and each logged failure would show the
  others' stacks); the next batch starts afresh.

With batching off, :class:`Unbatched` runs every request alone, concurrently.

Both count their model calls (:class:`CallCounts`), so that how large the
batches were and how busy the model was can be read from outside (/v1/info).
"""

import collections
import threading
import time

Answer = collections.namedtuple("Answer", "results call_seconds")
Answer.__doc__ = """What a submission gets back.

Fields:
  results: run_batch's results for the submitted items, in order.
  call_seconds: the wall time of the run_batch call that computed them (the
    whole batch's call: the waiting before it is not counted).
"""


class BatchFailed(Exception):
    """The model call of the batch that held a request failed.

    Each request of the batch gets its own; ``__cause__`` is the exception
    the call raised (shared: it is never raised again, so its traceback stays
    the one of the thread that ran the batch).
    """


class CallCounts:
    """Totals over the model calls of a batcher: calls, items and seconds (thread-safe)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._calls = 0
        self._items = 0
        self._seconds = 0.0

    def timed_call(self, run_batch, key, items):
        """Returns an Answer: run_batch(key, items) and its wall time.

        The call is counted whether or not it fails.
        """
        started = time.perf_counter()
        try:
            results = run_batch(key, items)
        finally:
            seconds = time.perf_counter() - started
            with self._lock:
                self._calls += 1
                self._items += len(items)
                self._seconds += seconds
        return Answer(results, seconds)

    def totals(self):
        """{"calls", "items", "seconds"} so far; seconds add up calls that overlapped."""
        with self._lock:
            return {"calls": self._calls, "items": self._items, "seconds": self._seconds}


class _Waiter:
    """One caller's items, parked until its batch has run or it is made leader."""

    def __init__(self, items):
        self.items = items
        self.arrived = time.monotonic()
        self.answer = None
        self.error = None  # the batch's exception, shared by its waiters
        self.batch_items = 0
        self.done = False
        self.leads = False
        self.wake = threading.Event()


class _KeyQueue:
    """The waiting requests of one settings key, and whether one of them leads."""

    def __init__(self, lock):
        self.waiting = collections.deque()
        self.has_leader = False
        self.changed = threading.Condition(lock)

    def queued_items(self):
        return sum(len(waiter.items) for waiter in self.waiting)

    def take_batch(self, max_items):
        """Removes and returns the front requests that fit in max_items (at least one)."""
        batch = [self.waiting.popleft()]
        total = len(batch[0].items)
        while self.waiting and total + len(self.waiting[0].items) <= max_items:
            total += len(self.waiting[0].items)
            batch.append(self.waiting.popleft())
        return batch


class MicroBatcher:
    """Gathers concurrent submissions per key into batches (see the module policy).

    Args:
      run_batch: (key, items) -> results, one result per item, in order.
      window_s: how long a batch's first request waits for others, in seconds.
      max_batch_items: the most items in one batch (a larger request runs alone).
    """

    def __init__(self, run_batch, window_s, max_batch_items):
        self._run_batch = run_batch
        self._window_s = window_s
        self._max_batch_items = max_batch_items
        self._lock = threading.Lock()
        self._queues = {}
        self.counts = CallCounts()

    def submit(self, key, items):
        """Returns the Answer for `items`, computed in some batch of `key`.

        Raises:
          BatchFailed: if that batch's call raised (it is the cause).
        """
        waiter = _Waiter(list(items))
        with self._lock:
            queue = self._queues.get(key)
            if queue is None:
                queue = self._queues[key] = _KeyQueue(self._lock)
            queue.waiting.append(waiter)
            if not queue.has_leader:
                queue.has_leader = waiter.leads = True
            elif queue.queued_items() >= self._max_batch_items:
                queue.changed.notify()
        if waiter.leads:
            self._gather(queue, waiter.arrived + self._window_s)
        else:
            waiter.wake.wait()
        if not waiter.done:
            self._lead_one_batch(key, queue)
        if waiter.error is not None:
            message = ("the model call of a batch of %d items (this request's %d among them) "
                       "failed" % (waiter.batch_items, len(waiter.items)))
            raise BatchFailed(message) from waiter.error
        return waiter.answer

    def _gather(self, queue, deadline):
        """Waits until the window closes or a full batch is queued."""
        with self._lock:
            while queue.queued_items() < self._max_batch_items:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                queue.changed.wait(remaining)

    def _lead_one_batch(self, key, queue):
        """Runs the next batch (it holds the leader's request), then passes the lead on."""
        with self._lock:
            batch = queue.take_batch(self._max_batch_items)
        items = [item for waiter in batch for item in waiter.items]
        try:
            answer = self.counts.timed_call(self._run_batch, key, items)
            start = 0
            for waiter in batch:
                waiter.answer = Answer(answer.results[start:start + len(waiter.items)],
                                       answer.call_seconds)
                start += len(waiter.items)
        except Exception as error:  # whatever failed, every caller in the batch must hear of it
            for waiter in batch:
                waiter.error = error
                waiter.batch_items = len(items)
        finally:
            for waiter in batch:
                waiter.done = True
                waiter.wake.set()
            self._pass_lead(key, queue)

    def _pass_lead(self, key, queue):
        with self._lock:
            if queue.waiting:
                successor = queue.waiting[0]
                successor.leads = True
                successor.wake.set()
            else:
                queue.has_leader = False
                # An idle key holds no memory: the next request makes a fresh queue.
                del self._queues[key]


class Unbatched:
    """Runs every submission alone: the baseline that micro-batching is measured against."""

    def __init__(self, run_batch):
        self._run_batch = run_batch
        self.counts = CallCounts()

    def submit(self, key, items):
        """Returns the Answer of run_batch(key, items); its exception, if it raises.

        Each call runs in its caller's thread: no exception is shared.
        """
        return self.counts.timed_call(self._run_batch, key, list(items))
