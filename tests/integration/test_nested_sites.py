"""Sites inside other things: a Zope folder (Plone's ``plone-addsite`` is
offered there), and another Plone site (only ``addPloneSite`` in code
makes one).

Several sites share the catalog's table, told apart by their paths
(``store.schema``): a site with this catalog is its whole subtree.  A
site in a Zope folder is one more site beside the others.  A site with
this catalog inside another one with it would have its rows found,
cleared and rebuilt by the outer one, so neither order of installing them
is taken: each fails with an error that names both sites, and leaves
everything as it was (``maintenance.nested_site_error``).  A plain Plone
site (ZCatalog) inside a site with this catalog, or the reverse, is what
ZCatalog makes of it.
"""

from __future__ import annotations

from OFS.Folder import manage_addFolder
from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog.errors import PGCatalogConfigurationError
from plone_pgcatalog.interfaces import IPGCatalogTool
from plone_pgcatalog.testing import EXTENSION_PROFILES
from plone_pgcatalog.testing import PGCATALOG_PROFILE
from Products.CMFPlone.factory import addPloneSite
from zope.component.hooks import setSite

import pytest
import transaction


def _paths(brains) -> list[str]:
    return sorted(brain.getPath() for brain in brains)


def _add_site(container, site_id: str, *, pgcatalog: bool):
    """A Plone site ``site_id`` in ``container``, with this catalog or
    with ZCatalog; the current site."""
    profiles = (*EXTENSION_PROFILES, *([PGCATALOG_PROFILE] if pgcatalog else []))
    addPloneSite(container, site_id, extension_ids=profiles)
    site = container[site_id]
    setSite(site)
    return site


def _page(container, page_id: str, portal_type: str = "Document"):
    with api.env.adopt_roles(["Manager"]):
        return api.content.create(
            container=container, type=portal_type, id=page_id, title=page_id
        )


@pytest.fixture
def portal(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    yield portal
    transaction.abort()
    setSite(portal)


def test_a_site_in_a_zope_folder_is_one_more_site(pg_layer, portal):
    app = pg_layer["app"]
    _page(portal, "outer-page")
    transaction.commit()
    manage_addFolder(app, "sites")
    site = _add_site(app["sites"], "plone", pgcatalog=True)
    assert IPGCatalogTool.providedBy(site.portal_catalog)
    _page(site, "inner-page")
    transaction.commit()
    assert _paths(
        site.portal_catalog.unrestrictedSearchResults(Title="inner-page")
    ) == ["/sites/plone/inner-page"]
    assert _paths(
        site.portal_catalog.unrestrictedSearchResults(portal_type="Document")
    ) == ["/sites/plone/inner-page"]
    setSite(portal)
    assert _paths(
        portal.portal_catalog.unrestrictedSearchResults(portal_type="Document")
    ) == ["/plone/outer-page"]


def test_a_site_inside_a_site_with_this_catalog_is_refused(portal):
    _page(portal, "outer-page")
    folder = _page(portal, "folder", "Folder")
    transaction.commit()
    with pytest.raises(PGCatalogConfigurationError) as raised:
        _add_site(folder, "inner", pgcatalog=True)
    message = str(raised.value)
    assert "the site /plone/folder/inner lies inside the site /plone" in message
    assert "keep ZCatalog in one of them" in message
    transaction.abort()
    setSite(portal)
    assert "inner" not in portal["folder"].objectIds()
    # The outer site's catalog is as it was.
    assert _paths(
        portal.portal_catalog.unrestrictedSearchResults(portal_type="Document")
    ) == ["/plone/outer-page"]


def test_a_site_holding_a_site_with_this_catalog_is_refused(pg_layer, portal):
    app = pg_layer["app"]
    outer = _add_site(app, "outer", pgcatalog=False)
    inner = _add_site(outer, "inner", pgcatalog=True)
    _page(inner, "inner-page")
    transaction.commit()
    setSite(outer)
    setup = outer.portal_setup
    with pytest.raises(PGCatalogConfigurationError) as raised:
        setup.runAllImportStepsFromProfile(f"profile-{PGCATALOG_PROFILE}")
    assert "the site /outer/inner lies inside the site /outer" in str(raised.value)
    transaction.abort()
    # Nothing changed: the outer site keeps ZCatalog, the inner site its
    # rows.
    outer = app["outer"]
    assert not IPGCatalogTool.providedBy(outer.portal_catalog)
    inner = outer["inner"]
    setSite(inner)
    assert _paths(
        inner.portal_catalog.unrestrictedSearchResults(portal_type="Document")
    ) == ["/outer/inner/inner-page"]


def test_a_zcatalog_site_inside_a_site_with_this_catalog(portal):
    """What ZCatalog makes of it: the inner site's content is cataloged by
    the inner site's ZCatalog, not here; a rebuild of the outer site walks
    into the inner one and catalogs its content here too (Plone's
    ``clearFindAndRebuild`` on ZCatalog does the same)."""
    folder = _page(portal, "folder", "Folder")
    transaction.commit()
    inner = _add_site(folder, "inner", pgcatalog=False)
    _page(inner, "inner-page")
    transaction.commit()
    assert _paths(
        inner.portal_catalog.unrestrictedSearchResults(Title="inner-page")
    ) == ["/plone/folder/inner/inner-page"]
    setSite(portal)
    catalog = portal.portal_catalog
    assert _paths(catalog.unrestrictedSearchResults(Title="inner-page")) == []
    catalog.clearFindAndRebuild()
    transaction.commit()
    assert _paths(catalog.unrestrictedSearchResults(Title="inner-page")) == [
        "/plone/folder/inner/inner-page"
    ]
