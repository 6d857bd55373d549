"""The decoding lab's sweep (`python -m lab.compare --sweep [--exact]`): every beam width x
length normalisation, the exact search per normalisation, search and model errors, paired
bootstrap against the sweep's best BLEU, and the example sentences on which these choices matter
(KINDS). Its report's keys: docs/API.md; what its figures mean: docs/LAB.md.
"""

import contextlib
import sys
import time

import numpy as np
import sacrebleu
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest

from seq2seq.decoding_options import LENGTH_PENALTY_KINDS

VARIANT_KEYS = ("decoder", "beam_width", "length_penalty_kind", "length_penalty")  # name a row
SCORE_TOLERANCE = 1e-4  # a score higher by more than this is higher (docs/API.md)
KINDS = ("search_error", "wider_beam_changes", "wider_beam_worse", "empty_exact_best",
         "reference_better")
WARM_UP = 8  # sentences decoded before a timed call: it builds, and warms a batch per thread


def add_flags(parser):
    """The lab's flags (checked by `check_flags`); --max_expansions is among the options'."""
    lab = parser.add_argument_group("the decoding lab (needs references)")
    lab.add_argument("--sweep", action="store_true", help="beam widths x normalisations")
    lab.add_argument("--sweep_beam_widths", default="1,2,4,8,16,32,64",
                     help="the sweep's beam widths (default: %(default)s)")
    lab.add_argument("--normalisations", default="none,average,gnmt:0.6,gnmt:1.0",
                     help="the sweep's length normalisations (default: %(default)s)")
    lab.add_argument("--exact", action="store_true",
                     help="the exact search and each variant's search errors (implies --sweep)")
    lab.add_argument("--sweep_plot", help="write BLEU and length ratio against beam width here")
    lab.add_argument("--differ", nargs=2, metavar=("A", "B"),
                     help="list the sentences variants A and B translate differently")
    lab.add_argument("--markdown", metavar="F.md", help="write the lab's report as markdown")


def check_flags(parser, args):
    """Parses and checks the lab's flags in `args` (parser.error names the first bad one)."""
    args.sweep = args.sweep or args.exact
    try:
        args.normalisations = list(dict.fromkeys(  # gnmt:1 and gnmt:1.0 decode once
            parse_normalisation(text) for text in args.normalisations.split(",")))
    except ValueError as error:
        parser.error("--normalisations: %s" % error)
    if (args.differ or args.sweep_plot) and not args.sweep:
        parser.error("--differ and --sweep_plot need --sweep")
    if args.max_expansions is not None and not args.exact:
        parser.error("--max_expansions needs --exact")
    decoders = [("while_loop", width) for width in args.sweep_beam_widths]
    decoders += [("exact", None)] if args.exact else []
    names = [variant_name(decoder, width, *normalisation)
             for normalisation in args.normalisations for decoder, width in decoders]
    for name in args.differ or []:
        if name not in names:
            parser.error("--differ %s: not a variant of this run (%s)" % (name, " ".join(names)))


def parse_normalisation(text):
    """"none", "average" or "gnmt:ALPHA" -> (length_penalty_kind, length_penalty)."""
    kind, _, alpha = text.strip().partition(":")
    with contextlib.suppress(ValueError):  # an ALPHA that is no number: the error below
        if kind in LENGTH_PENALTY_KINDS and bool(alpha) == (kind == "gnmt"):
            return kind, float(alpha or 0)
    raise ValueError("%r is not none, average or gnmt:ALPHA (e.g. gnmt:0.6)" % text)


def normalisation_name(kind, alpha):
    """"none", "average" or e.g. "gnmt:0.6", as --normalisations takes them."""
    return "gnmt:%g" % alpha if kind == "gnmt" else kind


def variant_name(decoder, beam_width, kind, alpha):
    """A lab variant's name, e.g. "beam4/gnmt:0.6" or "exact/none"."""
    return "%s/%s" % ("exact" if decoder == "exact" else "beam%d" % beam_width,
                      normalisation_name(kind, alpha))


def open_translator(args, translator, references, options):
    """The lab's Translator (up to the widest sweep or family width), the lab's requests checked;
    ValueError without references, or with --exact and a coverage penalty."""
    from decode.translator import Translator

    if references is None:
        raise ValueError("the lab (--sweep, --exact, --families, --compare_models, "
                         "--ensemble_best) needs references (--reference FILE)")
    lab_translator = Translator(args.model_dir, hparams="decode.max_beam_width=%d" % max(
        args.sweep_beam_widths + args.family_widths + [
            translator.config["decode"]["max_beam_width"]]))
    for width in args.sweep_beam_widths if args.sweep else []:  # checked before any decoding
        lab_translator.request("while_loop", width)
    coverage = lab_translator.request("while_loop", options=options).coverage_penalty
    if args.exact:
        lab_translator.request("exact", options={"max_expansions": args.max_expansions})
        if coverage:
            raise ValueError("--exact compares the searches under the exact search's objective, "
                             "which has no coverage penalty; pass --coverage_penalty 0 (this "
                             "model's config sets %g)" % coverage)
    return lab_translator


def percent(flags):
    """The percentage of true values among `flags` (None when empty)."""
    flags = list(flags)
    return 100.0 * sum(flags) / len(flags) if flags else None


def decode(translator, name, sources, references, decoder, beam_width, n_best=1, options=None):
    """(the Translations of `sources`; their BLEU, chrF, length ratio, % empty and sentences/s;
    their seconds), timed once WARM_UP of them have built the graphs; prints the BLEU."""
    request = translator.request(decoder, beam_width, n_best, options=options)
    translator.translate(sources[:WARM_UP], request)
    started = time.perf_counter()
    translations = translator.translate(sources, request)
    seconds = time.perf_counter() - started
    texts = [t.text for t in translations]
    bleu = sacrebleu.corpus_bleu(texts, [references])
    print("%s: BLEU %.2f in %.1f s" % (name, bleu.score, seconds), file=sys.stderr)
    return translations, {
        "bleu": bleu.score, "chrf": sacrebleu.corpus_chrf(texts, [references]).score,
        "length_ratio": bleu.sys_len / bleu.ref_len,
        "empty_percent": percent(not text.strip() for text in texts),
        "sentences_per_second": len(sources) / seconds}, seconds


def exact_run(normalisation, translations, scores, seconds, max_expansions):
    """One normalisation's "exact" object (docs/API.md) from the exact search's `decode`."""
    proven = [t.proven for t in translations]
    expansions = [t.expansions for t in translations]
    return dict(
        normalisation, max_expansions=max_expansions, proven_percent=percent(proven),
        expansions_median=float(np.median(expansions)),
        expansions_p95=float(np.percentile(expansions, 95)), seconds=seconds,
        seconds_per_proven_sentence=seconds / sum(proven) if any(proven) else None,
        empty_best_percent=scores["empty_percent"], bleu=scores["bleu"], chrf=scores["chrf"],
        length_ratio=scores["length_ratio"],
        mean_score=float(np.mean([t.score for t in translations])),
        sentences=[{"index": index, "text": t.text, "score": float(t.score),
                    "proven": t.proven, "expansions": t.expansions}
                   for index, t in enumerate(translations)])


def search_errors(row, output, exact, reference_scores):
    """A sweep `row`'s "search_errors" row (docs/API.md), from its `output` translations, the
    exact run's "sentences" and the references' scores under the row's normalisation."""
    return dict(
        {key: row[key] for key in VARIANT_KEYS},
        search_error_percent=percent(best["score"] > t.score + SCORE_TOLERANCE
                                     for best, t in zip(exact, output) if best["proven"]),
        reference_better_percent=percent(score > t.score + SCORE_TOLERANCE
                                         for score, t in zip(reference_scores, output)),
        empty_output_percent=row["empty_percent"])


def sentence_kinds(references, narrow, wide, beam, exact=None, reference_scores=None):
    """What each sentence shows under one normalisation: a {kind: note} (KINDS) per sentence.

    Args:
      references: [n] texts; narrow, wide, beam: (width, [n] translations with text and score)
        of the sweep's narrowest and widest widths and of the width errors are counted at;
      exact: [n] the exact run's "sentences" (text, score, proven), or None;
      reference_scores: [n] the references' scores under this normalisation, or None.
    """
    chrf, found = CHRF(), []
    (narrow_width, narrows), (wide_width, wides), (beam_width, beams) = narrow, wide, beam
    for index, (reference, n, w, b) in enumerate(zip(references, narrows, wides, beams)):
        kinds, errors = {}, {}  # errors: the kinds one note about the beam's output tells
        if n.text != w.text:
            n_chrf, w_chrf = (chrf.sentence_score(t.text, [reference]).score for t in (n, w))
            kinds["wider_beam_changes"] = "width %d (chrF %.1f): %s / width %d (chrF %.1f): %s" % (
                narrow_width, n_chrf, n.text, wide_width, w_chrf, w.text)
            if w_chrf < n_chrf:
                kinds["wider_beam_worse"] = kinds["wider_beam_changes"]
        notes = ["beam %d (score %.3f): %s" % (beam_width, b.score, b.text)]
        if exact:
            best = exact[index]
            errors["search_error"] = best["proven"] and best["score"] > b.score + SCORE_TOLERANCE
            errors["empty_exact_best"] = not best["text"].strip()
            notes.append("exact (score %.3f, %sproven): %s" % (
                best["score"], "" if best["proven"] else "not ", best["text"] or "(empty)"))
        if reference_scores:
            errors["reference_better"] = reference_scores[index] > b.score + SCORE_TOLERANCE
            notes.append("reference (score %.3f)" % reference_scores[index])
        kinds.update((kind, " / ".join(notes)) for kind, shows in errors.items() if shows)
        found.append(kinds)
    return found


def examples(sources, references, kinds, per_kind=5):
    """The lab's "examples": up to `per_kind` sentences of each kind, shortest sources first.

    Args:
      kinds: a {kind: note} per sentence (`sentence_kinds`, merged over normalisations).
    Returns:
      [{"index", "source", "reference", "kinds": every kind it shows, in KINDS order, "note":
      their distinct notes joined by "; "}].
    """
    by_length = sorted(range(len(sources)), key=lambda index: len(sources[index]))  # ties: in order
    chosen = set()
    for kind in KINDS:
        chosen.update([index for index in by_length if kind in kinds[index]][:per_kind])
    return [{"index": index, "source": sources[index], "reference": references[index],
             "kinds": [kind for kind in KINDS if kind in kinds[index]],
             "note": "; ".join(dict.fromkeys(kinds[index][kind] for kind in KINDS
                                             if kind in kinds[index]))}
            for index in by_length if index in chosen]


def significance(systems, references):
    """sacrebleu's paired bootstrap (1000 resamples) of every (name, texts) in `systems`
    against the first: rows of a, b, bleu_a, bleu_b, p_value."""
    _, results = PairedTest(systems, {"BLEU": BLEU()}, [references], test_type="bs")()
    baseline = results["BLEU"][0]
    return [{"a": systems[0][0], "b": name, "bleu_a": baseline.score, "bleu_b": result.score,
             "p_value": result.p_value} for (name, _), result
            in zip(systems[1:], results["BLEU"][1:])]


def print_differences(sources, references, outputs, name_a, name_b):
    """Prints and returns the "differ" rows: the sentences `name_a` and `name_b` translate
    differently, with both outputs and their scores, the source and the reference."""
    rows = [{"index": index, "source": source, "reference": reference,
             "a": {"variant": name_a, "text": a.text, "score": a.score},
             "b": {"variant": name_b, "text": b.text, "score": b.score}}
            for index, (source, reference, a, b) in enumerate(zip(
                sources, references, outputs[name_a], outputs[name_b])) if a.text != b.text]
    print("\n%s and %s differ on %d of %d sentences" % (name_a, name_b, len(rows), len(sources)))
    for row in rows:
        print("#%d %s\n  reference: %s" % (row["index"], row["source"], row["reference"]))
        for side in (row["a"], row["b"]):
            print("  %s (%.3f): %s" % (side["variant"], side["score"], side["text"]))
    return rows


def run(args, translator, report, sources, references, options):
    """Adds the sweep's keys (docs/API.md) and "examples" to `report`: `sources` decoded at every
    width x normalisation (and, with --exact, exactly per normalisation) under `options`."""
    widths, outputs, kinds = args.sweep_beam_widths, {}, [{} for _ in sources]
    beam_width = translator.default_beam_width  # the width examples count errors at
    if beam_width not in widths:
        beam_width = widths[-1]
    report["sweep"], exact_runs, errors = [], [], []
    for kind, alpha in args.normalisations:
        normalisation = {"length_penalty_kind": kind, "length_penalty": alpha}
        decoding, rows, by_width = dict(options, **normalisation), [], {}
        for width in widths:
            name = variant_name("while_loop", width, kind, alpha)
            outputs[name], scores, _ = decode(translator, name, sources, references,
                                              "while_loop", width, options=decoding)
            by_width[width] = outputs[name]
            rows.append(dict(decoder="while_loop", beam_width=width, **normalisation, **scores,
                             mean_score=float(np.mean([t.score for t in outputs[name]]))))
        report["sweep"] += rows
        exact, reference_scores = None, None
        if args.exact:
            name = variant_name("exact", None, kind, alpha)
            outputs[name], scores, seconds = decode(
                translator, name, sources, references, "exact", None,
                options=dict(decoding, max_expansions=args.max_expansions))
            exact_runs.append(exact_run(normalisation, outputs[name], scores, seconds,
                                        args.max_expansions
                                        or translator.config["decode"]["max_expansions"]))
            exact = exact_runs[-1]["sentences"]
            reference_scores = [score["score"] for score in translator.score(
                sources, references, dict(normalisation, coverage_penalty=0.0))]  # model errors
            errors += [search_errors(row, by_width[row["beam_width"]], exact, reference_scores)
                       for row in rows]
        for found, shown in zip(kinds, sentence_kinds(references, *(
                (width, by_width[width]) for width in (widths[0], widths[-1], beam_width)),
                exact, reference_scores)):
            for name, note in shown.items():
                found.setdefault(name, "%s: %s" % (normalisation_name(kind, alpha), note))
    report["examples"] = examples(sources, references, kinds)
    if args.exact:
        report["exact"], report["search_errors"] = exact_runs, errors
    best = max(report["sweep"], key=lambda row: row["bleu"])
    best_name = variant_name(*(best[key] for key in VARIANT_KEYS))
    report["significance"] = significance(
        [(name, [t.text for t in outputs[name]]) for name in
         [best_name] + [name for name in outputs if name != best_name]], references)
    if args.differ:
        report["differ"] = print_differences(sources, references, outputs, *args.differ)
