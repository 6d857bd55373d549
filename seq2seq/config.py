"""The config schema: DEFAULTS, with a YAML file and ``--hparams`` merged over it, type-checked."""

import copy
import hashlib
import json
import logging
import math
import os
import re

import yaml

from seq2seq.decoding_options import TABLE as DECODING_OPTIONS
from seq2seq.decoding_options import beam_groups_problem, limits, problem

DEFAULTS = {
    "name": "default",  # the run's name: model_dir defaults to runs/<name>; /v1/info reports it
    "data": {
        "corpus": "embedded",  # "embedded" (generated offline, en -> target_locale) | "files"
        "train_data": "",  # corpus "files": a TSV (source<TAB>target[<TAB>...]) or "src,tgt"
        "dev_data": "",  # like train_data; "": carved out of it (2% of sources, <= 1000)
        "test_data": "",  # like train_data; "": carved out of train_data, as dev_data
        "data_dir": "data/default",  # SentencePiece model(s), TFRecord shards, manifest.json
        "embedded_train_size": 60000,  # embedded corpus: training pairs, >= 1
        "embedded_dev_size": 1000,  # embedded corpus: dev pairs, >= 1
        "embedded_test_size": 1000,  # embedded corpus: test pairs, >= 1
        "embedded_seed": 1234,  # embedded corpus: generator seed (same seed, same corpus)
        "target_locale": "pt_BR",  # embedded corpus: a CLDR locale num2words spells (es, fr...)
        "max_source_length": 64,  # subword tokens, >= 1; longer pairs are skipped and counted
        "max_target_length": 64,  # subword tokens, >= 1; longer pairs are skipped and counted
        "spm_model_type": "unigram",  # SentencePiece algorithm: "unigram" | "bpe"
        "joint_vocab": True,  # one SentencePiece model for both sides (false: one per side)
        "lowercase_source": False,  # fold source text to lower case (training and translating)
        "vocab_size": 4000,  # pieces per SentencePiece model, >= 1 (fewer if the corpus is small)
        "num_shards": 4,  # training TFRecord files, >= 1 (dev and test: one each)
    },
    "model": {
        "embedding_size": 128,  # E, the width of the source and target embeddings, >= 1
        "num_units": 256,  # decoder GRU size, >= 1 (even when encoder_units is 0)
        "encoder_units": 0,  # each encoder direction's GRU size, >= 0; 0: num_units // 2
        "encoder_layers": 1,  # bidirectional GRU layers, >= 1
        "attention": "bahdanau",  # "bahdanau" (additive) | "luong" (multiplicative)
        "attention_size": 256,  # hidden size of bahdanau attention, >= 1 (luong ignores it)
        "share_embeddings": True,  # one embedding table for both sides (needs joint_vocab)
        "tie_output_projection": False,  # project to the vocabulary with the target table (E wide)
        "dropout": 0.2,  # drop rate in training, in [0, 1): embeddings, between layers, output
    },
    "train": {
        "batch_tokens": 4096,  # source+target tokens (padded) per batch, >= 0; 0: use batch_size
        "batch_size": 64,  # sentence pairs per batch when batch_tokens is 0, >= 1
        "bucket_width": 4,  # batch pairs by length in buckets this many tokens wide, >= 1
        "shuffle_buffer": 20000,  # training pairs shuffled at a time, >= 1
        "learning_rate": 0.003,  # Adam's peak rate, at the end of warm-up, > 0
        "warmup_steps": 300,  # steps of linear warm-up to learning_rate, >= 0 (0 acts as 1)
        "decay": "rsqrt",  # after warm-up: "rsqrt" | "constant" | "cosine" (to 0 at max_steps)
        "max_steps": 6000,  # training stops at this global step, >= 1
        "clip_gradient_norm": 5.0,  # clip the gradients' global norm to this; <= 0: no clipping
        "label_smoothing": 0.1,  # probability mass spread over the vocabulary, in [0, 1)
        "save_checkpoints_steps": 500,  # steps between checkpoints (each one evaluated), >= 1
        "keep_checkpoint_max": 5,  # newest checkpoints kept, >= 0 (0: all); training.average uses 5
        "log_step_count_steps": 100,  # steps between progress lines and summaries, >= 1
        "histogram_steps": 500,  # steps between weight and gradient histograms, >= 0 (0: none)
        "eval_batch_size": 64,  # dev sentences per evaluation batch, >= 1
        "eval_bleu_sentences": 500,  # dev sentences decoded for BLEU per evaluation, >= 0 (0: all)
        "eval_attention_images": 3,  # first dev sentences drawn as attention heatmaps, >= 0
        "throttle_secs": 60,  # seconds at least between two evaluations, >= 0
        "seed": 1,  # TensorFlow's graph seed; the shuffle's is seed + the resume step
        "early_stopping_evaluations": 0,  # stop after N evaluations, no BLEU gain, >= 0 (0: off)
    },
    "decode": {
        "beam_width": 5,  # default beam width (eval BLEU, translate, serve), 1..max_beam_width
        # The decoding options, each with its hint and range: seq2seq/decoding_options.py's TABLE.
        **{name: option.default for name, option in DECODING_OPTIONS.items()},
        "max_length_ratio": 2.0,  # decode at most ratio * source tokens + max_length_extra, >= 0
        "max_length_extra": 10,  # tokens added to that limit, >= 1
        "max_beam_width": 16,  # the largest beam width a request or flag may ask for, >= 1
        "batch_size": 32,  # sentences per decoding batch (translate, compare), >= 1
        # How the Translator uses the cores: from the defaults and --hparams, never config.yaml.
        "concurrent_batches": 0,  # batches decoded at once, a thread each, >= 0 (0: one per core)
        "inter_op_threads": -1,  # >= -1 (-1: the caller's thread, 0: TensorFlow picks)
        "intra_op_threads": 1,  # threads within one op, >= 0 (0: TensorFlow picks)
    },
    "serve": {
        "max_body_bytes": 65536,  # largest POST /translate body in bytes (else 413), >= 1
        "max_texts": 32,  # most texts in one request, >= 1
        "max_chars": 500,  # most characters in one text (after trimming), >= 1
        "max_tokens": 128,  # most source subword tokens in one text, >= 1
        "max_batch_sentences": 64,  # most sentences in a batch (a larger request runs alone), >= 1
        "batching": True,  # batch concurrent requests (serve.py --no_batching: false)
        "concurrent_batches": 0,  # batches running at once, >= 0 (0: one per CPU core)
        "intra_op_threads": 1,  # threads in one op of a batch's model call, >= 0 (0: one per core)
        "batch_step_overhead": 3.0,  # a step's fixed cost in sentence-steps (length grouping), >= 0
        "batch_hold_ms": 5.0,  # most a free slot beside busy ones waits for its share, >= 0
        "batch_log": "",  # a file: one JSON line per model call (bench/replay_batches.py); "": off
    },
}

# The demo's config, where train.py and data_pipeline.prepare look without --config.
DEFAULT_CONFIG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                              "configs", "default.yaml")

RETIRED_KEYS = {("serve", "batch_window_ms"): "serve.batch_window_ms, from an older version, is "
                                             "retired (batches form with no window); ignored"}

# Keys whose change makes existing checkpoints unusable.
SHAPE_KEYS = ("data.joint_vocab", "data.vocab_size", "model.embedding_size", "model.num_units",
              "model.encoder_units", "model.encoder_layers", "model.attention",
              "model.attention_size", "model.share_embeddings", "model.tie_output_projection")

_CHOICES = {"data.corpus": ("embedded", "files"), "train.decay": ("rsqrt", "constant", "cosine"),
            "data.spm_model_type": ("unigram", "bpe"), "model.attention": ("bahdanau", "luong")}

# The numeric keys' lower bounds (the decoding options' ranges: decoding_options.TABLE).
_AT_LEAST = {
    1: ("data.vocab_size", "data.num_shards", "data.max_source_length", "data.max_target_length",
        "data.embedded_train_size", "data.embedded_dev_size", "data.embedded_test_size",
        "model.embedding_size", "model.num_units", "model.encoder_layers", "model.attention_size",
        "train.batch_size", "train.bucket_width", "train.shuffle_buffer", "train.max_steps",
        "train.save_checkpoints_steps", "train.log_step_count_steps", "train.eval_batch_size",
        "decode.max_length_extra", "decode.max_beam_width", "decode.batch_size",
        "serve.max_body_bytes", "serve.max_texts", "serve.max_chars", "serve.max_tokens",
        "serve.max_batch_sentences"),
    0: ("model.encoder_units", "train.batch_tokens", "train.warmup_steps",
        "train.keep_checkpoint_max", "train.eval_bleu_sentences", "train.throttle_secs",
        "train.histogram_steps", "train.eval_attention_images", "train.label_smoothing",
        "train.early_stopping_evaluations", "decode.max_length_ratio", "decode.intra_op_threads",
        "decode.concurrent_batches", "serve.concurrent_batches", "serve.intra_op_threads",
        "serve.batch_step_overhead", "serve.batch_hold_ms"),
    -1: ("decode.inter_op_threads",),
}

# The "data" keys that shape what prepare writes (fingerprinted), by corpus kind.
_PREPARED_COMMON_KEYS = ("corpus", "spm_model_type", "joint_vocab", "vocab_size", "num_shards",
                         "max_source_length", "max_target_length", "lowercase_source")
PREPARED_DATA_KEYS = {
    "embedded": _PREPARED_COMMON_KEYS + ("embedded_train_size", "embedded_dev_size",
                                         "embedded_test_size", "embedded_seed", "target_locale"),
    "files": _PREPARED_COMMON_KEYS + ("train_data", "dev_data", "test_data"),
}

# The first line of save_config's files: load_config keeps their data_dir as written.
RESOLVED_HEADER = ("# A resolved config, written by seq2seq.config.save_config: its data_dir is"
                   " used as written. Delete this line to use it as a config of your own.\n")

# An --hparams item ends at a comma before the next "key=": a value may hold commas.
_HPARAMS_SEPARATOR = re.compile(r",[\s,]*(?=[A-Za-z_][\w.]*\s*=)")

_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")


class ConfigError(ValueError):
    """A config file or override that does not fit the schema."""


def _number(value):
    """A non-bool int or float, or a str parsed as one, else None."""
    if isinstance(value, str):
        for parse in (int, float):
            try:
                return parse(value)
            except ValueError:
                pass
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _coerce(path, value, default):
    """`value` as the type of `default` ("0123": 123 for an int key, "0123" for a str key)."""
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in _TRUE + _FALSE:
            return value.lower() in _TRUE
        raise ConfigError("%s must be a boolean, got %r" % (path, value))
    if isinstance(default, int):
        number = _number(value)
        if isinstance(number, float) and number.is_integer():
            number = int(number)
        if not isinstance(number, int):
            raise ConfigError("%s must be an integer, got %r" % (path, value))
        return number
    if isinstance(default, float):
        number = _number(value)
        if number is None or not math.isfinite(number):
            raise ConfigError("%s must be a finite number, got %r" % (path, value))
        return float(number)
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        hint = " (quote it in YAML: 'no')" if isinstance(value, bool) else ""
        raise ConfigError("%s must be a string, got %r%s" % (path, value, hint))
    value = str(value)
    choices = _CHOICES.get(path)
    if choices and value not in choices:
        raise ConfigError("%s must be one of %s, got %r" % (path, ", ".join(choices), value))
    return value


def _merge(config, overrides, origin):
    """Merges a nested mapping into `config`, type-checked; RETIRED_KEYS skipped with a warning."""
    if not isinstance(overrides, dict):
        raise ConfigError("%s: the top level must be a mapping" % origin)
    for key, value in overrides.items():
        if key not in config:
            raise ConfigError("%s: unknown key %r (known: %s)"
                              % (origin, key, ", ".join(sorted(config))))
        if not isinstance(config[key], dict):
            config[key] = _coerce(key, value, DEFAULTS[key])
            continue
        if not isinstance(value, dict):
            raise ConfigError("%s: %r must be a section (mapping)" % (origin, key))
        for sub_key, sub_value in value.items():
            if (key, sub_key) in RETIRED_KEYS:
                logging.getLogger("seq2seq").warning("%s: %s", origin, RETIRED_KEYS[key, sub_key])
            elif sub_key not in config[key]:
                raise ConfigError("%s: unknown key %s.%s (known in %s: %s)"
                                  % (origin, key, sub_key, key, ", ".join(sorted(config[key]))))
            else:
                config[key][sub_key] = _coerce(
                    "%s.%s" % (key, sub_key), sub_value, DEFAULTS[key][sub_key])


def parse_hparams(hparams):
    """``"a.b=1,c=x"`` -> {"a": {"b": "1"}, <c's only section>: {"c": "x"}}, values as typed."""
    overrides = {}
    for item in _HPARAMS_SEPARATOR.split((hparams or "").strip().strip(",")):
        item = item.strip()
        if not item:
            continue
        if "=" not in item:
            raise ConfigError("--hparams: %r is not of the form key=value" % item)
        key, value = (part.strip() for part in item.split("=", 1))
        if "." in key:
            section, sub_key = key.split(".", 1)
            overrides.setdefault(section, {})[sub_key] = value
        elif key in DEFAULTS and not isinstance(DEFAULTS[key], dict):
            overrides[key] = value
        else:
            sections = [s for s, v in DEFAULTS.items() if isinstance(v, dict) and key in v]
            if len(sections) != 1:
                raise ConfigError("--hparams: unknown key %r" % key if not sections else
                                  "--hparams: %r is ambiguous (in %s)" % (key, ", ".join(sections)))
            overrides.setdefault(sections[0], {})[key] = value
    return overrides


def corpus_overrides(train_data="", dev_data="", test_data=""):
    """The overrides of --train_data/--dev_data/--test_data (corpus "files"), or {}."""
    files = {key: value for key, value in (("train_data", train_data), ("dev_data", dev_data),
                                           ("test_data", test_data)) if value}
    if files and not train_data:
        raise ConfigError("--dev_data/--test_data need --train_data")
    return {"data": dict(files, corpus="files")} if files else {}


def _sets_data_dir(kind, layer):
    """Whether a layer sets a "files" corpus's data_dir."""
    data = layer.get("data") or {}
    if kind in ("yaml", "resolved") and data.get("corpus") != "files":
        return False
    if kind == "yaml" and data.get("data_dir") == DEFAULTS["data"]["data_dir"]:
        return False  # a copy of the demo's config: data/default holds the embedded corpus
    return "data_dir" in data


def load_config(path=None, hparams="", overrides=None):
    """DEFAULTS, then the YAML file at `path`, `hparams`, then `overrides` (a nested mapping).

    A "files" corpus without a data_dir of its own gets data/corpus-<hash>.
    """
    config = copy.deepcopy(DEFAULTS)
    layers = []
    if path:
        if not os.path.exists(path):
            raise ConfigError("config file not found: %s" % path)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            loaded = yaml.safe_load(text) or {}
        except yaml.YAMLError as e:
            raise ConfigError("%s is not valid YAML: %s" % (path, e)) from e
        layers.append(("resolved" if text.startswith(RESOLVED_HEADER) else "yaml", path, loaded))
    layers.append(("hparams", "--hparams", parse_hparams(hparams)))
    layers.append(("overrides", "command line", overrides or {}))
    for _, origin, layer in layers:
        _merge(config, layer, origin)
    data = config["data"]
    if data["corpus"] == "files" and not any(_sets_data_dir(kind, layer)
                                             for kind, _, layer in layers):
        data["data_dir"] = os.path.join("data", "corpus-" + fingerprint(
            {key: data[key] for key in PREPARED_DATA_KEYS["files"]})[:8])
    _validate(config)
    return config


def _validate(config):
    """Raises a ConfigError naming the first key out of its range."""
    model, data, decode = config["model"], config["data"], config["decode"]
    for minimum, keys in _AT_LEAST.items():
        for key in keys:
            if get(config, key) < minimum:
                raise ConfigError("%s must be >= %s, got %r" % (key, minimum, get(config, key)))
    if config["train"]["learning_rate"] <= 0:
        raise ConfigError("train.learning_rate must be > 0, got %r"
                          % config["train"]["learning_rate"])
    if model["share_embeddings"] and not data["joint_vocab"]:
        raise ConfigError("model.share_embeddings needs data.joint_vocab: true")
    if not model["encoder_units"] and model["num_units"] % 2:
        raise ConfigError("model.num_units must be even (each encoder direction has half"
                          " when model.encoder_units is 0)")
    if not 0.0 <= model["dropout"] < 1.0:
        raise ConfigError("model.dropout must be in [0, 1), got %r" % model["dropout"])
    if not config["train"]["label_smoothing"] < 1.0:  # above 1 the loss rewards a wrong piece
        raise ConfigError("train.label_smoothing must be in [0, 1), got %r"
                          % config["train"]["label_smoothing"])
    if data["corpus"] == "files" and not data["train_data"]:
        raise ConfigError("data.corpus is 'files' but data.train_data is empty")
    if not data["data_dir"].strip():
        raise ConfigError("data.data_dir must not be empty")
    if not 1 <= decode["beam_width"] <= decode["max_beam_width"]:
        raise ConfigError("decode.beam_width must be in [1, decode.max_beam_width=%d], got %d"
                          % (decode["max_beam_width"], decode["beam_width"]))
    named = limits(decode, data["max_target_length"])
    for name, option in DECODING_OPTIONS.items():
        wrong = problem(option, decode[name], named)
        if wrong:
            raise ConfigError("decode.%s %s, got %r" % (name, wrong, decode[name]))
    wrong = beam_groups_problem(decode["diverse_beam_groups"], decode["beam_width"], "decode.")
    if wrong:
        raise ConfigError(wrong)


def get(config, dotted):
    """config["section"]["key"] for "section.key"."""
    section, key = dotted.split(".")
    return config[section][key]


def shape_mismatches(old, new):
    """The SHAPE_KEYS two configs disagree on, as "key: old -> new"."""
    return ["%s: %r -> %r" % (key, get(old, key), get(new, key))
            for key in SHAPE_KEYS if get(old, key) != get(new, key)]


def fingerprint(mapping):
    """A short stable hash of a JSON-serialisable mapping."""
    blob = json.dumps(mapping, sort_keys=True).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:16]


def save_config(config, path):
    """Writes the resolved config as YAML under RESOLVED_HEADER."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(RESOLVED_HEADER)
        yaml.safe_dump(config, f, sort_keys=False, allow_unicode=True)
