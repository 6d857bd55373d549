"""Continuous batching: the batcher's policy with a recording fake, then the app with the real model.

The policy tests drive `Batcher` with a `run_batch` that records every batch
and can hold a batch until released, so which requests shared a batch is
known exactly. Every wait is for an event (a batch started, requests queued),
never for a duration; timeouts are only a safety net.
"""

import copy
import json
import os
import re
import threading
import time
import traceback

import pytest

from server.app import create_app
from server.model_slot import ModelSlot
from server.batcher import BatchFailed, Batcher, length_groups
from tests.same_hypotheses import assert_same_hypotheses, assert_same_trace, n_best

TIMEOUT_S = 60  # a safety net only: no test waits for a duration


class RecordingRun:
    """A run_batch that records its batches and answers item -> item * 10.

    A batch holding an item of `hold` waits until `release` is set; one holding an
    item of `gated` waits until that item's own event, `gates[item]`, is set.
    """

    def __init__(self, hold=(), fail_on=None, gated=()):
        self.batches = []
        self.release = threading.Event()
        self.gates = {item: threading.Event() for item in gated}
        self._hold = set(hold)
        self._fail_on = fail_on
        self._changed = threading.Condition()

    def __call__(self, key, items):
        with self._changed:
            self.batches.append((key, list(items)))
            self._changed.notify_all()
        if self._hold & set(items):
            assert self.release.wait(TIMEOUT_S)
        for item in set(self.gates) & set(items):
            assert self.gates[item].wait(TIMEOUT_S)
        if self._fail_on in items:
            raise RuntimeError("cannot translate %r" % self._fail_on)
        return [item * 10 for item in items]

    def wait_for_batches(self, count):
        with self._changed:
            assert self._changed.wait_for(lambda: len(self.batches) >= count, TIMEOUT_S)


def batcher_for(run, concurrency=1, max_batch_items=64, step_overhead=1000.0, hold_seconds=0.0):
    """A Batcher; a large step overhead puts every length in one batch."""
    return Batcher(run, concurrency, max_batch_items, step_overhead, hold_seconds)


class Submitter(threading.Thread):
    """Submits (key, items) to a batcher from its own thread; .outcome is its results or error."""

    def __init__(self, batcher, key, items, length=1):
        super().__init__(daemon=True)
        self.outcome = self.answer = None
        self._args = (batcher, key, items, length)
        self.start()

    def run(self):
        batcher, key, items, length = self._args
        try:
            self.answer = batcher.submit(key, items, length)
            self.outcome = self.answer.results
        except Exception as error:  # the test inspects what each caller got
            self.outcome = error

    def result(self):
        self.join(TIMEOUT_S)
        assert not self.is_alive()
        return self.outcome


def queue_behind_a_held_batch(run, batcher, submissions, held_key="k"):
    """Runs a held batch of [0], queues `submissions` behind it, releases it.

    Returns:
      The outcome of each submission, in order.
    """
    first = Submitter(batcher, held_key, [0])
    run.wait_for_batches(1)
    submitters = []
    for submission in submissions:
        submitters.append(Submitter(batcher, *submission))
        assert batcher.wait_until_queued(len(submitters), TIMEOUT_S)
    run.release.set()
    assert first.result() == [0]
    return [submitter.result() for submitter in submitters]


def test_a_request_at_an_idle_server_runs_at_once_in_a_batch_of_its_own():
    run = RecordingRun()
    batcher = batcher_for(run)
    assert batcher.submit("k", [1], 1).results == [10]
    assert run.batches == [("k", [1])]


def test_requests_queued_while_a_batch_runs_form_the_next_batch():
    run = RecordingRun(hold=[0])
    batcher = batcher_for(run)
    outcomes = queue_behind_a_held_batch(run, batcher, [("k", [1]), ("k", [2, 3]), ("k", [4])])
    assert outcomes == [[10], [20, 30], [40]]
    assert run.batches == [("k", [0]), ("k", [1, 2, 3, 4])]


def test_different_settings_never_share_a_batch_and_the_oldest_goes_first():
    run = RecordingRun(hold=[0])
    batcher = batcher_for(run)
    outcomes = queue_behind_a_held_batch(
        run, batcher, [("b", [1]), ("a", [2]), ("b", [3]), ("a", [4])], held_key="a")
    assert outcomes == [[10], [20], [30], [40]]
    assert run.batches == [("a", [0]), ("b", [1, 3]), ("a", [2, 4])]


def test_batches_hold_whole_requests_up_to_the_limit_and_a_larger_request_runs_alone():
    run = RecordingRun(hold=[0])
    batcher = batcher_for(run, max_batch_items=4)
    submissions = [("k", [index * 10 + 1, index * 10 + 2, index * 10 + 3]) for index in range(3)]
    submissions.append(("k", [91, 92, 93, 94, 95, 96]))
    outcomes = queue_behind_a_held_batch(run, batcher, submissions)
    assert outcomes == [[item * 10 for item in items] for _, items in submissions]
    assert [items for _, items in run.batches[1:]] == [items for _, items in submissions], \
        "a batch of 3-item requests under a limit of 4 holds one request, in arrival order"


@pytest.mark.parametrize("hold_seconds", [0.0, TIMEOUT_S])
def test_as_many_batches_run_at_once_as_the_concurrency_allows(hold_seconds):
    run = RecordingRun(hold=[1, 2])
    batcher = batcher_for(run, concurrency=2, hold_seconds=hold_seconds)
    first = Submitter(batcher, "k", [1])
    run.wait_for_batches(1)
    second = Submitter(batcher, "k", [2])
    run.wait_for_batches(2)  # runs beside the first, though that one is still held
    third, fourth = Submitter(batcher, "k", [3]), Submitter(batcher, "other", [4])
    assert batcher.wait_until_queued(2, TIMEOUT_S), "no third slot"
    assert len(run.batches) == 2
    run.release.set()
    assert [s.result() for s in (first, second, third, fourth)] == [[10], [20], [30], [40]]
    assert sorted(map(tuple, (items for _, items in run.batches[2:]))) == [(3,), (4,)]


def test_length_groups_split_where_one_batch_costs_more_than_two():
    class Request:
        def __init__(self, length, items=1):
            self.length, self.items = length, [None] * items

    def lengths(groups):
        return [[request.length for request in group] for group in groups]

    requests = [Request(length) for length in (30, 4, 3, 32, 5)]
    assert lengths(length_groups(requests, 64, 3.0)) == [[3, 4, 5], [30, 32]]
    # One sentence joins another of length 10 up to (overhead + 1) * 10, no further.
    assert lengths(length_groups([Request(10), Request(40)], 64, 3.0)) == [[10, 40]]
    assert lengths(length_groups([Request(10), Request(41)], 64, 3.0)) == [[10], [41]]
    # Beside 8 sentences a longer one costs 8 sentences its extra steps.
    eight = Request(10, items=8)
    assert lengths(length_groups([eight, Request(13)], 64, 3.0)) == [[10, 13]]
    assert lengths(length_groups([eight, Request(14)], 64, 3.0)) == [[10], [14]]
    assert lengths(length_groups([Request(5, items=3), Request(5, items=2)], 4, 3.0)) == [[5], [5]]


def test_queued_requests_of_very_different_lengths_run_in_separate_batches():
    run = RecordingRun(hold=[0])
    batcher = Batcher(run, 1, 64, 3.0)
    outcomes = queue_behind_a_held_batch(
        run, batcher, [("k", [1], 3), ("k", [2], 40), ("k", [3], 4), ("k", [4], 38)])
    assert outcomes == [[10], [20], [30], [40]]
    assert [items for _, items in run.batches] == [[0], [1, 3], [2, 4]]


def test_a_failed_batch_fails_its_own_requests_only():
    run = RecordingRun(hold=[0], fail_on=2)
    batcher = batcher_for(run)
    outcomes = queue_behind_a_held_batch(run, batcher, [("k", [1]), ("k", [2]), ("other", [3])])
    assert isinstance(outcomes[0], BatchFailed) and isinstance(outcomes[1], BatchFailed)
    assert isinstance(outcomes[0].__cause__, RuntimeError)
    assert outcomes[2] == [30]
    assert batcher.submit("k", [4], 1).results == [40], "the key serves again after a failure"


def test_each_request_of_a_failed_batch_gets_an_exception_of_its_own():
    # One exception object raised in several threads gathers all their frames
    # in its one traceback: each logged 500 would show the others' stacks.
    run = RecordingRun(hold=[0], fail_on=2)
    batcher = batcher_for(run)
    outcomes = queue_behind_a_held_batch(run, batcher, [("k", [1]), ("k", [2]), ("k", [3])])
    assert len(run.batches) == 2
    assert all(isinstance(outcome, BatchFailed) for outcome in outcomes)
    assert len({id(outcome) for outcome in outcomes}) == 3
    cause = outcomes[0].__cause__
    assert isinstance(cause, RuntimeError) and "cannot translate 2" in str(cause)
    assert all(outcome.__cause__ is cause for outcome in outcomes), "the cause is kept"
    for outcome in outcomes:
        frames = [frame.name for frame in traceback.extract_tb(outcome.__traceback__)]
        assert frames.count("submit") == 1, "the batcher's submit only: %s" % frames
    frames = [frame.name for frame in traceback.extract_tb(cause.__traceback__)]
    assert "submit" not in frames or frames.count("submit") == 1, frames


@pytest.mark.parametrize("hold_seconds", [0.0, TIMEOUT_S])
def test_an_unbounded_concurrency_runs_every_request_at_once_alone(hold_seconds):
    # serve.py --no_batching: the baseline that batching is measured against; it never holds.
    run = RecordingRun(hold=[1])
    unbatched = batcher_for(run, concurrency=float("inf"), hold_seconds=hold_seconds)
    first = Submitter(unbatched, "k", [1])
    run.wait_for_batches(1)
    assert unbatched.submit("k", [2, 3], 1).results == [20, 30], "beside a running call"
    assert unbatched.submit("k", [4], 1).results == [40]
    run.release.set()
    assert first.result() == [10]
    assert sorted(items for _, items in run.batches) == [[1], [2, 3], [4]]


def test_the_counts_add_up_the_model_calls():
    run = RecordingRun(hold=[0])
    batcher = batcher_for(run)
    queue_behind_a_held_batch(run, batcher, [("a", [1]), ("a", [2, 3]), ("b", [4])])
    batched = batcher.totals()
    assert (batched["calls"], batched["items"], batched["running"]) == (len(run.batches), 5, 0)
    assert len(run.batches) == 3
    unbatched = batcher_for(RecordingRun(fail_on=2), concurrency=float("inf"))
    unbatched.submit("k", [1], 1)
    with pytest.raises(BatchFailed):
        unbatched.submit("k", [2, 3], 1)
    assert (unbatched.totals()["calls"], unbatched.totals()["items"]) == (2, 3), \
        "a failed call counts too"


def test_every_request_of_a_batch_gets_the_time_of_its_call():
    run = RecordingRun(hold=[0])
    batcher = batcher_for(run)
    before = time.perf_counter()
    first = Submitter(batcher, "k", [0])
    run.wait_for_batches(1)
    running_since = time.perf_counter()  # the held call has started by now
    queued = [Submitter(batcher, "k", [1]), Submitter(batcher, "k", [2])]
    assert batcher.wait_until_queued(2, TIMEOUT_S)
    held_for = time.perf_counter() - running_since
    run.release.set()
    assert first.result() == [0]
    ran_within = time.perf_counter() - before
    assert [submitter.result() for submitter in queued] == [[10], [20]]
    assert held_for <= first.answer.call_seconds <= ran_within, "from its start to its end"
    assert queued[0].answer.call_seconds == queued[1].answer.call_seconds
    assert batcher.totals()["seconds"] == pytest.approx(
        first.answer.call_seconds + queued[0].answer.call_seconds)


# --- Batches without fragments: a free slot beside a busy one waits for its share -------------
# The hold is a minute in these tests, so only the events under test start a batch.

def submit_in_order(batcher, submissions, already_queued=0):
    """Submits each (key, items) once the ones before it are queued; returns the Submitters."""
    submitters = []
    for key, items in submissions:
        submitters.append(Submitter(batcher, key, items))
        assert batcher.wait_until_queued(already_queued + len(submitters), TIMEOUT_S)
    return submitters


@pytest.mark.parametrize("hold_seconds", [0.0, TIMEOUT_S])
def test_a_lone_request_at_an_idle_server_and_one_beside_a_lone_call_run_at_once(hold_seconds):
    run = RecordingRun(gated=[1])
    batcher = batcher_for(run, concurrency=2, hold_seconds=hold_seconds)
    first = Submitter(batcher, "k", [1])
    run.wait_for_batches(1)
    second = Submitter(batcher, "k", [2])  # its share of 1 running + 1 queued is 1
    run.wait_for_batches(2)
    assert second.result() == [20], "ran beside the first call, which is still held"
    run.gates[1].set()
    assert first.result() == [10]


def test_a_free_slot_beside_a_busy_one_waits_until_the_queue_holds_its_share():
    run = RecordingRun(gated=[1])
    batcher = batcher_for(run, concurrency=2, hold_seconds=TIMEOUT_S)
    busy = Submitter(batcher, "k", [1, 2, 3, 4])
    run.wait_for_batches(1)
    # 1, 2 and 3 queued beside 4 running: less than a share, ceil((queued + 4) / 2).
    queued = submit_in_order(batcher, [("k", [5]), ("k", [6]), ("k", [7])])
    assert len(run.batches) == 1, "the free slot waited while they arrived"
    queued.append(Submitter(batcher, "k", [8]))  # 4 queued: the share of 8 is 4
    run.wait_for_batches(2)
    assert [submitter.result() for submitter in queued] == [[50], [60], [70], [80]]
    assert run.batches[1] == ("k", [5, 6, 7, 8])
    run.gates[1].set()
    assert busy.result() == [10, 20, 30, 40]


def test_without_a_hold_a_free_slot_takes_a_lone_request_at_once():
    # The issue 10 rule (serve.batch_hold_ms: 0), the fragments the hold avoids.
    run = RecordingRun(gated=[1])
    batcher = batcher_for(run, concurrency=2, hold_seconds=0.0)
    busy = Submitter(batcher, "k", [1, 2, 3, 4])
    run.wait_for_batches(1)
    assert Submitter(batcher, "k", [5]).result() == [50]
    assert run.batches[1] == ("k", [5])
    run.gates[1].set()
    assert busy.result() == [10, 20, 30, 40]


def test_a_freed_slot_takes_at_most_its_share_and_holds_for_the_rest():
    run = RecordingRun(gated=[0, 1])
    batcher = batcher_for(run, concurrency=2, hold_seconds=TIMEOUT_S)
    first = Submitter(batcher, "k", [0])
    run.wait_for_batches(1)
    second = Submitter(batcher, "k", [1, 2, 3, 4])  # more than its share: a request is whole
    run.wait_for_batches(2)
    queued = submit_in_order(batcher, [("k", [item]) for item in range(11, 19)])
    run.gates[0].set()  # its slot's share of 8 queued + 4 running is 6
    assert first.result() == [0]
    assert [submitter.result() for submitter in queued[:6]] == [[110], [120], [130], [140],
                                                                 [150], [160]]
    assert run.batches[2] == ("k", [11, 12, 13, 14, 15, 16])
    # Freed again, with 2 queued beside 4 running (a share of 3): it holds.
    assert batcher.wait_until_queued(2, TIMEOUT_S) and len(run.batches) == 3
    run.gates[1].set()  # then no slot is busy: the two run at once
    assert [submitter.result() for submitter in queued[6:]] == [[170], [180]]
    assert run.batches[3] == ("k", [17, 18])
    assert second.result() == [10, 20, 30, 40]


def test_a_held_slot_starts_what_is_queued_when_its_hold_ends():
    hold_seconds = 0.05
    run = RecordingRun(gated=[1])
    batcher = batcher_for(run, concurrency=2, hold_seconds=hold_seconds)
    busy = Submitter(batcher, "k", [1, 2, 3, 4])
    run.wait_for_batches(1)
    submitted = time.perf_counter()
    lone = Submitter(batcher, "k", [5])
    run.wait_for_batches(2)  # while the busy call is still held
    assert time.perf_counter() - submitted >= hold_seconds
    assert lone.result() == [50] and run.batches[1] == ("k", [5])
    run.gates[1].set()
    assert busy.result() == [10, 20, 30, 40]


# --- The app, with the real tiny model ---------------------------------------------------------

class CountingTranslator:
    """Wraps the real Translator, records each model call, and can hold the first one.

    With `hold_first`, the first call translates, then waits until `release` is set.
    """

    def __init__(self, translator, hold_first=False):
        self._translator = translator
        self.calls = []
        self.requests = []  # each call's DecodeRequest
        self.first_started = threading.Event()
        self.release = threading.Event()
        if not hold_first:
            self.release.set()

    def __getattr__(self, name):
        return getattr(self._translator, name)

    def translate_tokens(self, token_ids, request, originals=None):
        self.calls.append(len(token_ids))
        self.requests.append(request)
        translations = self._translator.translate_tokens(token_ids, request, originals=originals)
        if not self.first_started.is_set():
            self.first_started.set()
            assert self.release.wait(TIMEOUT_S)
        return translations


@pytest.fixture(scope="session")
def translator(tiny_model_dir):
    from decode.translator import Translator
    return Translator(tiny_model_dir)


def app_with(translator, config, batching=True):
    """The app, one batch at a time, every length in one batch; unrolled serves every length."""
    config = copy.deepcopy(config)
    config["serve"].update(batching=batching, concurrent_batches=1, batch_step_overhead=1000.0)
    return create_app(ModelSlot(translator), config,
                      max_unrolled_tokens=config["serve"]["max_tokens"])


class Poster(threading.Thread):
    """POSTs a body to the app's /translate from its own thread."""

    def __init__(self, app, body):
        super().__init__(daemon=True)
        self.response = None
        self._app, self._body = app, body
        self.start()

    def run(self):
        self.response = self._app.test_client().post("/translate", json=self._body)

    def result(self):
        self.join(TIMEOUT_S)
        assert not self.is_alive()
        return self.response


def post_behind_a_held_call(app, counting, bodies, first_body=None):
    """Holds a first call, queues `bodies` behind it, releases it; returns their responses."""
    first = Poster(app, first_body or {"text": "one", "decoder": "greedy"})
    assert counting.first_started.wait(TIMEOUT_S)
    posters = []
    for body in bodies:
        posters.append(Poster(app, body))
        assert app.extensions["batcher"].wait_until_queued(len(posters), TIMEOUT_S)
    counting.release.set()
    assert first.result().status_code == 200
    return [poster.result() for poster in posters]


# Of different lengths: each sentence's output limit is its own, so the longest
# sentence of a batch must not change the others' translations.
SENTENCES = ["one", "a beautiful table", "nine hundred seventy-five", "We need the pen.",
             "I paid three British pounds.", "Sunday, December 19, 2032"]


def assert_as_alone(translator, text, translation, **options):
    """The n-best of `text` translated alone, by tests/same_hypotheses.py's rule."""
    [alone] = translator.translate([text], **options)
    assert_same_hypotheses(n_best([translation]), n_best([alone]))
    assert translation["unfamiliar"] == alone.unfamiliar


@pytest.mark.parametrize("decoder", ["while_loop", "unrolled"])
def test_queued_requests_are_batched_and_answered_as_if_alone(translator, decoder):
    counting = CountingTranslator(translator, hold_first=True)
    app = app_with(counting, translator.config)
    bodies = [{"text": text, "decoder": decoder, "n_best": 2} for text in SENTENCES]
    responses = post_behind_a_held_call(app, counting, bodies)
    assert [response.status_code for response in responses] == [200] * len(bodies)
    assert counting.calls == [1, len(bodies)], "the queued requests formed one batch"
    batching = app.test_client().get("/v1/info").get_json()["batching"]
    assert (batching["model_calls"], batching["sentences"]) == (2, len(bodies) + 1)
    assert len({response.get_json()["decode_ms"] for response in responses}) == 1, \
        "requests of one batch report its one model call"
    for text, response in zip(SENTENCES, responses):
        assert_as_alone(translator, text, response.get_json()["translations"][0],
                        decoder=decoder, n_best=2)


def test_a_lone_request_runs_at_once_and_its_time_is_its_call(translator):
    counting = CountingTranslator(translator)
    app = app_with(counting, translator.config)
    body = app.test_client().post("/translate", json={"text": "one", "decoder": "greedy"}).get_json()
    assert counting.calls == [1]
    assert 0 < body["decode_ms"] <= body["elapsed_ms"]


def test_traced_requests_batch_only_with_traced_ones_and_keep_their_trace(translator):
    counting = CountingTranslator(translator, hold_first=True)
    app = app_with(counting, translator.config)
    bodies = [{"text": text, "trace": trace} for text in SENTENCES[1:3] for trace in (True, False)]
    responses = post_behind_a_held_call(app, counting, bodies)
    assert sorted(counting.calls[1:]) == [2, 2]
    assert sorted(request.trace for request in counting.requests[1:]) == [False, True]
    for body, response in zip(bodies, responses):
        [translation] = response.get_json()["translations"]
        [alone] = translator.translate([body["text"]], trace=body["trace"])
        if body["trace"]:
            assert_same_trace(translation["trace"], alone.trace)
        else:
            assert "trace" not in translation
        assert_as_alone(translator, body["text"], translation)


def test_no_batching_runs_every_request_alone(translator):
    counting = CountingTranslator(translator, hold_first=True)
    app = app_with(counting, translator.config, batching=False)
    first = Poster(app, {"text": "one"})
    assert counting.first_started.wait(TIMEOUT_S)
    others = [Poster(app, {"text": text}) for text in SENTENCES[1:4]]
    assert [poster.result().status_code for poster in others] == [200] * 3, "beside the held call"
    counting.release.set()
    assert first.result().status_code == 200
    assert counting.calls == [1, 1, 1, 1]
    assert app.test_client().get("/v1/info").get_json()["batching"]["enabled"] is False


def test_requests_that_differ_in_n_best_only_share_a_batch(translator):
    # n_best only picks from the same beam: the call decodes with the largest,
    # and each request keeps its own.
    counting = CountingTranslator(translator, hold_first=True)
    app = app_with(counting, translator.config)
    n_bests = [1, 3, 2, 3, 1, 2]
    bodies = [{"text": text, "beam_width": 3, "n_best": n_best}
              for text, n_best in zip(SENTENCES, n_bests)]
    responses = post_behind_a_held_call(app, counting, bodies)
    assert [response.status_code for response in responses] == [200] * len(bodies)
    assert counting.calls[1:] == [len(bodies)]
    assert counting.requests[1].n_best == 3, "a call decodes its batch's largest n_best"
    for text, n_best, response in zip(SENTENCES, n_bests, responses):
        assert_as_alone(translator, text, response.get_json()["translations"][0],
                        beam_width=3, n_best=n_best)


# --- Graphs built on first use, per batch -------------------------------------------------------

@pytest.fixture
def fresh_translator(tiny_model_dir):
    """A translator of its own: no decoder graph is built until a request needs it."""
    from decode.translator import Translator
    fresh = Translator(tiny_model_dir)
    yield fresh
    fresh.close()


def test_requests_sharing_a_batch_report_the_graph_their_call_built(fresh_translator):
    counting = CountingTranslator(fresh_translator, hold_first=True)
    app = app_with(counting, fresh_translator.config)
    bodies = [{"text": text, "beam_width": 7} for text in SENTENCES[:4]]
    responses = post_behind_a_held_call(app, counting, bodies)
    assert counting.calls[1:] == [4], "one batch"
    assert [response.get_json()["graphs_built"] for response in responses] == [1] * len(bodies), \
        "its one call built the graph: every request of the batch waited for it"
    again = [Poster(app, body).result() for body in bodies]
    assert [response.get_json()["graphs_built"] for response in again] == [0] * len(bodies)


def test_a_batch_does_not_count_the_graphs_another_batch_built_meanwhile(fresh_translator):
    counting = CountingTranslator(fresh_translator, hold_first=True)
    config = copy.deepcopy(fresh_translator.config)
    config["serve"]["concurrent_batches"] = 2
    app = create_app(ModelSlot(counting), config)
    greedy = Poster(app, {"text": "two", "decoder": "greedy"})  # builds greedy's graph, held
    assert counting.first_started.wait(TIMEOUT_S)
    # While the greedy call is still running, a while_loop batch builds its graph.
    response = app.test_client().post("/translate", json={"text": "one", "beam_width": 6})
    assert response.get_json()["graphs_built"] == 1
    counting.release.set()
    assert greedy.result().get_json()["graphs_built"] == 1, "its own graph only"
    again = app.test_client().post("/translate", json={"text": "three", "decoder": "greedy"})
    assert again.get_json()["graphs_built"] == 0


# --- The batch log and its replay (issue 20) ---------------------------------------------------

def test_the_batch_log_records_each_model_call_and_the_replay_runs_them_again(
        translator, tiny_model_dir, tmp_path, capsys):
    from bench import replay_batches
    log_path = tmp_path / "batches.jsonl"
    config = copy.deepcopy(translator.config)
    config["serve"]["batch_log"] = str(log_path)
    for decoder in ("greedy", "while_loop"):  # built: the replay skips calls that built a graph
        translator.translate(["one"], decoder=decoder)
    counting = CountingTranslator(translator, hold_first=True)
    app = app_with(counting, config)
    texts = SENTENCES[:4]
    responses = post_behind_a_held_call(app, counting, [{"text": text} for text in texts])
    first, batch = [json.loads(line) for line in log_path.read_text().splitlines()]
    assert (first["size"], batch["size"]) == (1, 4) and counting.calls == [1, 4]
    assert batch["source_ids"] == [translator.tokenize(text) for text in texts]
    assert batch["source_lengths"] == [len(translator.tokenize(text)) for text in texts]
    answers = [response.get_json() for response in responses]
    assert batch["output_words"] == [len(a["translations"][0]["text"].split()) for a in answers]
    assert (batch["decoder"], batch["beam_width"], batch["n_best"], batch["trace"]) == (
        "while_loop", translator.config["decode"]["beam_width"], 1, False)
    assert batch["wall_seconds"] == pytest.approx(answers[0]["decode_ms"] / 1000.0, abs=1e-5)
    assert 0.0 < batch["cpu_seconds"] <= batch["wall_seconds"] + 1e-3, "one thread's CPU"
    assert (first["slot"], batch["slot"], batch["model_step"]) == (0, 0, translator.step)
    assert 0.0 <= batch["idle_seconds"] <= batch["time"] - first["time"] - first["wall_seconds"] \
        + 0.01, "the slot passed from the first call to the batch"
    assert replay_batches.main(["--model_dir", tiny_model_dir, "--log", str(log_path)]) == 0
    printed = capsys.readouterr().out
    replayed = [line for line in printed.splitlines() if re.match(r"\| \d+ \|", line)]
    assert (first["graphs_built"], batch["graphs_built"], len(replayed)) == (0, 0, 2)
    assert "the same word counts in 2 of 2 calls" in printed


def test_the_replay_runs_a_call_with_its_options_and_target_prefixes(translator):
    from bench import replay_batches
    source_ids = [translator.tokenize(text) for text in SENTENCES[:2]]
    prefixes = ["casa casa casa casa", ""]
    options = [["length_penalty", 0.0], ["no_repeat_ngram_size", 0]]
    served = translator.translate_tokens(source_ids, options=dict(options),
                                         target_prefixes=prefixes)
    record = {"decoder": "while_loop", "beam_width": None, "n_best": 1, "trace": False,
              "options": options, "target_prefixes": prefixes, "source_ids": source_ids,
              "wall_seconds": 0.1, "cpu_seconds": 0.1,
              "output_words": [len(translation.text.split()) for translation in served]}
    assert record["output_words"][0] >= 4, "the prefix's words are the translation's"
    [(_, _, _, same)] = replay_batches.replay(translator, [record])
    assert same, "replayed with the prefixes and options it was served with"
    unprefixed = translator.translate_tokens(source_ids)
    assert [len(translation.text.split()) for translation in unprefixed] != record["output_words"]


def test_a_batch_log_that_cannot_be_written_is_an_error_naming_it(tmp_path):
    path = tmp_path / "no_such_directory" / "batches.jsonl"
    with pytest.raises(ValueError, match="serve.batch_log: cannot append to .*no_such_directory"):
        Batcher(RecordingRun(), 1, 64, 3.0, batch_log=str(path))


def test_the_replay_names_a_line_that_is_not_a_batch_log_record(tmp_path, capsys):
    from bench import replay_batches
    log_path = tmp_path / "batches.jsonl"
    log_path.write_text('{"decoder": "while_loop"}\n')
    assert replay_batches.main(["--model_dir", str(tmp_path), "--log", str(log_path)]) == 2
    assert "batches.jsonl:1 is not a batch log record (no beam_width" in capsys.readouterr().err


def test_the_load_test_serves_a_copy_of_the_model_with_the_settings_given(
        translator, tiny_model_dir, tmp_path):
    from bench.serve_load import served_copy
    from decode.translator import Translator
    from seq2seq.config import load_config
    log = str(tmp_path / "on.jsonl")
    copy_dir = served_copy(tiny_model_dir, str(tmp_path / "copy"), "serve.batch_hold_ms=0", log)
    config = load_config(os.path.join(copy_dir, "config.yaml"))
    original = load_config(os.path.join(tiny_model_dir, "config.yaml"))
    assert (config["serve"]["batch_hold_ms"], config["serve"]["batch_log"]) == (0.0, log)
    config["serve"].update(batch_hold_ms=original["serve"]["batch_hold_ms"], batch_log="")
    assert config == original, "nothing else changed"
    links = sorted(name for name in os.listdir(copy_dir) if name != "config.yaml")
    assert links == sorted(set(os.listdir(tiny_model_dir)) - {"config.yaml"})
    copied = Translator(copy_dir)
    try:
        assert copied.step == translator.step
        assert copied.translate(SENTENCES) == translator.translate(SENTENCES)
    finally:
        copied.close()
