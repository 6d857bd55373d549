"""The decoding lab's placeholder row (`python -m lab.compare --placeholders F.tsv`): beam 5 on
software messages with placeholders, "free" (the model writes them as it will) against "keep"
(each of the source's placeholders and tags exactly once in every hypothesis): the messages
whose output keeps exactly the source's placeholders, BLEU, chrF, speed, paired bootstrap.
"""

from collections import Counter

from data_pipeline.corpus import read_corpus
from data_pipeline.placeholders import find
from lab import sweep
from lab.families import BEAM_WIDTH

MODES = ("free", "keep")  # the `placeholders` decoding option's values, the baseline first


def read(translator, path, options):
    """(sources, references) of the TSV file `path` (source<TAB>reference), each mode's request
    checked on `translator` with the other decoding `options`; ValueError names a bad one."""
    for mode in MODES:
        translator.request("while_loop", BEAM_WIDTH, options=dict(options, placeholders=mode))
    return [list(side) for side in zip(*read_corpus(path).pairs)]


def run(translator, report, path, sources, references, options):
    """Adds "placeholders" to `report`: `sources` (read from `path`) decoded at beam 5 in each of
    MODES, with the other decoding `options`; the sentences/s leave graph builds out."""
    rows, outputs = [], []
    for mode in MODES:
        translations, scores, _ = sweep.decode(
            translator, "placeholders %s" % mode, sources, references, "while_loop", BEAM_WIDTH,
            options=dict(options, placeholders=mode))
        texts = [t.text for t in translations]
        kept = (Counter(find(text)) == Counter(find(source))  # the same placeholders and tags
                for source, text in zip(sources, texts))
        rows.append(dict(placeholders=mode, kept_percent=sweep.percent(kept), **scores))
        outputs.append((mode, texts))
    report["placeholders"] = {"source": path, "sentences": len(sources), "beam_width": BEAM_WIDTH,
                              "modes": rows, "significance": sweep.significance(outputs,
                                                                                references)}
