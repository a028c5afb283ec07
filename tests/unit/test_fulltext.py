"""ZCTextIndex search strings to tsquery text."""

from __future__ import annotations

from plone_pgcatalog.fulltext import fold
from plone_pgcatalog.fulltext import to_tsquery_text

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
        ("((a", "( ( a ) )"),
        ("a)", "a"),
        ("it's", "(it <-> s)"),
    ],
)
def test_translation(text, expected):
    assert to_tsquery_text(text) == expected


def test_fold_ignores_case_and_accents():
    assert fold("ÉCOLE Müller") == "ecole muller"
