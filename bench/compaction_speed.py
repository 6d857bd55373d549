"""Compaction (issue 20): the while_loop search with and without decided sentences leaving.

    python -m bench.compaction_speed --model_dir runs/es --input /tmp/es_test.src
        [--passes 3] [--batch_size 32] [--beam_width K] [--json F]

Builds the while_loop search over the model directory's checkpoint twice, as
decode.translator.search_encoded builds it (the config's beam width and decoding options,
each sentence's length limit), with `compact` on and off, and decodes the whole input in
batches of `batch_size` in two orders: the file's own (mixed lengths, the Translator's
length sort bypassed) and length-sorted (what decode.translate does). Batches run as the
Translator runs them (its session settings, one batch per core at once). The four variants
are timed in turns, rotating, `passes` times; the table gives the median sentences/s.
The first pass also compares every sentence's hypotheses between the two searches. Run it
in a checkout without compaction (a git worktree of an older commit) and it times the
search "off" alone, for a comparison across processes.
"""

import argparse
import concurrent.futures
import inspect
import json
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402
from tensorflow.core.protobuf import rewriter_config_pb2  # noqa: E402

from data_pipeline.tokenizer import BOS_ID, EOS_ID, Tokenizer  # noqa: E402
from decode import while_loop_beam_search  # noqa: E402
from decode.scoring import Scoring  # noqa: E402
from decode.translator import find_checkpoint, output_length_limits, pad_batch  # noqa: E402
from seq2seq.config import load_config  # noqa: E402
from seq2seq.model import Seq2SeqModel  # noqa: E402

HAS_COMPACTION = "compact" in inspect.signature(while_loop_beam_search).parameters


def build(model_dir, beam_width):
    """(session, source placeholders, {compact: (ids, scores, lengths)}), the checkpoint loaded."""
    config = load_config(os.path.join(model_dir, "config.yaml"))
    decode_params = config["decode"]
    tokenizer = Tokenizer.load(model_dir)
    graph = tf.Graph()
    with graph.as_default():
        source_ids = tf.placeholder(tf.int32, [None, None])
        source_length = tf.placeholder(tf.int32, [None])
        model = Seq2SeqModel(config["model"], tokenizer.source_vocab_size,
                             tokenizer.target_vocab_size)
        encoded = model.encode(source_ids, source_length, training=False)
        limits = output_length_limits(source_length, decode_params)
        scoring = Scoring(decode_params["length_penalty"], decode_params["length_penalty_kind"])
        searches = {}
        for compact in (True, False) if HAS_COMPACTION else (False,):
            update_fn, initial_state = model.beam_update_fn(encoded, beam_width)
            extra = {"compact": compact} if HAS_COMPACTION else {}
            searches[compact] = while_loop_beam_search(
                update_fn, initial_state, tf.reduce_max(limits), beam_width, BOS_ID, EOS_ID,
                scoring, max_lengths=limits, **extra)
        session = tf.Session(graph=graph, config=tf.ConfigProto(  # as the Translator's
            inter_op_parallelism_threads=decode_params["inter_op_threads"],
            intra_op_parallelism_threads=decode_params["intra_op_threads"],
            graph_options=tf.GraphOptions(rewrite_options=rewriter_config_pb2.RewriterConfig(
                disable_meta_optimizer=True))))
        tf.train.Saver(model.variables).restore(session, find_checkpoint(model_dir))
    return session, (source_ids, source_length), searches, tokenizer, decode_params


def decode_all(session, placeholders, search, batches, pool):
    """Every batch's (ids, scores, lengths), one batch per pool thread at once."""
    def run(batch):
        return session.run(search, dict(zip(placeholders, pad_batch(batch))))
    return list(pool.map(run, batches))


def differing_sentences(compacted, full):
    """Indices (in batch order) of sentences whose hypotheses differ: ids up to each length,
    lengths, or scores beyond 1e-5."""
    differing, index = [], 0
    for (ids, scores, lengths), (full_ids, full_scores, full_lengths) in zip(compacted, full):
        for row in range(len(scores)):
            same = (np.array_equal(lengths[row], full_lengths[row])
                    and np.allclose(scores[row], full_scores[row], rtol=1e-5, atol=1e-5)
                    and all(np.array_equal(ids[row, slot, :n], full_ids[row, slot, :n])
                            for slot, n in enumerate(lengths[row])))
            if not same:
                differing.append(index)
            index += 1
    return differing


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--input", required=True, help="one sentence a line")
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--beam_width", type=int, help="default: the config's")
    parser.add_argument("--limit", type=int, help="only the first N sentences")
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    tf.disable_v2_behavior()
    session, placeholders, searches, tokenizer, decode_params = build(
        args.model_dir, args.beam_width or load_config(
            os.path.join(args.model_dir, "config.yaml"))["decode"]["beam_width"])
    with open(args.input, encoding="utf-8") as f:
        sources = [tokenizer.encode_source(line.rstrip("\n")) for line in f if line.strip()]
    sources = [ids for ids in sources if ids][:args.limit]
    by_length = sorted(sources, key=len)
    orders = {"file order": sources, "sorted": by_length}
    variants = {(order, compact): [sentences[i:i + args.batch_size]
                                   for i in range(0, len(sentences), args.batch_size)]
                for order, sentences in orders.items() for compact in searches}
    pool = concurrent.futures.ThreadPoolExecutor(decode_params["concurrent_batches"]
                                                 or os.cpu_count())
    names = list(variants)
    for name in names:  # warm up: first runs of each graph
        decode_all(session, placeholders, searches[name[1]], variants[name][:2], pool)
    seconds = {name: [] for name in names}
    results = {}
    load_before = os.getloadavg()
    for repeat in range(args.passes):
        for name in names[repeat % len(names):] + names[:repeat % len(names)]:
            start = time.perf_counter()
            outputs = decode_all(session, placeholders, searches[name[1]], variants[name], pool)
            seconds[name].append(time.perf_counter() - start)
            results.setdefault(name, outputs)
        print("pass %d: %s" % (repeat + 1, ", ".join(
            "%s/%s %.1f s" % (order, "on" if compact else "off", seconds[(order, compact)][-1])
            for order, compact in names)), flush=True)
    speeds = {name: len(sources) / statistics.median(times) for name, times in seconds.items()}
    print("\n%d sentences, batches of %d, beam %d; load average %s -> %s, %d CPUs"
          % (len(sources), args.batch_size, args.beam_width or decode_params["beam_width"],
             load_before, os.getloadavg(), os.cpu_count()))
    print("| batches | compaction | sentences/s (median of %d) | runs (s) |" % args.passes)
    print("| --- | --- | ---: | --- |")
    for (order, compact), speed in speeds.items():
        print("| %s | %s | %.1f | %s |" % (order, "on" if compact else "off", speed,
                                          ", ".join("%.1f" % s for s in seconds[(order, compact)])))
    report = {"sentences": len(sources), "speeds": {"%s/%s" % (order, "on" if compact else "off"):
                                                    speed for (order, compact), speed in
                                                    speeds.items()}}
    if HAS_COMPACTION:
        for order in orders:
            ratio = speeds[(order, True)] / speeds[(order, False)]
            differing = differing_sentences(results[(order, True)], results[(order, False)])
            report[order] = {"on/off": ratio, "differing_sentences": differing}
            print("%s: compaction on/off %.2fx; %d of %d sentences differ %s"
                  % (order, ratio, len(differing), len(sources), differing[:10]))
        print("file order/sorted, compaction on: %.2f"
              % (speeds[("file order", True)] / speeds[("sorted", True)]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
