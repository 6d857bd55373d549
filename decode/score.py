"""Scores given translations: the model's log-probability of each target piece, by teacher forcing.

    python -m decode.score --model_dir D --input SRC --targets TGT [--output F]
        [--length_penalty A] [--length_penalty_kind gnmt|average|none] [--coverage_penalty B]

writes one JSON object per line pair (DESIGN.md "Scoring a translation"): the total
log-probability, the contract's score under the options (what the searches rank by, so a
search's own output scores what the search said), the length counting the end token, and
each piece with its log-probability.
"""

import argparse
import json
import pathlib
import sys

import tensorflow.compat.v1 as tf

from data_pipeline.tokenizer import BOS_ID
from decode import options
from decode import scoring as scoring_lib
from seq2seq.common import sequence_mask


def score_encoded(model, encoder_output, target_ids, target_length, scoring):
    """Teacher-forced scores of an encoded batch's targets.

    Args:
      model, encoder_output: a `Seq2SeqModel` and its `encode(..., training=False)`.
      target_ids: [batch, tgt_time] int32, the target pieces and the end token, 0-padded.
      target_length: [batch] int32, pieces counting the end token.
      scoring: a decode.scoring.Scoring (its blocking and minimum length are not used).
    Returns:
      (piece_log_probs [batch, tgt_time] float32 (0 after the end), log_probs [batch],
      scores [batch]).
    """
    with tf.name_scope("score"):
        begin = tf.fill([tf.shape(target_ids)[0], 1], BOS_ID)
        target_input = tf.concat([begin, target_ids[:, :-1]], axis=1)         # [b, t]
        logits, attention = model.teacher_forced_logits(encoder_output, target_input,
                                                        training=False, with_attention=True)
        mask = sequence_mask(target_length, tf.shape(target_ids)[1])           # [b, t]
        piece_log_probs = mask * tf.gather(tf.nn.log_softmax(logits), target_ids, batch_dims=2)
        log_probs = tf.reduce_sum(piece_log_probs, axis=1)                     # [b]
        coverage = ()
        if scoring_lib.tracks_coverage(scoring):  # attention over the target pieces, summed
            coverage = (tf.reduce_sum(attention * mask[..., None], axis=1)
                        + 1.0 - encoder_output.mask)                           # [b, src]
        return piece_log_probs, log_probs, scoring_lib.scores(log_probs, target_length, coverage,
                                                              scoring)


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
    from decode.translator import Translator
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
