"""Example sentences for the page, from the model's held-out split."""

import logging
import os

LOG = logging.getLogger("seq2seq.serve")
MAX_EXAMPLES = 8
# The held-out splits data_pipeline.prepare writes as text, one sentence per line.
SPLIT_FILES = ("test.src", "dev.src")
# A relative data_dir is the repository's (configs name data/... from the
# repository root), wherever serve.py was started from.
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_examples(config, limit=MAX_EXAMPLES):
    """Up to `limit` source sentences of the kind the model was trained on.

    Why: people who open the page type sentences unlike anything in the
    training corpus (the default one is dates, numbers in words, money, ...)
    and conclude the model is broken; a few held-out sentences show what it
    can do. Held-out, so that the examples do not merely show memorised
    training pairs.

    Reads data.data_dir/test.src, or dev.src where there is no test.src (a
    relative data_dir is relative to the repository root, whatever the
    working directory). The pick is deterministic and spread over the file:
    evenly spaced among its distinct non-empty lines. A missing or unreadable
    file (or a config without a data_dir) gives no examples, never an error:
    the examples are a convenience, and the server serves without them (and
    logs why there are none).

    Returns:
      A list of at most `limit` strings, possibly empty.
    """
    data_dir = (config.get("data") or {}).get("data_dir")
    if not data_dir:
        LOG.info("no example sentences for the page: the config names no data.data_dir")
        return []
    data_dir = os.path.join(REPO, data_dir)  # an absolute data_dir stays as it is
    for name in SPLIT_FILES:
        path = os.path.join(data_dir, name)
        if not os.path.isfile(path):
            continue
        try:
            with open(path, encoding="utf-8") as split_file:
                lines = [line.strip() for line in split_file]
        except (OSError, ValueError) as error:  # ValueError: not UTF-8
            LOG.warning("no example sentences: cannot read %s (%s)", path, error)
            return []
        sentences = list(dict.fromkeys(line for line in lines if line))
        if not sentences:
            LOG.info("no example sentences for the page: %s holds none", path)
            return []
        count = min(limit, len(sentences))
        return [sentences[index * len(sentences) // count] for index in range(count)]
    LOG.info("no example sentences for the page: %s holds no %s", data_dir,
             " or ".join(SPLIT_FILES))
    return []
