"""A site alone in its database is searched without a test of its path.

Each search keeps other sites' rows out with the site's path range
(``paths.path_clause``), tested on every match: at 10,220 rows, 1.2-1.5 ms
of a count of every row through a covering index.  Where every row of the
table is in the site's subtree (one site per database, the common case),
the transaction's first read finds so (``layout.PATH_ENDS``, in the round
trip of the savepoint) and the searches leave the test out
(``query.QueryContext.site_alone``).  The first search of a transaction is
translated as the last snapshot had it and sent in the same round trip:
a row of another site written meanwhile makes it run again with the test.
Pending changes (which may be of another site) keep it.  (Two sites with
rows in one database, where neither is alone: ``test_query_language``.)
"""

from __future__ import annotations

from Acquisition import aq_base
from plone import api
from plone_pgcatalog import snapshots
from plone_pgcatalog.store import columns
from plone_pgcatalog.store import layout
from psycopg import sql
from tests.integration.test_typed_columns import _site

import psycopg
import pytest
import transaction

#: The site's path range as a search writes it (``paths.path_clause``).
SITE_TEST = "(path = %s OR (path >= %s AND path < %s))"


def _copy_row(dsn: str, path: str | None, source: str = "/plone/page-1") -> None:
    """A copy of the catalog row at ``source`` (and of its object's row,
    which the catalog's foreign key needs) at ``path``, by another client:
    a row of another site, or one without a path."""
    with psycopg.connect(dsn) as conn:
        [[zoid]] = conn.execute("SELECT nextval('zoid_seq')").fetchall()
        conn.execute(
            "INSERT INTO object_state (zoid, tid, class_mod, class_name, state,"
            " state_size, refs) SELECT %s, o.tid, o.class_mod, o.class_name,"
            " o.state, o.state_size, o.refs FROM object_state AS o"
            " JOIN pgcatalog_objects AS c ON c.zoid = o.zoid WHERE c.path = %s",
            (zoid, source),
        )
        with conn.cursor() as cur:
            ready = {n: k for n, (k, ok) in columns.registered(cur).items() if ok}
        # The row's lists too (stored once: in their columns only).
        conn.execute(
            sql.SQL(
                "INSERT INTO pgcatalog_objects (zoid, path, parent_path, path_depth,"
                " idx, meta) SELECT %s, %s, NULL, path_depth, {}, meta"
                " FROM pgcatalog_objects AS s WHERE path = %s"
            ).format(columns.whole_idx(sql.SQL("s"), ready)),
            (zoid, path, source),
        )


def _alone(dsn: str, site: str = "/plone") -> bool:
    with psycopg.connect(dsn) as conn:
        [ends] = conn.execute(layout.PATH_ENDS, (site,)).fetchall()
        conn.rollback()
    return layout.site_alone(ends, site)


def _documents() -> list[str]:
    return sorted(b.getPath() for b in api.content.find(portal_type="Document"))


def test_a_site_alone_is_searched_without_its_path(pg_layer, searches):
    _site(pg_layer, count=3)
    dsn = pg_layer["pgcatalog_dsn"]
    assert _alone(dsn)
    pages = ["/plone/page-0", "/plone/page-1", "/plone/page-2"]
    snapshots.results.clear()
    searches.clear()
    transaction.begin()
    # The transaction's first read (with the savepoint), then another.
    assert _documents() == pages
    assert len(api.content.find(portal_type="Document", sort_on="id")) == 3
    transaction.abort()
    assert len(searches) == 2
    assert not any(SITE_TEST in searched.statement for searched in searches)


@pytest.mark.parametrize(
    "path",
    ["/plone-archive/page-1", "/other/page-1", "/plone0/page-1"],
    ids=["between", "before", "after"],
)
def test_a_row_of_another_site_brings_the_path_back(pg_layer, searches, path):
    """Written by another client after a transaction that found the site
    alone: the next transaction's first search, translated as if it still
    were, runs again with the site's path (the other row matches the query
    but is not the site's).  Each range around the site's subtree: a path
    that sorts between the site's and its children's ("-" sorts before
    "/"), before the site, after its subtree."""
    _site(pg_layer, count=3)
    dsn = pg_layer["pgcatalog_dsn"]
    transaction.begin()
    assert _documents() == ["/plone/page-0", "/plone/page-1", "/plone/page-2"]
    transaction.abort()
    _copy_row(dsn, path)
    assert not _alone(dsn)
    snapshots.results.clear()
    searches.clear()
    transaction.begin()
    assert _documents() == ["/plone/page-0", "/plone/page-1", "/plone/page-2"]
    transaction.abort()
    # Sent without the test (the guess), then again with it.
    assert [SITE_TEST in searched.statement for searched in searches] == [False, True]
    # Unrestricted, the other site's row is still not the site's.
    catalog = pg_layer["portal"].portal_catalog
    everything = [b.getPath() for b in catalog.unrestrictedSearchResults(path="/")]
    assert path not in everything
    assert len(catalog) == len(everything) == 4  # the site and its pages
    transaction.abort()


def test_a_row_without_a_path_keeps_the_test(pg_layer, searches):
    _site(pg_layer, count=1)
    dsn = pg_layer["pgcatalog_dsn"]
    transaction.begin()
    assert _documents() == ["/plone/page-0"]
    transaction.abort()
    _copy_row(dsn, None, source="/plone/page-0")
    assert not _alone(dsn)
    snapshots.results.clear()
    searches.clear()
    transaction.begin()
    # (A row without a path among them would not even sort.)
    assert _documents() == ["/plone/page-0"]
    transaction.abort()
    assert [SITE_TEST in searched.statement for searched in searches] == [False, True]


def test_only_the_site_that_read_is_alone_in_its_transaction(pg_layer, monkeypatch):
    """The first read of a transaction asks for its catalog's site: another
    site's catalog searched in the same transaction keeps the test."""
    from plone_pgcatalog.store import connection

    portal = _site(pg_layer, count=1)
    catalog = portal.portal_catalog
    transaction.begin()
    assert _documents() == ["/plone/page-0"]
    assert connection.site_alone(catalog)
    monkeypatch.setattr(type(aq_base(catalog)), "site_path", lambda self: "/other")
    assert not connection.site_alone(catalog)
    assert not connection.likely_alone(catalog)
    transaction.abort()
    monkeypatch.undo()
    # Nor outside the transaction that read.
    transaction.begin()
    assert not connection.site_alone(catalog)
    assert connection.likely_alone(catalog)
    transaction.abort()


def test_pending_changes_keep_the_test(pg_layer, searches):
    """Rows the transaction has cataloged but not written are laid over the
    stored ones (``overlay``): they may be another site's."""
    portal = _site(pg_layer, count=1)
    assert _alone(pg_layer["pgcatalog_dsn"])
    transaction.begin()
    api.content.create(container=portal, type="Document", id="new", title="New")
    assert _documents() == ["/plone/new", "/plone/page-0"]
    transaction.abort()
    assert SITE_TEST in searches[-1].statement
    assert "jsonb_to_recordset" in searches[-1].statement
