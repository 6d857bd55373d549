"""Micro-batching: the batcher's policy with a recording fake, then the app with the real model.

The policy tests drive `MicroBatcher` with a `run_batch` that records every
batch, so which requests shared a batch is known exactly. The app tests send
concurrent requests through the Flask app to a real tiny model and check that
batching changes nothing in the answers.
"""

import copy
import threading
import time
import traceback

import pytest

from server.app import create_app
from server.batcher import BatchFailed, MicroBatcher, Unbatched
from server.model_slot import ModelSlot

# Generous bounds: the machine is shared, so timing assertions leave slack.
WINDOW_S = 0.2
SLACK_S = 0.5


class RecordingRun:
    """A run_batch that records its batches and answers item -> item * 10."""

    def __init__(self, hold=None, fail_on=None):
        self.batches = []
        self.started = threading.Event()
        self._hold = hold or {}
        self._fail_on = fail_on
        self._lock = threading.Lock()

    def __call__(self, key, items):
        with self._lock:
            self.batches.append((key, list(items)))
        self.started.set()
        if key in self._hold:
            self._hold[key].wait(timeout=10)
        if self._fail_on in items:
            raise RuntimeError("cannot translate %r" % self._fail_on)
        return [item * 10 for item in items]


def submit_concurrently(batcher, submissions):
    """Submits (key, items) pairs from one thread each, all at once; returns results or errors."""
    outcomes = [None] * len(submissions)
    barrier = threading.Barrier(len(submissions))

    def submit(index, key, items):
        barrier.wait()
        try:
            outcomes[index] = batcher.submit(key, items).results
        except Exception as error:  # the test inspects what each caller got
            outcomes[index] = error

    threads = [threading.Thread(target=submit, args=(index, key, items))
               for index, (key, items) in enumerate(submissions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return outcomes


def test_concurrent_requests_with_the_same_settings_share_one_batch():
    run = RecordingRun()
    batcher = MicroBatcher(run, window_s=WINDOW_S, max_batch_items=64)
    outcomes = submit_concurrently(batcher, [("k", [1]), ("k", [2, 3]), ("k", [4]), ("k", [5, 6, 7])])
    assert len(run.batches) == 1
    assert sorted(run.batches[0][1]) == [1, 2, 3, 4, 5, 6, 7]
    assert outcomes == [[10], [20, 30], [40], [50, 60, 70]]


def test_different_settings_never_share_a_batch():
    run = RecordingRun()
    batcher = MicroBatcher(run, window_s=WINDOW_S, max_batch_items=64)
    outcomes = submit_concurrently(batcher, [("a", [1]), ("b", [2]), ("a", [3]), ("b", [4])])
    assert outcomes == [[10], [20], [30], [40]]
    assert sorted((key, sorted(items)) for key, items in run.batches) == [("a", [1, 3]), ("b", [2, 4])]


def test_batches_hold_whole_requests_up_to_the_limit_and_a_larger_request_runs_alone():
    run = RecordingRun()
    batcher = MicroBatcher(run, window_s=WINDOW_S, max_batch_items=4)
    submissions = [("k", [index * 10 + 1, index * 10 + 2, index * 10 + 3]) for index in range(3)]
    submissions.append(("k", [91, 92, 93, 94, 95, 96]))
    outcomes = submit_concurrently(batcher, submissions)
    assert outcomes == [[item * 10 for item in items] for _, items in submissions]
    requests = [items for _, items in submissions]
    for _, batch in run.batches:
        assert batch in requests, "a batch of 3-item requests under a limit of 4 holds one request"
    assert len(run.batches) == 4


def test_a_full_batch_does_not_wait_for_the_window():
    run = RecordingRun()
    batcher = MicroBatcher(run, window_s=30.0, max_batch_items=4)
    started = time.monotonic()
    outcomes = submit_concurrently(batcher, [("k", [1]), ("k", [2]), ("k", [3]), ("k", [4])])
    assert time.monotonic() - started < 5.0
    assert outcomes == [[10], [20], [30], [40]]
    assert len(run.batches) == 1


def test_a_lone_request_waits_one_window_at_most():
    run = RecordingRun()
    batcher = MicroBatcher(run, window_s=WINDOW_S, max_batch_items=64)
    started = time.monotonic()
    answer = batcher.submit("k", [1])
    assert answer.results == [10]
    assert WINDOW_S * 0.9 <= time.monotonic() - started < WINDOW_S + SLACK_S
    assert answer.call_seconds < WINDOW_S * 0.5, "the model call's time, not the window's"


def start_held_batch(key):
    """A batcher whose first batch, of `key`, is running and held until released.

    Returns:
      (batcher, run, thread that submitted the held request, release event).
    """
    release = threading.Event()
    run = RecordingRun(hold={key: release})
    batcher = MicroBatcher(run, window_s=WINDOW_S, max_batch_items=64)
    submitter = threading.Thread(target=batcher.submit, args=(key, [1]))
    submitter.start()
    assert run.started.wait(timeout=10)
    return batcher, run, submitter, release


def test_a_slow_batch_does_not_hold_back_other_settings():
    batcher, _, slow, release_slow = start_held_batch("slow")
    started = time.monotonic()
    assert batcher.submit("fast", [2]).results == [20]
    assert time.monotonic() - started < WINDOW_S + SLACK_S
    assert slow.is_alive(), "the slow batch is still running"
    release_slow.set()
    slow.join(timeout=10)


def test_requests_arriving_during_a_batch_form_the_next_batch_without_another_window():
    batcher, run, first, release_first = start_held_batch("k")
    later = [threading.Thread(target=batcher.submit, args=("k", [item])) for item in (2, 3, 4)]
    for thread in later:
        thread.start()
    time.sleep(WINDOW_S + 0.1)  # the latecomers queue behind the running batch
    release_first.set()
    for thread in [first] + later:
        thread.join(timeout=10)
    assert [sorted(items) for _, items in run.batches] == [[1], [2, 3, 4]]


def test_a_failed_batch_fails_its_own_requests_only():
    run = RecordingRun(fail_on=2)
    batcher = MicroBatcher(run, window_s=WINDOW_S, max_batch_items=64)
    outcomes = submit_concurrently(batcher, [("k", [1]), ("k", [2]), ("other", [3])])
    assert isinstance(outcomes[0], BatchFailed) and isinstance(outcomes[1], BatchFailed)
    assert isinstance(outcomes[0].__cause__, RuntimeError)
    assert outcomes[2] == [30]
    assert batcher.submit("k", [4]).results == [40], "the key serves again after a failure"


def test_each_request_of_a_failed_batch_gets_an_exception_of_its_own():
    # One exception object raised in several threads gathers all their frames
    # in its one traceback: each logged 500 would show the others' stacks.
    run = RecordingRun(fail_on=2)
    batcher = MicroBatcher(run, window_s=WINDOW_S, max_batch_items=64)
    outcomes = submit_concurrently(batcher, [("k", [1]), ("k", [2]), ("k", [3])])
    assert len(run.batches) == 1
    assert all(isinstance(outcome, BatchFailed) for outcome in outcomes)
    assert len({id(outcome) for outcome in outcomes}) == 3
    cause = outcomes[0].__cause__
    assert isinstance(cause, RuntimeError) and "cannot translate 2" in str(cause)
    assert all(outcome.__cause__ is cause for outcome in outcomes), "the cause is kept"
    for outcome in outcomes:
        frames = [frame.name for frame in traceback.extract_tb(outcome.__traceback__)]
        assert frames.count("submit") == 2, "the test's submit and the batcher's, once: %s" % frames
    frames = [frame.name for frame in traceback.extract_tb(cause.__traceback__)]
    assert "submit" not in frames, "the cause's traceback is the batch's run only: %s" % frames


def test_unbatched_runs_every_request_alone():
    run = RecordingRun()
    outcomes = submit_concurrently(Unbatched(run), [("k", [1]), ("k", [2, 3])])
    assert outcomes == [[10], [20, 30]]
    assert sorted(items for _, items in run.batches) == [[1], [2, 3]]
    assert Unbatched(run).submit("k", [4]).call_seconds >= 0.0


def test_the_counts_add_up_the_model_calls_of_both_batchers():
    run = RecordingRun()
    batcher = MicroBatcher(run, window_s=WINDOW_S, max_batch_items=64)
    submit_concurrently(batcher, [("a", [1]), ("a", [2, 3]), ("b", [4])])
    batched = batcher.counts.totals()
    assert (batched["calls"], batched["items"]) == (len(run.batches), 4)
    run = RecordingRun(fail_on=2)
    unbatched = Unbatched(run)
    submit_concurrently(unbatched, [("k", [1]), ("k", [2, 3])])
    assert (unbatched.counts.totals()["calls"], unbatched.counts.totals()["items"]) == (2, 3), \
        "a failed call counts too"


def test_the_counts_time_each_call_from_start_to_end():
    batcher, _, held, release = start_held_batch("k")
    time.sleep(0.3)
    release.set()
    held.join(timeout=10)
    totals = batcher.counts.totals()
    assert totals["calls"] == 1 and totals["items"] == 1
    assert 0.3 <= totals["seconds"] < 0.3 + SLACK_S


def test_every_request_of_a_batch_gets_the_time_of_its_call():
    release = threading.Event()
    run = RecordingRun(hold={"k": release})
    batcher = MicroBatcher(run, window_s=WINDOW_S, max_batch_items=64)
    answers = [None, None]

    def submit(index):
        answers[index] = batcher.submit("k", [index])
    threads = [threading.Thread(target=submit, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    assert run.started.wait(timeout=10)
    time.sleep(0.3)
    release.set()
    for thread in threads:
        thread.join(timeout=10)
    assert len(run.batches) == 1
    assert answers[0].call_seconds == answers[1].call_seconds
    assert 0.3 <= answers[0].call_seconds < 0.3 + SLACK_S
    assert batcher.counts.totals()["seconds"] == answers[0].call_seconds


# --- The app, with the real tiny model ---------------------------------------------------------

class CountingTranslator:
    """Wraps the real Translator and records the batch size of each model call."""

    def __init__(self, translator):
        self._translator = translator
        self.calls = []
        self.options = []

    def __getattr__(self, name):
        return getattr(self._translator, name)

    def translate_tokens(self, token_ids, **options):
        self.calls.append(len(token_ids))
        self.options.append(dict(options, token_ids=token_ids))
        return self._translator.translate_tokens(token_ids, **options)


@pytest.fixture(scope="session")
def translator(tiny_model_dir):
    from decode.translator import Translator
    return Translator(tiny_model_dir)


def app_with(translator, config, window_ms):
    """The app with this batching window; the unrolled decoder serves every length here."""
    config = copy.deepcopy(config)
    config["serve"]["batch_window_ms"] = window_ms
    return create_app(ModelSlot(translator), config,
                      max_unrolled_tokens=config["serve"]["max_tokens"])


def post_concurrently(app, bodies):
    """POSTs every body to /translate from its own thread at once; returns the responses."""
    responses = [None] * len(bodies)
    barrier = threading.Barrier(len(bodies))

    def post(index):
        client = app.test_client()
        barrier.wait()
        responses[index] = client.post("/translate", json=bodies[index])

    threads = [threading.Thread(target=post, args=(index,)) for index in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return responses


# Of different lengths: each sentence's output limit is its own, so the longest
# sentence of a batch must not change the others' translations.
SENTENCES = ["one", "a beautiful table", "nine hundred seventy-five", "We need the pen.",
             "I paid three British pounds.", "Sunday, December 19, 2032"]


@pytest.mark.parametrize("decoder", ["while_loop", "unrolled"])
def test_concurrent_requests_are_batched_and_answered_as_if_alone(translator, decoder):
    counting = CountingTranslator(translator)
    app = app_with(counting, translator.config, window_ms=300)
    bodies = [{"text": text, "decoder": decoder, "n_best": 2} for text in SENTENCES]
    responses = post_concurrently(app, bodies)
    assert [response.status_code for response in responses] == [200] * len(bodies)
    assert sum(counting.calls) == len(bodies), "every sentence was translated once"
    assert len(counting.calls) < len(bodies), "some requests shared a batch"
    batching = app.test_client().get("/v1/info").get_json()["batching"]
    assert (batching["model_calls"], batching["sentences"]) == (len(counting.calls), len(bodies))
    for text, response in zip(SENTENCES, responses):
        [alone] = translator.translate([text], decoder=decoder, n_best=2)
        [batched] = response.get_json()["translations"]
        assert [hypothesis["text"] for hypothesis in batched["n_best"]] == [h.text for h in alone.n_best]
        assert [hypothesis["score"] for hypothesis in batched["n_best"]] == pytest.approx(
            [h.score for h in alone.n_best], abs=1e-4)


def test_a_zero_window_turns_batching_off(translator):
    counting = CountingTranslator(translator)
    app = app_with(counting, translator.config, window_ms=0)
    responses = post_concurrently(app, [{"text": text} for text in SENTENCES[:4]])
    assert [response.status_code for response in responses] == [200] * 4
    assert counting.calls == [1, 1, 1, 1]
    assert app.test_client().get("/v1/info").get_json()["batching"]["enabled"] is False


def test_requests_that_differ_in_n_best_only_share_a_batch(translator):
    # n_best only picks from the same beam: the call decodes with the largest,
    # and each request keeps its own.
    counting = CountingTranslator(translator)
    app = app_with(counting, translator.config, window_ms=300)
    n_bests = [1, 3, 2, 3, 1, 2]
    bodies = [{"text": text, "beam_width": 3, "n_best": n_best}
              for text, n_best in zip(SENTENCES, n_bests)]
    responses = post_concurrently(app, bodies)
    assert [response.status_code for response in responses] == [200] * len(bodies)
    assert len(counting.calls) < len(set(n_bests)), "requests of different n_best shared a batch"
    n_best_of = {tuple(translator.tokenize(text)): n_best for text, n_best in zip(SENTENCES, n_bests)}
    for options in counting.options:
        assert options["n_best"] == max(n_best_of[tuple(ids)] for ids in options["token_ids"]), \
            "a call decodes its batch's largest n_best"
    for text, n_best, response in zip(SENTENCES, n_bests, responses):
        [alone] = translator.translate([text], beam_width=3, n_best=n_best)
        [batched] = response.get_json()["translations"]
        assert [hypothesis["text"] for hypothesis in batched["n_best"]] == [h.text for h in alone.n_best]
        assert [hypothesis["score"] for hypothesis in batched["n_best"]] == pytest.approx(
            [h.score for h in alone.n_best], abs=1e-4)
        assert (batched["text"], batched["score"]) == (
            alone.text, pytest.approx(alone.score, abs=1e-4))


def test_decode_ms_is_the_model_call_and_elapsed_ms_includes_the_window(translator):
    app = app_with(translator, translator.config, window_ms=300)
    client = app.test_client()
    client.post("/translate", json={"text": "one", "decoder": "greedy"})  # builds the graph
    body = client.post("/translate", json={"text": "one", "decoder": "greedy"}).get_json()
    assert body["elapsed_ms"] >= 300, "a lone request waits the whole window"
    assert 0 < body["decode_ms"] < body["elapsed_ms"] - 250, body
    batched = [response.get_json()["decode_ms"] for response in post_concurrently(
        app, [{"text": text, "decoder": "greedy"} for text in SENTENCES[:3]])]
    assert len(set(batched)) < 3, "requests of one batch report its one model call"


# --- Graphs built on first use, per batch -------------------------------------------------------

@pytest.fixture
def fresh_translator(tiny_model_dir):
    """A translator of its own: no decoder graph is built until a request needs it."""
    from decode.translator import Translator
    fresh = Translator(tiny_model_dir)
    yield fresh
    fresh.close()


def test_requests_sharing_a_batch_report_the_graph_their_call_built(fresh_translator):
    counting = CountingTranslator(fresh_translator)
    app = app_with(counting, fresh_translator.config, window_ms=300)
    bodies = [{"text": text, "beam_width": 7} for text in SENTENCES[:4]]
    responses = post_concurrently(app, bodies)
    assert [response.status_code for response in responses] == [200] * len(bodies)
    assert len(counting.calls) == 1, "one batch"
    assert [response.get_json()["graphs_built"] for response in responses] == [1] * len(bodies), \
        "its one call built the graph: every request of the batch waited for it"
    again = post_concurrently(app, bodies)
    assert [response.get_json()["graphs_built"] for response in again] == [0] * len(bodies)


class HeldGreedyTranslator(CountingTranslator):
    """Greedy calls decode, then wait until released: a call that spans another batch's build."""

    def __init__(self, translator):
        super().__init__(translator)
        self.greedy_decoded = threading.Event()
        self.release_greedy = threading.Event()

    def translate_tokens(self, token_ids, **options):
        translations = super().translate_tokens(token_ids, **options)
        if options["decoder"] == "greedy":
            self.greedy_decoded.set()
            self.release_greedy.wait(timeout=30)
        return translations


def test_a_batch_does_not_count_the_graphs_another_batch_built_meanwhile(fresh_translator):
    held = HeldGreedyTranslator(fresh_translator)
    app = app_with(held, fresh_translator.config, window_ms=10)
    client = app.test_client()
    held.release_greedy.set()
    assert client.post("/translate", json={"text": "one", "decoder": "greedy"}).get_json()[
        "graphs_built"] == 1
    held.greedy_decoded.clear()
    held.release_greedy.clear()
    greedy_answer = []
    greedy = threading.Thread(target=lambda: greedy_answer.append(
        app.test_client().post("/translate", json={"text": "two", "decoder": "greedy"})))
    greedy.start()
    try:
        assert held.greedy_decoded.wait(timeout=30)
        # While the greedy call is still running, a while_loop batch builds its graph.
        response = client.post("/translate", json={"text": "one", "beam_width": 6})
        assert response.get_json()["graphs_built"] == 1
    finally:
        held.release_greedy.set()
        greedy.join(timeout=30)
    assert greedy_answer[0].status_code == 200
    assert greedy_answer[0].get_json()["graphs_built"] == 0, \
        "the greedy call built nothing, though the translator built a graph during it"
