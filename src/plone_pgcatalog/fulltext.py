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


_TOKEN = re.compile(r'"[^"]*"?|\(|\)|[^\s()"]+')
_WORD = re.compile(r"\w+", re.UNICODE)
_OPERATORS = {"AND": "&", "OR": "|", "NOT": "!"}


def fold(text: str) -> str:
    """Lowercase ``text`` and strip accents, as Plone's lexicon normalizes."""
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    return stripped.lower()


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
    """One query token (a word, a prefix or a phrase) as tsquery text."""
    label = ":" + weight if weight else ""
    if token.startswith('"'):
        parts = [part + label for part in words(token.strip('"'))]
        return "(" + " <-> ".join(parts) + ")" if parts else None
    prefix = token.endswith("*")
    parts = words(token.rstrip("*"))
    if not parts:
        return None
    parts = [part + label for part in parts]
    if prefix:
        parts[-1] = parts[-1].replace(label, "") + ":*" + weight
    return parts[0] if len(parts) == 1 else "(" + " <-> ".join(parts) + ")"


def to_tsquery_text(text: str, weight: str = "") -> str | None:
    """Translate a ZCTextIndex search string into tsquery text.

    Adjacent terms are ANDed as in ZCTextIndex; a lone or dangling operator
    and unbalanced parentheses are dropped rather than raised.  Returns
    ``None`` when nothing searchable is left (only stop characters).
    ``weight`` (A-D) restricts every word to lexemes of that weight.
    """
    out: list[str] = []
    depth = 0

    def expects_operand() -> bool:
        return not out or out[-1] in ("&", "|", "!", "(")

    for token in _TOKEN.findall(text.replace("\x00", " ")):
        upper = token.upper()
        if upper in _OPERATORS and token.isupper():
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
        term = _term(token, weight)
        if term is None:
            continue
        if not expects_operand():
            out.append("&")
        out.append(term)
    while out and out[-1] in ("&", "|", "!", "("):
        if out.pop() == "(":
            depth -= 1
    out.extend(")" * depth)
    if not any(part not in ("&", "|", "!", "(", ")") for part in out):
        return None
    return " ".join(out)
