"""Corpus -> SentencePiece -> sharded TFRecords + manifest, skipped when already done.

    python -m data_pipeline.prepare --config configs/default.yaml
    python -m data_pipeline.prepare --config C --train_data corpus.tsv
    python -m data_pipeline.prepare --config C --train_data a.en,a.pt --dev_data d.en,d.pt

Writes into data.data_dir the tokenizer, ``{train,dev,test}-NNNNN-of-NNNNN.tfrecord``,
``{dev,test}.{src,tgt}`` and manifest.json; docs/DATA-NOTES.md has the layout.
"""

import argparse
import collections
import json
import os
import random
import sys
import tempfile
import time

import tensorflow.compat.v1 as tf
from tqdm import tqdm

from data_pipeline import embedded
from data_pipeline.corpus import (EMPTY_SIDE, Corpus, CorpusError, format_skipped, normalize,
                                  read_corpus, split_spec)
from data_pipeline.tokenizer import (JOINT_MODEL, MIN_CALIBRATION, OPTIONS, SOURCE_MODEL,
                                     TARGET_MODEL, train_tokenizer)
from seq2seq.config import (
    DEFAULT_CONFIG, PREPARED_DATA_KEYS, corpus_overrides, fingerprint, load_config)

SPLITS = ("train", "dev", "test")
SOURCE_IDS, TARGET_IDS, TARGET_TEXT = "source_ids", "target_ids", "target_text"
MANIFEST = "manifest.json"
FORMAT_VERSION = 6  # bumped when the same settings would write other data (docs/DATA-NOTES.md)
TOO_LONG, SOURCE_IN_DEV_TEST = "too_long", "source_in_dev_test"
CARVE_SHARE, CARVE_MAX = 0.02, 1000  # dev and test carved out of train_data: share of sources, cap
CARVE_SEED, TRAIN_ORDER_SEED = 20240101, 20261121  # fixed: the corpus's property, not the run's

PreparedData = collections.namedtuple("PreparedData", [
    "data_dir", "manifest", "tokenizer_files", "train_files", "dev_files", "test_files",
    "source_vocab_size", "target_vocab_size", "raw_text"])


def prepare(config, verbose=True):
    """Prepares the data of `config` unless already up to date (a failure keeps the old data).

    Args:
      config: the resolved config dict.
      verbose: print what is kept and skipped, with progress bars.
    Returns:
      A PreparedData: paths, the manifest, and the real vocabulary sizes.
    """
    log = print if verbose else (lambda *args: None)
    started, data, data_dir = time.time(), config["data"], config["data"]["data_dir"]
    settings, inputs = data_settings(config), _input_files(data)  # user files' sizes and times
    wanted = fingerprint({"format": FORMAT_VERSION, "settings": settings, "inputs": inputs})
    existing = load_manifest(data_dir)
    if existing is not None and existing["fingerprint"] == wanted and all(
            os.path.isfile(os.path.join(data_dir, name)) for name in _listed_files(existing)):
        log("%s is up to date (fingerprint %s): nothing to do" % (data_dir, wanted))
        return _prepared_data(data_dir, existing)
    splits, calibration, notes = (_embedded_splits if data["corpus"] == "embedded"
                                  else _file_splits)(data)
    for note in notes:
        log(note)
    os.makedirs(data_dir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".staging-", dir=data_dir,
                                     ignore_cleanup_errors=True) as staging:
        manifest = _build(data, splits, calibration, staging, log, verbose)
        manifest.update(fingerprint=wanted, notes=notes, settings=settings, inputs=inputs)
        _install(staging, data_dir, existing, manifest)
    log("prepared %s in %.1f s" % (data_dir, time.time() - started))
    return _prepared_data(data_dir, manifest)


def data_settings(config):
    """The data settings the prepared files depend on, as a flat dict."""
    return {key: config["data"][key] for key in PREPARED_DATA_KEYS[config["data"]["corpus"]]}


def _input_files(data):
    keys = ("train_data", "dev_data", "test_data") if data["corpus"] == "files" else ()
    paths = [path for key in keys if data[key] for path in split_spec(data[key])]
    return [{"path": path, "size": os.stat(path).st_size, "mtime_ns": os.stat(path).st_mtime_ns}
            for path in paths if os.path.isfile(path)]  # reading the corpus reports a missing one


def load_manifest(data_dir):
    """The manifest dict of data_dir, or None."""
    path = os.path.join(data_dir, MANIFEST)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def settings_mismatches(manifest, config):
    """The data settings on which a manifest and a config disagree, as ``data.key: old -> new``."""
    wanted, prepared = data_settings(config), manifest["settings"]
    return ["data.%s: %r -> %r" % (key, prepared.get(key), wanted.get(key))
            for key in sorted(set(prepared) | set(wanted)) if prepared.get(key) != wanted.get(key)]


def serialize_example(source_ids, target_ids, target_text=None):
    """Two id lists and the reference text if given -> a serialised tf.train.Example."""
    feature = {name: tf.train.Feature(int64_list=tf.train.Int64List(value=ids))
               for name, ids in ((SOURCE_IDS, source_ids), (TARGET_IDS, target_ids))}
    if target_text is not None:
        text = tf.train.BytesList(value=[target_text.encode("utf-8")])
        feature[TARGET_TEXT] = tf.train.Feature(bytes_list=text)
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def write_shards(examples, directory, split, num_shards, verbose):
    """Writes (source_ids, target_ids[, target_text]) examples in order into `num_shards` files
    of `directory`, shard k the k-th slice; returns their names: train-00000-of-00002.tfrecord..."""
    names = ["%s-%05d-of-%05d.tfrecord" % (split, index, num_shards) for index in range(num_shards)]
    with tqdm(total=len(examples), desc="writing " + split, unit=" pairs",
              disable=not verbose) as bar:
        for index, name in enumerate(names):
            begin, end = (k * len(examples) // num_shards for k in (index, index + 1))
            with tf.io.TFRecordWriter(os.path.join(directory, name)) as writer:
                for example in examples[begin:end]:
                    writer.write(serialize_example(*example))
            bar.update(end - begin)
    return names


def _build(data, splits, calibration, directory, log, verbose):
    """Trains the tokenizer and writes every split into `directory`; returns the manifest."""
    tokenizer = train_tokenizer(splits["train"].pairs, directory, data["vocab_size"],
                                data["spm_model_type"], data["joint_vocab"],
                                data["lowercase_source"], calibration)
    if not tokenizer.options.get("familiarity"):
        log("the unfamiliar flag is off: %d dev sources are too few to calibrate it (%d needed)"
            % (max(map(len, calibration), default=0), MIN_CALIBRATION))
    sizes = (tokenizer.source_vocab_size, tokenizer.target_vocab_size)
    log("SentencePiece %s (%s): %s pieces (data.vocab_size %d)"
        % (data["spm_model_type"], "joint" if data["joint_vocab"] else "source, target",
           sizes[0] if sizes[0] == sizes[1] else "%d, %d" % sizes, data["vocab_size"]))
    records = {split: _write_split(split, splits[split], tokenizer, data, directory, log, verbose)
               for split in SPLITS}
    return {"tokenizer_files": [os.path.basename(path) for path in tokenizer.model_files],
            "source_vocab_size": sizes[0], "target_vocab_size": sizes[1], "splits": records}


def _listed_files(manifest):
    return manifest["tokenizer_files"] + [name for split in manifest["splits"].values()
                                          for name in split["shards"] + split.get("raw_text", [])]


def _install(staging, data_dir, previous, manifest):
    """Replaces the old outputs (and any tokenizer file) by the staged ones, the manifest last."""
    stale = {JOINT_MODEL, SOURCE_MODEL, TARGET_MODEL, OPTIONS}
    if previous is not None:
        os.remove(os.path.join(data_dir, MANIFEST))
        stale.update(_listed_files(previous))
    for name in sorted(stale):
        if os.path.isfile(os.path.join(data_dir, name)):
            os.remove(os.path.join(data_dir, name))
    for name in _listed_files(manifest):
        os.replace(os.path.join(staging, name), os.path.join(data_dir, name))
    with open(os.path.join(staging, MANIFEST), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2, ensure_ascii=False, sort_keys=True)
        f.write("\n")
    os.replace(os.path.join(staging, MANIFEST), os.path.join(data_dir, MANIFEST))


def _embedded_splits(data):
    """(splits, familiarity calibration sets: dev by family and names from train, notes)."""
    locale = data["target_locale"]
    corpus = embedded.generate(data["embedded_train_size"], data["embedded_dev_size"],
                               data["embedded_test_size"], data["embedded_seed"], locale)
    families = sorted(collections.Counter(example.family for example in corpus.train).items())
    notes = ["embedded corpus en -> %s, seed %d: %d train / %d dev / %d test pairs; "
             "train by family: %s" % (locale, data["embedded_seed"], *map(len, corpus),
                                      ", ".join("%s %d" % item for item in families))]
    if embedded.missing_families(locale):
        notes.append("%s has no hand-written lexicon: no %s phrases"
                     % (locale, ", ".join(embedded.missing_families(locale))))
    splits = {split: Corpus([(normalize(example.source), normalize(example.target))
                             for example in examples], collections.Counter(), [])
              for split, examples in zip(SPLITS, corpus)}
    kinds = collections.defaultdict(list)
    for example in corpus.dev + [example for example in corpus.train if example.family == "names"]:
        kinds[example.family].append(normalize(example.source))
    return splits, list(kinds.values()), notes


def _file_splits(data):
    """(splits, the familiarity calibration set: the dev sources, notes)."""
    notes, splits = [], {}
    for split in SPLITS:
        if data[split + "_data"]:
            splits[split] = read_corpus(data[split + "_data"])
            notes.append("%s: read %s" % (split, data[split + "_data"]))
    carve = [split for split in ("dev", "test") if split not in splits]
    if carve:
        carved, remaining, dropped = _carve(splits["train"].pairs, len(carve))
        skipped = splits["train"].skipped + collections.Counter({SOURCE_IN_DEV_TEST: dropped})
        splits["train"] = splits["train"]._replace(pairs=remaining, skipped=skipped)
        splits.update((split, Corpus(pairs, collections.Counter(), []))
                      for split, pairs in zip(carve, carved))
        notes.append("no %s data given: carved %s out of %s (%d%% of its distinct sources each, "
                     "at most %d pairs); %d more train pairs repeating those sources were dropped"
                     % (" or ".join(carve), " and ".join("%d %s" % (len(pairs), split)
                                                         for split, pairs in zip(carve, carved)),
                        data["train_data"], round(CARVE_SHARE * 100), CARVE_MAX, dropped))
        if not remaining:
            raise CorpusError("%s is too small to carve dev and test out of it: nothing is left to "
                              "train on; give --dev_data and --test_data" % data["train_data"])
    train_sources = set(source for source, _ in splits["train"].pairs)
    for split in (split for split in ("dev", "test") if split not in carve):
        pairs = splits[split].pairs
        seen = sum(1 for source, _ in pairs if source in train_sources)
        if seen:
            notes.append("warning: %d of the %d %s pairs read (%.1f%%) have a source that train "
                         "also has: %s scores overstate quality on unseen text"
                         % (seen, len(pairs), split, 100.0 * seen / len(pairs), split))
    return splits, [[source for source, _ in splits["dev"].pairs]], notes


def _carve(pairs, num_sets):
    """`num_sets` lists of held-out distinct-source pairs, the other pairs, the count dropped."""
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
    return held_out, remaining, len(pairs) - len(remaining) - len(held_sources)


def _write_split(split, corpus_split, tokenizer, data, directory, log, verbose):
    """Encodes, skips pairs over the length limits, writes the shards and the raw text."""
    encoded, kept_pairs, skipped = [], [], collections.Counter(corpus_split.skipped)
    limits = data["max_source_length"], data["max_target_length"]
    for source, target in corpus_split.pairs:
        source_ids, target_ids = tokenizer.encode_source(source), tokenizer.encode_target(target)
        if not source_ids or not target_ids:  # invisible characters only
            skipped[EMPTY_SIDE] += 1
        elif len(source_ids) > limits[0] or len(target_ids) > limits[1]:
            skipped[TOO_LONG] += 1
        else:
            encoded.append((source_ids, target_ids) + ((target,) if split != "train" else ()))
            kept_pairs.append((source, target))
    if not encoded:
        raise CorpusError("the %s split is empty after skipping %s (limits: data.max_source_length "
                          "%d, data.max_target_length %d)"
                          % (split, format_skipped(skipped), *limits))
    if split == "train":
        random.Random(TRAIN_ORDER_SEED).shuffle(encoded)
    num_shards = min(data["num_shards"], len(encoded)) if split == "train" else 1
    shards = write_shards(encoded, directory, split, num_shards, verbose)
    record = {"kept": len(encoded), "skipped": dict(sorted(skipped.items())), "shards": shards}
    log("%-5s kept %d, skipped %d%s" % (split, len(encoded), sum(skipped.values()),
                                      " (%s)" % format_skipped(skipped) if skipped else ""))
    if split != "train":
        record["raw_text"] = [split + ".src", split + ".tgt"]
        for name, side in zip(record["raw_text"], zip(*kept_pairs)):
            with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
                f.writelines(sentence + "\n" for sentence in side)
    return record


def _prepared_data(data_dir, manifest):
    splits, paths = manifest["splits"], lambda names: [os.path.join(data_dir, n) for n in names]
    return PreparedData(
        data_dir, manifest, paths(manifest["tokenizer_files"]), paths(splits["train"]["shards"]),
        paths(splits["dev"]["shards"]), paths(splits["test"]["shards"]),
        manifest["source_vocab_size"], manifest["target_vocab_size"],
        {split: tuple(paths(splits[split]["raw_text"])) for split in ("dev", "test")})


def main(argv=None):
    tf.disable_v2_behavior()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="YAML config file (default: "
                        "configs/default.yaml)")
    parser.add_argument("--hparams", default="", help="overrides: section.key=value,...")
    parser.add_argument("--train_data", default="",
                        help="TSV file or 'source_file,target_file'; sets data.corpus=files")
    held_out = "like --train_data; carved from it if absent"
    parser.add_argument("--dev_data", default="", help=held_out)
    parser.add_argument("--test_data", default="", help=held_out)
    args = parser.parse_args(argv)
    try:
        overrides = corpus_overrides(args.train_data, args.dev_data, args.test_data)
        prepare(load_config(args.config, args.hparams, overrides))
    except ValueError as e:  # ConfigError and CorpusError among them
        sys.exit("prepare: error: %s" % e)


if __name__ == "__main__":
    main()
