"""Corpus -> SentencePiece -> sharded TFRecords, skipped when already done.

    python -m data_pipeline.prepare --config configs/default.yaml
    python -m data_pipeline.prepare --config C --train_data corpus.tsv
    python -m data_pipeline.prepare --config C --train_data a.en,a.pt --dev_data d.en,d.pt

Writes into data.data_dir: the SentencePiece model(s), the shards
``{train,dev,test}-NNNNN-of-NNNNN.tfrecord``, the normalised text of dev and
test as ``{dev,test}.{src,tgt}`` (for BLEU), and manifest.json. Rerunning
with the same config and inputs does nothing; any change to the data
settings or input files rebuilds everything.
"""

import argparse
import collections
import os
import random
import shutil
import sys
import tempfile
import time

import tensorflow.compat.v1 as tf

from seq2seq.config import corpus_overrides, load_config
from data_pipeline import embedded, manifest
from data_pipeline.corpus import EMPTY_SIDE, CorpusError, format_skipped, normalize, read_corpus
from data_pipeline.tfrecords import shard_names, write_shards
from data_pipeline.tokenizer import JOINT_MODEL, OPTIONS, SOURCE_MODEL, TARGET_MODEL, train_tokenizer

SPLITS = ("train", "dev", "test")
TOO_LONG = "too_long"
# Train pairs dropped because dev or test took a pair with the same source.
SOURCE_IN_DEV_TEST = "source_in_dev_test"
# Dev and test carved out of train_data when not given: this share of the
# distinct sources each, at most this many pairs.
CARVE_SHARE = 0.02
CARVE_MAX = 1000
# Carving is a property of the corpus, not of a training run: a fixed seed
# gives the same dev and test for the same file whatever train.seed is.
CARVE_SEED = 20240101
# Train pairs are written in a fixed random order: user corpora often come
# sorted (by length, by source), and the input pipeline's shuffle buffer only
# mixes what is near in the shards.
TRAIN_ORDER_SEED = 20261121

PreparedData = collections.namedtuple("PreparedData", [
    "data_dir", "manifest", "tokenizer_files", "train_files", "dev_files", "test_files",
    "source_vocab_size", "target_vocab_size", "raw_text"])
PreparedData.__doc__ = """Where the prepared data is.

Attributes:
  data_dir: the data directory.
  manifest: the manifest dict (counts kept/skipped per split, vocab sizes...).
  tokenizer_files: paths of the SentencePiece model(s).
  train_files, dev_files, test_files: paths of each split's TFRecord shards.
  source_vocab_size, target_vocab_size: the real vocabulary sizes, which can
    be below data.vocab_size for a small corpus.
  raw_text: {"dev": (source_path, target_path), "test": (...)}: the
    normalised text, one sentence per line, aligned with the shards.
"""

# Pairs of one split: the pairs and why others were skipped.
_Split = collections.namedtuple("_Split", ["pairs", "skipped"])


def prepare(config, verbose=True):
    """Prepares the data of `config` unless its manifest says it is up to date.

    Everything is built in a staging directory inside data_dir and moved in
    at the end, so an error (an unreadable corpus, an empty split) leaves the
    previous data as it was.

    Args:
      config: the resolved config dict.
      verbose: print what is kept and skipped, and show progress bars.
    Returns:
      A PreparedData.
    Raises:
      CorpusError: a corpus that cannot be read or ends up empty.
      ValueError: an embedded-corpus setting that cannot be met.
    """
    log = print if verbose else _quiet
    started = time.time()
    data_dir = config["data"]["data_dir"]
    wanted = manifest.data_fingerprint(config)
    existing = manifest.load(data_dir)
    if manifest.is_up_to_date(existing, data_dir, wanted):
        log("%s is up to date (fingerprint %s): nothing to do" % (data_dir, wanted))
        return _prepared_data(data_dir, existing)
    splits, notes = _read_splits(config["data"])
    for note in notes:
        log(note)
    os.makedirs(data_dir, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".staging-", dir=data_dir)
    try:
        prepared = _build(config, splits, staging, log, verbose)
        prepared.update(fingerprint=wanted, notes=notes)
        _install(staging, data_dir, existing, prepared)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    log("prepared %s in %.1f s" % (data_dir, time.time() - started))
    return _prepared_data(data_dir, prepared)


def _build(config, splits, directory, log, verbose):
    """Trains SentencePiece and writes every split into `directory`.

    Returns:
      The manifest without its fingerprint and notes.
    """
    data = config["data"]
    tokenizer = train_tokenizer(splits["train"].pairs, directory, data["vocab_size"],
                                data["spm_model_type"], data["joint_vocab"], data["lowercase_source"],
                                [source for source, _ in splits["dev"].pairs])
    log("SentencePiece %s (%s): %s pieces (data.vocab_size %d)"
        % (data["spm_model_type"], "joint" if data["joint_vocab"] else "source, target",
           _vocab_sizes_text(tokenizer), data["vocab_size"]))
    records = {}
    for split in SPLITS:
        record = records[split] = _write_split(split, splits[split], tokenizer, data, directory, verbose)
        skipped = sum(record["skipped"].values())
        log("%-5s kept %d, skipped %d%s" % (split, record["kept"], skipped,
                                          " (%s)" % format_skipped(record["skipped"]) if skipped else ""))
    return {
        "settings": manifest.data_settings(config),
        "inputs": manifest.input_files(config),
        "tokenizer_files": [os.path.basename(path) for path in tokenizer.model_files],
        "source_vocab_size": tokenizer.source_vocab_size,
        "target_vocab_size": tokenizer.target_vocab_size,
        "splits": records,
    }


def _install(staging, data_dir, previous, prepared):
    """Replaces the previous outputs in data_dir by the staged ones.

    The old manifest goes first and the new one is written last, so a run
    interrupted in between is never taken as up to date. A stale spm.model
    would shadow new per-side models in Tokenizer.load, so the model names are
    removed even when no manifest lists them.
    """
    if previous is not None:
        os.remove(manifest.path(data_dir))
    stale = set(manifest.listed_files(previous)) if previous else set()
    for name in sorted(stale | {JOINT_MODEL, SOURCE_MODEL, TARGET_MODEL, OPTIONS}):
        if os.path.isfile(os.path.join(data_dir, name)):
            os.remove(os.path.join(data_dir, name))
    for name in manifest.listed_files(prepared):
        os.replace(os.path.join(staging, name), os.path.join(data_dir, name))
    manifest.save(data_dir, prepared)


def _read_splits(data):
    """Returns ({split: _Split}, notes): the normalised pairs of every split."""
    if data["corpus"] == "embedded":
        return _embedded_splits(data)
    return _file_splits(data)


def _embedded_splits(data):
    corpus = embedded.generate(data["embedded_train_size"], data["embedded_dev_size"],
                               data["embedded_test_size"], data["embedded_seed"],
                               data["target_locale"])
    families = collections.Counter(example.family for example in corpus.train)
    notes = ["embedded corpus en -> %s, seed %d: %d train / %d dev / %d test pairs; train by family: %s"
             % (data["target_locale"], data["embedded_seed"], len(corpus.train), len(corpus.dev),
                len(corpus.test), ", ".join("%s %d" % item for item in sorted(families.items())))]
    missing = embedded.missing_families(data["target_locale"])
    if missing:
        notes.append("%s has no hand-written lexicon: no %s phrases"
                     % (data["target_locale"], ", ".join(missing)))
    splits = {}
    for split in SPLITS:
        examples = getattr(corpus, split)
        pairs = [(normalize(example.source), normalize(example.target)) for example in examples]
        splits[split] = _Split(pairs, collections.Counter())
    return splits, notes


def _file_splits(data):
    notes = []
    splits = {}
    for split in SPLITS:
        spec = data[split + "_data"]
        if spec:
            corpus = read_corpus(spec)
            splits[split] = _Split(corpus.pairs, corpus.skipped)
            notes.append("%s: read %s" % (split, spec))
    carve = [split for split in ("dev", "test") if split not in splits]
    if carve:
        train = splits["train"]
        carved, remaining, dropped = _carve(train.pairs, len(carve))
        skipped = train.skipped + collections.Counter({SOURCE_IN_DEV_TEST: dropped})
        splits["train"] = _Split(remaining, skipped)
        for split, pairs in zip(carve, carved):
            splits[split] = _Split(pairs, collections.Counter())
        notes.append("no %s data given: carved %s out of %s (%d%% of its distinct sources each, "
                     "at most %d pairs); %d more train pairs repeating those sources were dropped"
                     % (" or ".join(carve), " and ".join("%d %s" % (len(pairs), split)
                                                         for split, pairs in zip(carve, carved)),
                        data["train_data"], round(CARVE_SHARE * 100), CARVE_MAX, dropped))
        if not remaining:
            raise CorpusError("%s is too small to carve dev and test out of it: nothing is left to "
                              "train on; give --dev_data and --test_data" % data["train_data"])
    notes.extend(_overlap_notes(splits, [split for split in ("dev", "test") if split not in carve]))
    return splits, notes


def _overlap_notes(splits, supplied):
    """Notes on supplied held-out splits whose sources also occur in train.

    Such pairs are kept (the user chose the split), but a model scored on
    sentences it was trained on looks better than it is: say how many there are.
    """
    train_sources = set(source for source, _ in splits["train"].pairs)
    notes = []
    for split in supplied:
        pairs = splits[split].pairs
        seen = sum(1 for source, _ in pairs if source in train_sources)
        if seen:
            notes.append("warning: %d of the %d %s pairs read (%.1f%%) have a source that "
                         "train also has: %s scores overstate quality on unseen text"
                         % (seen, len(pairs), split, 100.0 * seen / len(pairs), split))
    return notes


def _carve(pairs, num_sets):
    """Takes `num_sets` held-out sets of pairs with distinct, unseen sources.

    Returns:
      (held_out, remaining, dropped): a list of `num_sets` lists of pairs (one
      per source), the pairs whose source is in none of them, and the number of
      further pairs dropped because they repeat a held-out source.
    """
    first_pair = {}
    for source, target in pairs:
        first_pair.setdefault(source, (source, target))
    sources = list(first_pair)
    random.Random(CARVE_SEED).shuffle(sources)
    size = min(CARVE_MAX, max(1, round(CARVE_SHARE * len(sources))))
    held_out = [[first_pair[source] for source in sources[k * size:(k + 1) * size]]
                for k in range(num_sets)]
    held_sources = set(source for held in held_out for source, _ in held)
    remaining = [pair for pair in pairs if pair[0] not in held_sources]
    dropped = len(pairs) - len(remaining) - len(held_sources)
    return held_out, remaining, dropped


def _write_split(split, corpus_split, tokenizer, data, directory, verbose):
    """Encodes, drops pairs over the length limits, writes shards and raw text.

    Returns:
      The split's manifest record: counts and file names (relative).
    """
    encoded, kept_pairs, skipped = [], [], collections.Counter(corpus_split.skipped)
    for source, target in corpus_split.pairs:
        source_ids, target_ids = tokenizer.encode_source(source), tokenizer.encode_target(target)
        if not source_ids or not target_ids:
            # A side of invisible characters only (a zero-width space, say):
            # text to the corpus reader, nothing to the tokenizer.
            skipped[EMPTY_SIDE] += 1
        elif len(source_ids) > data["max_source_length"] or len(target_ids) > data["max_target_length"]:
            skipped[TOO_LONG] += 1
        else:
            # Dev and test keep the reference text for BLEU (see tfrecords).
            encoded.append((source_ids, target_ids) if split == "train"
                           else (source_ids, target_ids, target))
            kept_pairs.append((source, target))
    if not encoded:
        raise CorpusError(
            "the %s split is empty after skipping %s (limits: data.max_source_length %d, "
            "data.max_target_length %d)" % (split, format_skipped(skipped),
                                            data["max_source_length"], data["max_target_length"]))
    if split == "train":
        random.Random(TRAIN_ORDER_SEED).shuffle(encoded)
    num_shards = min(data["num_shards"], len(encoded)) if split == "train" else 1
    shards = shard_names(split, num_shards)
    write_shards(encoded, [os.path.join(directory, name) for name in shards],
                 "writing %s" % split, verbose)
    record = {"kept": len(encoded), "skipped": {reason: skipped[reason] for reason in sorted(skipped)},
              "shards": shards}
    if split != "train":
        record["raw_text"] = _write_raw_text(split, kept_pairs, directory)
    return record


def _write_raw_text(split, pairs, directory):
    """Writes split.src and split.tgt, one normalised sentence per line."""
    names = [split + ".src", split + ".tgt"]
    for name, side in zip(names, zip(*pairs)):
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            f.writelines(sentence + "\n" for sentence in side)
    return names


def _prepared_data(data_dir, prepared):
    def paths(names):
        return [os.path.join(data_dir, name) for name in names]
    splits = prepared["splits"]
    return PreparedData(
        data_dir=data_dir,
        manifest=prepared,
        tokenizer_files=paths(prepared["tokenizer_files"]),
        train_files=paths(splits["train"]["shards"]),
        dev_files=paths(splits["dev"]["shards"]),
        test_files=paths(splits["test"]["shards"]),
        source_vocab_size=prepared["source_vocab_size"],
        target_vocab_size=prepared["target_vocab_size"],
        raw_text={split: tuple(paths(splits[split]["raw_text"])) for split in ("dev", "test")})


def _vocab_sizes_text(tokenizer):
    if tokenizer.source_vocab_size == tokenizer.target_vocab_size:
        return str(tokenizer.source_vocab_size)
    return "%d, %d" % (tokenizer.source_vocab_size, tokenizer.target_vocab_size)


def _quiet(*unused_args):
    pass


def main(argv=None):
    tf.disable_v2_behavior()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="configs/default.yaml", help="YAML config file")
    parser.add_argument("--hparams", default="", help="overrides: section.key=value,...")
    parser.add_argument("--train_data", default="",
                        help="TSV file or 'source_file,target_file'; sets data.corpus=files")
    parser.add_argument("--dev_data", default="", help="like --train_data; carved from it if absent")
    parser.add_argument("--test_data", default="", help="like --train_data; carved from it if absent")
    args = parser.parse_args(argv)
    try:
        overrides = corpus_overrides(args.train_data, args.dev_data, args.test_data)
        config = load_config(args.config, args.hparams, overrides)
        prepare(config)
    except ValueError as e:  # ConfigError and CorpusError among them
        sys.exit("prepare: error: %s" % e)


if __name__ == "__main__":
    main()
