"""Load test of serve.py: throughput and latency with batching on and off.

For each mode, starts serve.py (`--no_batching` for "off"), asks every test sentence once
alone (the reference answers), then sends `--requests` requests from 1, 8 and 32 concurrent
clients, one keep-alive connection each, the modes taking turns, each round in the other order.
Every fifth request is invalid and must get its 4xx JSON error; every valid one translates one
test sentence with the default settings and must equal its reference answer. Each server is
then stopped with SIGTERM and must exit 0. The clients are coroutines on one asyncio event
loop sending requests encoded before the clock starts: the load generator shares the cores
with the server, so it must cost little (its CPU per request is reported).

A table row per mode and client count (latencies of the valid requests; model calls from
/v1/info; why connections failed: on stderr), then the targets (issue 20): no 5xx, no
connection failure, no wrong answer; at the most clients, batching on gives at least 1.5x the
throughput of batching off, with a p99 latency at most 3x its mean; never below 1.0x at fewer.

--instant serves bench.instant_server, which decodes nothing: the ceiling that serving alone
leaves. With --hparams or --batch_log each server serves a copy of the model directory (links
to its files) whose config.yaml has those settings; --batch_log DIR leaves one batch log per
mode and phase in DIR (MODE-reference.jsonl, MODE-Nclients-roundR.jsonl) for
`python -m bench.replay_batches`.

Usage (the test sentences default to the `test.src` of the model's prepared data):
  .venv/bin/python -m bench.serve_load --model_dir runs/serve_small [--requests 2000]
      [--clients 1,8,32] [--modes on,off] [--rounds 4] [--input F]
      [--json bench/out/serve_load.json] [--instant] [--hparams serve.k=v,...]
      [--batch_log DIR]
"""

import argparse
import asyncio
import collections
import email
import functools
import json
import os
import shutil
import sys
import time

from bench import harness
from bench.harness import cell, percentile, ratio
from seq2seq.config import load_config, save_config

REQUEST_TIMEOUT_S = 120
INVALID_EVERY = 5
SCORE_TOLERANCE = 1e-4
TARGET_SPEEDUP = 1.5  # issue 10, at the most clients
TARGET_P99_OVER_MEAN = 3.0  # issue 20, at the most clients

Request = collections.namedtuple("Request", "method path body content_type sentence")
Request.__doc__ = """One planned request; `sentence` is None for an invalid one."""

PhaseResult = collections.namedtuple(
    "PhaseResult", "mode clients requests seconds server_cpu_s client_cpu_s latencies_ms "
                   "in_app_ms model_calls sentences model_call_seconds "
                   "client_errors server_errors connection_failures mismatches")


class ResponseError(Exception):
    """An answer this client cannot read; it counts as a connection failure."""


# Short of an answer: the connection (OSError, TimeoutError included; EOFError: closed
# mid-answer), an answer head over the stream's 64 KiB limit, or an unreadable answer.
CONNECTION_FAILURES = (OSError, EOFError, asyncio.LimitOverrunError, ResponseError)


def invalid_requests():
    """One request of each invalid kind, all of which must be answered with a 4xx."""
    def translate(body, content_type="application/json"):
        return Request("POST", "/translate", body.encode("utf-8"), content_type, None)

    return [translate(json.dumps({"text": ""})),
            translate(json.dumps({"text": "one", "decoder": "beam"})),
            translate(json.dumps({"text": "one", "beam_width": 0})),
            translate('{"text": "one"'),
            translate(json.dumps({"text": "one"}), content_type="text/plain"),
            translate(json.dumps({"texts": ["one"] * 1000}))]


def translation_request(sentence):
    """A valid request: one sentence, the default settings."""
    return Request("POST", "/translate", json.dumps({"text": sentence}).encode("utf-8"),
                   "application/json", sentence)


def plan_requests(sentences, count):
    """`count` requests: every INVALID_EVERY-th invalid, the others cycling through sentences."""
    invalid = invalid_requests()
    return [invalid[index // INVALID_EVERY % len(invalid)]
            if index % INVALID_EVERY == INVALID_EVERY - 1
            else translation_request(sentences[index % len(sentences)])
            for index in range(count)]


def encode_request(request, port):
    """`request` as the bytes of an HTTP/1.1 request (keep-alive, the 1.1 default)."""
    head = ("%s %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
            % (request.method, request.path, harness.HOST, port, request.content_type,
               len(request.body)))
    return head.encode("latin-1") + request.body


def parse_head(head):
    """(status, Content-Length, whether the server closes the connection) of an answer's head
    (the status line and headers, with the blank line); ResponseError without Content-Length
    (chunked, or a body that ends with the connection): the end of the body is unknown."""
    status_line, _, header_lines = head.decode("latin-1").partition("\r\n")
    version, _, status_and_reason = status_line.partition(" ")
    if not version.startswith("HTTP/1.") or not status_and_reason[:3].isdigit():
        raise ResponseError("not an HTTP/1.x status line: %r" % status_line)
    headers = email.message_from_string(header_lines)  # names in any case
    if "Transfer-Encoding" in headers:
        raise ResponseError("answer with Transfer-Encoding: %s, not Content-Length"
                            % headers["Transfer-Encoding"].strip())
    length = headers.get("Content-Length", "").strip()
    if not length.isdigit():
        raise ResponseError("answer without Content-Length" if not length else
                            "Content-Length is not a number: %r" % length)
    closes = version == "HTTP/1.0" or headers.get("Connection", "").strip().lower() == "close"
    return int(status_and_reason[:3]), int(length), closes


class Connection:
    """A keep-alive HTTP/1.1 connection to the server, on asyncio streams, opened by the first
    exchange and again by the next one after close() (a failure, or the server closing it)."""

    def __init__(self, port):
        self._port = port
        self._streams = None

    async def exchange(self, encoded_request):
        """Sends one encoded request; returns the answer's (status, body bytes). Raises one of
        CONNECTION_FAILURES (TimeoutError after REQUEST_TIMEOUT_S); the caller then closes."""
        async with asyncio.timeout(REQUEST_TIMEOUT_S):
            if self._streams is None:
                self._streams = await asyncio.open_connection(harness.HOST, self._port)
            reader, writer = self._streams
            # No drain(): the answer is awaited next, so at most one request is buffered.
            writer.write(encoded_request)
            status, length, closes = parse_head(await reader.readuntil(b"\r\n\r\n"))
            body = await reader.readexactly(length)
        if closes:
            self.close()
        return status, body

    def close(self):
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None


def reference_answers(port, sentences):
    """Each sentence translated by a request of its own, one at a time, over one connection."""
    async def fetch():
        connection, answers = Connection(port), {}
        for sentence in sentences:
            status, body = await connection.exchange(
                encode_request(translation_request(sentence), port))
            if status != 200:
                raise RuntimeError("reference request failed: %d %s"
                                   % (status, body.decode("utf-8", "replace")))
            answers[sentence] = json.loads(body)["translations"][0]
        connection.close()
        return answers
    return asyncio.run(fetch())


def model_call_totals(port):
    """(model calls, sentences, model-call seconds) since the server started, from /v1/info."""
    status, info = harness.get_json(port, "/v1/info")
    if status != 200:
        raise RuntimeError("GET /v1/info failed: %d %s" % (status, info))
    return tuple(info["batching"][key] for key in ("model_calls", "sentences",
                                                   "model_call_seconds"))


def right_answer(answer, reference):
    """Whether a /translate answer's JSON object holds the reference translation first."""
    try:
        first = answer["translations"][0]
        return (first["text"] == reference["text"]
                and abs(first["score"] - reference["score"]) <= SCORE_TOLERANCE)
    except (KeyError, IndexError, TypeError):  # not the answer's shape
        return False


class Tally:
    """The counts of one phase, the latencies of its valid requests, and why connections failed."""

    def __init__(self):
        self.counts, self.failures = collections.Counter(), collections.Counter()
        self.latencies_ms, self.in_app_ms = [], []

    def answer(self, status, body, reference, elapsed_ms):
        """Counts one answer; `reference` is None for an invalid request. A body that is not
        the JSON its check reads is a wrong answer."""
        if status >= 500:
            self.counts["server_errors"] += 1
        elif reference is None:
            # An invalid request must be refused with a JSON error, and nothing else.
            refused = 400 <= status < 500 and "error" in json_object(body)
            self.counts["client_errors"] += 1
            self.counts["mismatches"] += not refused
        else:
            answer = json_object(body)
            right = status == 200 and right_answer(answer, reference)
            self.latencies_ms.append(elapsed_ms)
            if right and isinstance(answer.get("elapsed_ms"), (int, float)):
                self.in_app_ms.append(answer["elapsed_ms"])
            self.counts["mismatches"] += not right

    def connection_failure(self, error):
        self.counts["connection_failures"] += 1
        self.failures[repr(error)] += 1


def json_object(body):
    """The JSON object in `body`, or an empty dict if `body` is not a JSON object."""
    try:
        value = json.loads(body)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def encode_plan(plan, port, references):
    """`plan` as (encoded request, reference answer or None if invalid) pairs, each distinct
    request encoded once."""
    encoded = {request: encode_request(request, port) for request in set(plan)}
    return [(encoded[request], None if request.sentence is None else references[request.sentence])
            for request in plan]


async def send_share(port, share, tally):
    """One client: sends its share of the plan one request after another."""
    connection = Connection(port)
    for encoded_request, reference in share:
        started = time.perf_counter()
        try:
            status, body = await connection.exchange(encoded_request)
            tally.answer(status, body, reference, (time.perf_counter() - started) * 1000.0)
        except CONNECTION_FAILURES as error:
            tally.connection_failure(error)
            # Whatever state the connection is in, the next request gets a new one.
            connection.close()
    connection.close()


async def send_shares(port, shares, tally):
    await asyncio.gather(*(send_share(port, share, tally) for share in shares))


def run_phase(mode, server, plan, clients, references):
    """Sends `plan` from `clients` concurrent clients; returns a PhaseResult."""
    encoded_plan = encode_plan(plan, server.port, references)
    shares = [encoded_plan[index::clients] for index in range(clients)]
    tally = Tally()
    calls_before, cpu_before = model_call_totals(server.port), server.cpu_seconds()
    seconds, client_cpu_seconds, _ = harness.measure(
        lambda: asyncio.run(send_shares(server.port, shares, tally)))
    cpu_seconds = server.cpu_seconds() - cpu_before
    calls = [after - before for after, before in zip(model_call_totals(server.port), calls_before)]
    for failure, count in tally.failures.items():
        print("batching %s, %d clients: %d connection failures: %s"
              % (mode, clients, count, failure), file=sys.stderr, flush=True)
    return PhaseResult(mode, clients, len(plan), seconds, cpu_seconds, client_cpu_seconds,
                       sorted(tally.latencies_ms), sorted(tally.in_app_ms), *calls,
                       *(tally.counts[name] for name in PhaseResult._fields[-4:]))


def merge(results):
    """One PhaseResult from the rounds of one mode and client count."""
    return results[0]._replace(**{
        field: (sorted(sum((getattr(r, field) for r in results), [])) if field.endswith("_ms")
                else sum(getattr(r, field) for r in results))
        for field in PhaseResult._fields[2:]})


# A run with nothing to measure (no valid answer, no CPU tick) misses the targets worst: its
# figures are None and read "n/a" or "not measured", so that the report still gets printed.


def throughput(result):
    return ratio(result.requests, result.seconds)


def table(results):
    return harness.markdown_table(
        ["batching", "clients", "requests", "requests/s", "requests/server CPU-s",
         "client CPU ms/request", "p50 ms", "p95 ms", "p99 ms", "in-app p50 ms",
         "sentences/model call", "model calls running", "4xx", "5xx", "connection failures",
         "wrong answers"],
        ([r.mode, r.clients, r.requests, cell(throughput(r), "%.1f"),
          cell(ratio(r.requests, r.server_cpu_s), "%.1f"),
          cell(ratio(1000.0 * r.client_cpu_s, r.requests), "%.3f"),
          cell(percentile(r.latencies_ms, 0.50), "%.1f"),
          cell(percentile(r.latencies_ms, 0.95), "%.1f"),
          cell(percentile(r.latencies_ms, 0.99), "%.1f"),
          cell(percentile(r.in_app_ms, 0.50), "%.1f"),
          "%.1f" % (r.sentences / max(r.model_calls, 1)),
          cell(ratio(r.model_call_seconds, r.seconds), "%.2f"), r.client_errors,
          r.server_errors, r.connection_failures, r.mismatches] for r in results))


def by_mode_and_clients(results):
    """({(mode, clients): result}, the largest client count) of a run's results."""
    return ({(result.mode, result.clients): result for result in results},
            max(result.clients for result in results))


def verdicts(results):
    """The targets, each as (description, measured, passed)."""
    by_key, most = by_mode_and_clients(results)
    checks = [("no 5xx, no connection failure, no wrong answer",
               "%d / %d / %d" % (sum(r.server_errors for r in results),
                                 sum(r.connection_failures for r in results),
                                 sum(r.mismatches for r in results)),
               not any(r.server_errors or r.connection_failures or r.mismatches for r in results))]
    for clients in sorted({clients for _, clients in by_key}):
        if ("on", clients) not in by_key or ("off", clients) not in by_key:
            continue
        speedup = ratio(throughput(by_key["on", clients]), throughput(by_key["off", clients]))
        target = TARGET_SPEEDUP if clients == most else 1.0
        checks.append(("%d clients: batching on / off throughput >= %.1fx" % (clients, target),
                       cell(speedup, "%.2fx", "not measured"),
                       speedup is not None and speedup >= target))
    if ("on", most) in by_key:
        latencies = by_key["on", most].latencies_ms
        spread = ratio(percentile(latencies, 0.99),
                       sum(latencies) / len(latencies) if latencies else None)
        checks.append(("batching on: p99 at %d clients <= %.0fx their mean latency"
                       % (most, TARGET_P99_OVER_MEAN), cell(spread, "%.2fx", "not measured"),
                       spread is not None and spread <= TARGET_P99_OVER_MEAN))
    return checks


def cpu_cost_ratio(results):
    """(clients, on / off requests per server CPU-second) at the most clients, or None; the
    ratio is None if a server used no CPU tick (or answered nothing) there."""
    by_key, most = by_mode_and_clients(results)
    if ("on", most) not in by_key or ("off", most) not in by_key:
        return None
    on, off = by_key["on", most], by_key["off", most]
    return most, ratio(ratio(on.requests, on.server_cpu_s), ratio(off.requests, off.server_cpu_s))


def served_copy(model_dir, directory, hparams, batch_log):
    """A directory serving `model_dir`'s model with other settings: a link to each of its
    files but config.yaml, which is the model's with `hparams` and serve.batch_log over it."""
    os.makedirs(directory)
    for name in os.listdir(model_dir):
        if name != "config.yaml":
            os.symlink(os.path.join(model_dir, name), os.path.join(directory, name))
    config = load_config(os.path.join(model_dir, "config.yaml"), hparams,
                         {"serve": {"batch_log": batch_log}} if batch_log else None)
    save_config(config, os.path.join(directory, "config.yaml"))
    return directory


def keep_batch_log(path, suffix):
    """Moves a server's batch log (if it logged a call) to PATH-SUFFIX.jsonl: the next phase's
    calls go to a new file, which the server opens for each line."""
    if os.path.exists(path):
        os.replace(path, path.replace(".jsonl", "-%s.jsonl" % suffix))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", required=True, help="a model directory written by train.py")
    parser.add_argument("--input", help="test sentences, one a line (default: the model's "
                                        "prepared test.src)")
    parser.add_argument("--requests", type=int, default=2000, help="requests per client count")
    parser.add_argument("--clients", default="1,8,32", help="concurrent client counts")
    parser.add_argument("--modes", default="on,off", help="batching modes to run: on, off")
    parser.add_argument("--rounds", type=int, default=4,
                        help="the modes take turns this many times per client count")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--instant", action="store_true",
                        help="serve with bench.instant_server, which decodes nothing: the "
                             "ceiling that serving alone leaves")
    parser.add_argument("--hparams", default="",
                        help='settings over the model\'s config.yaml, e.g. "serve.batch_hold_ms=0"')
    parser.add_argument("--batch_log", help="a directory for the servers' batch logs, one file "
                                            "per mode and phase (bench.replay_batches reads them)")
    args = parser.parse_args(argv)
    model_dir = os.path.abspath(args.model_dir)
    sentences = harness.read_sentences(args.input or harness.model_test_source(model_dir))
    modes = args.modes.split(",")
    log_dir = os.path.join(harness.REPO, "bench", "out")
    os.makedirs(log_dir, exist_ok=True)
    copies_dir = os.path.join(log_dir, "serve_load_models")
    shutil.rmtree(copies_dir, ignore_errors=True)
    batch_logs = {}
    if args.batch_log:
        os.makedirs(args.batch_log, exist_ok=True)
        batch_logs = {mode: os.path.join(os.path.abspath(args.batch_log), mode + ".jsonl")
                      for mode in modes}
    servers = {}
    try:
        for mode in modes:
            served_dir = model_dir if not (args.hparams or args.batch_log) else served_copy(
                model_dir, os.path.join(copies_dir, mode), args.hparams, batch_logs.get(mode))
            servers[mode] = harness.Server(
                ["--model_dir", served_dir, "--warm_up_source_tokens", "0"]
                + ([] if mode == "on" else ["--no_batching"]),
                os.path.join(log_dir, "serve_load_%s.log" % mode),
                program=["-m", "bench.instant_server"] if args.instant else ["serve.py"])
        references = {mode: reference_answers(server.port, sentences)
                      for mode, server in servers.items()}
        for mode, path in batch_logs.items():
            keep_batch_log(path, "reference")
        results = []
        plan = plan_requests(sentences, args.requests)
        for clients in (int(count) for count in args.clients.split(",")):
            round_indices = {mode: iter(range(args.rounds)) for mode in modes}

            def phase(mode):
                """The mode's next round: its slice of the plan."""
                round_index = next(round_indices[mode])
                result = run_phase(mode, servers[mode], plan[round_index::args.rounds], clients,
                                   references[mode])
                if mode in batch_logs:
                    keep_batch_log(batch_logs[mode],
                                   "%dclients-round%d" % (clients, round_index + 1))
                return result
            rounds = harness.time_rounds({mode: functools.partial(phase, mode) for mode in modes},
                                         args.rounds, warmup=0)
            for mode in modes:
                results.append(merge(rounds[mode].results))
                print(table(results[-1:]).splitlines()[-1], flush=True)
    finally:
        exit_codes = {mode: server.stop() for mode, server in servers.items()}
        shutil.rmtree(copies_dir, ignore_errors=True)
    if any(exit_codes.values()):
        raise RuntimeError("serve.py did not exit 0 after SIGTERM: %s (logs in %s)"
                           % (exit_codes, log_dir))
    print("\n%s\n" % table(results))
    cost_ratio = cpu_cost_ratio(results)
    if cost_ratio:
        # Not a target: what batching saves in server CPU, whatever the cores.
        print("batching on / off requests per server CPU-second at %d clients: %s"
              % (cost_ratio[0], cell(cost_ratio[1], "%.2fx")))
    checks = verdicts(results)
    for description, measured, passed in checks:
        print("%s %s: %s" % ("PASS" if passed else "FAIL", description, measured))
    harness.write_json(args.json, {"table": table(results), "checks": checks})
    return 0 if all(passed for _, _, passed in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
