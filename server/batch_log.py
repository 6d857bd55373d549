"""The batch log: one JSON line per model call of the server, to see where serving time goes.

`python -m bench.replay_batches --model_dir D --log F` re-runs the logged batches offline.
Fields and reasons: docs/BENCHMARKS.md, "The batch log and its replay".
"""

import json
import logging
import threading

LOG = logging.getLogger("seq2seq.serve")


class BatchLog:
    """Appends a JSON line per model call to `path` (opened per line: it may be moved away); a
    ValueError if it cannot be appended to."""

    def __init__(self, path):
        try:
            open(path, "a", encoding="utf-8").close()
        except OSError as error:
            raise ValueError("serve.batch_log: cannot append to %s: %s" % (path, error)) from None
        self.path = path
        self._lock = threading.Lock()

    def write(self, key, items, results, call):
        """Appends one call's line; a failed write is logged, not raised.

        Args:
          key, items, results: the batch's server/request_checks.py BatchKey and Items, and
            its server/app.py ItemResults (none if the call failed).
          call: server.batcher.Call, the call's timing, slot and error.
        """
        translations = [result.translation for result in results if not result.refused]
        traces = [translation.trace for translation in translations if translation.trace]
        record = dict(
            time=round(call.started, 6), slot=call.slot,
            idle_seconds=None if call.idle_seconds is None else round(call.idle_seconds, 6),
            wall_seconds=round(call.wall_seconds, 6), cpu_seconds=round(call.cpu_seconds, 6),
            **{name: value for name, value in key._asdict().items() if name != "n_best"},
            n_best=max(item.n_best for item in items), size=len(items),
            source_lengths=[len(item.ids) for item in items],
            output_words=[len(translation.text.split()) for translation in translations],
            steps=max(len(trace["steps"]) for trace in traces) if traces else None,
            graphs_built=results[0].graphs_built if results else None,
            model_step=results[0].step if results else None,
            error=None if call.error is None else repr(call.error),
            source_ids=[[int(token) for token in item.ids] for item in items],
            **({"target_prefixes": [item.prefix for item in items]}
               if any(item.prefix for item in items) else {}))
        line = json.dumps(record) + "\n"
        with self._lock:
            try:
                with open(self.path, "a", encoding="utf-8") as log_file:
                    log_file.write(line)
            except OSError as error:
                LOG.warning("serve.batch_log: cannot append to %s: %s", self.path, error)
