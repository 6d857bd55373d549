"""Training end to end on the tiny config, and the pieces train.py is built from."""

import copy
import glob
import json
import logging
import math
import os
import re
import shutil
import threading
import time
import types

import numpy as np
import pytest
import sacrebleu
import tensorflow.compat.v1 as tf

import train
from data_pipeline.input import make_input_fn
from data_pipeline.tokenizer import Tokenizer
from decode.translator import Translator
from seq2seq.config import ConfigError, load_config
from training import best_checkpoint, evaluation, model_fn
from training.average import average_checkpoints
from training.best_checkpoint import read_best
from training.model_fn import NonFiniteLossError
from training import status as training_status
from training.status import read_examples, read_training_status

EVAL = tf.estimator.ModeKeys.EVAL


@pytest.fixture(scope="module")
def trained(tiny_config, tiny_data, tmp_path_factory):
    """A tiny model after train_and_evaluate to step 20: (model_dir, returned metrics)."""
    model_dir = str(tmp_path_factory.mktemp("train_and_evaluate"))
    return model_dir, train.run(tiny_config, model_dir, max_steps=20)


def _latest_step(model_dir):
    return tf.train.load_checkpoint(model_dir).get_tensor(tf.GraphKeys.GLOBAL_STEP)


def test_train_and_evaluate_reports_finite_metrics(trained):
    _, result = trained
    assert result["global_step"] == 20
    for name in ("loss", "perplexity", "token_accuracy", "bleu"):
        assert math.isfinite(result[name]), name
    assert result["perplexity"] >= 1.0
    assert 0.0 <= result["token_accuracy"] <= 1.0
    assert 0.0 <= result["bleu"] <= 100.0


def _summaries(directory):
    """{tag: [summary value]} over the event files directly in `directory`."""
    found = {}
    for path in sorted(glob.glob(os.path.join(directory, "events.out.tfevents.*"))):
        for event in tf.train.summary_iterator(path):
            for value in event.summary.value:
                found.setdefault(value.tag, []).append(value)
    return found


def test_tensorboard_holds_histograms_and_attention_heatmaps(trained, tiny_config):
    """Training writes weight and gradient histograms every train.histogram_steps
    (10 in tiny.yaml: steps 10 and 20 of 20); evaluation writes one PNG heatmap
    per train.eval_attention_images first dev sentence (3, the default)."""
    model_dir, _ = trained
    training = _summaries(model_dir)
    variables = [name for name in tf.train.list_variables(model_dir)
                 if name[0].startswith("seq2seq/") and "Adam" not in name[0]]
    assert variables
    for name, _ in variables:
        for kind in ("weights", "gradients"):
            values = training["histograms/%s/%s" % (kind, name)]
            assert len(values) == 2, (kind, name)
            assert all(value.histo.num > 0 for value in values)
    assert "loss" in training and "tokens_per_sec" in training

    images = {tag: values for tag, values in _summaries(os.path.join(model_dir, "eval")).items()
              if tag.startswith("attention/")}
    assert sorted(images) == ["attention/0", "attention/1", "attention/2"]
    for values in images.values():
        image = values[-1].image
        assert image.encoded_image_string.startswith(b"\x89PNG")
        assert (image.width, image.height) == (evaluation.IMAGE_SIZE, evaluation.IMAGE_SIZE)


def test_model_dir_is_self_contained(trained, tiny_config):
    model_dir, result = trained
    written = load_config(os.path.join(model_dir, "config.yaml"))
    assert written["model"] == tiny_config["model"]
    assert written["train"]["max_steps"] == 20
    assert Tokenizer.load(model_dir).target_vocab_size > 0
    assert os.path.isdir(result["export_path"])
    assert os.path.dirname(result["export_path"]) == os.path.join(model_dir, "export")


def test_a_diverging_evaluation_is_written_as_strict_json(tmp_path, monkeypatch):
    """A dev perplexity that overflows is null in the status file: JSON has no Infinity, and
    the page's parser (and GET /v1/training's clients) would refuse the whole file."""
    monkeypatch.setattr(training_status, "read_examples", lambda serialized: [])
    eval_result = {"global_step": 5, "loss": 3e38, "bleu": 0.0, "perplexity": np.float32("inf"),
                   "examples": b""}
    training_status.StatusExporter().export(types.SimpleNamespace(model_dir=str(tmp_path)), None,
                                            None, eval_result, False)
    with open(str(tmp_path / "training_status.json"), encoding="utf-8") as f:
        status = json.loads(f.read(), parse_constant=lambda name: pytest.fail(name))
    assert status["evaluations"] == [{"step": 5, "loss": 3e38, "dev_bleu": 0.0,
                                      "dev_perplexity": None, "examples": []}]


def test_best_checkpoint_is_a_model_dir(trained):
    model_dir, _ = trained
    best_dir = os.path.join(model_dir, "best")
    record = read_best(best_dir)
    assert record["metric"] == "bleu"
    assert record["global_step"] in (10, 20)
    checkpoint = tf.train.latest_checkpoint(best_dir)
    assert checkpoint.endswith("model.ckpt-%d" % record["global_step"])
    assert tf.train.load_checkpoint(best_dir).get_tensor("global_step") == record["global_step"]
    assert os.path.exists(os.path.join(best_dir, "config.yaml"))
    Tokenizer.load(best_dir)


def test_training_status_tells_the_run_and_each_evaluation(trained, tiny_config, tiny_data):
    model_dir, result = trained
    status = read_training_status(model_dir)
    assert (status["running"], status["pid"], status["stopped"]) == (False, os.getpid(),
                                                                      "max_steps")
    assert (status["step"], status["max_steps"], status["eta_seconds"]) == (20, 20, None)
    assert status["steps_per_second"] > 0
    assert status["started_at"] <= status["updated_at"] <= time.time()
    evaluations = status["evaluations"]
    assert [evaluation["step"] for evaluation in evaluations] == [10, 20]
    last = evaluations[-1]
    for key, metric in (("loss", "loss"), ("dev_bleu", "bleu"), ("dev_perplexity", "perplexity")):
        assert last[key] == pytest.approx(float(result[metric])), key
    assert last["dev_perplexity"] >= 1.0
    # The same dev sources every time: the shortest and the longest of those BLEU decodes...
    with open(tiny_data.raw_text["dev"][0], encoding="utf-8") as f:
        sources = [line.rstrip("\n") for line in f][:tiny_config["train"]["eval_bleu_sentences"]]
    for record in evaluations:
        examples = [example["source"] for example in record["examples"]]
        assert len(examples) == evaluation.NUM_EXAMPLES
        assert examples[0] == min(sources, key=len) and examples[-1] == max(sources, key=len)
        assert all(source in sources for source in examples)
    # ... translated by that evaluation's model as the Translator translates them.
    translator = Translator(model_dir, checkpoint=os.path.join(model_dir, "model.ckpt-20"))
    try:
        expected = [translation.text for translation in translator.translate(examples)]
    finally:
        translator.close()
    assert [example["translation"] for example in last["examples"]] == expected


def test_best_checkpoint_copied_under_a_relative_path_moves_with_it(trained, tmp_path, monkeypatch):
    # train.py is usually given a relative model dir (runs/default).
    model_dir, _ = trained
    checkpoint = tf.train.latest_checkpoint(model_dir)
    monkeypatch.chdir(tmp_path)
    best_checkpoint._copy_checkpoint(checkpoint, [], {"metric": "bleu"}, os.path.join("runs", "best"))
    shutil.move(os.path.join("runs", "best"), "moved")
    assert tf.train.latest_checkpoint("moved") == os.path.join("moved", os.path.basename(checkpoint))


def test_rerun_resumes_from_the_last_checkpoint(trained, tiny_config, caplog, tmp_path):
    model_dir, _ = trained
    resumed = str(tmp_path / "resumed")
    shutil.copytree(model_dir, resumed)
    caplog.set_level(logging.INFO, logger="seq2seq")
    result = train.run(tiny_config, resumed, schedule="train", max_steps=30)
    assert result["global_step"] == 30
    logged_steps = [int(step) for step in re.findall(r"step (\d+)/30", caplog.text)]
    # A progress line every 10 steps: a run restarted from 0 would log 10 and 20.
    assert logged_steps == [30]
    status = read_training_status(resumed)
    assert [evaluation["step"] for evaluation in status["evaluations"]] == [10, 20], "kept"
    assert (status["step"], status["max_steps"], status["stopped"]) == (30, 30, "max_steps")


def test_evaluate_bleu_equals_sacrebleu_on_predictions(tiny_config, tiny_data, tiny_model_dir):
    """The streaming BLEU metric against sacrebleu on estimator.predict's translations."""
    result = train.run(tiny_config, tiny_model_dir, schedule="evaluate")
    assert result["global_step"] == 400
    estimator = train.build_estimator(tiny_config, tiny_model_dir, num_towers=1)
    tokenizer = Tokenizer.load(tiny_model_dir)
    count = tiny_config["train"]["eval_bleu_sentences"]
    hypotheses = []
    for prediction in estimator.predict(make_input_fn(tiny_config, "dev", EVAL)):
        hypotheses.append(tokenizer.decode_target(prediction["ids"][0]))
        if len(hypotheses) == count:
            break
    with open(tiny_data.raw_text["dev"][1], encoding="utf-8") as f:
        references = [line.rstrip("\n") for line in f][:count]
    expected = sacrebleu.corpus_bleu(hypotheses, [references]).score
    assert expected > 0.0, "the tiny model should translate something after 400 steps"
    assert result["bleu"] == pytest.approx(expected, abs=1e-3)


def test_bleu_references_are_the_corpus_text_not_a_sentencepiece_round_trip(tiny_data):
    """A character the vocabulary lacks comes back from the ids as ⁇; the reference keeps it."""
    from training.evaluation import bleu_references
    tokenizer = Tokenizer.load(tiny_data.data_dir)
    snowman, plain = "dois ☃ três", "dois três"
    ids = [tokenizer.encode_target(snowman), tokenizer.encode_target(plain)]
    assert tokenizer.decode_target(ids[0]) != snowman, "☃ must be outside the vocabulary"
    width = max(len(row) for row in ids)
    with tf.Graph().as_default():
        labels = {"target_output": tf.constant([row + [0] * (width - len(row)) for row in ids]),
                  "target_length": tf.constant([len(row) for row in ids])}
        round_trip = bleu_references(labels, tokenizer)
        labels["target_text"] = tf.constant([snowman, ""])  # "": an example without its text
        with_text = bleu_references(labels, tokenizer)
        with tf.Session() as session:
            round_trip, with_text = session.run([round_trip, with_text])
    assert [text.decode("utf-8") for text in with_text] == [snowman, plain]
    assert round_trip[0].decode("utf-8") == tokenizer.decode_target(ids[0])


@pytest.mark.parametrize("schedule", ["train", "export"])
def test_shape_change_is_refused_naming_the_keys_before_any_work(schedule, tiny_model_dir, tmp_path,
                                                                  caplog):
    model_dir = tmp_path / "model"
    shutil.copytree(tiny_model_dir, str(model_dir))
    before = sorted(os.listdir(str(model_dir)))
    data_dir = tmp_path / "data"
    args = ["--config", os.path.join(os.path.dirname(train.DEFAULT_CONFIG), "tiny.yaml"),
            "--model_dir", str(model_dir), "--schedule", schedule, "--max_steps", "100000",
            "--hparams", "data.data_dir=%s,model.num_units=64,model.attention=luong" % data_dir]
    assert train.main(args) == 1
    assert "model.num_units: 32 -> 64" in caplog.text
    assert "model.attention: 'bahdanau' -> 'luong'" in caplog.text
    assert "embedding_size" not in caplog.text and "Traceback" not in caplog.text
    assert not data_dir.exists()  # refused before the data was prepared
    assert sorted(os.listdir(str(model_dir))) == before


def test_a_malformed_tf_config_is_named(monkeypatch, caplog):
    monkeypatch.setenv("TF_CONFIG", '{"cluster":')
    assert train.main(["--schedule", "train"]) == 1
    assert "error: TF_CONFIG: " in caplog.text and "Traceback" not in caplog.text


def test_an_average_is_not_trained_on(tiny_model_dir, tmp_path, caplog):
    """training.average's directory holds no optimizer state: train.py refuses to resume it,
    writing nothing, and still evaluates it."""
    out = str(tmp_path / "averaged")
    average_checkpoints(tiny_model_dir, 1, out)
    before = sorted(os.listdir(out))
    assert train.main(["--model_dir", out, "--schedule", "train", "--max_steps", "100000"]) == 1
    assert "is an average of checkpoints (training.average)" in caplog.text
    assert sorted(os.listdir(out)) == before


def test_other_changes_are_accepted(tiny_config, tiny_model_dir):
    changed = load_config(os.path.join(tiny_model_dir, "config.yaml"),
                          hparams="train.learning_rate=0.5,model.dropout=0.3")
    train.check_model_shape(changed, tiny_model_dir, "train")
    changed["model"]["embedding_size"] = 8
    with pytest.raises(ConfigError, match="model.embedding_size: 16 -> 8"):
        train.check_model_shape(changed, tiny_model_dir, "train")


def test_a_worker_trains_only_once_the_chief_has_written_the_model_dir(
        tiny_config, tiny_data, tmp_path, monkeypatch):
    cluster = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]}
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": cluster, "task": {"type": "worker", "index": 0}}))
    # What model_fn does first: read the vocabulary from the model directory.
    monkeypatch.setitem(train._SCHEDULES, "train_and_evaluate",
                        lambda estimator, config, model_dir: Tokenizer.load(model_dir))
    model_dir = str(tmp_path / "model")
    # The chief, half a second behind the worker (which looks again every second).
    chief = threading.Timer(0.5, train.write_model_dir,
                            [tiny_config, model_dir, Tokenizer.load(tiny_data.data_dir)])
    chief.start()
    try:
        tokenizer = train.run(tiny_config, model_dir)
    finally:
        chief.join()
    assert tokenizer.target_vocab_size == Tokenizer.load(tiny_data.data_dir).target_vocab_size


@pytest.mark.parametrize("num_towers", [1, 2])
def test_a_cluster_task_keeps_its_device_filters_with_towers(tiny_config, tmp_path, monkeypatch,
                                                             num_towers):
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2", "127.0.0.1:3"],
                     "ps": ["127.0.0.1:4"]},
         "task": {"type": "worker", "index": 1}}))
    session_config = train.build_estimator(tiny_config, str(tmp_path), num_towers).config.session_config
    assert list(session_config.device_filters) == ["/job:ps", "/job:worker/task:1"]
    if num_towers > 1 and not tf.config.list_physical_devices("GPU"):
        assert session_config.device_count["CPU"] == num_towers


def test_one_machine_has_no_device_filters(tiny_config, tmp_path, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    for num_towers in (1, 2):
        session_config = train.build_estimator(
            tiny_config, str(tmp_path), num_towers).config.session_config
        assert not session_config.device_filters


@pytest.mark.parametrize("schedule", ["train", "evaluate", "export"])
def test_a_cluster_runs_train_and_evaluate_only(tiny_config, tmp_path, monkeypatch, schedule):
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]},
         "task": {"type": "chief", "index": 0}}))
    with pytest.raises(ConfigError, match="train_and_evaluate"):
        train.run(tiny_config, str(tmp_path), schedule=schedule)
    assert not os.listdir(str(tmp_path)), "refused before anything was written"


def test_bad_input_is_one_error_line_not_a_traceback(tmp_path, caplog):
    missing = str(tmp_path / "missing.tsv")
    assert train.main(["--train_data", missing, "--model_dir", str(tmp_path / "model")]) == 1
    assert "error: " in caplog.text and missing in caplog.text
    assert "Traceback" not in caplog.text


@pytest.mark.parametrize("flag", ["--num_gpus", "--max_steps"])
def test_counts_below_one_are_refused_by_the_command_line(flag, capsys):
    with pytest.raises(SystemExit) as exit_info:
        train.parse_args([flag, "0"])
    assert exit_info.value.code == 2
    assert "expected an integer >= 1, got 0" in capsys.readouterr().err


def test_evaluate_and_export_use_the_trained_models_config(tiny_model_dir, tmp_path):
    trained = os.path.join(tiny_model_dir, "config.yaml")
    for schedule in ("evaluate", "export"):
        args = train.parse_args(["--model_dir", tiny_model_dir, "--schedule", schedule])
        assert train.config_path(args) == trained
    args = train.parse_args(["--model_dir", tiny_model_dir])
    assert train.config_path(args) == train.DEFAULT_CONFIG, "training takes the default"
    args = train.parse_args(["--model_dir", str(tmp_path), "--schedule", "export"])
    assert train.config_path(args) == train.DEFAULT_CONFIG, "no trained model: the default"


def test_export_needs_no_training_data(tiny_model_dir, tmp_path):
    model_dir = str(tmp_path / "model")
    shutil.copytree(tiny_model_dir, model_dir, ignore=shutil.ignore_patterns("export"))
    config = load_config(os.path.join(model_dir, "config.yaml"),
                         hparams="data.data_dir=%s" % (tmp_path / "no_such_data"))
    result = train.run(config, model_dir, schedule="export")
    assert os.path.isfile(os.path.join(result["export_path"], "saved_model.pb"))
    assert not (tmp_path / "no_such_data").exists()


def test_diverging_loss_stops_naming_the_step(tiny_config, tiny_data, tmp_path):
    # A first update of 1e38 per weight (Adam's step is about the learning
    # rate) makes the next step's products overflow float32.
    config = load_config(hparams="train.learning_rate=1e38,train.warmup_steps=1,"
                                 "train.decay=constant,train.clip_gradient_norm=0",
                         overrides={key: tiny_config[key] for key in ("data", "model")})
    # A checkpoint every step: the diverged step is also a checkpoint step.
    config["train"].update(batch_size=16, batch_tokens=0, save_checkpoints_steps=1)
    model_dir = str(tmp_path)
    with pytest.raises(NonFiniteLossError) as error:
        train.run(config, model_dir, schedule="train", max_steps=50)
    found = re.search(r"the training loss is (\S+) \(gradient norm (\S+)\) at step (\d+)",
                      str(error.value))
    loss, gradient_norm, step = float(found.group(1)), float(found.group(2)), int(found.group(3))
    assert not (math.isfinite(loss) and math.isfinite(gradient_norm))
    assert 1 < step <= 50
    assert _latest_step(model_dir) == step - 1
    # The diverged update was never applied: every saved weight is finite.
    reader = tf.train.load_checkpoint(model_dir)
    for name, dtype in reader.get_variable_to_dtype_map().items():
        if dtype.is_floating:
            assert np.all(np.isfinite(reader.get_tensor(name))), name


@pytest.mark.parametrize("decay", ["rsqrt", "constant", "cosine"])
def test_learning_rate_schedule(decay):
    peak, warmup, max_steps = 0.01, 10, 100
    steps = [0, 4, 9, 10, 30, 99]
    with tf.Graph().as_default(), tf.Session() as session:
        step = tf.placeholder(tf.int64, [])
        rate = model_fn.learning_rate_schedule(step, peak, warmup, decay, max_steps)
        rates = [session.run(rate, {step: s}) for s in steps]
    for s, value in zip(steps, rates):
        n = s + 1  # the rate of the (s + 1)-th update
        expected = peak * min(1.0, n / warmup)
        if decay == "rsqrt":
            expected *= math.sqrt(warmup / max(n, warmup))
        elif decay == "cosine":
            progress = min(max((n - warmup) / (max_steps - warmup), 0.0), 1.0)
            expected *= 0.5 * (1 + math.cos(math.pi * progress))
        assert value == pytest.approx(expected, rel=1e-5), (decay, s)


def test_clip_gradients_scales_to_the_norm_and_reports_it():
    with tf.Graph().as_default(), tf.Session() as session:
        gradients = [tf.constant([3.0, 0.0]), tf.constant([[4.0]])]
        clipped, norm = model_fn.clip_gradients(gradients, 1.0)
        unclipped, _ = model_fn.clip_gradients(gradients, 0.0)
        clipped, norm, unclipped = session.run([clipped, norm, unclipped])
    assert norm == pytest.approx(5.0)
    np.testing.assert_allclose(clipped[0], [0.6, 0.0], rtol=1e-6)
    np.testing.assert_allclose(clipped[1], [[0.8]], rtol=1e-6)
    np.testing.assert_allclose(unclipped[1], [[4.0]])


def test_clip_gradients_norms_a_sparse_gradient_as_its_dense_equivalent():
    # An embedding lookup's gradient: one slice per token, row 1 three times.
    with tf.Graph().as_default(), tf.Session() as session:
        table = tf.constant(np.zeros([4, 2], np.float32))
        weights = tf.constant([[1.0, 2.0], [1.0, 2.0], [1.0, 2.0], [3.0, 0.0]])
        loss = tf.reduce_sum(tf.nn.embedding_lookup(table, [1, 1, 1, 2]) * weights)
        gradient, = tf.gradients(loss, [table])
        assert isinstance(gradient, tf.IndexedSlices)
        (clipped,), norm = model_fn.clip_gradients([gradient], 1.0)
        dense_gradient = tf.convert_to_tensor(gradient)
        norm, clipped, dense_gradient = session.run(
            [norm, tf.convert_to_tensor(clipped), dense_gradient])
    # Rows 1: [3, 6] and 2: [3, 0]; the slices alone would give sqrt(24).
    assert norm == pytest.approx(np.sqrt(54.0))
    np.testing.assert_allclose(clipped, dense_gradient / np.sqrt(54.0), rtol=1e-6)


def test_progress_lines_give_each_interval_s_rates_and_eta(monkeypatch, caplog, tmp_path):
    clock = types.SimpleNamespace(now=1000.0)
    monkeypatch.setattr(model_fn, "time", types.SimpleNamespace(time=lambda: clock.now))
    caplog.set_level(logging.INFO, logger="seq2seq")
    with tf.Graph().as_default():
        # Resumed at step 95: the first line comes after 5 steps, at step 100.
        global_step = tf.Variable(95, dtype=tf.int64, trainable=False, name="global_step",
                                  collections=[tf.GraphKeys.GLOBAL_VARIABLES,
                                               tf.GraphKeys.GLOBAL_STEP])
        loss = tf.placeholder(tf.float32, [])
        step = tf.assign_add(global_step, 1)
        hook = model_fn.ProgressHook(loss, tf.constant(300), tf.constant(1e-3),
                                     max_steps=200, every_n_steps=10, chief_dir=str(tmp_path))
        with tf.train.SingularMonitoredSession(hooks=[hook]) as session:
            for seconds_per_step, losses in ((0.5, [1, 2, 3, 4, 5]), (0.2, [1] * 10)):
                for value in losses:
                    clock.now += seconds_per_step
                    session.run(step, {loss: value})
    lines = [record.getMessage() for record in caplog.records if record.name == "seq2seq"]
    assert lines == [
        # 5 steps of 300 tokens in 2.5 s; 100 steps left at 2 steps/s.
        "step 100/200  loss 3.000  lr 1.00e-03  2.00 steps/s  600 tokens/s  ETA 50s",
        # 10 steps in 2 s; 90 steps left at 5 steps/s.
        "step 110/200  loss 1.000  lr 1.00e-03  5.00 steps/s  1500 tokens/s  ETA 18s",
    ]
    status = read_training_status(str(tmp_path))
    assert (status["step"], status["max_steps"], status["running"]) == (110, 200, True)
    assert status["steps_per_second"] == pytest.approx(5.0)
    assert status["eta_seconds"] == pytest.approx(18.0)


def test_streaming_bleu_equals_corpus_bleu_and_stops_decoding():
    batches = [(["the cat sat on the mat", "one two three"],
                ["the cat sat on a mat", "one two three"], ["o gato", "um dois três"]),
               (["ninety nine", "a b c d"], ["ninety nine", "a b c e"], ["noventa e nove", "a"]),
               (["never scored", "x"], ["never", "y"], ["nunca", "x"])]
    decoded_batches = []
    with tf.Graph().as_default(), tf.Session() as session:
        hypotheses = tf.placeholder(tf.string, [None])
        references = tf.placeholder(tf.string, [None])
        sources = tf.placeholder(tf.string, [None])

        def translate():
            def record(texts):
                decoded_batches.append(len(texts))
                return texts
            return tf.py_func(record, [hypotheses], tf.string)

        metrics = evaluation.bleu_and_examples(translate, references, lambda: sources,
                                               max_sentences=3, num_examples=2)
        session.run(tf.local_variables_initializer())
        for hyp, ref, src in batches:
            session.run([update for _, update in metrics.values()],
                        {hypotheses: hyp, references: ref, sources: src})
        value, examples = session.run([metrics["bleu"][0], metrics["examples"][0]])
    flat_hyp = [h for hyp, _, _ in batches for h in hyp][:3]
    flat_ref = [r for _, ref, _ in batches for r in ref][:3]
    assert value == pytest.approx(sacrebleu.corpus_bleu(flat_hyp, [flat_ref]).score, abs=1e-4)
    assert decoded_batches == [2, 2], "the third batch must not be decoded"
    # The shortest and the longest of the three collected sources, with their translations.
    assert read_examples(examples) == [
        {"source": "o gato", "translation": "the cat sat on the mat"},
        {"source": "noventa e nove", "translation": "ninety nine"}]


@pytest.mark.parametrize("count, expected",
                         [(4, [5, 2, 4, 0]), (2, [5, 0]), (9, [5, 1, 2, 4, 3, 0])])
def test_examples_spread_from_the_shortest_source_to_the_longest(count, expected):
    texts = ["longest one", "ab", "abcd", "abcdef", "abcd", "a"]
    assert evaluation.spread_by_length(texts, count) == expected


def test_best_is_the_higher_bleu_then_the_lower_dev_perplexity():
    best = {"value": 50.0, "metrics": {"loss": 0.1, "perplexity": 2.0}}
    assert best_checkpoint._improves(51.0, 9.0, best)
    assert not best_checkpoint._improves(49.0, 0.1, best)
    assert best_checkpoint._improves(50.0, 1.9, best)
    assert not best_checkpoint._improves(50.0, 2.0, best)


@pytest.mark.parametrize("schedule", ["evaluate", "export"])
def test_evaluating_or_exporting_without_a_checkpoint_is_one_error_line(tiny_config, tmp_path,
                                                                         caplog, schedule):
    model_dir = str(tmp_path / "empty")
    with pytest.raises(ConfigError, match="holds no checkpoint to %s" % schedule):
        train.run(tiny_config, model_dir, schedule=schedule)
    args = ["--config", os.path.join(os.path.dirname(train.DEFAULT_CONFIG), "tiny.yaml"),
            "--model_dir", model_dir, "--schedule", schedule,
            "--hparams", "data.data_dir=%s" % tiny_config["data"]["data_dir"]]
    assert train.main(args) == 1
    assert "holds no checkpoint to %s" % schedule in caplog.text
    assert "Traceback" not in caplog.text


def test_training_stops_early_and_exports_the_best(tiny_config, tiny_data, tmp_path, caplog):
    """A learning rate too small to change a float32 weight: every evaluation ties the first,
    so with early_stopping_evaluations 1 training stops at the second (step 20 of 100). (The
    count over several evaluations: test_best_checkpoint.py, on the same exporters.)"""
    config = copy.deepcopy(tiny_config)
    config["train"].update(learning_rate=1e-30, early_stopping_evaluations=1)
    model_dir = str(tmp_path / "model")
    caplog.set_level(logging.INFO, logger="seq2seq")
    result = train.run(config, model_dir, max_steps=100)
    assert (result["global_step"], result["stopped"]) == (20, "early_stopping")
    assert _latest_step(model_dir) == 20
    assert ("early stopping at step 20: 1 evaluation(s) in a row without a better dev BLEU "
            "than step 10's") in caplog.text
    status = read_training_status(model_dir)
    assert [evaluation["step"] for evaluation in status["evaluations"]] == [10, 20]
    assert (status["running"], status["step"], status["stopped"]) == (False, 20, "early_stopping")
    exported = os.path.join(result["export_path"], "variables", "variables")
    assert tf.train.load_checkpoint(exported).get_tensor("global_step") == 10, "the best"

    rerun = train.run(config, model_dir, max_steps=100)  # a stopped run stays stopped
    assert (rerun["global_step"], rerun["stopped"]) == (20, "early_stopping")
    assert _latest_step(model_dir) == 20
    assert read_training_status(model_dir)["evaluations"] == status["evaluations"]
