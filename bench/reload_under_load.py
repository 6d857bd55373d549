"""Hot reload under load: serve.py's latency, failures and memory while better checkpoints appear.

    .venv/bin/python bench/reload_under_load.py --model_dir D [--clients 8] [--reloads 50]
        [--baseline_s 20] [--warm_up_source_tokens 16] [--json F]

Serves a scratch copy of D's config and tokenizer (watching, the default) with D's newest
checkpoint installed as MODEL_DIR/best/, while `--clients` threads send one sentence after
another, one keep-alive connection each. After `--baseline_s` seconds it installs D's other
checkpoints as best/ in turn (staged, then renamed in, as training does), `--reloads` times,
each once the previous one is served. Reported: failed requests (any answer but 200); p50/p99
latency of the baseline's requests and of those that overlapped a reload (install to the
server's `loaded_at`); answers from a step not served at any moment of their request; the
server's VmRSS before the first reload, after the 5th and after the last; the reload times.
"""

import argparse
import glob
import http.client
import json
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench import harness  # noqa: E402
from seq2seq.model_dir import checkpoint_step  # noqa: E402

SENTENCES = ("twenty one", "the first of May", "I bought these two chairs.", "Monday")


def checkpoint_steps(model_dir):
    """The steps of the checkpoints in `model_dir` (its latest ones), in order."""
    return sorted(checkpoint_step(path[:-len(".index")])
                  for path in glob.glob(os.path.join(model_dir, "model.ckpt-*.index")))


def install_best(source_dir, step, model_dir):
    """Makes checkpoint `step` of `source_dir` MODEL_DIR/best/: staged, then renamed in."""
    best = os.path.join(model_dir, "best")
    staging = best + ".tmp"
    os.makedirs(staging)
    for path in glob.glob(os.path.join(source_dir, "model.ckpt-%d.*" % step)):
        shutil.copy(path, staging)  # new mtimes: the same step installed again is new files
    with open(os.path.join(staging, "checkpoint"), "w") as state:
        state.write('model_checkpoint_path: "model.ckpt-%d"\n' % step)
    if os.path.exists(best):
        os.replace(best, best + ".old")
    os.replace(staging, best)
    shutil.rmtree(best + ".old", ignore_errors=True)


def client(port, index, stop, answers):
    """Sends sentences until `stop`; appends (started, ended, status, step) per request."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    count = 0
    while not stop.is_set():
        body = json.dumps({"text": SENTENCES[(index + count) % len(SENTENCES)]})
        started = time.time()
        try:
            connection.request("POST", "/translate", body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            answer = json.loads(response.read())
            answers.append((started, time.time(), response.status,
                            answer.get("model", {}).get("step")))
        except (OSError, http.client.HTTPException, ValueError):
            answers.append((started, time.time(), 0, None))
            connection.close()  # the next request opens a new one
        count += 1
    connection.close()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", required=True,
                        help="a trained model directory holding two checkpoints or more")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--reloads", type=int, default=50)
    parser.add_argument("--baseline_s", type=float, default=20.0)
    parser.add_argument("--warm_up_source_tokens", type=int, default=16,
                        help="serve.py's flag of that name")
    parser.add_argument("--json", help="also write the report here")
    args = parser.parse_args(argv)
    steps = checkpoint_steps(args.model_dir)
    if len(steps) < 2:
        parser.error("%s holds %d checkpoints; two or more are needed" % (args.model_dir,
                                                                          len(steps)))
    scratch = tempfile.mkdtemp(prefix="reload-bench-")
    model_dir = os.path.join(scratch, "model")
    os.makedirs(model_dir)
    for name in ("config.yaml", "spm.model", "source.model", "target.model", "tokenizer.json"):
        if os.path.exists(os.path.join(args.model_dir, name)):
            shutil.copy(os.path.join(args.model_dir, name), model_dir)
    install_best(args.model_dir, steps[-1], model_dir)
    server = harness.Server(["--model_dir", model_dir, "--warm_up_source_tokens",
                             str(args.warm_up_source_tokens)], os.path.join(scratch, "serve.log"))
    port, answers, stop, reloads, memory = server.port, [], threading.Event(), [], {}
    try:
        memory[0] = server.resident_mib()  # reloads -> MiB
        clients = [threading.Thread(target=client, args=(port, index, stop, answers))
                   for index in range(args.clients)]
        for thread in clients:
            thread.start()
        time.sleep(args.baseline_s)
        baseline_end = time.time()
        served = steps[-1]
        for number in range(1, args.reloads + 1):
            step = [other for other in steps if other != served][number % (len(steps) - 1)]
            installed = time.time()
            install_best(args.model_dir, step, model_dir)
            while True:
                info = harness.get_json(port, "/v1/info")[1]
                if info["loaded_at"] >= installed and info["model"]["step"] == step:
                    break
                if info["reload_error"]:
                    raise RuntimeError("reload %d failed: %s" % (number, info["reload_error"]))
                time.sleep(0.05)
            reloads.append((installed, info["loaded_at"], served, step))
            served = step
            if number in (5, args.reloads):
                memory[number] = server.resident_mib()
        stop.set()
        for thread in clients:
            thread.join()
    finally:
        stop.set()
        server.stop()

    def p(latencies, fraction):
        return None if not latencies else round(harness.percentile(latencies, fraction) * 1000, 1)
    baseline = [end - start for start, end, _, _ in answers if end <= baseline_end]
    during = [end - start for start, end, _, _ in answers
              if any(start <= loaded and end >= installed for installed, loaded, _, _ in reloads)]
    wrong_step = 0  # a step not served at any moment of its request (a switch: at loaded_at)
    for start, end, status, step in answers:
        if status == 200:
            switched = [reload for reload in reloads if reload[1] <= start]
            served = {switched[-1][3] if switched else steps[-1]}
            served.update(reload[3] for reload in reloads if start <= reload[1] <= end)
            wrong_step += step not in served
    reload_seconds = [loaded - installed for installed, loaded, _, _ in reloads]
    report = {
        "clients": args.clients, "reloads": len(reloads), "requests": len(answers),
        "failed": sum(status != 200 for _, _, status, _ in answers),
        "baseline_ms": {"requests": len(baseline), "p50": p(baseline, 0.5),
                        "p99": p(baseline, 0.99)},
        "during_reloads_ms": {"requests": len(during), "p50": p(during, 0.5),
                              "p99": p(during, 0.99)},
        "answers_from_a_step_not_served_in_their_time": wrong_step,
        "reload_seconds": {"median": round(harness.median(reload_seconds), 2),
                           "max": round(max(reload_seconds), 2)},
        "rss_mib": {"after_%d" % number: round(mib, 1) for number, mib in sorted(memory.items())},
    }
    print(json.dumps(report, indent=2))
    harness.write_json(args.json, report)
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
