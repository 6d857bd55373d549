"""The config schema: defaults, YAML merge, --hparams, type checks, shape keys."""

import pytest

from seq2seq import config as cfg


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
    ("train.label_smoothing=-0.1", r"train\.label_smoothing must be >= 0"),
])
def test_bad_hparams(hparams, message):
    with pytest.raises(cfg.ConfigError, match=message):
        cfg.load_config(hparams=hparams)


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


def test_a_user_corpus_gets_its_own_data_dir():
    overrides = cfg.corpus_overrides("", "mine.tsv")
    config = cfg.load_config("configs/default.yaml", overrides=overrides)
    assert config["data"]["corpus"] == "files"
    assert config["data"]["train_data"] == "mine.tsv"
    assert config["data"]["data_dir"].startswith("data/corpus-")
    assert config["data"]["data_dir"] != cfg.corpus_overrides("", "other.tsv")["data"]["data_dir"]


def test_hparams_data_dir_wins_for_a_user_corpus():
    hparams = "data.data_dir=data/mine"
    config = cfg.load_config(hparams=hparams, overrides=cfg.corpus_overrides(hparams, "a.en,a.pt"))
    assert config["data"]["data_dir"] == "data/mine"


def test_no_user_corpus_no_overrides():
    assert cfg.corpus_overrides("", "") == {}
    with pytest.raises(cfg.ConfigError, match="need --train_data"):
        cfg.corpus_overrides("", "", dev_data="dev.tsv")
