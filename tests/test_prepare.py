"""prepare: outputs, manifest, skip when up to date, rebuild on change, user corpora."""

import copy
import os

import pytest
import tensorflow.compat.v1 as tf

from data_pipeline import embedded, prepare as prepare_module, tokenizer as tokenizer_module
from data_pipeline.corpus import CorpusError
from data_pipeline.prepare import prepare
from data_pipeline.tokenizer import Tokenizer

TINY_CONFIG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "configs", "tiny.yaml")


def small_config(tiny_config, data_dir, **data):
    """The tiny config at an even smaller size, in its own directory."""
    config = copy.deepcopy(tiny_config)
    config["data"].update(data_dir=str(data_dir), embedded_train_size=300, embedded_dev_size=20,
                          embedded_test_size=20, vocab_size=120, **data)
    return config


def mtimes(directory):
    return {name: os.stat(os.path.join(directory, name)).st_mtime_ns for name in os.listdir(directory)}


def lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def train_sources(prepared):
    """The source sentences of the train shards, decoded."""
    tokenizer = Tokenizer.load(prepared.data_dir)
    return [tokenizer.decode_source(tf.train.Example.FromString(record)
                                    .features.feature["source_ids"].int64_list.value)
            for path in prepared.train_files for record in tf.io.tf_record_iterator(path)]


def write_tsv(path, pairs, extra_lines=()):
    with open(path, "w", encoding="utf-8") as f:
        f.writelines("%s\t%s\tCC-BY attribution\n" % pair for pair in pairs)
        f.writelines(line + "\n" for line in extra_lines)
    return str(path)


def test_tiny_data_is_complete(tiny_config, tiny_data):
    manifest = tiny_data.manifest
    assert [os.path.basename(path) for path in tiny_data.tokenizer_files] == ["spm.model", "tokenizer.json"]
    assert len(tiny_data.train_files) == tiny_config["data"]["num_shards"]
    assert all(os.path.isfile(path) for path in tiny_data.train_files + tiny_data.dev_files
               + tiny_data.test_files)
    tokenizer = Tokenizer.load(tiny_data.data_dir)
    assert tiny_data.source_vocab_size == tokenizer.source_vocab_size == manifest["source_vocab_size"]
    assert manifest["splits"]["train"]["kept"] == 2000
    for split in ("dev", "test"):
        source_path, target_path = tiny_data.raw_text[split]
        assert len(lines(source_path)) == len(lines(target_path)) == manifest["splits"][split]["kept"] == 100
    held_out = set(lines(tiny_data.raw_text["dev"][0])) | set(lines(tiny_data.raw_text["test"][0]))
    assert len(held_out) == 200
    assert not held_out & set(train_sources(tiny_data))


def test_second_prepare_does_nothing(tiny_config, tiny_data, capsys):
    before = mtimes(tiny_data.data_dir)
    again = prepare(tiny_config, verbose=True)
    assert "is up to date" in capsys.readouterr().out
    assert mtimes(tiny_data.data_dir) == before
    assert again == tiny_data


def test_a_new_data_format_version_rebuilds(tiny_config, tmp_path, monkeypatch):
    config = small_config(tiny_config, tmp_path)
    first = prepare(config, verbose=False)
    monkeypatch.setattr(prepare_module, "FORMAT_VERSION", prepare_module.FORMAT_VERSION + 1)
    second = prepare(config, verbose=False)
    assert second.manifest["fingerprint"] != first.manifest["fingerprint"]


def test_changed_config_rebuilds_and_removes_stale_files(tiny_config, tmp_path):
    config = small_config(tiny_config, tmp_path)
    first = prepare(config, verbose=False)
    assert os.path.isfile(tmp_path / "spm.model")
    config["data"].update(joint_vocab=False, num_shards=1)
    config["model"]["share_embeddings"] = False
    second = prepare(config, verbose=False)
    assert second.manifest["fingerprint"] != first.manifest["fingerprint"]
    assert sorted(os.listdir(tmp_path)) == [
        "dev-00000-of-00001.tfrecord", "dev.src", "dev.tgt", "manifest.json", "source.model",
        "target.model", "test-00000-of-00001.tfrecord", "test.src", "test.tgt", "tokenizer.json",
        "train-00000-of-00001.tfrecord"]
    assert [os.path.basename(path) for path in Tokenizer.load(str(tmp_path)).model_files] == [
        "source.model", "target.model", "tokenizer.json"]


def test_interrupted_rebuild_is_not_up_to_date(tiny_config, tmp_path):
    config = small_config(tiny_config, tmp_path)
    prepare(config, verbose=False)
    os.remove(tmp_path / "dev.tgt")
    rebuilt = prepare(config, verbose=False)
    assert len(lines(rebuilt.raw_text["dev"][1])) == 20


def test_a_failed_rebuild_keeps_the_previous_data(tiny_config, tmp_path):
    config = small_config(tiny_config, tmp_path)
    prepare(config, verbose=False)
    before = mtimes(tmp_path)
    config["data"]["max_source_length"] = 1
    with pytest.raises(CorpusError, match=r"the \w+ split is empty after skipping too_long \d+ "
                                          r"\(limits: data.max_source_length 1"):
        prepare(config, verbose=False)
    assert mtimes(tmp_path) == before


def test_long_pairs_are_skipped_and_counted(tiny_config, tmp_path, capsys):
    config = small_config(tiny_config, tmp_path, max_target_length=8)
    prepared = prepare(config, verbose=True)
    for split, size in (("train", 300), ("dev", 20), ("test", 20)):
        record = prepared.manifest["splits"][split]
        assert record["kept"] + record["skipped"].get("too_long", 0) == size
    too_long = prepared.manifest["splits"]["train"]["skipped"]["too_long"]
    assert too_long > 0
    assert "train kept %d, skipped %d (too_long %d)" % (300 - too_long, too_long, too_long) \
        in capsys.readouterr().out


def test_user_tsv_with_bad_lines_and_carved_dev_test(tiny_config, tmp_path, capsys):
    pairs = [(e.source, e.target) for e in embedded.generate(400, 0, 0, 9, "pt_BR").train]
    tsv = write_tsv(tmp_path / "corpus.tsv", pairs + pairs[:5], ["no tab", "\tempty source"])
    config = small_config(tiny_config, tmp_path / "data", corpus="files", train_data=tsv)
    prepared = prepare(config, verbose=True)
    out = capsys.readouterr().out
    assert "no dev or test data given: carved 8 dev and 8 test" in out
    splits = prepared.manifest["splits"]
    assert splits["dev"]["kept"] == splits["test"]["kept"] == 8
    skipped = splits["train"]["skipped"]
    assert skipped["no_tab"] == 1 and skipped["empty_side"] == 1
    assert "empty_side 1, no_tab 1" in out
    # 405 pairs read (5 twice): 16 carved; each other pair is kept, too long, or
    # dropped for repeating a carved source.
    assert splits["train"]["kept"] + skipped.get("too_long", 0) + skipped.get("source_in_dev_test", 0) \
        == 405 - 16
    held_out = set(lines(prepared.raw_text["dev"][0])) | set(lines(prepared.raw_text["test"][0]))
    assert len(held_out) == 16
    assert not held_out & set(train_sources(prepared))


def test_a_side_the_tokenizer_sees_nothing_of_is_an_empty_side(tiny_config, tmp_path):
    corpus = embedded.generate(300, 20, 20, 9, "pt_BR")
    specs = {split + "_data": write_tsv(tmp_path / (split + ".tsv"),
                                        [(e.source, e.target) for e in getattr(corpus, split)])
             for split in ("dev", "test")}
    train = write_tsv(tmp_path / "train.tsv", [(e.source, e.target) for e in corpus.train],
                      ["\u200b\tum espaço de largura zero", "two\t\ufeff"])
    config = small_config(tiny_config, tmp_path / "data", corpus="files", train_data=train, **specs)
    record = prepare(config, verbose=False).manifest["splits"]["train"]
    assert record["skipped"]["empty_side"] == 2
    assert record["kept"] + record["skipped"].get("too_long", 0) == 300


def test_supplied_dev_sources_also_in_train_are_counted_in_a_warning(tiny_config, tmp_path,
                                                                    capsys):
    corpus = embedded.generate(300, 20, 20, 9, "pt_BR")
    train = [(e.source, e.target) for e in corpus.train]
    # Half of dev repeats train sources (with another target: still the same source).
    dev = [(source, "outra") for source, _ in train[:10]] + [(e.source, e.target)
                                                             for e in corpus.dev[:10]]
    specs = {"train_data": write_tsv(tmp_path / "train.tsv", train),
             "dev_data": write_tsv(tmp_path / "dev.tsv", dev),
             "test_data": write_tsv(tmp_path / "test.tsv",
                                    [(e.source, e.target) for e in corpus.test])}
    config = small_config(tiny_config, tmp_path / "data", corpus="files", **specs)
    prepared = prepare(config, verbose=True)
    out = capsys.readouterr().out
    assert ("warning: 10 of the 20 dev pairs read (50.0%) have a source that train also has: "
            "dev scores overstate") in out
    assert "test pairs" not in out
    assert prepared.manifest["splits"]["dev"]["kept"] == 20


def test_touched_input_file_rebuilds(tiny_config, tmp_path):
    pairs = [(e.source, e.target) for e in embedded.generate(300, 0, 0, 9, "pt_BR").train]
    tsv = write_tsv(tmp_path / "corpus.tsv", pairs)
    config = small_config(tiny_config, tmp_path / "data", corpus="files", train_data=tsv)
    first = prepare(config, verbose=False)
    write_tsv(tmp_path / "corpus.tsv", pairs[:250])
    second = prepare(config, verbose=False)
    assert second.manifest["fingerprint"] != first.manifest["fingerprint"]
    assert second.manifest["splits"]["train"]["kept"] < first.manifest["splits"]["train"]["kept"]


def test_command_line_with_aligned_files(tmp_path, capsys):
    pairs = [(e.source, e.target) for e in embedded.generate(300, 40, 40, 9, "pt_BR").train]
    files = {}
    for name, side in (("train.en", 0), ("train.pt", 1)):
        files[name] = tmp_path / name
        files[name].write_text("".join(pair[side] + "\n" for pair in pairs), encoding="utf-8")
    prepare_module.main(["--config", TINY_CONFIG,
                         "--hparams", "data.data_dir=%s,vocab_size=120" % (tmp_path / "data"),
                         "--train_data", "%s,%s" % (files["train.en"], files["train.pt"])])
    out = capsys.readouterr().out
    assert "train: read %s,%s" % (files["train.en"], files["train.pt"]) in out
    assert os.path.isfile(tmp_path / "data" / "manifest.json")


def test_command_line_error_names_the_problem(tmp_path):
    missing = str(tmp_path / "missing.tsv")
    with pytest.raises(SystemExit, match="corpus file not found: .*missing.tsv"):
        prepare_module.main(["--config", TINY_CONFIG, "--train_data", missing,
                             "--hparams", "data.data_dir=%s" % (tmp_path / "data")])


def test_train_pairs_are_shuffled_into_the_shards(tiny_config, tmp_path):
    # A corpus sorted by length, as Tatoeba-style exports are.
    pairs = sorted(((" ".join(["word%d" % (index % 7)] * (1 + index % 9)) + " n%d" % index,
                     "palavra %d" % index) for index in range(300)), key=lambda pair: len(pair[0]))
    config = small_config(tiny_config, tmp_path / "data", corpus="files",
                          train_data=write_tsv(tmp_path / "sorted.tsv", pairs))
    prepared = prepare(config, verbose=False)
    sources = train_sources(prepared)
    kept_in_file_order = [source for source, _ in pairs if source in set(sources)]
    assert sorted(sources) == sorted(kept_in_file_order), "every kept pair, once"
    assert sources != kept_in_file_order, "not in the file's order"
    again = copy.deepcopy(config)
    again["data"]["data_dir"] = str(tmp_path / "again")
    assert train_sources(prepare(again, verbose=False)) == sources, "in a fixed order"


def test_an_empty_split_is_named_before_sentencepiece_trains(tiny_config, tmp_path, monkeypatch):
    def no_training(*args, **kwargs):
        raise AssertionError("SentencePiece must not train for a split that cannot be written")
    monkeypatch.setattr(prepare_module, "train_tokenizer", no_training)
    pairs = [("sentence %d" % index, "frase %d" % index) for index in range(50)]
    dev = tmp_path / "dev.tsv"
    dev.write_text("only a source\n\t\n   \n", encoding="utf-8")
    config = small_config(tiny_config, tmp_path / "data", corpus="files",
                          train_data=write_tsv(tmp_path / "train.tsv", pairs), dev_data=str(dev))
    with pytest.raises(CorpusError, match=r"dev.tsv has no usable sentence pair "
                                          r"\(skipped: blank_line 2, no_tab 1\)"):
        prepare(config, verbose=False)


def test_the_familiarity_threshold_is_calibrated_on_each_kind(tiny_config, tmp_path, monkeypatch):
    # Embedded: the dev sources of each family, and the names family (train only) from train;
    # user files: the dev sources.
    calls = []
    real = prepare_module.train_tokenizer
    monkeypatch.setattr(prepare_module, "train_tokenizer",
                        lambda *args: calls.append(args[-1]) or real(*args))
    config = small_config(tiny_config, tmp_path / "embedded")
    corpus = embedded.generate(300, 20, 20, config["data"]["embedded_seed"], "pt_BR")
    prepare(config, verbose=False)
    kinds = {frozenset(group) for group in calls[-1]}
    assert {frozenset(example.source for example in corpus.dev if example.family == family)
            for family in set(example.family for example in corpus.dev)} < kinds
    assert frozenset(example.source for example in corpus.train if example.family == "names") in kinds
    pairs = [("sentence %d" % index, "frase %d" % index) for index in range(200)]
    files = prepare(small_config(tiny_config, tmp_path / "files", corpus="files",
                                 train_data=write_tsv(tmp_path / "train.tsv", pairs)), verbose=False)
    assert calls[-1] == [lines(files.raw_text["dev"][0])]


def test_data_prepared_again_keeps_a_model_directory_trainable(tiny_config, tmp_path, monkeypatch):
    # A new FORMAT_VERSION that only changes the familiarity model (5: its calibration):
    # training resumes in the old model directory and copies the new tokenizer.json into it.
    import train
    config = small_config(tiny_config, tmp_path / "data")
    model_dir = str(tmp_path / "model")
    train.write_model_dir(config, model_dir, Tokenizer.load(prepare(config, verbose=False).data_dir))
    monkeypatch.setattr(prepare_module, "FORMAT_VERSION", prepare_module.FORMAT_VERSION + 1)
    monkeypatch.setattr(tokenizer_module, "FLAGGED_SHARE", 0.5)
    tokenizer = Tokenizer.load(prepare(config, verbose=False).data_dir)
    assert Tokenizer.load(model_dir).options["familiarity"] != tokenizer.options["familiarity"]
    train.check_tokenizer(config, model_dir, tokenizer)
    train.write_model_dir(config, model_dir, tokenizer)
    assert Tokenizer.load(model_dir).options == tokenizer.options
    lowercase = copy.deepcopy(config)
    lowercase["data"].update(lowercase_source=not config["data"]["lowercase_source"])
    with pytest.raises(ValueError, match="differ from those the data"):
        train.check_tokenizer(config, model_dir, Tokenizer.load(prepare(lowercase, verbose=False).data_dir))
