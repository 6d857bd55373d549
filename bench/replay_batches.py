"""Replays a server's batch log offline: is serving slow in its batches, or around them?

    python -m bench.replay_batches --model_dir D --log F [F ...] [--summary]

The batch log (serve.batch_log; `BatchLog` in server/batcher.py) holds one JSON line per model
call: its settings, its sentences' source ids, and the call's wall and CPU seconds in the
server. This loads the model as serve.py does (one batch at a time in the calling thread,
serve.intra_op_threads threads in an op), runs each graph the log needs once, then every
logged batch again, back to back, with the logged settings, and prints each call's served and
replayed milliseconds, then the totals. As slow as serving: the batches are the cost; much
faster: the time went around the calls (other calls on the same cores, the GIL, HTTP). Calls
that failed, or built a graph when served, are left out.
"""

import argparse
import json
import os
import sys
import time

from bench import harness

FIELDS = ("decoder", "beam_width", "n_best", "trace", "source_ids", "wall_seconds", "cpu_seconds")
AS_SLOW_AS_SERVING = 1.25  # served / replayed wall time up to this: the batches are the cost
SIZE_BINS = {"1": (1, 1), "2-4": (2, 4), "5-8": (5, 8), "9-16": (9, 16), "17-32": (17, 32),
             "33+": (33, None)}  # sentences per call


def read_log(paths):
    """The records of batch log files, in order; ValueError names a line that is not one."""
    records = []
    for path in paths:
        with open(path, encoding="utf-8") as log_file:
            for number, line in enumerate(log_file, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except ValueError as error:
                    raise ValueError("%s:%d is not JSON: %s" % (path, number, error)) from None
                missing = [name for name in FIELDS if name not in record] if isinstance(
                    record, dict) else ["JSON object"]
                if missing:
                    raise ValueError("%s:%d is not a batch log record (no %s)"
                                     % (path, number, ", ".join(missing)))
                records.append(record)
    return records


def graph_key(record, decode_params):
    """What a call's graph depends on: decoder, beam width, trace, options, whether a target
    prefix is fed, unrolled length bucket."""
    from decode.graphs import unrolled_length_bucket
    bucket = (unrolled_length_bucket(max(map(len, record["source_ids"])), decode_params)
              if record["decoder"] == "unrolled" else None)
    options = tuple(map(tuple, record.get("options") or ()))
    return (record["decoder"], record["beam_width"], record["trace"], options,
            "target_prefixes" in record, bucket)


def run_call(translator, record):
    """Runs one logged batch as it was served (its options and target prefixes too); returns
    (wall seconds, CPU seconds of this thread, translations)."""
    return harness.measure(lambda: translator.translate_tokens(
        record["source_ids"], decoder=record["decoder"], beam_width=record["beam_width"],
        n_best=record["n_best"], trace=record["trace"], options=dict(record.get("options") or ()),
        target_prefixes=record.get("target_prefixes")), cpu_clock=time.thread_time)


def replay(translator, records):
    """Runs each graph once, then every replayable record back to back.

    Returns:
      One (record, replay wall s, replay CPU s, same output word counts) per record that
      neither failed nor built a graph when served.
    """
    replayable = [record for record in records
                  if not record.get("error") and not record.get("graphs_built")]
    warmed = set()
    for record in replayable:
        key = graph_key(record, translator.config["decode"])
        if key not in warmed:
            run_call(translator, record)
            warmed.add(key)
    rows = []
    for record in replayable:
        wall, cpu, translations = run_call(translator, record)
        words = [len(translation.text.split()) for translation in translations]
        rows.append((record, wall, cpu, words == record.get("output_words", words)))
    return rows


def report(records, rows, replay_step):
    """The totals' lines (and what they say) of a replay."""
    served_wall = sum(record["wall_seconds"] for record, _, _, _ in rows)
    served_cpu = sum(record["cpu_seconds"] for record, _, _, _ in rows)
    replay_wall = sum(wall for _, wall, _, _ in rows)
    replay_cpu = sum(cpu for _, _, cpu, _ in rows)
    sentences = sum(len(record["source_ids"]) for record, _, _, _ in rows)
    idles, seen_slots = [], set()  # a slot's first call waited since before the log began
    for record in sorted(records, key=lambda record: record.get("time", 0.0)):
        if record.get("slot") is not None and record.get("idle_seconds") is not None:
            idles += [record["idle_seconds"]] if record["slot"] in seen_slots else []
            seen_slots.add(record["slot"])
    sizes = [len(record["source_ids"]) for record in records]
    served_steps = sorted({record.get("model_step") for record in records} - {None})
    span = (max(r["time"] + r["wall_seconds"] for r in records) - min(r["time"] for r in records)
            if all("time" in record for record in records) else None)
    wall_ratio = served_wall / max(replay_wall, 1e-9)
    lines = [
        "calls: %d logged, %d replayed (%d failed when served, %d built a graph), %d sentences"
        % (len(records), len(rows), sum(bool(r.get("error")) for r in records),
           sum(bool(r.get("graphs_built")) for r in records), sentences),
        "served: %.3f s wall, %.3f s CPU in calls (%.1f sentences per call-second); %s%s"
        % (served_wall, served_cpu, sentences / max(served_wall, 1e-9),
           "slots idle %.3f s between them" % sum(idles) if seen_slots
           else "no slots (no batching)",
           "" if span is None else "; %.1f sentences/s over the log's %.2f s" % (
               sum(len(r["source_ids"]) for r in records) / max(span, 1e-9), span)),
        "sentences per call (calls): " + ", ".join(
            "%s: %d" % (label, sum(low <= size <= (high or size) for size in sizes))
            for label, (low, high) in SIZE_BINS.items()),
        "replay: %.3f s wall, %.3f s CPU back to back (%.1f sentences/s)"
        % (replay_wall, replay_cpu, sentences / max(replay_wall, 1e-9)),
        "served / replay: %.2fx wall, %.2fx CPU"
        % (wall_ratio, served_cpu / max(replay_cpu, 1e-9)),
        "outputs: the same word counts in %d of %d calls (model step served %s, replayed %d)"
        % (sum(same for _, _, _, same in rows), len(rows),
           "/".join(map(str, served_steps)) or "unknown", replay_step)]
    lines.append("reading: " + (
        "the served calls took about as long as the same batches alone: the batches are the cost"
        if wall_ratio <= AS_SLOW_AS_SERVING else
        "the served calls took %.2fx as long as the same batches alone: the time went around "
        "them (other calls on the same cores, the GIL, HTTP)" % wall_ratio))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", required=True, help="the model directory that was served")
    parser.add_argument("--log", required=True, nargs="+", help="batch log file(s), JSON lines")
    parser.add_argument("--summary", action="store_true", help="the totals only, not each call")
    args = parser.parse_args(argv)
    try:
        records = read_log(args.log)
    except (OSError, ValueError) as error:
        print("replay_batches: %s" % error, file=sys.stderr)
        return 2
    if not records:
        print("replay_batches: %s holds no model call" % " ".join(args.log), file=sys.stderr)
        return 2
    from seq2seq.config import load_config
    served = load_config(os.path.join(args.model_dir, "config.yaml"))["serve"]
    translator = harness.translator(args.model_dir, hparams=(
        "decode.concurrent_batches=1,decode.inter_op_threads=-1,decode.intra_op_threads=%d"
        % served["intra_op_threads"]))
    rows = replay(translator, records)
    if not args.summary:
        def ms(seconds):
            return "-" if seconds is None else "%.1f" % (1000 * seconds)
        print(harness.markdown_table(
            ["call", "slot", "sentences", "longest source", "served wall ms", "served CPU ms",
             "idle before ms", "replay wall ms", "replay CPU ms", "served / replay wall"],
            ([index, harness.cell(record.get("slot"), "%d", "-"), len(record["source_ids"]),
              max(map(len, record["source_ids"])), ms(record["wall_seconds"]),
              ms(record["cpu_seconds"]), ms(record.get("idle_seconds")), ms(wall), ms(cpu),
              "%.2fx" % (record["wall_seconds"] / max(wall, 1e-9))]
             for index, (record, wall, cpu, _) in enumerate(rows, 1)), left=0) + "\n")
    for line in report(records, rows, translator.step):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
