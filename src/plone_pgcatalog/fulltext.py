"""Full-text: ZCTextIndex query syntax to PostgreSQL ``tsquery`` text.

Owns: folding text the way Plone's lexicon does (case and accents ignored),
and translating a search string (words, ``AND``/``OR``/``NOT``, parentheses,
"quoted phrases", ``word*`` prefixes) into the text of a ``tsquery``.  The
result is always a valid tsquery or ``None``: user input never reaches
PostgreSQL's parser as syntax, only as words made of letters and digits.

Also owns the choice of the text search configuration (stemmer) for a
language: ``SearchableText`` is matched by exact words and by their stems
in the item's language (see ``schema.searchable_vector``).

Pure: no database, no Zope.
"""

from __future__ import annotations

import re
import unicodedata

from plone.i18n.normalizer.base import baseNormalize


# As ZCTextIndex's tokenizer: parentheses, phrases and words, each
# optionally led by "-" (NOT).
_TOKEN = re.compile(r'-?"[^"]*"?|\(|\)|[^\s()"]+')
_GLOB = re.compile(r"[*?]")
_WORD = re.compile(r"\w+", re.UNICODE)
_OPERATORS = {"AND": "&", "OR": "|", "NOT": "!"}


def fold(text: str) -> str:
    """Lowercase ``text`` and strip accents, as Plone's lexicon normalizes.

    Plone's "Unicode Ignoring Accents Case Normalizer" applies plone.i18n's
    ``baseNormalize`` (accents off, ß → ss, æ → ae...) and lowercases.
    """
    return baseNormalize(unicodedata.normalize("NFKC", text)).lower()


#: Language codes (the part before any "-") and the snowball text search
#: configuration PostgreSQL 15 and newer ship for them.
_CONFIGS = {
    "ar": "arabic", "da": "danish", "de": "german", "el": "greek",
    "en": "english", "es": "spanish", "fi": "finnish", "fr": "french",
    "ga": "irish", "hu": "hungarian", "id": "indonesian", "it": "italian",
    "lt": "lithuanian", "nb": "norwegian", "ne": "nepali", "nl": "dutch",
    "nn": "norwegian", "no": "norwegian", "pt": "portuguese", "ro": "romanian",
    "ru": "russian", "sr": "serbian", "sv": "swedish", "ta": "tamil",
    "tr": "turkish",
}


def text_config(language) -> str:
    """The text search configuration that stems words of ``language``.

    ``simple`` (no stemming) for an unknown or empty language.
    """
    if not isinstance(language, str):
        return "simple"
    code = language.strip().lower().replace("_", "-").split("-")[0]
    return _CONFIGS.get(code, "simple")


def words(text: str) -> list[str]:
    """The folded words of ``text``."""
    return _WORD.findall(fold(text).replace("_", " "))


def index_text(text: str) -> str:
    """``text`` as the words PostgreSQL indexes: folded, space-separated.

    Splitting here, with the same rule as query words, keeps PostgreSQL's
    own parser from reading "a.b" or "x@y.z" as one token that a search
    for "a" would miss.
    """
    return " ".join(words(text.replace("\x00", " ")))


def _term(token: str, weight: str) -> str | None:
    """One query token (a word, a glob or a phrase) as tsquery text.

    A glob (``*`` or ``?``) matches words that start with what comes before
    its first wildcard: for ``?`` and inner wildcards a superset of
    ZCTextIndex's matches, as a tsquery knows only prefixes.
    """
    label = ":" + weight if weight else ""
    if token.startswith('"'):
        parts = [part + label for part in words(token.strip('"'))]
        return "(" + " <-> ".join(parts) + ")" if parts else None
    glob = _GLOB.search(token)
    parts = words(token[: glob.start()] if glob else token)
    if not parts:
        return None
    parts = [part + label for part in parts]
    if glob:
        parts[-1] = parts[-1].replace(label, "") + ":*" + weight
    return parts[0] if len(parts) == 1 else "(" + " <-> ".join(parts) + ")"


_SYNTAX = frozenset({"&", "|", "!", "(", ")"})


def _has_positive_term(parts: list[str]) -> bool:
    """Whether some term is not negated: a query of only ``NOT`` terms
    would match every object (ZCTextIndex refuses it)."""
    negated_groups = [False]
    previous = None
    for part in parts:
        if part == "(":
            negated_groups.append(previous == "!" or negated_groups[-1])
        elif part == ")":
            negated_groups.pop()
        elif part not in _SYNTAX:
            if previous != "!" and not negated_groups[-1]:
                return True
        previous = part
    return False


def to_tsquery_text(text: str, weight: str = "") -> str | None:
    """Translate a ZCTextIndex search string into tsquery text.

    Adjacent terms are ANDed as in ZCTextIndex; operators are recognized
    in any case, a leading ``-`` negates a term.  Where ZCTextIndex raises
    ParseError (a lone or dangling operator, unbalanced parentheses), the
    stray syntax is dropped instead.  Returns ``None`` when nothing
    searchable is left (only stop characters, or only negated terms).
    ``weight`` (A-D) restricts every word to lexemes of that weight.
    """
    out: list[str] = []
    depth = 0

    def expects_operand() -> bool:
        return not out or out[-1] in ("&", "|", "!", "(")

    for token in _TOKEN.findall(text.replace("\x00", " ")):
        upper = token.upper()
        if upper in _OPERATORS:
            op = _OPERATORS[upper]
            if op == "!":
                if not expects_operand():
                    out.append("&")
                out.append("!")
            elif not expects_operand():
                out.append(op)
            continue
        if token == "(":
            if not expects_operand():
                out.append("&")
            out.append("(")
            depth += 1
            continue
        if token == ")":
            if depth == 0:
                continue
            while out and out[-1] in ("&", "|", "!"):
                out.pop()
            if out and out[-1] == "(":
                out.pop()
            else:
                out.append(")")
            depth -= 1
            continue
        negate = token.startswith("-") and len(token) > 1
        term = _term(token[1:] if negate else token, weight)
        if term is None:
            continue
        if not expects_operand():
            out.append("&")
        if negate:
            out.append("!")
        out.append(term)
    while out and out[-1] in ("&", "|", "!", "("):
        if out.pop() == "(":
            depth -= 1
    out.extend(")" * depth)
    if not _has_positive_term(out):
        return None
    return " ".join(out)
