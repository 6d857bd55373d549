"""What the benchmarks share: timing rounds, child processes, a server to load, test sentences,
sessions, another checkout's search, percentiles and markdown tables, one way each
(docs/BENCHMARKS.md takes the tables as printed)."""

import collections
import http.client
import importlib.util
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # for the TensorFlow imported after this
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST = "127.0.0.1"
# Loading and warming up a model takes seconds to a minute; a server that is not ready
# after this long has hung, and the bench must not wait forever.
START_TIMEOUT_S = 300
STOP_TIMEOUT_S = 60
POLL_S = 0.2

Samples = collections.namedtuple("Samples", "wall cpu results")
Samples.__doc__ = "One variant's timed runs: the wall and CPU seconds of each, what each returned."


def clock(cpu_clock=time.process_time):
    """(wall-clock seconds, CPU seconds) now; CPU: all threads of this process by default."""
    return time.perf_counter(), cpu_clock()


def measure(run, cpu_clock=time.process_time):
    """(wall seconds, CPU seconds, result) of `run()`."""
    wall, cpu = clock(cpu_clock)
    result = run()
    return time.perf_counter() - wall, cpu_clock() - cpu, result


def time_rounds(variants, rounds, warmup=1, after_round=None):
    """Times `variants` side by side: each runs `warmup` times untimed, then once a round.

    The order rotates by one each round, so that no variant always runs right after the same
    other one and load from other processes falls on all alike. CPU time (all threads of this
    process) moves less than wall time when other processes load the machine.

    Args:
      variants: {name: function of no arguments}.
      after_round: called with (round index, the samples so far) after each round, if given.
    Returns:
      {name: Samples}, each list in run order.
    """
    names = list(variants)
    for _ in range(warmup):
        for name in names:
            variants[name]()
    samples = {name: Samples([], [], []) for name in names}
    for index in range(rounds):
        for name in rotation(names, index):
            for values, value in zip(samples[name], measure(variants[name])):
                values.append(value)
        if after_round:
            after_round(index, samples)
    return samples


def rotation(names, index):
    """`names` (a list) rotated left by `index`: round `index`'s order."""
    return names[index % len(names):] + names[:index % len(names)]


def child_json(args, log_path=None, env=None):
    """The JSON that `python args... --json FILE` writes, run in a child process in the repo
    (`env`: its environment); what it prints is dropped, its stderr kept in `log_path` if
    given. RuntimeError with the end of its stderr if it fails."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "out.json")
        log_path = log_path or os.path.join(directory, "stderr.log")
        with open(log_path, "w", encoding="utf-8") as log:
            child = subprocess.run([sys.executable, *args, "--json", path], cwd=REPO, env=env,
                                   stdout=subprocess.DEVNULL, stderr=log)
        if child.returncode:
            with open(log_path, encoding="utf-8", errors="replace") as log:
                raise RuntimeError("%s failed (exit code %d):\n%s" % (
                    " ".join(args), child.returncode, log.read()[-3000:]))
        with open(path, encoding="utf-8") as result:
            return json.load(result)


median = statistics.median


def ratio(numerator, denominator):
    """numerator / denominator; None if either is None or the denominator is 0."""
    return None if numerator is None or not denominator else numerator / denominator


def percentile(values, fraction):
    """The `fraction` percentile of `values`, the value at the nearest index of them sorted
    (numpy's method="nearest"); None if there are none."""
    ordered = sorted(values)
    return ordered[int(round(fraction * (len(ordered) - 1)))] if ordered else None


def cell(value, spec, missing="n/a"):
    """`value` formatted with `spec`, or `missing` if it was not measured (None)."""
    return missing if value is None else spec % value


def markdown_row(cells):
    """One line of a markdown table: the cells printed with str()."""
    return "| %s |" % " | ".join(map(str, cells))


def markdown_table(header, rows=(), left=1):
    """A markdown table, without a final newline: `header` names the columns, each row lists
    its cells; the first `left` columns are left-aligned, the rest right."""
    lines = [header, ["---" if index < left else "---:" for index in range(len(header))]]
    return "\n".join(map(markdown_row, lines + list(rows)))


def read_sentences(path, limit=None):
    """The sentences of a UTF-8 file, one a line (of a TSV, its first column: the source),
    stripped, blank ones skipped; only the first `limit` if given."""
    with open(path, encoding="utf-8") as lines:
        return [text for text in (line.split("\t")[0].strip() for line in lines) if text][:limit]


def model_test_source(model_dir):
    """The test.src of the data a model was trained on (a relative data_dir is the repo's)."""
    from seq2seq.config import load_config
    data_dir = load_config(os.path.join(model_dir, "config.yaml"))["data"]["data_dir"]
    return os.path.join(REPO, data_dir, "test.src")


def write_json(path, value, **options):
    """Writes `value` to `path` as JSON, making its directory; does nothing if `path` is empty."""
    if path:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w", encoding="utf-8") as json_file:
            json.dump(value, json_file, indent=1, **options)


def translator(model_dir, **options):
    """A decode.translator.Translator of `model_dir` (`options`: its keywords), in graph mode."""
    import tensorflow.compat.v1 as tf
    from decode.translator import Translator
    tf.disable_v2_behavior()
    return Translator(model_dir, **options)


def session_config(inter_op_threads=0, intra_op_threads=0, grappler=True):
    """A tf.ConfigProto of these thread counts (0: TensorFlow's choice), Grappler off unless
    `grappler`; harness.session_config(*threads, grappler=False) is the Translator's."""
    import tensorflow.compat.v1 as tf
    from tensorflow.core.protobuf import rewriter_config_pb2
    return tf.ConfigProto(
        inter_op_parallelism_threads=inter_op_threads,
        intra_op_parallelism_threads=intra_op_threads,
        graph_options=tf.GraphOptions(rewrite_options=rewriter_config_pb2.RewriterConfig(
            disable_meta_optimizer=not grappler)))


def load_checkout(checkout):
    """(the decode package, Seq2SeqModel.beam_update_fn) of another checkout (say a git worktree
    of an older commit): the package as `against_decode`, its files copied with "decode"
    renamed; the function to call on our model (the same templates, so the same variables)."""
    root = tempfile.mkdtemp()
    os.makedirs(os.path.join(root, "against_decode"))
    for name in os.listdir(os.path.join(checkout, "decode")):
        if name.endswith(".py"):
            with open(os.path.join(checkout, "decode", name), encoding="utf-8") as f:
                text = re.sub(r"\bdecode\b", "against_decode", f.read())
            with open(os.path.join(root, "against_decode", name), "w", encoding="utf-8") as f:
                f.write(text)
    sys.path.insert(0, root)
    import against_decode
    spec = importlib.util.spec_from_file_location(
        "against_model", os.path.join(checkout, "seq2seq", "model.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return against_decode, module.Seq2SeqModel.beam_update_fn


def get_json(port, path, timeout_s=60):
    """(status, JSON body) of GET `path` from 127.0.0.1:`port`."""
    connection = http.client.HTTPConnection(HOST, port, timeout=timeout_s)
    try:
        connection.request("GET", path)
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()


def free_port():
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


class Server:
    """serve.py (or `program`, which takes its flags) in a child process on a free port of
    127.0.0.1, everything it prints in `log_path`; started once /healthz answers 200.

    RuntimeError, naming the log, if it exits first or is not ready within `timeout_s`
    (it is then killed).
    """

    def __init__(self, args, log_path, program=("serve.py",), timeout_s=START_TIMEOUT_S):
        self.port, self.log_path = free_port(), log_path
        self._log = open(log_path, "w", encoding="utf-8")
        try:
            self.process = subprocess.Popen(
                [sys.executable, *program, "--host", HOST, "--port", str(self.port), *args],
                cwd=REPO, stdout=self._log, stderr=subprocess.STDOUT)
        except BaseException:
            self._log.close()
            raise
        try:
            self._wait_until_ready(timeout_s)
        except BaseException:
            self.process.kill()
            self.process.wait()
            self._log.close()
            raise

    def _wait_until_ready(self, timeout_s):
        """Polls /healthz (never a blocking read of the server's output, which a hung server
        would never end)."""
        deadline = time.monotonic() + timeout_s
        while self.process.poll() is None and time.monotonic() < deadline:
            try:
                if get_json(self.port, "/healthz", POLL_S)[0] == 200:
                    return
            except (OSError, http.client.HTTPException, ValueError):
                pass  # not listening yet
            time.sleep(POLL_S)
        problem = ("not ready within %g s" % timeout_s if self.process.returncode is None
                   else "it exited (exit code %d)" % self.process.returncode)
        raise RuntimeError("the server did not get ready: %s (its output is in %s)"
                           % (problem, self.log_path))

    def cpu_seconds(self):
        """The server's user + system CPU time so far (Linux /proc), all threads."""
        with open("/proc/%d/stat" % self.process.pid, encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def resident_mib(self):
        """The server's resident memory (VmRSS), MiB."""
        with open("/proc/%d/status" % self.process.pid, encoding="ascii") as status:
            return int(re.search(r"VmRSS:\s+(\d+) kB", status.read()).group(1)) / 1024.0

    def stop(self, timeout_s=STOP_TIMEOUT_S):
        """SIGTERM, then SIGKILL if it has not exited within `timeout_s`; returns the exit code
        (negative: the signal that ended it)."""
        try:
            self.process.send_signal(signal.SIGTERM)
            try:
                return self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                return self.process.wait()
        finally:
            self._log.close()
