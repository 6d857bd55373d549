"""docs/WALKTHROUGH.md cannot go stale: its snippets run, its paths exist, its names resolve.

Each "## " section's ```python blocks run in order, in one fresh namespace and a
fresh default graph, with the names the walkthrough's opening promises:
CONFIG (configs/tiny.yaml, data prepared), DATA_DIR and, for the sections that
use it, MODEL_DIR (the tiny trained model). Every backticked repository path
must exist and every backticked `package.module.name` (or `tf.name`) must
resolve (a `section.key` to a key of the config's DEFAULTS), so that a rename or a move breaks this test rather than the lesson.
"""

import importlib
import os
import re

import pytest
import tensorflow.compat.v1 as tf

from seq2seq.config import DEFAULTS

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WALKTHROUGH = os.path.join(REPO, "docs", "WALKTHROUGH.md")
PACKAGES = ("data_pipeline", "seq2seq", "decode", "training", "server", "train", "serve")
TOP_DIRS = ("data_pipeline", "seq2seq", "decode", "training", "server", "tests", "docs", "configs",
            "bench")
CODE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")


def _parts():
    """The walkthrough's opening (before the first "## "), and [(title, text)] of its sections."""
    with open(WALKTHROUGH, encoding="utf-8") as f:
        parts = re.split(r"^## (.+)\n", f.read(), flags=re.M)
    return parts[0], list(zip(parts[1::2], parts[2::2]))


def _prose(text):
    """The text outside fenced code blocks."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def _cited(text):
    """(paths, names) in backticks: repository paths, and dotted names of our packages or tf."""
    paths, names = [], []
    for token in INLINE.findall(_prose(text)):
        token = token.strip()
        if " " in token or "(" in token:
            continue
        if token.endswith(".py") or token.split("/")[0] in TOP_DIRS and "/" in token:
            paths.append(token)
        elif re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", token) and \
                token.split(".")[0] in PACKAGES + ("tf",):
            names.append(token)
    return paths, names


def resolve(name):
    """The object a dotted name names: the longest importable module prefix, then attributes;
    or a config key's default (``decode.length_penalty``: DEFAULTS["decode"]["length_penalty"])."""
    parts = name.split(".")
    if len(parts) == 2 and parts[1] in DEFAULTS.get(parts[0], {}):
        return DEFAULTS[parts[0]][parts[1]]
    if parts[0] == "tf":
        obj, rest = tf, parts[1:]
    else:
        for split in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:split]))
            except ImportError:
                continue
            rest = parts[split:]
            break
        else:
            raise ImportError("no module in %r" % name)
    for attribute in rest:
        obj = getattr(obj, attribute)
    return obj


OPENING, SECTIONS = _parts()
IDS = [re.sub(r"\W+", "-", title.lower()).strip("-")[:32] for title, _ in SECTIONS]


def test_the_walkthrough_has_its_sections():
    assert len(SECTIONS) >= 14, [title for title, _ in SECTIONS]
    for title, text in SECTIONS:
        paths, names = _cited(text)
        assert CODE.search(text), "section %r has no python snippet" % title
        assert paths and names, "section %r names no file or no function" % title


@pytest.mark.parametrize("title,text", [("opening", OPENING)] + SECTIONS, ids=["opening"] + IDS)
def test_every_cited_path_exists_and_name_resolves(title, text):
    paths, names = _cited(text)
    missing = [path for path in paths if not os.path.exists(os.path.join(REPO, path))]
    assert not missing, "%s: no such path %s" % (title, missing)
    unresolved = []
    for name in names:
        try:
            resolve(name)
        except (ImportError, AttributeError) as e:
            unresolved.append("%s (%s)" % (name, e))
    assert not unresolved, "%s: %s" % (title, unresolved)


def test_the_cited_names_are_the_ones_the_walkthrough_is_about():
    """The name check checks something: a few cornerstones are cited, and a wrong name fails."""
    cited = set(name for _, text in SECTIONS for name in _cited(text)[1])
    for name in ("seq2seq.model.Seq2SeqModel.beam_update_fn", "decode.beam_search.beam_step",
                 "decode.beam_search.rnn_beam_search", "server.batcher.Batcher",
                 "tf.make_template", "decode.diverse.group_best", "decode.mbr.mbr_choose",
                 "decode.ensemble.Ensemble", "training.average.average_checkpoints",
                 "decode.request.DecodeRequest"):
        assert name in cited
    with pytest.raises(AttributeError):
        resolve("decode.beam_search.no_such_search")


@pytest.mark.parametrize("title,text", SECTIONS, ids=IDS)
def test_the_snippets_run(title, text, request, tiny_config, tiny_data):
    code = "\n".join(CODE.findall(text))
    namespace = {"__name__": "walkthrough", "CONFIG": tiny_config,
                 "DATA_DIR": tiny_config["data"]["data_dir"]}
    if "MODEL_DIR" in code:
        namespace["MODEL_DIR"] = request.getfixturevalue("tiny_model_dir")
    with tf.Graph().as_default():
        exec(compile(code, "%s [%s]" % (WALKTHROUGH, title), "exec"), namespace)
