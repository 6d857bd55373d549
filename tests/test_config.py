"""The config schema: defaults, YAML merge, --hparams, type checks, shape keys."""

import re
from typing import Literal, get_args, get_origin

import pytest
import yaml

from seq2seq import config as cfg
from seq2seq.decoding_options import DecodingOptions


def _write(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_shipped_configs_resolve():
    for name in ("configs/default.yaml", "configs/tiny.yaml"):
        config = cfg.load_config(name)
        assert set(config) == set(cfg.DEFAULTS)
        assert config["model"]["num_units"] % 2 == 0


def test_yaml_overrides_defaults_and_hparams_override_yaml(tmp_path):
    path = _write(tmp_path, "model:\n  num_units: 64\ntrain:\n  max_steps: 10\n")
    config = cfg.load_config(path, hparams="model.num_units=32,label_smoothing=0.0")
    assert config["model"]["num_units"] == 32
    assert config["train"]["max_steps"] == 10
    assert config["train"]["label_smoothing"] == 0.0
    assert config["model"]["embedding_size"] == cfg.DEFAULTS["model"]["embedding_size"]


def test_defaults_are_not_mutated():
    config = cfg.load_config(hparams="model.num_units=8")
    assert config["model"]["num_units"] == 8
    assert cfg.DEFAULTS["model"]["num_units"] != 8


@pytest.mark.parametrize("text, message", [
    ("model:\n  num_unitz: 3\n", "model.num_unitz"),
    ("modle:\n  num_units: 3\n", "unknown key 'modle'"),
    ("model:\n  num_units: many\n", "model.num_units must be an integer"),
    ("model:\n  num_units: true\n", "model.num_units must be an integer"),
    ("model:\n  attention: softmax\n", "model.attention must be one of"),
    ("model:\n  share_embeddings: maybe\n", "model.share_embeddings must be a boolean"),
    ("model: 3\n", "'model' must be a section"),
    ("model:\n  num_units: 33\n", "num_units must be even"),
    ("model:\n  encoder_units: -1\n", "model.encoder_units must be >= 0, got -1"),
    ("data:\n  joint_vocab: false\n", "share_embeddings needs data.joint_vocab"),
    ("[1, 2]\n", "top level must be a mapping"),
])
def test_bad_configs_name_the_key(tmp_path, text, message):
    with pytest.raises(cfg.ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")):
        cfg.load_config(_write(tmp_path, text))


@pytest.mark.parametrize("hparams, message", [
    ("num_units", "not of the form key=value"),
    ("nonsense=1", "unknown key 'nonsense'"),
    ("model.dropout=1.5", r"model\.dropout must be in \[0, 1\)"),
    ("decode.batch_size=0", r"decode\.batch_size must be >= 1, got 0"),
    ("decode.beam_width=20", r"decode\.beam_width must be in \[1, decode\.max_beam_width=16\], got 20"),
    ("decode.beam_width=0", r"decode\.beam_width must be in"),
    ("decode.max_length_extra=0", r"decode\.max_length_extra must be >= 1"),
    ("train.label_smoothing=-0.1", r"train\.label_smoothing must be in \[0, 1\), got -0\.1"),
    ("train.max_stepz=3", r"unknown key 'train\.max_stepz' \(known in train: [a-z_, ]*max_steps"),
    ("model.num_units=abc", r"model\.num_units must be an integer, got 'abc'"),
    ("model.tie_output_projection=2", r"model\.tie_output_projection must be a boolean, got '2'"),
    ("train.decay=linear", r"train\.decay must be one of rsqrt, constant, cosine, got 'linear'"),
    # Out of range: each message names the key, the range and the value.
    ("train.shuffle_buffer=0", r"train\.shuffle_buffer must be >= 1, got 0"),
    ("train.save_checkpoints_steps=0", r"train\.save_checkpoints_steps must be >= 1, got 0"),
    ("train.log_step_count_steps=0", r"train\.log_step_count_steps must be >= 1, got 0"),
    ("data.embedded_train_size=0", r"data\.embedded_train_size must be >= 1, got 0"),
    ("data.embedded_dev_size=0", r"data\.embedded_dev_size must be >= 1, got 0"),
    ("data.embedded_test_size=0", r"data\.embedded_test_size must be >= 1, got 0"),
    ("train.batch_tokens=-1", r"train\.batch_tokens must be >= 0, got -1"),
    ("train.eval_bleu_sentences=-5", r"train\.eval_bleu_sentences must be >= 0, got -5"),
    ("train.learning_rate=0", r"train\.learning_rate must be > 0, got 0$"),
    ("train.learning_rate=-0.001", r"train\.learning_rate must be > 0, got -0\.001"),
    ("train.learning_rate=nan", r"train\.learning_rate must be a finite number, got nan"),
    ("train.learning_rate=true", r"train\.learning_rate must be a finite number, got 'true'"),
    ("train.warmup_steps=-1", r"train\.warmup_steps must be >= 0, got -1"),
    ("train.keep_checkpoint_max=-1", r"train\.keep_checkpoint_max must be >= 0, got -1"),
    ("train.throttle_secs=-1", r"train\.throttle_secs must be >= 0, got -1"),
    ("data.data_dir=", r"data\.data_dir must not be empty"),
    # The decoding options: seq2seq/decoding_options.py's checks, as a request gets them.
    ("decode.temperature=0", r"decode\.temperature must be in 1e-06\.\., got 0\.0"),
    ("train.label_smoothing=1.5", r"train\.label_smoothing must be in \[0, 1\), got 1\.5"),
    ("decode.temperature=1e39", r"decode\.temperature must be a finite number of at "
                                r"most 3\.403e\+38 in size, got 1e\+39"),
    ("decode.coverage_penalty=10.5", r"decode\.coverage_penalty must be in 0\.\.10, got 10\.5"),
    ("decode.top_p=1.5", r"decode\.top_p must be in \(0, 1\], got 1\.5"),
    ("decode.epsilon=1", r"decode\.epsilon must be in \[0, 1\), got 1\.0"),
    ("decode.epsilon=-0.1", r"decode\.epsilon must be in \[0, 1\), got -0\.1"),
    ("decode.num_samples=17", r"decode\.num_samples must be in 1\.\.16, got 17"),
    ("decode.max_beam_width=3,decode.beam_width=3", r"decode\.num_samples must be in 1\.\.3, got 4"),
    ("decode.min_length=65", r"decode\.min_length must be in 0\.\.64, got 65"),
    ("data.max_target_length=8,decode.no_repeat_ngram_size=9",
     r"decode\.no_repeat_ngram_size must be in 0\.\.8, got 9"),
    ("decode.length_penalty=-1", r"decode\.length_penalty must be in 0\.\.10, got -1\.0"),
    ("decode.length_penalty_kind=log",
     r"decode\.length_penalty_kind must be one of gnmt, average, none, got 'log'"),
    ("decode.mbr_utility=meteor", r"decode\.mbr_utility must be one of chrf, bleu, got 'meteor'"),
    ("decode.mbr_candidates=greedy", r"decode\.mbr_candidates must be one of sample, beam"),
    ("decode.diverse_beam_groups=0", r"decode\.diverse_beam_groups must be in 1\.\., got 0"),
    ("decode.diverse_beam_groups=2", r"decode\.diverse_beam_groups must divide decode\.beam_width "
                                     r"5, got 2"),
    ("decode.diverse_beam_strength=-0.5", r"decode\.diverse_beam_strength must be in 0\.\."),
    ("decode.max_expansions=0", r"decode\.max_expansions must be in 1\.\.1000000, got 0"),
])
def test_bad_hparams(hparams, message):
    with pytest.raises(cfg.ConfigError, match=message):
        cfg.load_config(hparams=hparams)


def test_every_bad_key_is_named_at_once():
    with pytest.raises(cfg.ConfigError) as error:
        cfg.load_config(hparams="train.max_steps=0,model.num_units=abc,serve.max_texts=x")
    assert str(error.value) == ("model.num_units must be an integer, got 'abc'; train.max_steps "
                                "must be >= 1, got 0; serve.max_texts must be an integer, got 'x'")


def test_a_yaml_boolean_where_text_is_wanted_says_to_quote_it(tmp_path):
    with pytest.raises(cfg.ConfigError, match=r"data\.target_locale must be a string, got False "
                                              r"\(quote it in YAML: 'no'\)"):
        cfg.load_config(_write(tmp_path, "data:\n  target_locale: no\n"))
    empty = cfg.load_config(_write(tmp_path, "data:\n  dev_data:\n  data_dir: 2024\n"))["data"]
    assert (empty["dev_data"], empty["data_dir"]) == ("", "2024")


def test_range_edges_are_accepted():
    config = cfg.load_config(hparams="train.batch_tokens=0,train.eval_bleu_sentences=0,"
                                     "train.shuffle_buffer=1,train.learning_rate=1e-6,"
                                     "train.save_checkpoints_steps=1,data.embedded_dev_size=1")
    assert config["train"]["batch_tokens"] == 0
    assert config["train"]["learning_rate"] == 1e-6
    edges = {"epsilon": 0.999, "top_p": 1.0, "temperature": 1e-6, "num_samples": 16,
             "min_length": 64, "diverse_beam_groups": 5, "diverse_beam_strength": 0.0,
             "mbr_candidates": "beam", "mbr_utility": "bleu", "seed": -2 ** 62}
    config = cfg.load_config(hparams=",".join("decode.%s=%s" % item for item in edges.items()))
    assert {name: config["decode"][name] for name in edges} == edges


def test_string_hparams_are_taken_as_written():
    config = cfg.load_config(hparams="data.data_dir=0123,data.target_locale=no,name=1e3")
    assert config["data"]["data_dir"] == "0123"  # not YAML 1.1's octal 83
    assert config["data"]["target_locale"] == "no"  # Norwegian, not False
    assert config["name"] == "1e3"
    assert cfg.parse_hparams("data.data_dir=0123") == {"data": {"data_dir": "0123"}}


def test_typed_hparams_are_converted_to_the_key_type():
    config = cfg.load_config(hparams="train.max_steps=0100,model.share_embeddings=no,"
                                     "data.joint_vocab=off,train.label_smoothing=1e-1,"
                                     "train.batch_tokens=2e3")
    assert config["train"]["max_steps"] == 100  # decimal, not octal 64
    assert config["model"]["share_embeddings"] is False
    assert config["data"]["joint_vocab"] is False
    assert config["train"]["label_smoothing"] == 0.1
    assert config["train"]["batch_tokens"] == 2000


def test_commas_inside_a_value_stay_in_it():
    config = cfg.load_config(hparams="data.corpus=files,data.train_data=a.en,a.pt,"
                                     "dev_data = d.en,d.pt , model.num_units=64")
    assert config["data"]["train_data"] == "a.en,a.pt"
    assert config["data"]["dev_data"] == "d.en,d.pt"
    assert config["model"]["num_units"] == 64
    assert cfg.parse_hparams(",model.num_units=64,,train.max_steps=5,") == {
        "model": {"num_units": "64"}, "train": {"max_steps": "5"}}
    with pytest.raises(cfg.ConfigError, match="model.num_units must be an integer, got '64,x'"):
        cfg.load_config(hparams="model.num_units=64,x")


def test_encoder_units_frees_num_units_from_being_even():
    config = cfg.load_config(hparams="model.num_units=33,model.encoder_units=16")
    assert (config["model"]["num_units"], config["model"]["encoder_units"]) == (33, 16)
    assert cfg.load_config()["model"]["encoder_units"] == 0
    assert "model.encoder_units" in cfg.SHAPE_KEYS


def test_missing_file_is_an_error():
    with pytest.raises(cfg.ConfigError, match="config file not found: nowhere.yaml"):
        cfg.load_config("nowhere.yaml")


def test_shape_mismatches_name_only_shape_keys():
    old = cfg.load_config()
    new = cfg.load_config(hparams="model.num_units=128,train.max_steps=5,data.vocab_size=800")
    mismatches = cfg.shape_mismatches(old, new)
    assert mismatches == ["data.vocab_size: 4000 -> 800", "model.num_units: 256 -> 128"]


def test_save_and_reload_round_trip(tmp_path):
    config = cfg.load_config("configs/tiny.yaml")
    path = str(tmp_path / "config.yaml")
    cfg.save_config(config, path)
    assert cfg.load_config(path) == config
    assert cfg.fingerprint(config) == cfg.fingerprint(cfg.load_config(path))



def test_an_older_model_dirs_retired_key_loads_ignored_with_a_warning(tmp_path, caplog):
    old = cfg.load_config("configs/tiny.yaml")
    path = str(tmp_path / "config.yaml")
    cfg.save_config(old, path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    with open(path, "w", encoding="utf-8") as f:  # as train.py wrote it before the retirement
        f.write(text.replace("serve:\n", "serve:\n  batch_window_ms: 5.0\n"))
    with caplog.at_level("WARNING", logger="seq2seq"):
        assert cfg.load_config(path) == old
    assert "serve.batch_window_ms, from an older version, is retired" in caplog.text and path in caplog.text
    assert "batch_window_ms" not in cfg.load_config()["serve"]

def test_a_user_corpus_gets_its_own_data_dir():
    overrides = cfg.corpus_overrides("mine.tsv")
    config = cfg.load_config("configs/default.yaml", overrides=overrides)
    assert config["data"]["corpus"] == "files"
    assert config["data"]["train_data"] == "mine.tsv"
    # default.yaml's data_dir (data/default) holds the embedded corpus, not this one.
    assert config["data"]["data_dir"].startswith("data/corpus-")
    other = cfg.load_config("configs/default.yaml", overrides=cfg.corpus_overrides("other.tsv"))
    assert config["data"]["data_dir"] != other["data"]["data_dir"]
    switched = cfg.load_config("configs/default.yaml",
                               hparams="data.corpus=files,data.train_data=mine.tsv")
    assert switched["data"]["data_dir"] == config["data"]["data_dir"]


def test_a_files_corpus_in_yaml_without_data_dir_gets_its_own(tmp_path):
    path = _write(tmp_path, "data:\n  corpus: files\n  train_data: my.tsv\n")
    config = cfg.load_config(path)
    assert config["data"]["data_dir"].startswith("data/corpus-")
    assert config["data"]["data_dir"] != cfg.DEFAULTS["data"]["data_dir"]
    # The same files with another vocabulary are prepared elsewhere too.
    other_vocab = cfg.load_config(path, hparams="data.vocab_size=800")
    assert other_vocab["data"]["data_dir"] != config["data"]["data_dir"]
    # Settings that prepare ignores for a files corpus do not move it.
    assert cfg.load_config(path, hparams="train.max_steps=5,data.embedded_seed=7")[
        "data"]["data_dir"] == config["data"]["data_dir"]


def test_a_data_dir_set_with_a_files_corpus_is_kept(tmp_path):
    path = _write(tmp_path, "data:\n  corpus: files\n  train_data: my.tsv\n"
                            "  data_dir: data/mine\n")
    assert cfg.load_config(path)["data"]["data_dir"] == "data/mine"
    overrides = cfg.corpus_overrides("other.tsv")
    assert cfg.load_config(path, overrides=overrides)["data"]["data_dir"] == "data/mine"
    assert cfg.load_config(path, hparams="data.data_dir=data/x",
                           overrides=overrides)["data"]["data_dir"] == "data/x"


def test_a_copy_of_the_demo_config_turned_to_files_leaves_data_default_alone(tmp_path):
    with open("configs/default.yaml", encoding="utf-8") as f:
        demo = yaml.safe_load(f)
    demo["data"].update(corpus="files", train_data="my.tsv")
    path = _write(tmp_path, yaml.safe_dump(demo))
    config = cfg.load_config(path)
    assert config["data"]["corpus"] == "files"
    assert config["data"]["data_dir"].startswith("data/corpus-")
    # Unless the command line asks for it by name.
    assert cfg.load_config(path, hparams="data.data_dir=data/default")[
        "data"]["data_dir"] == "data/default"


def test_a_saved_files_config_reloads_with_its_data_dir(tmp_path):
    config = cfg.load_config("configs/tiny.yaml", overrides=cfg.corpus_overrides("a.tsv"))
    assert config["data"]["data_dir"].startswith("data/corpus-")
    path = str(tmp_path / "config.yaml")
    cfg.save_config(dict(config, data=dict(config["data"], data_dir="data/elsewhere")), path)
    assert cfg.load_config(path)["data"]["data_dir"] == "data/elsewhere"


def test_a_saved_files_config_in_data_default_reloads_as_saved(tmp_path):
    # A files corpus prepared into data/default on request (--hparams), as
    # train.py records it in MODEL_DIR/config.yaml.
    hparams = "data.data_dir=data/default"
    config = cfg.load_config("configs/default.yaml", hparams=hparams,
                             overrides=cfg.corpus_overrides("mine.tsv"))
    assert config["data"]["data_dir"] == "data/default"
    path = str(tmp_path / "config.yaml")
    cfg.save_config(config, path)
    with open(path, encoding="utf-8") as f:
        assert f.readline() == cfg.RESOLVED_HEADER
    assert cfg.load_config(path) == config
    # Overrides that leave data_dir alone (evaluate, translate) keep it too.
    assert cfg.load_config(path, hparams="decode.beam_width=1")["data"]["data_dir"] == "data/default"
    # Without the header the same YAML is a config of the user's own, and
    # its data/default holds the demo's embedded corpus, not these files.
    with open(path, encoding="utf-8") as f:
        text = f.read()
    unmarked = _write(tmp_path, text[len(cfg.RESOLVED_HEADER):])
    assert cfg.load_config(unmarked)["data"]["data_dir"].startswith("data/corpus-")


def test_a_saved_embedded_config_turned_to_files_leaves_data_default_alone(tmp_path):
    path = str(tmp_path / "config.yaml")
    cfg.save_config(cfg.load_config("configs/default.yaml"), path)
    assert cfg.load_config(path)["data"]["data_dir"] == "data/default"
    for config in (cfg.load_config(path, overrides=cfg.corpus_overrides("mine.tsv")),
                   cfg.load_config(path, hparams="data.corpus=files,data.train_data=mine.tsv")):
        assert config["data"]["data_dir"].startswith("data/corpus-")


def test_embedded_corpus_keeps_the_default_data_dir():
    assert cfg.load_config()["data"]["data_dir"] == "data/default"
    assert cfg.load_config("configs/default.yaml")["data"]["data_dir"] == "data/default"
    assert cfg.load_config("configs/tiny.yaml")["data"]["data_dir"] == "data/tiny"


def test_hparams_data_dir_wins_for_a_user_corpus():
    hparams = "data.data_dir=data/mine"
    config = cfg.load_config(hparams=hparams, overrides=cfg.corpus_overrides("a.en,a.pt"))
    assert config["data"]["data_dir"] == "data/mine"


def test_no_user_corpus_no_overrides():
    assert cfg.corpus_overrides("") == {}
    with pytest.raises(cfg.ConfigError, match="need --train_data"):
        cfg.corpus_overrides("", dev_data="dev.tsv")


def _schema_keys():
    for section, value in cfg.DEFAULTS.items():
        if isinstance(value, dict):
            for key in value:
                yield section, key
        else:
            yield None, section


def test_every_key_has_an_inline_comment_in_the_schema_and_the_demo_config():
    with open(cfg.__file__, encoding="utf-8") as f:
        schema = f.read()
    with open("configs/default.yaml", encoding="utf-8") as f:
        demo = f.read()
    for section, key in _schema_keys():
        if section == "decode" and key in DecodingOptions.model_fields:  # its hint says it
            assert len(DecodingOptions.model_fields[key].description) > 10, key
        else:
            assert re.search(r"^    %s: [^\n]*  # \S" % key, schema, re.M), key
        yaml_key = r"^  %s: " % key if section else r"^%s: " % key
        assert re.search(yaml_key + r"[^#\n]*# \S", demo, re.M), "%s.%s" % (section, key)


def test_the_demo_config_states_each_keys_bounds_and_choices_as_the_schema_declares():
    with open("configs/default.yaml", encoding="utf-8") as f:
        demo = f.read()
    checked = 0
    for section, key in _schema_keys():
        if section is None or section == "decode" and key in DecodingOptions.model_fields:
            continue  # an option's hint is its own
        field = cfg.Config.model_fields[section].annotation.model_fields[key]
        # The key's comment, with its continuation lines ("  #   ...").
        comment = re.search(r"^  %s: [^#\n]*(#[^\n]*(\n +#[^\n]*)*)" % key, demo, re.M).group(1)
        expected = get_args(field.annotation) if get_origin(field.annotation) is Literal else ()
        if any(hasattr(rule, sign) for rule in field.metadata for sign in ("ge", "gt", "le", "lt")):
            expected += (cfg._bounds(field),)
        for text in expected:
            assert text in comment, "%s.%s: %r not in %r" % (section, key, text, comment)
            checked += 1
    assert checked > 40
