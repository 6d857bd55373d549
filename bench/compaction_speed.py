"""Compaction (issue 20): the while_loop search with and without decided sentences leaving.

    python -m bench.compaction_speed --model_dir runs/lab --input data/catalogs-pt_BR/test.src
        [--passes 3] [--batch_size 32] [--beam_width K] [--against CHECKOUT] [--json F]
        [--sample]

Builds the while_loop search over the model's checkpoint as decode.graphs.search_encoded
does (the config's beam width and length penalty, each sentence's length limit) with
`compact` on and off, and with --against also another checkout's search and beam_update_fn
(e.g. `git archive 9fd11a4 decode seq2seq | tar -x -C /tmp/base`) over the same variables.
It decodes the input in batches of `batch_size` in the file's order (mixed lengths) and
length-sorted (what decode.translate does), as the Translator runs them (its session
settings, one batch per core at once), the variants timed side by side `passes` times; the
table gives median sentences/s and CPU seconds, and how many sentences' hypotheses (first
pass) differ from the "off" search's. --sample: the sample decoder's variants instead
(`beam_width` samples, top-p 0.9, seed 0).
"""

import argparse
import concurrent.futures
import functools
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

from bench import harness  # noqa: E402
from data_pipeline.tokenizer import BOS_ID, EOS_ID, Tokenizer  # noqa: E402
from decode import while_loop_beam_search  # noqa: E402
from decode.sampling import Sampling, sample_search, sentence_keys  # noqa: E402
from decode.scoring import Scoring  # noqa: E402
from decode.graphs import output_length_limits, pad_batch  # noqa: E402
from seq2seq.model_dir import find_checkpoint  # noqa: E402
from seq2seq.config import load_config  # noqa: E402
from seq2seq.model import Seq2SeqModel  # noqa: E402


def build(model_dir, beam_width, against=None, sample=False):
    """(session, source placeholders, {variant: (ids, scores, lengths)}, tokenizer, decode
    params); variants "on", "off" (compaction) and with `against` "against"; `sample`: of
    the sample decoder."""
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
        scoring = decode_params["length_penalty"]  # GNMT's alpha, the other options off
        keys = sentence_keys(source_ids, source_length) if sample else None

        def sampled(update_fn, state, length, width, begin, end, alpha, **options):
            return sample_search(update_fn, state, length, width, begin, end, Scoring(alpha),
                                 Sampling(top_p=0.9), keys, **options)
        search = sampled if sample else while_loop_beam_search
        variants = {"on": (search, Seq2SeqModel.beam_update_fn, {"compact": True}),
                    "off": (search, Seq2SeqModel.beam_update_fn, {})}
        if against:
            package, beam_update_fn = harness.load_checkout(against)
            variants["against"] = (package.while_loop_beam_search, beam_update_fn, {})
        searches = {}
        for name, (search, beam_update_fn, options) in variants.items():
            update_fn, initial_state = beam_update_fn(model, encoded, beam_width)
            searches[name] = search(update_fn, initial_state, tf.reduce_max(limits), beam_width,
                                    BOS_ID, EOS_ID, scoring, max_lengths=limits, **options)
        session = tf.Session(graph=graph, config=harness.session_config(  # the Translator's
            decode_params["inter_op_threads"], decode_params["intra_op_threads"], grappler=False))
        tf.train.Saver(model.variables).restore(session, find_checkpoint(model_dir))
    return session, (source_ids, source_length), searches, tokenizer, decode_params


def decode_all(session, placeholders, search, batches, pool):
    """Every batch's (ids, scores, lengths), one batch per pool thread at once."""
    def run(batch):
        return session.run(search, dict(zip(placeholders, pad_batch(batch))))
    return list(pool.map(run, batches))


def differing_sentences(results, reference):
    """Indices (in batch order) of the sentences whose hypotheses differ from `reference`'s:
    ids up to each length, lengths, or scores beyond 1e-5."""
    differing, index = [], 0
    for (ids, scores, lengths), (full_ids, full_scores, full_lengths) in zip(results, reference):
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
    parser.add_argument("--against", metavar="CHECKOUT",
                        help="also time this checkout's search and beam_update_fn")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--sample", action="store_true", help="the sample decoder's variants")
    args = parser.parse_args()
    if args.sample and args.against:
        parser.error("--against times the other checkout's beam search: not with --sample")
    tf.disable_v2_behavior()
    beam_width = args.beam_width or load_config(
        os.path.join(args.model_dir, "config.yaml"))["decode"]["beam_width"]
    session, placeholders, searches, tokenizer, decode_params = build(
        args.model_dir, beam_width, args.against, args.sample)
    sources = [ids for ids in map(tokenizer.encode_source, harness.read_sentences(args.input))
               if ids][:args.limit]
    orders = {"file order": sources, "sorted": sorted(sources, key=len)}
    batches = {order: [sentences[i:i + args.batch_size]
                       for i in range(0, len(sentences), args.batch_size)]
               for order, sentences in orders.items()}
    names = [(order, search) for order in orders for search in searches]
    pool = concurrent.futures.ThreadPoolExecutor(decode_params["concurrent_batches"]
                                                 or os.cpu_count())
    for order, search in names:  # warm up: first runs of each graph
        decode_all(session, placeholders, searches[search], batches[order][:2], pool)
    load_before = os.getloadavg()
    samples = harness.time_rounds(
        {name: functools.partial(decode_all, session, placeholders, searches[name[1]],
                                 batches[name[0]], pool) for name in names},
        args.passes, warmup=0, after_round=lambda index, samples: print("pass %d: %s" % (
            index + 1, ", ".join("%s/%s %.1f s" % (name + (samples[name].wall[-1],))
                                 for name in names)), flush=True))
    wall = {name: harness.median(samples[name].wall) for name in names}
    cpu = {name: harness.median(samples[name].cpu) for name in names}
    print("\n%d sentences, batches of %d, beam %d; load average %s -> %s, %d CPUs"
          % (len(sources), args.batch_size, beam_width, load_before, os.getloadavg(),
             os.cpu_count()))
    report, rows = {"sentences": len(sources), "load_average": [load_before, os.getloadavg()]}, []
    for order, search in names:
        name, off = (order, search), (order, "off")
        # The first pass's hypotheses against the "off" search's.
        differing = differing_sentences(samples[name].results[0], samples[off].results[0])
        report["%s/%s" % name] = {
            "sentences_per_second": len(sources) / wall[name], "cpu_seconds": cpu[name],
            "differing": differing, "wall_runs": samples[name].wall, "cpu_runs": samples[name].cpu}
        rows.append([order, search, "%.1f" % (len(sources) / wall[name]),
                     "%.2fx" % (wall[off] / wall[name]), "%.2f" % cpu[name],
                     "%.2fx" % (cpu[off] / cpu[name]), len(differing)])
    print(harness.markdown_table(["batches", "search", "sentences/s", "vs off", "CPU s",
                                  "CPU vs off", "sentences differing from off"], rows, left=2))
    mixed, ordered = (report["%s/on" % order] for order in orders)
    print("file order / sorted, compaction on: %.2f (sentences/s), %.2f (CPU)" % (
        mixed["sentences_per_second"] / ordered["sentences_per_second"],
        ordered["cpu_seconds"] / mixed["cpu_seconds"]))
    harness.write_json(args.json, report)


if __name__ == "__main__":
    main()
