"""The config schema: each section's keys with their types, defaults and bounds (pydantic); a YAML
file and ``--hparams`` merged over them and validated once into a nested dict (DEFAULTS' shape)."""

import contextlib
import hashlib
import json
import logging
import os
import re
from typing import Annotated, Literal, get_args

import yaml
from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, Strict, ValidationError,
                      create_model, model_validator)

from seq2seq.decoding_options import (OPTIONS, DecodingOptions, beam_groups_problem,
                                      field_problem, limits)


class ConfigError(ValueError):
    """A config file or override that does not fit the schema."""


def _number(value):
    """--hparams text read as a number ("0100": 100, not octal; "1e-1": 0.1); else `value`."""
    if isinstance(value, str):
        for parse in (int, float):
            with contextlib.suppress(ValueError):
                return parse(value)
    return value


def _whole(value):
    """An int from text or a whole float ("2e3", 2000.0: 2000); anything else left to refuse."""
    value = _number(value)
    return int(value) if isinstance(value, float) and value.is_integer() else value


# Strict after the conversion: YAML's `true` is not a number here.
Int = Annotated[int, Strict(), BeforeValidator(_whole)]
Float = Annotated[float, Strict(), BeforeValidator(_number)]
Text = Annotated[str, BeforeValidator(lambda value: "" if value is None else value)]  # `key:` is ""


class _Section(BaseModel):
    """A section: an unknown key is an error; a number is text where text is wanted (2024)."""
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, coerce_numbers_to_str=True)


class DataSection(_Section):
    corpus: Literal["embedded", "files"] = "embedded"  # embedded: generated, en -> target_locale
    train_data: Text = ""  # corpus "files": a TSV (source<TAB>target[<TAB>...]) or "src,tgt"
    dev_data: Text = ""  # like train_data; "": carved out of it (2% of sources, <= 1000)
    test_data: Text = ""  # like train_data; "": carved out of train_data, as dev_data
    data_dir: Text = "data/default"  # SentencePiece model(s), TFRecord shards, manifest.json
    embedded_train_size: Int = Field(60000, ge=1)  # embedded corpus: training pairs
    embedded_dev_size: Int = Field(1000, ge=1)  # embedded corpus: dev pairs
    embedded_test_size: Int = Field(1000, ge=1)  # embedded corpus: test pairs
    embedded_seed: Int = 1234  # embedded corpus: generator seed (same seed, same corpus)
    target_locale: Text = "pt_BR"  # embedded corpus: a CLDR locale num2words spells (es, fr...)
    max_source_length: Int = Field(64, ge=1)  # subword tokens; longer pairs skipped and counted
    max_target_length: Int = Field(64, ge=1)  # subword tokens; longer pairs skipped and counted
    spm_model_type: Literal["unigram", "bpe"] = "unigram"  # the SentencePiece algorithm
    joint_vocab: bool = True  # one SentencePiece model for both sides (false: one per side)
    lowercase_source: bool = False  # fold source text to lower case (training and translating)
    vocab_size: Int = Field(4000, ge=1)  # pieces per SentencePiece model (fewer if corpus is small)
    num_shards: Int = Field(4, ge=1)  # training TFRecord files (dev and test: one each)


class ModelSection(_Section):
    embedding_size: Int = Field(128, ge=1)  # E, the width of the source and target embeddings
    num_units: Int = Field(256, ge=1)  # decoder GRU size (even when encoder_units is 0)
    encoder_units: Int = Field(0, ge=0)  # each encoder direction's GRU size; 0: num_units // 2
    encoder_layers: Int = Field(1, ge=1)  # bidirectional GRU layers
    attention: Literal["bahdanau", "luong"] = "bahdanau"  # additive | multiplicative
    attention_size: Int = Field(256, ge=1)  # hidden size of bahdanau attention (luong ignores it)
    share_embeddings: bool = True  # one embedding table for both sides (needs joint_vocab)
    tie_output_projection: bool = False  # project to the vocabulary with the target table (E wide)
    dropout: Float = Field(0.2, ge=0, lt=1)  # drop rate in training: embeddings, layers, output


class TrainSection(_Section):
    batch_tokens: Int = Field(4096, ge=0)  # source+target tokens (padded) per batch; 0: batch_size
    batch_size: Int = Field(64, ge=1)  # sentence pairs per batch when batch_tokens is 0
    bucket_width: Int = Field(4, ge=1)  # batch pairs by length in buckets this many tokens wide
    shuffle_buffer: Int = Field(20000, ge=1)  # training pairs shuffled at a time
    learning_rate: Float = Field(0.003, gt=0)  # Adam's peak rate, at the end of warm-up
    warmup_steps: Int = Field(300, ge=0)  # steps of linear warm-up to learning_rate (0 acts as 1)
    decay: Literal["rsqrt", "constant", "cosine"] = "rsqrt"  # after warm-up; cosine ends at 0
    max_steps: Int = Field(6000, ge=1)  # training stops at this global step
    clip_gradient_norm: Float = 5.0  # clip the gradients' global norm to this; <= 0: no clipping
    label_smoothing: Float = Field(0.1, ge=0, lt=1)  # probability mass spread over the vocabulary
    save_checkpoints_steps: Int = Field(500, ge=1)  # steps between checkpoints (each evaluated)
    keep_checkpoint_max: Int = Field(5, ge=0)  # newest checkpoints kept (0: all); averaging uses 5
    log_step_count_steps: Int = Field(100, ge=1)  # steps between progress lines and summaries
    histogram_steps: Int = Field(500, ge=0)  # steps between weight and gradient histograms; 0: none
    eval_batch_size: Int = Field(64, ge=1)  # dev sentences per evaluation batch
    eval_bleu_sentences: Int = Field(500, ge=0)  # dev sentences decoded for BLEU (0: all)
    eval_attention_images: Int = Field(3, ge=0)  # first dev sentences drawn as attention heatmaps
    throttle_secs: Int = Field(60, ge=0)  # seconds at least between two evaluations
    seed: Int = 1  # TensorFlow's graph seed; the shuffle's is seed + the resume step
    early_stopping_evaluations: Int = Field(0, ge=0)  # stop after N with no BLEU gain (0: off)


# The decoding options (seq2seq/decoding_options.py's DecodingOptions, whose hints say what they
# do): a field each here of its default's type, to read --hparams text; then checked as
# DecodingOptions, under limits that name data.max_target_length, by Config._rules_across_keys.
_DecodeOptions = create_model("_DecodeOptions", __base__=_Section, **{
    name: ({bool: bool, int: Int, float: Float, str: str}[type(field.default)], field.default)
    for name, field in DecodingOptions.model_fields.items()})


class DecodeSection(_DecodeOptions):
    beam_width: Int = 5  # default beam width (eval BLEU, translate, serve), 1..max_beam_width
    max_length_ratio: Float = Field(2.0, ge=0)  # decode ratio * source tokens + max_length_extra
    max_length_extra: Int = Field(10, ge=1)  # tokens added to that limit
    max_beam_width: Int = Field(16, ge=1)  # the largest beam width a request or flag may ask for
    batch_size: Int = Field(32, ge=1)  # sentences per decoding batch (translate, compare)
    # How the Translator uses the cores: from the defaults and --hparams, never config.yaml.
    concurrent_batches: Int = Field(0, ge=0)  # batches at once, a thread each (0: one per core)
    inter_op_threads: Int = Field(-1, ge=-1)  # -1: the caller's thread, 0: TensorFlow picks
    intra_op_threads: Int = Field(1, ge=0)  # threads within one op (0: TensorFlow picks)


class ServeSection(_Section):
    max_body_bytes: Int = Field(65536, ge=1)  # largest POST /translate body in bytes (else 413)
    max_texts: Int = Field(32, ge=1)  # most texts in one request
    max_chars: Int = Field(500, ge=1)  # most characters in one text (after trimming)
    max_tokens: Int = Field(128, ge=1)  # most source subword tokens in one text
    max_batch_sentences: Int = Field(64, ge=1)  # most sentences in a batch (larger: runs alone)
    batching: bool = True  # batch concurrent requests (serve.py --no_batching: false)
    concurrent_batches: Int = Field(0, ge=0)  # batches running at once (0: one per CPU core)
    intra_op_threads: Int = Field(1, ge=0)  # threads within one op of a model call (0: all cores)
    batch_step_overhead: Float = Field(3.0, ge=0)  # a step's fixed cost in sentence-steps
    batch_hold_ms: Float = Field(5.0, ge=0)  # most a free slot beside busy ones waits for a share
    batch_log: Text = ""  # a file: one JSON line per model call (bench/replay_batches.py); "": off


class Config(_Section):
    """The whole config: its sections, and the rules that span them."""
    name: Text = "default"  # the run's name: model_dir defaults to runs/<name>; /v1/info reports it
    data: DataSection = DataSection()
    model: ModelSection = ModelSection()
    train: TrainSection = TrainSection()
    decode: DecodeSection = DecodeSection()
    serve: ServeSection = ServeSection()

    @model_validator(mode="after")
    def _rules_across_keys(self):
        """The rules across sections; then the decoding options, checked as a request's are."""
        data, model, decode = self.data, self.model, self.decode
        broken = [message for wrong, message in (
            (data.corpus == "files" and not data.train_data,
             "data.corpus is 'files' but data.train_data is empty"),
            (not data.data_dir.strip(), "data.data_dir must not be empty"),
            (not model.encoder_units and model.num_units % 2, "model.num_units must be even (each "
             "encoder direction has half when model.encoder_units is 0)"),
            (model.share_embeddings and not data.joint_vocab,
             "model.share_embeddings needs data.joint_vocab: true"),
            (not 1 <= decode.beam_width <= decode.max_beam_width, "decode.beam_width must be in "
             "[1, decode.max_beam_width=%d], got %d" % (decode.max_beam_width, decode.beam_width)),
        ) if wrong]
        if broken:
            raise ValueError("; ".join(broken))
        named = limits(decode.model_dump(), data.max_target_length)
        try:
            DecodingOptions.model_validate(decode.model_dump(include=set(OPTIONS)), context=named)
        except ValidationError as e:
            raise ValueError("; ".join("decode.%s %s, got %r" % (
                error["loc"][0], field_problem(error, named), error["input"])
                for error in e.errors()))
        wrong = beam_groups_problem(decode.diverse_beam_groups, decode.beam_width, "decode.")
        if wrong:
            raise ValueError(wrong)
        return self


DEFAULTS = Config().model_dump()
SECTIONS = [key for key, value in DEFAULTS.items() if isinstance(value, dict)]

# The demo's config, where train.py and data_pipeline.prepare look without --config.
DEFAULT_CONFIG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                              "configs", "default.yaml")

RETIRED_KEYS = {("serve", "batch_window_ms"): "serve.batch_window_ms, from an older version, is "
                                             "retired (batches form with no window); ignored"}

# Keys whose change makes existing checkpoints unusable.
SHAPE_KEYS = ("data.joint_vocab", "data.vocab_size", "model.embedding_size", "model.num_units",
              "model.encoder_units", "model.encoder_layers", "model.attention",
              "model.attention_size", "model.share_embeddings", "model.tie_output_projection")

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

_KINDS = {"int_type": "an integer", "float_type": "a finite number", "finite_number":
          "a finite number", "bool_type": "a boolean", "bool_parsing": "a boolean",
          "string_type": "a string"}
_SIGNS = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}


def _bounds(field):
    """A numeric field's declared bounds: ">= 1", "> 0", or "in [0, 1)" for a fraction."""
    bounds = {sign: getattr(rule, sign) for rule in field.metadata for sign in _SIGNS
              if hasattr(rule, sign)}
    if len(bounds) == 2:  # dropout, label_smoothing
        return "in [%s, %s)" % (bounds["ge"], bounds["lt"])
    return "%s %s" % next((_SIGNS[sign], bound) for sign, bound in bounds.items())


def _message(error):
    """One of pydantic's errors as "section.key must be ..., got VALUE"; a rule's as it says."""
    loc, kind, value = error["loc"], error["type"], error["input"]
    if kind == "value_error":
        return str(error["ctx"]["error"])
    key = ".".join(loc)
    if kind == "extra_forbidden":
        known = DEFAULTS if len(loc) == 1 else DEFAULTS[loc[0]]
        return "unknown key %r (known%s: %s)" % (key, " in " + loc[0] if len(loc) > 1 else "",
                                                 ", ".join(sorted(known)))
    field = Config.model_fields[loc[0]]
    if len(loc) > 1:
        field = field.annotation.model_fields[loc[1]]
    rule = ("one of " + ", ".join(get_args(field.annotation)) if kind == "literal_error" else
            _KINDS.get(kind) or _bounds(field))  # a type, or a bound: greater_than_equal, ...
    hint = " (quote it in YAML: 'no')" if kind == "string_type" and isinstance(value, bool) else ""
    return "%s must be %s, got %r%s" % (key, rule, value, hint)


def _merge(config, layer, origin):
    """Merges one layer's keys into `config` (raw); RETIRED_KEYS are skipped with a warning."""
    if not isinstance(layer, dict):
        raise ConfigError("%s: the top level must be a mapping" % origin)
    for key, value in layer.items():
        if key not in SECTIONS:
            config[key] = value  # `name`, or an unknown key for the schema to name
            continue
        if not isinstance(value, dict):
            raise ConfigError("%s: %r must be a section (mapping)" % (origin, key))
        for sub_key, sub_value in value.items():
            if (key, sub_key) in RETIRED_KEYS:
                logging.getLogger("seq2seq").warning("%s: %s", origin, RETIRED_KEYS[key, sub_key])
            else:
                config[key][sub_key] = sub_value


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
        elif key in DEFAULTS and key not in SECTIONS:
            overrides[key] = value
        else:
            sections = [section for section in SECTIONS if key in DEFAULTS[section]]
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
    if kind == "yaml" and data.get("data_dir") == DEFAULTS["data"]["data_dir"]:
        return False  # a copy of the demo's config: data/default holds the embedded corpus
    return "data_dir" in data and (kind in ("hparams", "overrides") or
                                   data.get("corpus") == "files")


def load_config(path=None, hparams="", overrides=None):
    """DEFAULTS, then the YAML file at `path`, `hparams`, then `overrides` (a nested mapping), as
    a nested dict of plain values (DEFAULTS' shape); a "files" corpus without a data_dir of its
    own gets data/corpus-<hash>."""
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
    merged = {section: {} for section in SECTIONS}
    for _, origin, layer in layers:
        _merge(merged, layer, origin)
    try:
        config = Config.model_validate(merged).model_dump()
    except ValidationError as e:
        raise ConfigError("; ".join(_message(error) for error in e.errors())) from None
    data = config["data"]
    if data["corpus"] == "files" and not any(_sets_data_dir(kind, layer)
                                             for kind, _, layer in layers):
        data["data_dir"] = os.path.join("data", "corpus-" + fingerprint(
            {key: data[key] for key in PREPARED_DATA_KEYS["files"]})[:8])
    return config


def shape_mismatches(old, new):
    """The SHAPE_KEYS two configs disagree on, as "key: old -> new"."""
    values = [(key, *(config[section][name] for config in (old, new)))
              for key in SHAPE_KEYS for section, name in [key.split(".")]]
    return ["%s: %r -> %r" % found for found in values if found[1] != found[2]]


def fingerprint(mapping):
    """A short stable hash of a JSON-serialisable mapping."""
    blob = json.dumps(mapping, sort_keys=True).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:16]


def save_config(config, path):
    """Writes the resolved config as YAML under RESOLVED_HEADER."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(RESOLVED_HEADER)
        yaml.safe_dump(config, f, sort_keys=False, allow_unicode=True)
