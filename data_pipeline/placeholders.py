"""Placeholders and inline tags of software messages as numbered protected tokens ｟0｠, ｟1｠, ...

A model sees "Delete ｟0｠ from ｟1｠?" for "Delete %(name)s from {place}?", one SentencePiece
piece a token, learns to copy the tokens, and `restore` puts the source's own text back.
What counts as a placeholder, and why: docs/DATA-NOTES.md.
"""

import re

MAX_TOKENS = 16  # ｟0｠ ... ｟15｠ are in every vocabulary; further placeholders stay text
TOKENS = ["｟%d｠" % index for index in range(MAX_TOKENS)]
_PLACEHOLDER = re.compile(r"""
    %%                                                   # python-format's percent sign
  | (?P<literal> \{\{ | \}\} )                           # python-brace-format's braces: text
  | (?P<printf> %(?P<name>\(\w*\))?                      # python-format, as Babel's checker
        [-\#0+]? (?:\*|\d+)? (?:\.(?:\*|\d+))? [hlL]? [diouxXeEfFgGcrs] )  # but no space flag
  | (?P<brace> \{ (?P<field> /?\w+ (?:\.\w+ | \[[^\[\]{}]+\])* )?  # python-brace-format
        (?:![rsa])? (?::(?:[^{}]?[<>=^])?[-+\ ]?z?\#?0?\d*[,_]?(?:\.\d+)?[bcdeEfFgGnosxX%]?)? \} )
  | \$\{\w+(?:\.\w+)*\}                                # Zope, Plone, Mailman: ${name}
  | </?[A-Za-z][\w:.-]*(?:\s[^<>]*)?/?>                   # a tag: <b>, </b>, <a href="...">, <br/>
  | ｟\d+｠                                               # a protected token typed in: itself
""", re.X)
_TOKEN = re.compile(r"( ?)｟(\d+)｠( ?)")


def find(text):
    """The placeholders and tags of `text`, in order, as written ("%(name)s", "<b>", "{}")."""
    return [match[0] for match in _matches(text)]


def protect(text, limit=MAX_TOKENS):
    """(`text` with its first `limit` placeholders and tags ｟0｠, ｟1｠, ... in order, their text);
    further placeholders stay as written: the model sees them as text."""
    matches = _matches(text)[:limit]
    return _tokens_for(text, matches, range(len(matches))), [match[0] for match in matches]


def protect_target(target, originals):
    """A translation with the tokens of its source's placeholders, or None when it does not hold
    exactly them (as a multiset, the positional ones `%s` and `{}` in the source's order). Each
    takes the token of the first source placeholder with its text that no earlier one took:
    "%(b)s %(a)s" for "%(a)s %(b)s" gives "｟1｠ ｟0｠"."""
    matches = _matches(target)
    if sorted(match[0] for match in matches) != sorted(originals):
        return None
    free, tokens = list(originals), []
    for match in matches:
        tokens.append(free.index(match[0]))
        free[tokens[-1]] = None  # taken
    positional = [index for match, index in zip(matches, tokens) if _positional(match)]
    return _tokens_for(target, matches, tokens) if positional == sorted(positional) else None


def restore(text, originals):
    """`text` with each token ｟k｠ back as originals[k], each time it occurs; a token with no
    original (the source had fewer placeholders) is dropped with a space beside it."""
    def original(match):
        index = int(match[2])
        if index < len(originals):
            return match[1] + originals[index] + match[3]
        return " " if match[1] and match[3] else ""
    return _TOKEN.sub(original, text)


def _tokens_for(text, matches, indexes):
    """`text` with each of its matches replaced by the token of its index."""
    for match, index in reversed(list(zip(matches, indexes))):
        text = text[:match.start()] + TOKENS[index] + text[match.end():]
    return text


def _matches(text):
    return [match for match in _PLACEHOLDER.finditer(text) if not match["literal"]]


def _positional(match):
    """Whether a placeholder takes its argument by position: `%s`, `%5.2f`, `{}`."""
    return (match["printf"] and not match["name"]) or (match["brace"] and not match["field"])
