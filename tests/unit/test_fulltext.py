"""ZCTextIndex search strings to tsquery text."""

from __future__ import annotations

from plone_pgcatalog.fulltext import And
from plone_pgcatalog.fulltext import fold
from plone_pgcatalog.fulltext import has_negation
from plone_pgcatalog.fulltext import like_pattern
from plone_pgcatalog.fulltext import Not
from plone_pgcatalog.fulltext import Or
from plone_pgcatalog.fulltext import parse_text_query
from plone_pgcatalog.fulltext import Term
from plone_pgcatalog.fulltext import to_tsquery_text
from plone_pgcatalog.fulltext import tsquery_text

import pytest


@pytest.mark.parametrize(
    "text,expected",
    [
        ("plone", "plone"),
        ("Plone catalog", "plone & catalog"),
        ("cata*", "cata:*"),
        ("plone OR zope", "plone | zope"),
        ("plone NOT zope", "plone & ! zope"),
        ('"big catalog"', "(big <-> catalog)"),
        ("(a OR b) c", "( a | b ) & c"),
        ("Café", "cafe"),
        ("OR", None),
        ("", None),
        ("***", None),
        ("a AND", "a"),
        ("((a", "a"),
        ("a)", "a"),
        ("it's", "(it <-> s)"),
        # NUL is no space in ZCTextIndex's tokenizer: a phrase, as "it's".
        ("alpha\x00bravo", "(alpha <-> bravo)"),
        ("x -alpha\x00bravo", "x & ! (alpha <-> bravo)"),
        ("\x00", None),
    ],
)
def test_translation(text, expected):
    assert to_tsquery_text(text) == expected


def test_fold_ignores_case_and_accents():
    assert fold("ÉCOLE Müller") == "ecole muller"


def test_plone_lexicon_folding_maps_sharp_s_and_ligatures():
    assert fold("Straße Ærø Café") == "strasse aero cafe"


def test_a_leading_hyphen_negates_as_in_zctextindex():
    assert to_tsquery_text("festival -tickets") == "festival & ! tickets"
    assert to_tsquery_text('-"foo bar" baz') == "! (foo <-> bar) & baz"


def test_operators_in_any_case():
    assert to_tsquery_text("renovation and spring") == "renovation & spring"
    assert to_tsquery_text("a or b") == "a | b"


def test_a_glob_is_its_prefix_in_the_tsquery_and_a_like_pattern_of_its_words():
    """The tsquery finds the candidates; ``like_pattern`` the words that
    the whole glob matches (``tests/differential/test_text_globs.py``)."""
    assert to_tsquery_text("renovatio?") == "renovatio:*"
    assert to_tsquery_text("re*tion", "A") == "re:*A"
    assert parse_text_query("Renovatio?") == Term(
        ("renovatio",), prefix=True, glob="renovatio?"
    )
    assert parse_text_query("re*t?on").glob == "re*t?on"
    assert like_pattern("re*t?on") == "re%t_on"
    # Only wildcards at the end: a prefix, without a glob.
    assert parse_text_query("renov**") == Term(("renov",), prefix=True)
    assert parse_text_query("re*?").glob == "re*?"


def test_a_like_pattern_matches_its_own_characters_literally():
    assert like_pattern("a\\b%c_d?") == "a\\\\b\\%c\\_d_"


def test_only_negated_terms_search_nothing():
    for text in ("NOT renovation", "NOT (a OR b)", "-a", "-a -b"):
        assert to_tsquery_text(text) is None, text
    assert to_tsquery_text("a NOT (b OR c)") == "a & ! ( b | c )"


def test_parse_builds_the_tree_of_the_query():
    assert parse_text_query("python AND NOT (zope OR plone)") == And(
        (Term(("python",)), Not(Or((Term(("zope",)), Term(("plone",))))))
    )
    assert parse_text_query("a b OR c") == Or(
        (And((Term(("a",)), Term(("b",)))), Term(("c",)))
    )


def test_parse_negated_phrases_hyphenated_words_and_prefixes():
    konferenz = Term(("plone", "konferenz"))
    assert parse_text_query("Python -Plone-Konferenz") == And(
        (Term(("python",)), Not(konferenz))
    )
    assert parse_text_query('python NOT "Plone Konferenz"') == And(
        (Term(("python",)), Not(konferenz))
    )
    assert parse_text_query("python -Zop*") == And(
        (Term(("python",)), Not(Term(("zop",), prefix=True)))
    )


def test_parse_merges_nested_groups_of_one_operator():
    assert parse_text_query("a AND (b AND (c d))") == And(
        tuple(Term((word,)) for word in "abcd")
    )


def test_has_negation_looks_into_groups():
    assert has_negation(parse_text_query("a OR (b AND NOT c)"))
    assert not has_negation(parse_text_query("a OR (b AND c)"))


@pytest.mark.parametrize("weight", ["", "A"])
def test_tsquery_text_of_the_tree_groups_where_precedence_needs_it(weight):
    tree = parse_text_query("(a OR b) AND NOT (c d) OR e")
    label = ":" + weight if weight else ""
    assert tsquery_text(tree, weight) == (
        f"( a{label} | b{label} ) & ! ( c{label} & d{label} ) | e{label}"
    )
