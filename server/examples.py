"""Example sentences for the page, from the model's held-out split."""

import json
import logging
import os

LOG = logging.getLogger("seq2seq.serve")
MAX_EXAMPLES = 8
# The held-out splits data_pipeline.prepare writes as text, one sentence per line.
SPLIT_FILES = ("test.src", "dev.src")


def read_examples(config, limit=MAX_EXAMPLES):
    """Up to `limit` source sentences of the kind the model was trained on.

    Why: people who open the page type sentences unlike anything in the
    training corpus (the default one is dates, numbers in words, money, ...)
    and conclude the model is broken; a few held-out sentences show what it
    can do. Held-out, so that the examples do not merely show memorised
    training pairs.

    Reads data.data_dir/test.src, or dev.src where there is no test.src. A
    relative data_dir is relative to the working directory, as for
    data_pipeline.prepare, training and every other path of the project
    (the configs' data/... paths are the repository's when run from its
    root). The pick is deterministic and spread over the file:
    evenly spaced among its distinct non-empty lines. A missing or unreadable
    file (or a config without a data_dir) gives no examples, never an error:
    the examples are a convenience, and the server serves without them (and
    logs why there are none, naming the directory it looked in).

    Returns:
      A list of at most `limit` strings, possibly empty.
    """
    configured = (config.get("data") or {}).get("data_dir")
    if not configured:
        LOG.info("no example sentences for the page: the config names no data.data_dir")
        return []
    data_dir = os.path.abspath(configured)  # so that the log names where it looked
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
    LOG.info("no example sentences for the page: %s holds no %s%s", data_dir,
             " or ".join(SPLIT_FILES), "" if os.path.isabs(configured) else
             " (data.data_dir %s is relative to the working directory)" % json.dumps(configured))
    return []
