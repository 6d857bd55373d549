"""Shared fixtures: a tiny prepared corpus and a tiny trained model.

Both are built once per test run (in a temporary directory, or $TESTS_TINY_DIR) and shared
by every test module that asks for them, so the suite stays fast. `make test` runs the
modules on two pytest-xdist workers: the first worker to need the corpus or the model builds
it while the other waits for it, then both read it. The tests that compare decodes by
tests/same_hypotheses.py's rule are marked float_sensitive (`pytest -m float_sensitive`).
"""

import fcntl
import os
import sys
import types

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytest  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

from seq2seq.config import load_config  # noqa: E402

tf.disable_v2_behavior()

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY_CONFIG = os.path.join(REPO, "configs", "tiny.yaml")
# Sources of three pieces or fewer for the tiny model (its dev and test sentences of three, then
# four alike): the unrolled search's shortest graph, 16 steps. It builds a graph per length
# bucket, for seconds, so the tests that decode these share one.
SHORT_SOURCES = ["December 3", "June 6", "on Wednesdays", "June 7", "one", "seven", "forty two",
                 "a car"]


# Files of few tests that run long: xdist hands out the files with the most tests first, which
# would leave these for last, one worker busy with them while the other idles.
LONG_FILES_OF_FEW_TESTS = ("tests/test_distributed.py", "tests/test_serve_reload.py",
                           "tests/test_serve_browser.py", "tests/test_serve_process.py",
                           "tests/test_serve_options_browser.py",
                           "tests/test_serve_training_browser.py", "tests/test_ensemble.py",
                           "tests/test_constrained_translator.py", "tests/test_towers.py")


# tests/same_hypotheses.py's comparisons of two decodes of the same sentences on different batch
# shapes: only these can pass under one CPU's arithmetic and fail under another's (Makefile).
SAME_HYPOTHESES_RULE = ("assert_same_hypotheses", "assert_same_trace")


def _uses_the_rule(code, names, seen):
    """Whether `code` calls a SAME_HYPOTHESES_RULE function, itself or through a function of
    tests/ it names (`names`: its globals), however deep."""
    if code in seen:
        return False
    seen.add(code)
    for name in code.co_names:
        if name in SAME_HYPOTHESES_RULE:
            return True
        value = names.get(name)
        if isinstance(value, types.FunctionType) and \
                value.__code__.co_filename.startswith(os.path.join(REPO, "tests", "")) and \
                _uses_the_rule(value.__code__, value.__globals__, seen):
            return True
    return any(isinstance(const, types.CodeType) and _uses_the_rule(const, names, seen)
               for const in code.co_consts)


@pytest.hookimpl(tryfirst=True)  # before `-m` selects
def pytest_collection_modifyitems(items):
    """Marks float_sensitive each test that compares decodes by tests/same_hypotheses.py."""
    for item in items:
        function = getattr(item, "function", None)
        if function is not None and _uses_the_rule(function.__code__, function.__globals__, set()):
            item.add_marker(pytest.mark.float_sensitive)


def pytest_xdist_make_scheduler(config, log):
    """With --dist loadfile, the scheduler that starts LONG_FILES_OF_FEW_TESTS first."""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LongFilesFirst(LoadFileScheduling):
        def _assign_work_unit(self, node):
            for path in reversed(LONG_FILES_OF_FEW_TESTS):
                if path in self.workqueue:
                    self.workqueue.move_to_end(path, last=False)
            super()._assign_work_unit(node)
    return LongFilesFirst(config, log)


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory, worker_id):
    """Where the tiny corpus and model are built: $TESTS_TINY_DIR if set (`make test`'s second
    run finds them there, built by its first), else a temporary directory that every xdist
    worker of this run shares."""
    if os.environ.get("TESTS_TINY_DIR"):
        return os.path.abspath(os.environ["TESTS_TINY_DIR"])
    base = tmp_path_factory.getbasetemp()
    return str(base if worker_id == "master" else base.parent)


def built_once(path, build):
    """Runs `build()`, which makes `path`, unless a worker of this run made it already.

    The first worker to get here builds while it holds `path`.lock and then marks `path`.done;
    the others wait on the lock and find the mark.
    """
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(path + ".done"):
            build()
            open(path + ".done", "w").close()


@pytest.fixture(scope="session")
def tiny_config(run_dir):
    """configs/tiny.yaml with its data_dir in this run's temporary directory."""
    data_dir = os.path.join(run_dir, "tiny_data")
    return load_config(TINY_CONFIG, overrides={"data": {"data_dir": data_dir}})


@pytest.fixture(scope="session")
def tiny_data(tiny_config):
    """The embedded corpus at tiny size, prepared: SentencePiece + TFRecords."""
    from data_pipeline.prepare import prepare
    built_once(tiny_config["data"]["data_dir"], lambda: prepare(tiny_config, verbose=False))
    return prepare(tiny_config, verbose=False)  # up to date now: it reads what was built


@pytest.fixture(scope="session")
def tiny_model_dir(tiny_config, tiny_data, run_dir):
    """A model directory holding a tiny model trained for 400 steps (enough to translate
    the tiny corpus into non-empty Portuguese)."""
    import train
    model_dir = os.path.join(run_dir, "tiny_model")
    built_once(model_dir, lambda: train.run(tiny_config, model_dir, schedule="train",
                                            max_steps=400))
    return model_dir


@pytest.fixture(scope="module")
def translator(tiny_model_dir):
    """A Translator of the tiny model, one per test module (a module may define its own)."""
    from decode.translator import Translator
    translator = Translator(tiny_model_dir)
    yield translator
    translator.close()


def protecting_model_dir(tiny_model_dir, directory, protected_tokens=2):
    """A copy of the tiny model in `directory` told that it has `protected_tokens` protected
    tokens (every vocabulary holds ｟0｠ to ｟15｠), though it never saw one; returns its path."""
    import json
    import shutil
    model_dir = os.path.join(str(directory), "model")
    shutil.copytree(tiny_model_dir, model_dir)
    path = os.path.join(model_dir, "tokenizer.json")
    with open(path, encoding="utf-8") as options_file:
        options = json.load(options_file)
    with open(path, "w", encoding="utf-8") as options_file:
        json.dump(dict(options, protected_tokens=protected_tokens), options_file)
    return model_dir
