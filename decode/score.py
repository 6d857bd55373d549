"""Scores given translations: the model's log-probability of each target piece, by teacher forcing.

    python -m decode.score --model_dir D --input SRC --targets TGT [--output F] [--target_pieces]
        [--length_penalty A] [--length_penalty_kind gnmt|average|none] [--coverage_penalty B]

writes one JSON object per line pair, as POST /score answers (docs/API.md).
"""

import argparse
import json
import pathlib
import sys

import tensorflow.compat.v1 as tf

from data_pipeline.corpus import read_text_lines
from decode.request import add_flags, flag_values
from decode.translator import Translator
from seq2seq.decoding_options import SCORE_OPTIONS


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model_dir", required=True, action="append")
    parser.add_argument("--input", required=True, help="source sentences, one per line")
    parser.add_argument("--targets", required=True, help="their translations, line by line")
    parser.add_argument("--target_pieces", action="store_true",
                        help="each target line holds target pieces, space-separated")
    parser.add_argument("--output", default="-", help="JSON lines (default: stdout)")
    parser.add_argument("--hparams", default="")
    add_flags(parser, SCORE_OPTIONS)
    args = parser.parse_args(argv)
    tf.disable_v2_behavior()
    try:  # lines end where decode.translate ends them, so that its output pairs with its input
        sources, targets = (read_text_lines(path) for path in (args.input, args.targets))
        if len(sources) != len(targets):
            raise ValueError("--input has %d lines but --targets has %d: they must pair line by "
                             "line" % (len(sources), len(targets)))
        translator = Translator(args.model_dir, hparams=args.hparams)
        request = translator.score_request(flag_values(args, SCORE_OPTIONS))
        pieces = [line.split() for line in targets] if args.target_pieces else None
        try:
            scored = translator.score(sources, None if pieces else targets, request, pieces)
        except ValueError as error:
            raise ValueError("%s (sources[i] and targets[i]: line i + 1 of --input and --targets)"
                             % error) from None
        lines = "".join(json.dumps(result, ensure_ascii=False) + "\n" for result in scored)
        if args.output == "-":
            sys.stdout.write(lines)
        else:
            pathlib.Path(args.output).write_text(lines, encoding="utf-8")
    except (ValueError, OSError) as error:  # ConfigError and CorpusError among them
        print("error: %s" % error, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
