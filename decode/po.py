"""Fills a gettext catalog with a model's translations, each marked fuzzy for a translator.

    python -m decode.po --model_dir runs/lab --input messages.po --output messages.po

Untranslated entries (no msgstr filled), and with --include_fuzzy fuzzy ones, get the model's
translation, the fuzzy flag and the comment "machine translation: model NAME, step N"; every
other line stays as it was, byte for byte. A plural entry's msgstr[i] translates msgid if n = 1
selects form i (by the header's Plural-Forms, else its Language's rule), else msgid_plural: a
language of one form takes msgid_plural. Filled entries failing Babel's checkers (python-format,
number of forms) are listed on stderr and written all the same: fuzzy, a draft msgfmt leaves out.
"""

import argparse
import gettext
import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported, in main

from babel.messages.catalog import Catalog  # noqa: E402
from babel.messages.pofile import PoFileError, PoFileParser, normalize  # noqa: E402
from tqdm import tqdm  # noqa: E402

from decode.translate import BATCHES_PER_CHUNK  # noqa: E402

# A line of an entry, past any "#~": a keyword and a quoted string, or a quoted string.
STRING_LINE = re.compile(r'((msgctxt|msgid|msgid_plural|msgstr(\[\d+\])?)\s+)?"([^"\\]|\\.)*"')
# Lines Babel refuses and nothing here needs: "#~|", and a template's dates ("YEAR-MO-DA").
UNNEEDED = re.compile(r'\s*(#~\s*\||"(POT-Creation|PO-Revision)-Date:.*\\n"\s*$)')
MACHINE = "machine translation:"


def read_catalog(path):
    """The catalog at `path`: its lines (no "\\n"), Babel's `Catalog` of them, and the plural
    form n = 1 selects (None: one form). Raises ValueError naming the file (and line)."""
    with open(path, "rb") as file:
        data = file.read()
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError as error:
        raise ValueError("%s:%d: not UTF-8" % (path, data[:error.start].count(b"\n") + 1)) from None
    for number, line in enumerate(lines, 1):  # Babel misreads an unquoted or unclosed string
        code = re.sub(r"^#~\s*", "", line.strip())
        if code and code[0] not in "#|" and not STRING_LINE.fullmatch(code):
            raise ValueError("%s:%d: not a keyword and a quoted string: %s" % (path, number, code))
    catalog = Catalog()
    parser = PoFileParser(catalog, abort_invalid=True)
    try:
        parser.parse(["" if UNNEEDED.match(line) else line for line in lines])
    except (PoFileError, ValueError, IndexError) as error:  # IndexError: msgid without msgstr
        raise ValueError("%s:%d: not a catalog Babel can read: %s" % (
            path, getattr(error, "lineno", parser.offset) + 1, "msgid without msgstr" if
            isinstance(error, IndexError) else re.sub(r" on \d+$", "", str(error)))) from None
    if catalog.charset != "utf-8":
        raise ValueError("%s: the header's charset is %s: decode.po reads and writes UTF-8 only "
                         "(msgconv --to-code=UTF-8 converts a catalog)" % (path, catalog.charset))
    try:
        singular = gettext.c2py(catalog.plural_expr)(1) if catalog.num_plurals > 1 else None
    except ValueError as error:
        raise ValueError("%s: the header's Plural-Forms: %s" % (path, error)) from None
    return lines, catalog, singular


def sources(message, singular):
    """The text each of `message`'s msgstrs translates; `singular`: as `read_catalog`'s."""
    if not message.pluralizable:
        return [message.id]
    return [message.id[form != singular] for form in range(len(message.string))]


def to_fill(catalog, singular, include_fuzzy):
    """The messages to translate, in order (no msgstr filled, or fuzzy with `include_fuzzy`;
    not a blank source), and how many others are fuzzy or untranslated."""
    wanted = [message for message in list(catalog)[1:]  # after the header
              if message.fuzzy or not any(message.string)]  # string: a str or a tuple of forms
    chosen = [message for message in wanted if (include_fuzzy or not any(message.string)) and all(
        text.strip() for text in sources(message, singular))]
    return chosen, len(wanted) - len(chosen)


def entry_span(lines, message):
    """(first, end): `message`'s lines in `lines`, from its first comment to its last msgstr's."""
    first = message.lineno - 1  # its msgid
    while message.context is not None and not lines[first].lstrip().startswith("msgctxt"):
        first -= 1
    while first and re.match(r"\s*#(?!~)", lines[first - 1]):  # its comments
        first -= 1
    end = message.lineno
    while end < len(lines) and re.match(r'\s*($|"|msgid_plural|msgstr)', lines[end]):
        end += 1
    while not lines[end - 1].strip():
        end -= 1
    return first, end


def fill(lines, catalog, singular, messages, translated, comment):
    """The catalog's text with `messages` filled from `translated` ({source: translation}), fuzzy
    and commented; and "LINE: msgid: errors" for each failing Babel's checks."""
    output, done, failing = [], 0, []
    for message in messages:
        first, end = entry_span(lines, message)
        msgstr = next(index for index in range(message.lineno, end)
                      if lines[index].startswith("msgstr"))
        head = [line for line in lines[first:msgstr] if not line.startswith("# " + MACHINE)]
        flags = next(index for index, line in enumerate(head) if not re.match(r"#([\s.:]|$)", line))
        if not head[flags].startswith("#,"):  # gettext's order: comments, references, flags, "#|"
            head.insert(flags, "#, fuzzy")
        elif not message.fuzzy:
            head[flags] = "#, fuzzy," + head[flags][2:]
        strings = [translated[text] for text in sources(message, singular)]
        message.string = tuple(strings) if message.pluralizable else strings[0]
        output += lines[done:first]
        errors = "; ".join(map(str, message.check(catalog)))
        if errors:
            failing.append("%d: %r: %s" % (len(output) + 1, message.id, errors))
        output += ["# " + comment] + head
        for form, text in enumerate(strings):  # Babel's quoting and wrapping, as gettext reads
            keyword = "msgstr[%d]" % form if message.pluralizable else "msgstr"
            output += ("%s %s" % (keyword, normalize(text))).split("\n")
        done = end
    return "\n".join(output + lines[done:]), failing


def translate(translator, texts, progress):
    """{text: the model's translation} for `texts`, a chunk of batches at a time."""
    texts, translated = list(dict.fromkeys(texts)), {}
    chunk = BATCHES_PER_CHUNK * translator.config["decode"]["batch_size"]
    with tqdm(total=len(texts), desc="translating", unit=" texts",
              disable=None if progress else True) as bar:  # None: on at a terminal only
        for start in range(0, len(texts), chunk):
            part = texts[start:start + chunk]
            translated.update(zip(part, (found.text for found in translator.translate(part))))
            bar.update(len(part))
    return translated


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m decode.po", description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 2)[2], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model_dir", required=True, help="a model directory written by train.py")
    parser.add_argument("--input", required=True, help="the .po catalog to fill")
    parser.add_argument("--output", required=True, help="where to write it (may be --input)")
    parser.add_argument("--include_fuzzy", action="store_true", help="translate fuzzy entries too")
    parser.add_argument("--no_progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    try:
        lines, catalog, singular = read_catalog(args.input)  # before the model: fails fast
        messages, skipped = to_fill(catalog, singular, args.include_fuzzy)
        import tensorflow.compat.v1 as tf
        from decode.translator import Translator
        tf.logging.set_verbosity(tf.logging.ERROR)
        tf.disable_v2_behavior()
        translator = Translator(args.model_dir)
        translated = translate(translator, [text for message in messages
                                            for text in sources(message, singular)],
                               not args.no_progress)
        text, failing = fill(lines, catalog, singular, messages, translated, "%s model %s, step %d"
                             % (MACHINE, translator.model_name, translator.step))
        with open(args.output + ".tmp", "w", encoding="utf-8", newline="") as file:
            file.write(text)
        os.replace(args.output + ".tmp", args.output)  # a crash leaves the output as it was
    except (ValueError, OSError) as error:
        print("error: %s" % error, file=sys.stderr)
        return 2
    for report in failing:
        print("%s:%s" % (args.output, report), file=sys.stderr)
    print("%s: %d filled, %d skipped, %d failing Babel's format checks"
          % (args.output, len(messages), skipped, len(failing)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
