"""Whose languages a catalog's searches and writes stem in
(``results.site_languages``): the current site's registry where the current
site is the catalog's site or below it (a sub-site may have settings of its
own), else the registry of the catalog's site (``_within``)."""

from __future__ import annotations

from Acquisition import Implicit
from plone_pgcatalog.results import _within


class _Item(Implicit):
    pass


def _tree():
    app = _Item()
    site = _Item().__of__(app)
    other = _Item().__of__(app)
    sub = _Item().__of__(site)
    return site, other, sub


def test_the_catalogs_own_site_is_within_it():
    site, _other, _sub = _tree()
    assert _within(site, site)


def test_a_sub_site_of_it_is_within_it():
    site, _other, sub = _tree()
    assert _within(sub, site)
    assert not _within(site, sub)


def test_another_site_or_none_is_not():
    site, other, _sub = _tree()
    assert not _within(other, site)
    assert not _within(None, site)
