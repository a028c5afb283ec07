"""GenericSetup ``catalog.xml`` on the PostgreSQL catalog, as on ZCatalog.

A profile in a temporary directory is registered for one import and run
through ``portal_setup`` (the ``catalog`` import step), on the pg site and
on the stock ZCatalog site; what each site then answers is compared.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog.store.connection import ddl_connection
from plone_pgcatalog.store.schema import sql_index_name
from Products.GenericSetup import EXTENSION
from Products.GenericSetup import profile_registry
from tests.conftest import collect_in
from xml.dom import minidom

import io
import itertools
import tarfile
import transaction

ADD = """\
<?xml version="1.0"?>
<object name="portal_catalog">
 <index name="pgc_color" meta_type="FieldIndex">
  <indexed_attr value="pgc_color"/>
 </index>
 <index name="pgc_tags" meta_type="KeywordIndex">
  <indexed_attr value="pgc_tags"/>
 </index>
 <column value="pgc_color"/>
</object>
"""

REMOVE = """\
<?xml version="1.0"?>
<object name="portal_catalog">
 <index name="pgc_color" remove="True"/>
 <index name="pgc_tags" remove="True"/>
 <column value="pgc_color" remove="True"/>
</object>
"""

_profiles = itertools.count()


def _import(portal, tmp_path, body: str) -> None:
    """Run the ``catalog`` import step of a profile holding ``body``."""
    directory = tmp_path / f"profile{next(_profiles)}"
    directory.mkdir(parents=True)
    (directory / "catalog.xml").write_text(body, encoding="utf-8")
    name = f"test_{directory.name}"
    profile_registry.registerProfile(
        name, "catalog.xml test", "", str(directory), "plone_pgcatalog", EXTENSION
    )
    try:
        portal.portal_setup.runImportStepFromProfile(
            f"profile-plone_pgcatalog:{name}", "catalog", run_dependencies=False
        )
    finally:
        profile_registry.unregisterProfile(name, "plone_pgcatalog")
    transaction.commit()


def _content(portal) -> None:
    setRoles(portal, TEST_USER_ID, ["Manager"])
    for id, color, tags in (("p1", "red", ["a", "b"]), ("p2", "blue", ["b"])):
        page = api.content.create(container=portal, type="Document", id=id, title=id)
        page.pgc_color = color
        page.pgc_tags = tags
    api.content.create(container=portal, type="Document", id="p3", title="p3")
    transaction.commit()


def _ids(catalog, **query) -> list[str]:
    return sorted(b.getId for b in catalog.unrestrictedSearchResults(**query))


def _answers(catalog) -> dict:
    return {
        "red": _ids(catalog, pgc_color="red"),
        "tag b": _ids(catalog, pgc_tags="b"),
        "tags a or b": _ids(catalog, pgc_tags=["a", "b"], portal_type="Document"),
    }


def _metadata(catalog) -> dict:
    return {
        b.getId: b.pgc_color
        for b in catalog.unrestrictedSearchResults(portal_type="Document")
    }


def _exported(portal) -> tuple[list[str], list[str]]:
    """Index and column nodes of the ``catalog`` export step's catalog.xml."""
    result = portal.portal_setup.runExportStep("catalog")
    with tarfile.open(fileobj=io.BytesIO(result["tarball"])) as tar:
        body = tar.extractfile("catalog.xml").read()
    root = minidom.parseString(body).documentElement
    indexes = [
        node.toxml()
        for node in root.childNodes
        if node.nodeType == node.ELEMENT_NODE and node.nodeName == "index"
    ]
    columns = [
        node.getAttribute("value")
        for node in root.childNodes
        if node.nodeType == node.ELEMENT_NODE and node.nodeName == "column"
    ]
    return indexes, columns


def _sql_indexes(portal) -> set[str]:
    with ddl_connection(portal.portal_catalog) as conn:
        rows = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'pgcatalog_objects'"
        ).fetchall()
    return {name for (name,) in rows}


def _in_both(collector, tmp_path) -> tuple[dict, dict]:
    """What ``collector(directory)`` collects in the pg site, and in the
    stock ZCatalog site."""
    return (
        collect_in("pg", collector(tmp_path / "pg")),
        collect_in("zcatalog", collector(tmp_path / "zc")),
    )


def _add_and_use(tmp_path):
    """What a site answers before and after catalog.xml adds the indexes."""

    def collect(layer) -> dict:
        portal = layer["portal"]
        catalog = portal.portal_catalog
        _content(portal)
        seen = {}
        _import(portal, tmp_path, ADD)
        seen["definitions"] = {
            name: (
                catalog._catalog.getIndex(name).meta_type,
                list(catalog._catalog.getIndex(name).getIndexSourceNames()),
            )
            for name in ("pgc_color", "pgc_tags")
        }
        seen["column"] = "pgc_color" in catalog.schema()
        seen["after import"] = _answers(catalog)
        seen["metadata after import"] = _metadata(catalog)
        for name in ("pgc_color", "pgc_tags"):
            catalog.reindexIndex(name, None)
        transaction.commit()
        seen["after reindexIndex"] = _answers(catalog)
        api.content.create(container=portal, type="Document", id="p4", title="p4")
        portal.p4.pgc_color = "red"
        portal.p4.reindexObject()
        portal.p1.reindexObject()
        transaction.commit()
        seen["after new content"] = _answers(catalog)
        seen["metadata after reindexObject"] = _metadata(catalog)
        seen["export"] = _exported(portal)
        if layer.get("pgcatalog_dsn"):
            seen["sql indexes"] = _sql_indexes(portal)
        return seen

    return collect


def test_catalog_xml_adds_indexes_and_a_column_as_on_zcatalog(tmp_path):
    pg, zc = _in_both(_add_and_use, tmp_path)
    # The typed columns and their SQL indexes exist once the import's
    # transaction has committed.
    sql_indexes = pg.pop("sql indexes")
    assert sql_index_name("pgc_color", "c") in sql_indexes
    assert sql_index_name("pgc_tags", "c") in sql_indexes
    assert pg == zc
    # What both give, spelled out: as stock Plone, an index added by
    # catalog.xml is empty until it is reindexed.
    assert pg["definitions"] == {
        "pgc_color": ("FieldIndex", ["pgc_color"]),
        "pgc_tags": ("KeywordIndex", ["pgc_tags"]),
    }
    assert pg["after import"] == {"red": [], "tag b": [], "tags a or b": []}
    assert pg["after reindexIndex"] == {
        "red": ["p1"],
        "tag b": ["p1", "p2"],
        "tags a or b": ["p1", "p2"],
    }
    assert pg["after new content"]["red"] == ["p1", "p4"]
    assert pg["metadata after reindexObject"]["p1"] == "red"
    assert pg["metadata after reindexObject"]["p4"] == "red"
    # The export step writes the definitions, the added ones included,
    # as the ZCatalog site writes them (compared above with every index).
    indexes, columns = pg["export"]
    assert any('name="pgc_color"' in node and "FieldIndex" in node for node in indexes)
    assert any('name="pgc_tags"' in node and "KeywordIndex" in node for node in indexes)
    assert "pgc_color" in columns and len(indexes) == len(zc["export"][0]) > 20


def _add_then_remove(tmp_path):
    def collect(layer) -> dict:
        portal = layer["portal"]
        catalog = portal.portal_catalog
        _content(portal)
        _import(portal, tmp_path, ADD)
        catalog.reindexIndex("pgc_color", None)
        transaction.commit()
        seen = {"before": _ids(catalog, pgc_color="red", portal_type="Document")}
        _import(portal, tmp_path, REMOVE)
        seen["indexes"] = sorted(
            name for name in ("pgc_color", "pgc_tags") if name in catalog.indexes()
        )
        seen["column"] = "pgc_color" in catalog.schema()
        # A query key that is no index is ignored, as ZCatalog does.
        seen["after"] = _ids(catalog, pgc_color="red", portal_type="Document")
        seen["export"] = _exported(portal)
        # Removing twice is no error (GenericSetup's contract).
        _import(portal, tmp_path, REMOVE)
        if layer.get("pgcatalog_dsn"):
            seen["sql indexes"] = _sql_indexes(portal)
        return seen

    return collect


def test_catalog_xml_removes_indexes_and_the_column_as_on_zcatalog(tmp_path):
    pg, zc = _in_both(_add_then_remove, tmp_path)
    sql_indexes = pg.pop("sql indexes")
    for name in ("pgc_color", "pgc_tags"):
        for kind in ("c", "h", "i"):  # the column's, or one on ``idx``
            assert sql_index_name(name, kind) not in sql_indexes, (name, kind)
    assert pg == zc
    assert pg["before"] == ["p1"]
    assert pg["indexes"] == [] and pg["column"] is False
    assert pg["after"] == ["p1", "p2", "p3"]
    indexes, columns = pg["export"]
    assert not any("pgc_" in node for node in indexes)
    assert "pgc_color" not in columns


#: ``pgc_tags`` now indexes another attribute: GenericSetup's importer
#: clears the index (``PluggableIndexNodeAdapter``), as on ZCatalog.
RETARGET = """\
<?xml version="1.0"?>
<object name="portal_catalog">
 <index name="pgc_tags" meta_type="KeywordIndex">
  <indexed_attr value="pgc_other_tags"/>
 </index>
</object>
"""


def _retarget(tmp_path):
    def collect(layer) -> dict:
        portal = layer["portal"]
        catalog = portal.portal_catalog
        _content(portal)
        portal.p3.pgc_other_tags = ["b"]
        _import(portal, tmp_path, ADD)
        catalog.reindexIndex("pgc_tags", None)
        transaction.commit()
        seen = {"before": _answers(catalog)}
        _import(portal, tmp_path, RETARGET)
        seen["source"] = list(
            catalog._catalog.getIndex("pgc_tags").getIndexSourceNames()
        )
        seen["after import"] = _answers(catalog)
        catalog.reindexIndex("pgc_tags", None)
        transaction.commit()
        seen["after reindexIndex"] = _answers(catalog)
        return seen

    return collect


def test_catalog_xml_changing_an_index_empties_it_as_on_zcatalog(tmp_path):
    pg, zc = _in_both(_retarget, tmp_path)
    assert pg == zc
    assert pg["before"]["tag b"] == ["p1", "p2"]
    assert pg["source"] == ["pgc_other_tags"]
    assert pg["after import"]["tag b"] == []
    assert pg["after reindexIndex"]["tag b"] == ["p3"]
