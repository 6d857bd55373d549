"""The decoding lab's other families (`python -m lab.compare --families mbr,diverse
--compare_models DIR ... --ensemble_best N`): MBR, diverse beam search and other models, each a
row against beam 5 under the same scoring options (what the figures mean: docs/LAB.md).
"""

import json
import os

import numpy as np
import sacrebleu

from decode.mbr import UTILITIES, oracle_choice, utility_matrix
from decode.request import COMMON_OPTIONS
from lab import sweep
from seq2seq.model_dir import AVERAGED_RECORD, checkpoint_step, read_status_file

FAMILIES = ("mbr", "diverse")
BEAM_WIDTH = 5  # the baseline's width and n-best, and diverse beam search's
DIVERSE = {"diverse_beam_groups": 5, "diverse_beam_strength": 0.5}
DIVERSE_NAME = "%(diverse_beam_groups)d groups, strength %(diverse_beam_strength)g" % DIVERSE


def add_flags(parser):
    """The families' flags (checked by `check_flags`)."""
    group = parser.add_argument_group("the decoding families, against beam %d (need references)"
                                      % BEAM_WIDTH)
    group.add_argument("--families", default="", help="comma-separated: mbr (minimum Bayes "
                       "risk), diverse (diverse beam search, %s)" % DIVERSE_NAME)
    group.add_argument("--mbr_samples", type=int, default=32, help="MBR's candidates and "
                       "pseudo-references: samples per sentence (default: %(default)s)")
    group.add_argument("--mbr_epsilon", type=float, default=0.02,
                       help="MBR's epsilon sampling (default: %(default)s)")
    group.add_argument("--mbr_utility", default="chrf", choices=sorted(UTILITIES),
                       help="MBR's utility (default: %(default)s)")
    group.add_argument("--compare_models", nargs="+", default=[], metavar="MODEL", help="other "
                       "models: each a model directory (e.g. training.average's) or an ensemble, "
                       "its model directories joined by +")
    group.add_argument("--ensemble_best", type=int, metavar="N", help="also the ensemble of "
                       "--model_dir's N best checkpoints (by dev BLEU, training_status.json)")


def check_flags(parser, args):
    """Checks the families' flags; sets args.lab (any of the lab's parts asked for),
    args.family_widths (the widths the lab's Translator must allow for them) and
    args.mbr_options (the MBR row's decoding options)."""
    args.families = [name.strip() for name in args.families.split(",") if name.strip()]
    for name in args.families:
        if name not in FAMILIES:
            parser.error("--families: %r is not one of %s" % (name, ", ".join(FAMILIES)))
    if args.mbr_samples < 1:
        parser.error("--mbr_samples must be at least 1, got %d" % args.mbr_samples)
    if args.ensemble_best is not None and args.ensemble_best < 2:
        parser.error("--ensemble_best must be at least 2, got %d" % args.ensemble_best)
    wanted = bool(args.families or args.compare_models or args.ensemble_best)
    args.lab = args.sweep or wanted
    args.family_widths = [BEAM_WIDTH] * wanted + [args.mbr_samples] * ("mbr" in args.families)
    args.mbr_options = {"num_samples": args.mbr_samples, "epsilon": args.mbr_epsilon,
                        "mbr_utility": args.mbr_utility}


def best_checkpoints(model_dir, count):
    """The checkpoint prefixes of `model_dir`'s `count` evaluations of best dev BLEU (its
    training_status.json; ties: the later) whose files remain, best first; ValueError if fewer."""
    evaluations = (read_status_file(model_dir) or {}).get("evaluations") or []
    ranked = sorted((evaluation for evaluation in evaluations
                     if evaluation.get("dev_bleu") is not None),
                    key=lambda evaluation: (-evaluation["dev_bleu"], -evaluation["step"]))
    found = [path for path in (os.path.join(model_dir, "model.ckpt-%d" % evaluation["step"])
                               for evaluation in ranked) if os.path.isfile(path + ".index")]
    if len(found) < count:
        raise ValueError("--ensemble_best %d: %s holds %d evaluated checkpoint(s) (dev BLEU in "
                         "training_status.json, files still there)"
                         % (count, model_dir, len(found)))
    return found[:count]


def open_models(args, translator):
    """Checks the families' options on the lab's `translator`; opens the other models: a
    (variant name, Translator) each of --compare_models, then --ensemble_best's ensemble.
    ValueError names a bad option, model directory or ensemble."""
    from decode.translator import Translator

    if "mbr" in args.families:  # checked before anything is decoded
        translator.request("mbr", options=args.mbr_options)
    specs = [(spec, spec.split("+"), None) for spec in args.compare_models]
    if args.ensemble_best:
        specs.append(("ensemble of the %d best checkpoints" % args.ensemble_best,
                      [args.model_dir] * args.ensemble_best,
                      best_checkpoints(args.model_dir, args.ensemble_best)))
    models = []
    for name, model_dirs, checkpoints in specs:
        model = Translator(model_dirs, checkpoint=checkpoints)
        model.request("while_loop", BEAM_WIDTH)
        what, steps = "step", [member["step"] for member in model.members]
        record = os.path.join(model_dirs[0], AVERAGED_RECORD)  # what training.average averaged
        if len(model_dirs) == 1 and os.path.isfile(record):
            with open(record, encoding="utf-8") as averaged:
                what, steps = "the average of step", [
                    checkpoint_step(path) for path in json.load(averaged)["checkpoints"]]
        models.append(("%s (%s%s %s)" % (name, what, "s" * (len(steps) > 1),
                                         "+".join(map(str, steps))), model))
    return models


def n_best_diversity(n_bests):
    """The n-bests' self-BLEU (lower: more diverse): the mean over `n_bests` (a list of texts
    per sentence) with two texts or more of the mean sentence BLEU (effective order) of each text
    against each other one as the reference; None if no sentence has two."""
    means = [(matrix.sum() - np.trace(matrix)) / (len(texts) * (len(texts) - 1))
             for texts in n_bests if len(texts) > 1
             for matrix in [utility_matrix(texts, texts, "bleu")]]
    return float(np.mean(means)) if means else None


def oracle_bleu(pools, references):
    """Corpus BLEU of each sentence's candidate (pools: a list of texts per sentence) of best
    sentence chrF against its reference (`decode.mbr.oracle_choice`)."""
    picks = [pool[oracle_choice(pool, reference)[0]] for pool, reference in zip(pools, references)]
    return sacrebleu.corpus_bleu(picks, [references]).score


def run(args, translator, models, report, sources, references, options):
    """Adds the "families" rows to `report`: beam 5, --families, then each of `models`
    (`open_models`), all with the scoring `options` as resolved by the lab's `translator`."""
    beam = translator.request("while_loop", options=options)
    scoring = {name: getattr(beam, name) for name in COMMON_OPTIONS}
    runs = [("beam %d" % BEAM_WIDTH, translator, "while_loop", scoring)]
    if "diverse" in args.families:
        runs.append(("diverse beam %d (%s)" % (BEAM_WIDTH, DIVERSE_NAME), translator,
                     "while_loop", dict(scoring, **DIVERSE)))
    if "mbr" in args.families:
        runs.append(("MBR (%s, %d samples, epsilon %g)" % (
            args.mbr_utility, args.mbr_samples, args.mbr_epsilon), translator, "mbr",
            dict(scoring, **args.mbr_options)))
    runs += [(name, model, "while_loop", scoring) for name, model in models]
    rows, outputs = [], []
    for variant, model, decoder, decoding in runs:
        width = BEAM_WIDTH if decoder == "while_loop" else None
        n_best = BEAM_WIDTH if model is translator and width else 1
        translations, scores, _ = sweep.decode(model, variant, sources, references, decoder,
                                               width, n_best, decoding)
        pools = None  # the candidates an oracle picks from: the n-best, or MBR's
        if n_best > 1:
            pools = [[hypothesis.text for hypothesis in t.n_best] for t in translations]
        elif decoder == "mbr":
            pools = [[candidate.text for candidate in t.candidates] for t in translations]
        rows.append(dict(
            variant=variant, **scores,
            n_best_diversity=n_best_diversity(pools) if n_best > 1 else None,
            oracle_bleu=oracle_bleu(pools, references) if pools else None,
            expected_utility_mean=float(np.mean([t.expected_utility for t in translations]))
            if decoder == "mbr" else None))
        outputs.append((variant, [t.text for t in translations]))
    for row, test in zip(rows, [None] + sweep.significance(outputs, references)):
        row.update(speed_vs_beam5=row["sentences_per_second"] / rows[0]["sentences_per_second"],
                   p_value_vs_beam5=test and test["p_value"])
    report["families"] = rows
