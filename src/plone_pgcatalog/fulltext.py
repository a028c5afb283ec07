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

from dataclasses import dataclass
from plone.i18n.normalizer.base import baseNormalize

import html
import logging
import re
import unicodedata

logger = logging.getLogger(__name__)

# As ZCTextIndex's tokenizer: parentheses, phrases and words, each
# optionally led by "-" (NOT).
_TOKEN = re.compile(r'-?"[^"]*"?|\(|\)|[^\s()"]+')
_GLOB = re.compile(r"[*?]")
_WORD = re.compile(r"\w+", re.UNICODE)
_OPERATORS = {"AND": "&", "OR": "|", "NOT": "~"}
#: Tokens after which a term is expected (``_repaired_tokens``): ``+`` is
#: the AND between adjacent terms, ``~`` the keyword NOT (which, as in
#: ZCTextIndex, negates the adjacent terms after it together), ``!`` a
#: term's leading ``-``.
_EXPECTING = ("&", "+", "|", "~", "!", "(")


# Plone's lexicon (``plone_lexicon``, which SearchableText, Title and
# Description use): Products.CMFPlone's "Unicode Whitespace splitter" and
# "Unicode Ignoring Accents Case Normalizer" (``Products.CMFPlone.
# UnicodeSplitter``).  The splitter takes the words (``\w+``) of the text
# in NFKC form and cuts each into runs of one script: the scripts written
# without spaces between words (Hangul, Japanese kana and CJK ideographs,
# Thai: ``_UNSPACED``) give their runs as pairs of characters, each run's
# last character also alone ("日本語" → 日本, 本語, 語), so that a search
# for a word inside a run finds it.  The normalizer takes the accents off a
# word that starts with a Latin letter (``baseNormalize``) and lowercases
# every word: other scripts keep their letters (plone.i18n's
# ``baseNormalize`` spells them in Latin letters, "日本" as "ri ben": a
# search for "日本" missed "は日本", which became "hari ben").

#: The scripts Plone's splitter cuts into pairs of characters (its
#: ``rangetable``): Hangul syllables; kana and CJK ideographs; Thai.
_SCRIPTS = (
    "\uac00-\ud7af",
    "\u3040-\u30ff\u4e00-\u9fff\u3400-\u4dbf\uf900-\ufaff",
    "\u0e00-\u0e7f",
)
_UNSPACED = "".join(_SCRIPTS)
#: A word's runs: of other characters, or of one of ``_SCRIPTS``.
_RUNS = re.compile(
    "|".join([f"[^{_UNSPACED}]+", *(f"[{script}]+" for script in _SCRIPTS)])
)
_IS_UNSPACED = re.compile(f"[{_UNSPACED}]")


def _folded(word: str) -> list[str]:
    """The words of ``word`` (a run of other characters than ``_SCRIPTS``)
    as Plone's normalizer gives them: without accents if it starts with a
    Latin letter (U+0041 to U+024F), lowercased; "_" separates words for
    PostgreSQL's parser."""
    if word.isascii():
        # Most words of most texts: baseNormalize keeps them as they are.
        folded = word.lower()
        return folded.split("_") if "_" in folded else [folded]
    return _WORD.findall(_normalized(word))


def _normalized(word: str) -> str:
    """``word`` as Plone's normalizer gives it (accents off if it starts
    with a Latin letter, U+0041 to U+024F; lowercased), "_" a space."""
    if "\u0041" <= word[0] <= "\u024f":
        word = baseNormalize(word)
    return word.lower().replace("_", " ")


def _pairs(run: str, alone: bool) -> list[str]:
    """A run of ``_SCRIPTS`` as Plone's splitter cuts it: its pairs of
    characters, and (``alone``) its last character on its own."""
    return [run[i : i + 2] for i in range(len(run) - (0 if alone else 1))]


def _words(text: str) -> list[str]:
    """The words of ``text`` as Plone's lexicon indexes them (a search
    term's: ``_query_words``)."""
    text = unicodedata.normalize("NFKC", text)
    if text.isascii():
        return _WORD.findall(text.lower().replace("_", " "))
    found: list[str] = []
    if not _IS_UNSPACED.search(text):
        for word in _WORD.findall(text):
            found += _folded(word)
        return [word for word in found if word]
    for word in _WORD.findall(text):
        for run in _RUNS.findall(word):
            if _IS_UNSPACED.match(run):
                found += _pairs(run, True)
            else:
                found += _folded(run)
    return [word for word in found if word]


def fold(text: str) -> str:
    """``text`` as the words Plone's lexicon makes of it, separated by
    spaces: accents off the words that start with a Latin letter, every
    word lowercased, the scripts written without spaces as pairs of
    characters (see above)."""
    return " ".join(_words(text))


#: Language codes (the part before any "-") and the snowball text search
#: configuration PostgreSQL 15 and newer ship for them.
_CONFIGS = {
    "ar": "arabic",
    "da": "danish",
    "de": "german",
    "el": "greek",
    "en": "english",
    "es": "spanish",
    "fi": "finnish",
    "fr": "french",
    "ga": "irish",
    "hu": "hungarian",
    "id": "indonesian",
    "it": "italian",
    "lt": "lithuanian",
    "nb": "norwegian",
    "ne": "nepali",
    "nl": "dutch",
    "nn": "norwegian",
    "no": "norwegian",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "sr": "serbian",
    "sv": "swedish",
    "ta": "tamil",
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
    """The folded words of ``text``, as they are indexed (``fold``)."""
    return _words(text)


def index_text(text: str) -> str:
    """``text`` as the words PostgreSQL indexes: folded, space-separated.

    Splitting here, with the same rule as query words, keeps PostgreSQL's
    own parser from reading "a.b" or "x@y.z" as one token that a search
    for "a" would miss.  At most what a ``tsvector`` holds
    (``within_vector``).
    """
    return within_vector(" ".join(words(text.replace("\x00", " "))))


#: What a ``tsvector`` holds at most: PostgreSQL refuses a longer one
#: ("string is too long for tsvector"), and the commit of a page with the
#: text of a long document (a book's PDF, a pasted log) failed.
VECTOR_BYTES = 1_048_575
#: What the words of one object may cost, estimated with a margin: each
#: distinct word 10 bytes and its own (a lexeme, its entry, a position),
#: each more occurrence 2 (a position, up to 256 a word), twice (the exact
#: words and their stems, ``schema.searchable_vector``).
_VECTOR_BUDGET = 1_000_000
#: Of it, what the text as written may take (positions, so phrases and
#: ranking as for any text); the rest gives the words after that point,
#: each once.
_WRITTEN_BUDGET = 600_000


def within_vector(text: str) -> str:
    """``text`` (``index_text``'s words) if its ``tsvector`` fits
    (``VECTOR_BYTES``), else its words as far as the written budget goes,
    then each later word not found before, once: every word is found, and
    phrases and ranking hold for the first part.  Words past even that
    budget (a text of several hundred thousand different words) are left
    out, and logged.  Short texts (up to about 80 KB, most) are not
    counted: each byte costs 12 at most."""
    size = len(text) if text.isascii() else len(text.encode("utf-8"))
    if 12 * size <= _VECTOR_BUDGET:
        return text
    kept: list[str] = []
    seen: dict[str, int] = {}
    cost = 0
    items = text.split(" ")
    for position, word in enumerate(items):
        count = seen.get(word)
        step = 2 * (10 + len(word.encode("utf-8"))) if count is None else 4
        if count is not None and count >= 256:
            step = 0
        if cost + step > _WRITTEN_BUDGET:
            break
        cost += step
        seen[word] = (count or 0) + 1
        kept.append(word)
    else:
        return text
    left_out = 0
    for word in items[position:]:
        if word in seen:
            continue
        step = 2 * (10 + len(word.encode("utf-8")))
        seen[word] = 0
        if cost + step > _VECTOR_BUDGET:
            left_out += 1
            continue
        cost += step
        kept.append(word)
    if left_out:
        logger.warning(
            "plone_pgcatalog: a text of %d bytes has more different words than"
            " a tsvector holds: %d of them are not indexed",
            size,
            left_out,
        )
    return " ".join(kept)


@dataclass(frozen=True)
class Term:
    """A word, or words in a row: a "quoted phrase", or a word that
    punctuation splits (``Plone-Konferenz``, as ZCTextIndex splits it).
    ``prefix``: the last word matches every word that starts with it.
    ``glob``: a word with ``?`` or a wildcard inside it (``renovatio?``,
    ``re*tion``), folded; it matches the words the whole pattern matches,
    as ZCTextIndex's ``globToWordIds`` (``*`` any characters, ``?`` one).
    A tsquery knows only prefixes: its ``words`` are the text before the
    first wildcard, as a prefix, which finds the candidates
    (``like_pattern`` tells the words of those that match)."""

    words: tuple[str, ...]
    prefix: bool = False
    glob: str = ""


@dataclass(frozen=True)
class Not:
    operand: Node


@dataclass(frozen=True)
class And:
    operands: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    operands: tuple[Node, ...]


#: A parsed search string.
Node = Term | Not | And | Or


def _term(token: str) -> Term | None:
    """One query token (a word, a glob or a phrase), or None without words.

    As ZCTextIndex with Plone's lexicon: a token of several words (a
    "quoted phrase", words that punctuation or a change of script splits,
    the pairs of a Japanese word) is a phrase of exact words, wildcards
    dropped; a token of one word is a glob if it has a wildcard (``*`` or
    ``?``): a prefix if its wildcards are ``*`` at its end, else a
    ``Term.glob``.  One character of ``_SCRIPTS`` is such a prefix, as
    texts hold it in pairs.
    """
    found = _query_words(token.strip('"') if token.startswith('"') else token)
    if not found:
        return None
    if len(found) == 1:
        word = found[0]
        wildcard = _GLOB.search(word)
        if wildcard:
            # "renov*" is a prefix; "renovatio?", "re*tion", "re*?" a glob.
            inner = word[wildcard.start() :].strip("*")
            return Term(
                (word[: wildcard.start()],), prefix=True, glob=word if inner else ""
            )
        return Term((word,))
    exact = (_GLOB.sub("", word) for word in found)
    return Term(tuple(word for word in exact if word))


#: A word of a search term with its wildcards (Plone's ``rxGlob_U``).
_GLOB_WORD = re.compile(r"\w+[\w*?]*")
#: Words with wildcards, of a run of other scripts than ``_SCRIPTS``.
_GLOB_PIECE = re.compile(r"[^\W_][\w*?]*|\d[\w*?]*")


def _query_words(text: str) -> list[str]:
    """The words of a search term as Plone's lexicon reads it
    (``processGlob``), wildcards kept: a run of ``_SCRIPTS`` gives its
    pairs of characters (one that ends its word: not its last character
    alone), a run of one character that character and ``*``."""
    found: list[str] = []
    for word in _GLOB_WORD.findall(unicodedata.normalize("NFKC", text)):
        runs = [run for run in _RUNS.findall(word) if _WORD.search(run)]
        for position, run in enumerate(runs):
            if not _IS_UNSPACED.match(run):
                found += _GLOB_PIECE.findall(_normalized(run.lstrip("*?")))
            elif len(run) == 1:
                found.append(run + "*")
            else:
                found += _pairs(run, position < len(runs) - 1)
    return found


def _repaired_tokens(text: str) -> list:
    """The tokens of ``text``: ``Term`` operands and the operators ``&``,
    ``|``, ``~`` (NOT), ``!`` (a leading ``-``), ``+`` (between adjacent
    terms), ``(``, ``)``, balanced and each where a tsquery may have it.

    Adjacent terms are ANDed as in ZCTextIndex; operators are recognized
    in any case, a leading ``-`` negates a term.  Where ZCTextIndex raises
    ParseError (a lone or dangling operator, unbalanced parentheses), the
    stray syntax is dropped instead.  A NUL character is no space, as in
    ZCTextIndex's tokenizer: it splits the words of one token, as the
    splitter splits them in the indexed text (``alpha%00bravo`` in a URL is
    the phrase "alpha bravo").
    """
    out: list = []
    depth = 0

    def expects_operand() -> bool:
        return not out or out[-1] in _EXPECTING

    for token in _TOKEN.findall(text):
        upper = token.upper()
        if upper in _OPERATORS:
            op = _OPERATORS[upper]
            if op == "~":
                if not expects_operand():
                    out.append("&")
                out.append("~")
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
            while out and out[-1] in _EXPECTING[:-1]:
                out.pop()
            if out and out[-1] == "(":
                out.pop()
            else:
                out.append(")")
            depth -= 1
            continue
        negate = token.startswith("-") and len(token) > 1
        term = _term(token[1:] if negate else token)
        if term is None:
            continue
        if not expects_operand():
            out.append("+")
        if negate:
            out.append("!")
        out.append(term)
    while out and out[-1] in _EXPECTING:
        if out.pop() == "(":
            depth -= 1
    out.extend(")" * depth)
    return out


def _tree(tokens: list) -> Node:
    """The tree of repaired tokens, with ZCTextIndex's precedence: NOT
    (``~``) negates the adjacent terms after it (``a AND NOT b c`` is
    ``a & !(b & c)``), a ``-`` its term, AND binds tighter than OR."""
    position = 0

    def either() -> Node:
        nonlocal position
        operands = [both()]
        while position < len(tokens) and tokens[position] == "|":
            position += 1
            operands.append(both())
        return _joined(Or, operands)

    def both() -> Node:
        nonlocal position
        operands = [single()]
        while position < len(tokens) and tokens[position] in ("&", "+"):
            position += 1
            operands.append(single())
        return _joined(And, operands)

    def single() -> Node:
        nonlocal position
        token = tokens[position]
        position += 1
        if token == "!":
            return Not(single())
        if token == "~":
            operands = [single()]
            while position < len(tokens) and tokens[position] == "+":
                position += 1
                operands.append(single())
            return Not(_joined(And, operands))
        if token == "(":
            node = either()
            position += 1  # its ")": repaired tokens are balanced
            return node
        return token

    return either()


def _joined(kind: type[And] | type[Or], operands: list[Node]) -> Node:
    """``operands`` joined by ``kind``; nested nodes of that kind merge
    (``a & (b & c)`` is ``a & b & c``)."""
    flat: list[Node] = []
    for operand in operands:
        flat.extend(operand.operands if isinstance(operand, kind) else (operand,))
    return flat[0] if len(flat) == 1 else kind(tuple(flat))


def _has_positive_term(node: Node) -> bool:
    """Whether some term is not negated: a query of only ``NOT`` terms
    would match every object (ZCTextIndex refuses it)."""
    if isinstance(node, Term):
        return True
    if isinstance(node, Not):
        return False
    return any(_has_positive_term(operand) for operand in node.operands)


def has_glob(node: Node) -> bool:
    """Whether ``node`` has a ``Term.glob``."""
    if isinstance(node, Term):
        return bool(node.glob)
    if isinstance(node, Not):
        return has_glob(node.operand)
    return any(has_glob(operand) for operand in node.operands)


def like_pattern(glob: str) -> str:
    """A ``Term.glob`` as a pattern of SQL's ``LIKE``, which matches the
    whole word as ZCTextIndex's glob does: ``*`` any characters, ``?``
    one."""
    literal = glob.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return literal.replace("*", "%").replace("?", "_")


def has_negation(node: Node) -> bool:
    """Whether ``node`` negates anything."""
    if isinstance(node, Term):
        return False
    if isinstance(node, Not):
        return True
    return any(has_negation(operand) for operand in node.operands)


def parse_text_query(text: str) -> Node | None:
    """The tree of a ZCTextIndex search string (see ``_repaired_tokens``).

    ``None`` when nothing searchable is left (only stop characters, only
    negated terms, or an alternative of ``OR`` with only negated terms).
    """
    tokens = _repaired_tokens(text)
    if not tokens:
        return None
    tree = _tree(tokens)
    return tree if _has_positive_term(tree) and _alternatives_positive(tree) else None


def _alternatives_positive(node: Node) -> bool:
    """Whether every operand of every OR holds a word that is not negated.

    ZCTextIndex raises ParseError for ``a OR NOT b`` and ``-b OR a``; read
    as ``a | !b``, they would find nearly everything."""
    if isinstance(node, Term):
        return True
    if isinstance(node, Not):
        return _alternatives_positive(node.operand)
    if isinstance(node, Or) and not all(map(_has_positive_term, node.operands)):
        return False
    return all(map(_alternatives_positive, node.operands))


def tsquery_text(node: Node, weight: str = "") -> str:
    """``node`` as the text of a ``tsquery``.

    ``weight`` (A-D) restricts every word to lexemes of that weight.
    """
    if isinstance(node, Term):
        label = ":" + weight if weight else ""
        parts = [word + label for word in node.words]
        if node.prefix:
            parts[-1] = node.words[-1] + ":*" + weight
        return parts[0] if len(parts) == 1 else "(" + " <-> ".join(parts) + ")"
    if isinstance(node, Not):
        return "! " + _operand_text(node.operand, weight, (And, Or))
    if isinstance(node, And):
        return " & ".join(_operand_text(op, weight, (Or,)) for op in node.operands)
    return " | ".join(tsquery_text(operand, weight) for operand in node.operands)


def _operand_text(node: Node, weight: str, grouped: tuple[type, ...]) -> str:
    text = tsquery_text(node, weight)
    return "( " + text + " )" if isinstance(node, grouped) else text


def to_tsquery_text(text: str, weight: str = "") -> str | None:
    """Translate a ZCTextIndex search string into tsquery text.

    ``None`` when nothing searchable is left (``parse_text_query``);
    ``weight`` (A-D) restricts every word to lexemes of that weight.
    """
    tree = parse_text_query(text)
    return None if tree is None else tsquery_text(tree, weight)


# -- snippets: the text as written, and the words to mark in it ----------------

#: The longest text kept for snippets, in characters; a match beyond it
#: gets the text's beginning as its snippet.
MAX_SOURCE = 100_000
#: Where the marked words of a snippet begin and end, between PostgreSQL
#: (``ts_headline``) and the HTML they become: control characters no kept
#: text holds (``source_text`` takes them out).
MARK_START = "\x02"
MARK_END = "\x03"
_NOT_KEPT = str.maketrans({"\x00": " ", MARK_START: " ", MARK_END: " "})


class IndexedText(str):
    """SearchableText's words as indexed (``index_text``), with the text
    they were taken from as ``source`` (the object's text for snippets)."""

    source: str

    def __new__(cls, words: str, source: str) -> IndexedText:
        text = super().__new__(cls, words)
        text.source = source
        return text


def source_text(text: str) -> str:
    """``text`` as kept for snippets: without NUL and the mark characters,
    at most ``MAX_SOURCE`` characters."""
    return text[:MAX_SOURCE].translate(_NOT_KEPT)


def _positive_terms(node: Node) -> list[Term]:
    """The terms of ``node`` that are not negated: what a match holds."""
    if isinstance(node, Term):
        return [node]
    if isinstance(node, Not):
        return []
    return [term for operand in node.operands for term in _positive_terms(operand)]


@dataclass(frozen=True)
class Highlight:
    """What a snippet marks, for a search string.

    ``query``: the text of a ``tsquery`` of every word a match holds (not
    the negated ones), each alone (phrases too: their words are marked
    where they occur), a prefix as a prefix; parsed in each object's
    language, so that ``ts_headline`` marks the words whose stems match,
    as the search matched them.  ``words``: the same words as typed
    (lowercased, accents kept) and folded, where a snippet looks for the
    first match (stems are added in SQL).
    """

    query: str
    words: tuple[str, ...]

    @property
    def prefixes(self) -> frozenset[str]:
        """The words of ``query`` that are prefixes (``mark_unspaced``)."""
        return frozenset(
            word[:-2] for word in self.query.split(" | ") if word.endswith(":*")
        )


def highlight(text: str) -> Highlight | None:
    """The ``Highlight`` of a ZCTextIndex search string, or None when it
    searches nothing."""
    tree = parse_text_query(text)
    if tree is None:
        return None
    terms = _positive_terms(tree)
    folded = {word for term in terms for word in term.words}
    prefixes = {term.words[-1] for term in terms if term.prefix}
    # As typed: a word the lexicon folds ("Küste") is written so in texts
    # whose language has no stemmer to fold it.
    typed = {
        word
        for word in _WORD.findall(text.lower().replace("_", " "))
        if word not in folded and fold(word) in folded
    }
    prefixes |= {word for word in typed if fold(word) in prefixes}
    parts = sorted(
        (word + ":*" if word in prefixes else word) for word in folded | typed
    )
    return Highlight(" | ".join(parts), tuple(sorted(folded | typed)))


def passage_ends(
    marked: str, passage: str, at_start: bool, at_end: bool
) -> tuple[bool, bool]:
    """Whether the snippet ``marked`` that ``ts_headline`` chose from
    ``passage`` begins and ends the text (the passage does: ``at_start``,
    ``at_end``).  ``ts_headline`` may leave out punctuation and tags at
    the ends: the words tell."""
    shown = _WORD.findall(marked.replace(MARK_START, "").replace(MARK_END, ""))
    words = _WORD.findall(passage)
    return at_start and shown[:3] == words[:3], at_end and shown[-3:] == words[-3:]


#: A snippet of a text in ``_SCRIPTS`` (``mark_unspaced``): characters
#: before its first match, and in all.
_UNSPACED_LEAD = 40
_UNSPACED_WIDTH = 160


#: A letter or digit of a word that is not of ``_SCRIPTS``: "Plone" is a
#: word of its own in "Plone入門", as Plone's lexicon splits it.
_SPACED_LETTER = f"[^\\W{_UNSPACED}]"


def mark_unspaced(
    passage: str, words: tuple[str, ...], prefixes: frozenset[str] = frozenset()
) -> str | None:
    """``passage`` around its first match of the search's ``words`` of
    ``_SCRIPTS`` (pairs of characters, single ones), each match marked;
    None if it holds none.  ``ts_headline`` marks none of them:
    PostgreSQL's parser reads a run of these scripts as one word.

    The search's other words are marked too, in any case, where a word of
    the passage is one of them or, for ``prefixes``, begins with one (a
    search for "Plone 入門" marks both; their stems, which ``ts_headline``
    marks in a passage without those scripts, are not)."""
    spans = []
    for word in {word for word in words if _IS_UNSPACED.match(word)}:
        start = passage.find(word)
        while start >= 0:
            spans.append((start, start + len(word)))
            start = passage.find(word, start + 1)
    if not spans:
        return None
    for word in {word for word in words if not _IS_UNSPACED.match(word)}:
        rest = f"{_SPACED_LETTER}*" if word in prefixes else ""
        pattern = re.compile(
            f"(?<!{_SPACED_LETTER}){re.escape(word)}{rest}(?!{_SPACED_LETTER})",
            re.IGNORECASE,
        )
        spans += [found.span() for found in pattern.finditer(passage)]
    spans.sort()
    begin = max(0, spans[0][0] - _UNSPACED_LEAD)
    end = min(len(passage), begin + _UNSPACED_WIDTH)
    merged: list[list[int]] = []
    for start, stop in spans:
        start, stop = max(start, begin), min(stop, end)
        if start >= stop:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], stop)
        else:
            merged.append([start, stop])
    parts, at = [], begin
    for start, stop in merged:
        parts += [passage[at:start], MARK_START, passage[start:stop], MARK_END]
        at = stop
    parts.append(passage[at:end])
    return "".join(parts)


def snippet_html(marked: str, text_starts: bool, text_ends: bool) -> str:
    """A snippet as HTML: the passage escaped, its matched words in
    ``<mark>``, an ellipsis where it does not begin or end the text."""
    body = (
        html.escape(marked, quote=False)
        .replace(MARK_START, "<mark>")
        .replace(MARK_END, "</mark>")
    )
    return ("" if text_starts else "… ") + body + ("" if text_ends else " …")
