"""Scores given translations: the model's log-probability of each target piece, by teacher forcing.

    python -m decode.score --model_dir D --input SRC --targets TGT [--output F]
        [--length_penalty A] [--length_penalty_kind gnmt|average|none] [--coverage_penalty B]

writes one JSON object per line pair (DESIGN.md "Scoring a translation"): the total
log-probability, the contract's score under the options (what the searches rank by, so a
search's own output scores what the search said), the length counting the end token, and
each piece with its log-probability. The graph: decode/graphs.py's `score_encoded`.
"""

import argparse
import json
import pathlib
import sys

import tensorflow.compat.v1 as tf

from decode import options
from decode.translator import Translator


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--input", required=True, help="source sentences, one per line")
    parser.add_argument("--targets", required=True, help="their translations, line by line")
    parser.add_argument("--output", default="-", help="JSON lines (default: stdout)")
    parser.add_argument("--hparams", default="")
    options.add_flags(parser, options.SCORE_OPTIONS)
    args = parser.parse_args(argv)
    sources, targets = (pathlib.Path(path).read_text(encoding="utf-8").splitlines()
                        for path in (args.input, args.targets))
    if len(sources) != len(targets):
        parser.error("--input has %d lines but --targets has %d: they must pair line by line"
                     % (len(sources), len(targets)))
    tf.disable_v2_behavior()
    translator = Translator(args.model_dir, hparams=args.hparams)
    try:
        scored = translator.score(sources, targets, options.from_flags(args, options.SCORE_OPTIONS))
    except ValueError as error:
        parser.error(str(error))
    lines = "".join(json.dumps(result, ensure_ascii=False) + "\n" for result in scored)
    if args.output == "-":
        sys.stdout.write(lines)
    else:
        pathlib.Path(args.output).write_text(lines, encoding="utf-8")


if __name__ == "__main__":
    main()
