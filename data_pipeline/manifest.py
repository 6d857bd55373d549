"""data_dir/manifest.json: what was prepared, from which settings and inputs.

The manifest is written last and removed first when rebuilding, so a
manifest on disk always describes complete data. Its fingerprint covers the
data settings that change the prepared files and, for user corpora, the
inputs' sizes and modification times.
"""

import json
import os

from seq2seq.config import PREPARED_DATA_KEYS, fingerprint
from data_pipeline.corpus import split_spec

MANIFEST = "manifest.json"

# Bump when a code change alters what prepare writes for the same settings
# (the corpus generator, text normalisation, SentencePiece options), so that
# prepared data is rebuilt rather than silently kept. A model directory
# trained on the old data then refuses to resume: train.py compares its
# SentencePiece model with the rebuilt one.
# 2: "1º de <mês>" in pt_BR dates; SentencePiece with the identity rule.
# 3: dev and test examples carry their reference text (BLEU's references);
#    train pairs are written in a fixed random order; corpus lines end at LF
#    only (an inner CR is whitespace).
# 4: the embedded corpus's variants and new forms; tokenizer.json (lower-case
#    source, familiarity model).
FORMAT_VERSION = 4


def data_settings(config):
    """The data settings that the prepared files depend on, as a flat dict."""
    data = config["data"]
    return {key: data[key] for key in PREPARED_DATA_KEYS[data["corpus"]]}


def input_files(config):
    """Size and modification time of every user corpus file (none if embedded).

    Missing files are left out here; reading the corpus reports them.
    """
    data = config["data"]
    if data["corpus"] != "files":
        return []
    stats = []
    for key in ("train_data", "dev_data", "test_data"):
        for path in (split_spec(data[key]) if data[key] else []):
            if os.path.isfile(path):
                status = os.stat(path)
                stats.append({"path": path, "size": status.st_size, "mtime_ns": status.st_mtime_ns})
    return stats


def data_fingerprint(config):
    """A short hash of FORMAT_VERSION, data_settings and input_files."""
    return fingerprint({"format": FORMAT_VERSION, "settings": data_settings(config),
                        "inputs": input_files(config)})


def path(data_dir):
    return os.path.join(data_dir, MANIFEST)


def load(data_dir):
    """Returns the manifest dict, or None when there is none."""
    if not os.path.isfile(path(data_dir)):
        return None
    with open(path(data_dir), encoding="utf-8") as f:
        return json.load(f)


def save(data_dir, manifest):
    """Writes the manifest (atomically: a rename replaces the old one)."""
    temporary = path(data_dir) + ".tmp"
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2, ensure_ascii=False, sort_keys=True)
        f.write("\n")
    os.replace(temporary, path(data_dir))


def listed_files(manifest):
    """Every output file a manifest lists, relative to data_dir."""
    files = list(manifest["tokenizer_files"])
    for split in manifest["splits"].values():
        files += split["shards"] + split.get("raw_text", [])
    return files


def is_up_to_date(manifest, data_dir, wanted_fingerprint):
    """Whether `manifest` has the wanted fingerprint and all its files exist."""
    return (manifest is not None and manifest["fingerprint"] == wanted_fingerprint
            and all(os.path.isfile(os.path.join(data_dir, name)) for name in listed_files(manifest)))


def settings_mismatches(manifest, config):
    """The data settings on which a manifest and a config disagree, as ``key: old -> new``."""
    wanted = data_settings(config)
    prepared = manifest["settings"]
    return ["data.%s: %r -> %r" % (key, prepared.get(key), wanted.get(key))
            for key in sorted(set(prepared) | set(wanted)) if prepared.get(key) != wanted.get(key)]
