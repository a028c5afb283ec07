"""``portal_catalog.facet_counts`` (issue 18): counts per value, each facet
without its own criterion, for the user's results, in one round trip."""

from __future__ import annotations

from plone import api
from plone.app.testing import logout
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog.errors import QueryError

import pytest
import transaction


def _content(portal):
    setRoles(portal, TEST_USER_ID, ["Manager"])
    api.content.create(container=portal, type="Folder", id="f", title="F")
    for i in range(6):
        page = api.content.create(
            container=portal.f if i % 2 else portal,
            type="Document" if i < 4 else "News Item",
            id=f"p{i}",
            title=f"Page {i}",
            subject=("sea", "tide") if i % 3 == 0 else ("sea",),
        )
        if i < 3:
            api.content.transition(obj=page, transition="publish")
    transaction.commit()
    return portal.portal_catalog


def test_counts_per_value_in_one_round_trip(pg_layer, searches):
    catalog = _content(pg_layer["portal"])
    searches.clear()
    counts = catalog.facet_counts(
        {"path": "/plone"}, facets=["portal_type", "review_state", "Subject"]
    )
    assert len(searches) == 1
    assert counts == {
        # The site itself is cataloged (Plone 6), without a review state.
        "portal_type": {"Document": 4, "News Item": 2, "Folder": 1, "Plone Site": 1},
        "review_state": {"private": 4, "published": 3},
        "Subject": {"sea": 6, "tide": 2},
    }
    assert list(counts["portal_type"]) == [
        "Document",
        "News Item",
        "Folder",
        "Plone Site",
    ]


def test_each_facet_is_counted_without_its_own_criterion(pg_layer):
    catalog = _content(pg_layer["portal"])
    counts = catalog.facet_counts(
        portal_type="Document",
        review_state="published",
        facets=["portal_type", "review_state"],
    )
    # portal_type: among published items; review_state: among Documents.
    assert counts["portal_type"] == {"Document": 3}
    assert counts["review_state"] == {"private": 1, "published": 3}
    assert counts["portal_type"]["Document"] == len(
        catalog(portal_type="Document", review_state="published")
    )


def test_anonymous_counts_only_what_it_may_see(pg_layer):
    catalog = _content(pg_layer["portal"])
    logout()
    counts = catalog.facet_counts(facets=["portal_type", "review_state"])
    assert counts == {
        "portal_type": {"Document": 3, "Plone Site": 1},
        "review_state": {"published": 3},
    }


def test_uncommitted_changes_are_counted(pg_layer):
    portal = pg_layer["portal"]
    catalog = _content(portal)
    api.content.create(container=portal, type="News Item", id="fresh", title="F")
    api.content.delete(obj=portal.p0)
    counts = catalog.facet_counts(facets="portal_type")
    assert counts["portal_type"] == {
        "Document": 3,
        "News Item": 3,
        "Folder": 1,
        "Plone Site": 1,
    }
    transaction.abort()


def test_uncommitted_partial_reindexes_are_counted_where_they_tell(
    pg_layer, monkeypatch
):
    """Partial reindexes of the facet's index and of the query's are laid
    over; those of other indexes are not (their stored rows count as the
    patched ones would).  Counts before the commit are those after it."""
    from plone_pgcatalog.pending import PendingCatalog
    from ZODB.utils import u64

    portal = pg_layer["portal"]
    catalog = _content(portal)
    laid = []
    overlay = PendingCatalog.overlay

    def recording(self, reads=None, may_match=None):
        found = overlay(self, reads, may_match)
        laid.append(sorted(patch["zoid"] for patch in found.patches))
        return found

    monkeypatch.setattr(PendingCatalog, "overlay", recording)
    portal.p2.setSubject(("sea", "storm"))
    portal.p2.reindexObject(idxs=["Subject"])
    portal.f.p3.title = "Renamed"
    portal.f.p3.reindexObject(idxs=["Title"])
    portal.p4.title = "Also renamed"
    portal.p4.reindexObject(idxs=["Title", "sortable_title"])
    query = {"Title": "renamed"}
    before = (
        catalog.facet_counts(facets="Subject"),
        catalog.facet_counts(query, facets="Subject"),
    )
    zoids = [u64(page._p_oid) for page in (portal.p2, portal.f.p3, portal.p4)]
    assert laid == [zoids[:1], sorted(zoids)]
    transaction.commit()
    after = (
        catalog.facet_counts(facets="Subject"),
        catalog.facet_counts(query, facets="Subject"),
    )
    assert before == after
    assert after[0]["Subject"] == {"sea": 6, "tide": 2, "storm": 1}
    assert after[1]["Subject"] == {"sea": 2, "tide": 1}


def test_include_zero_lists_every_value(pg_layer):
    catalog = _content(pg_layer["portal"])
    counts = catalog.facet_counts(
        portal_type="News Item", facets=["Subject", "review_state"], include_zero=True
    )
    assert counts["review_state"] == {"private": 2, "published": 0}
    assert counts["Subject"] == {"sea": 2, "tide": 0}


def test_include_zero_lists_only_values_the_user_may_see(pg_layer):
    """The zeros come from what the user may find, not from the whole index
    (``uniqueValuesFor``): a private item's tags and folder are no facet
    value of Anonymous's (found by a helper's security probe)."""
    portal = pg_layer["portal"]
    catalog = _content(portal)
    secret = api.content.create(
        container=portal, type="Folder", id="layoffs-2027", title="L"
    )
    api.content.create(
        container=secret,
        type="Document",
        id="plan",
        title="Plan",
        subject=("merger-with-acme",),
    )
    transaction.commit()
    facets = ["Subject", "getId", {"index": "path", "depth": 1}]
    manager = catalog.facet_counts(
        portal_type="Folder", facets=facets, include_zero=True
    )
    assert manager["Subject"]["merger-with-acme"] == 0
    assert manager["getId"]["plan"] == 0
    assert manager["path"]["/plone/layoffs-2027"] == 1
    logout()
    anonymous = catalog.facet_counts(
        portal_type="Folder", facets=facets, include_zero=True
    )
    assert anonymous["Subject"] == {"sea": 0, "tide": 0}
    assert anonymous["getId"] == {"p0": 0, "p1": 0, "p2": 0, "plone": 0}
    # The folder of a published item (p1): its path is in p1's.
    assert anonymous["path"] == {"/plone/f": 0, "/plone/p0": 0, "/plone/p2": 0}


def test_path_facets_count_the_folders_at_a_depth(pg_layer, searches):
    catalog = _content(pg_layer["portal"])
    searches.clear()
    counts = catalog.facet_counts(
        {"portal_type": "Document", "path": "/plone/f"},
        facets=[
            "path",  # one level below the site
            {"index": "path", "name": "in f", "root": "/plone/f/"},
            "portal_type",
        ],
    )
    assert len(searches) == 1
    # The path criterion is the facet's own: left out, as any facet's.
    assert counts["path"] == {"/plone/f": 2, "/plone/p0": 1, "/plone/p2": 1}
    assert counts["in f"] == {"/plone/f/p1": 1, "/plone/f/p3": 1}
    assert counts["portal_type"] == {"Document": 2, "Folder": 1, "News Item": 1}
    # Each count is what a path query below the folder finds.
    assert counts["path"]["/plone/f"] == len(
        catalog(portal_type="Document", path={"query": "/plone/f", "depth": -1})
    )


def test_a_facet_named_otherwise_counts_its_index(pg_layer):
    catalog = _content(pg_layer["portal"])
    counts = catalog.facet_counts(
        portal_type="Document",
        facets=[
            {"index": "Subject", "name": "tags"},
            {"index": "review_state", "name": "state"},
            {
                "index": "created",
                "name": "when",
                "ranges": {"ever": {"min": "2000/01/01"}},
            },
        ],
    )
    assert counts == {
        "tags": {"sea": 4, "tide": 2},
        "state": {"published": 3, "private": 1},
        "when": {"ever": 4},
    }


def test_values_their_typed_column_cannot_hold_are_counted_from_idx(pg_layer):
    """A typed column holds strings (a field's, a keyword list's); other
    values stay in ``idx`` alone: counted from there, added to the typed
    column's counts where a list of a field holds a string too."""
    from plone_pgcatalog import faceting
    from plone_pgcatalog.store import connection

    catalog = _content(pg_layer["portal"])
    catalog.addIndex("pgc_kind", "FieldIndex")
    catalog.addIndex("pgc_tags", "KeywordIndex")
    transaction.commit()
    pg_layer["portal"]._p_jar.sync()  # zodb-pgjsonb makes the columns now
    kinds = {"p0": "big", "p1": "big", "p2": 7, "p3": ["big", "small"]}
    tags = {"p0": ("a", "b"), "p1": ("a",), "p2": (1, 2)}
    for brain in catalog(portal_type=["Document", "News Item"]):
        page = brain.getObject()
        if page.getId() in kinds:
            page.pgc_kind = kinds[page.getId()]
        if page.getId() in tags:
            page.pgc_tags = tags[page.getId()]
        page.reindexObject()
    transaction.commit()
    counted = faceting.counted(catalog, {"path": "/plone"}, ["pgc_kind", "pgc_tags"])
    # (in the columns the counts read: this transaction's)
    ready = connection.ready_columns(catalog)
    assert ready["pgc_kind"] == "text" and ready["pgc_tags"] == "keywords"
    assert counted == {
        "pgc_kind": (4, {"big": 3, 7: 1, "small": 1}),
        "pgc_tags": (3, {"a": 2, 1: 1, 2: 1, "b": 1}),
    }


def test_path_facets_with_include_zero_list_every_folder(pg_layer):
    catalog = _content(pg_layer["portal"])
    counts = catalog.facet_counts(
        portal_type="News Item",
        facets=[{"index": "path", "depth": 2}],
        include_zero=True,
    )
    assert counts["path"] == {
        "/plone/f/p5": 1,
        "/plone/f/p1": 0,
        "/plone/f/p3": 0,
    }


def test_date_facets_count_ranges(pg_layer):
    from DateTime import DateTime

    catalog = _content(pg_layer["portal"])
    portal = pg_layer["portal"]
    for i, page in enumerate(["p0", "f/p1", "p2", "f/p3", "p4", "f/p5"]):
        obj = portal.unrestrictedTraverse(page)
        obj.creation_date = DateTime(f"2024/01/0{i + 1} 12:00 UTC")
        obj.reindexObject(idxs=["created"])
    ranges = {
        "first two days": {"max": "2024/01/02 12:00 UTC"},  # both ends count
        "later in 2024": {"min": "2024/01/02 12:01 UTC", "max": "2024/12/31"},
        "the second": {"min": "2024/01/02", "max": "2024/01/02 23:59 UTC"},
        "2030": {"min": DateTime("2030/01/01")},
    }
    counts = catalog._facet_totals(
        {"Subject": "sea", "created": {"query": "2024/06/01", "range": "min"}},
        [{"index": "created", "ranges": ranges}],
    )
    # The created criterion is the facet's own; the ranges overlap freely;
    # in the order given.
    assert counts["created"] == (
        6,
        {"first two days": 2, "later in 2024": 4, "the second": 1},
    )
    with_zero = catalog.facet_counts(
        Subject="sea", facets={"index": "created", "ranges": ranges}, include_zero=True
    )
    assert list(with_zero["created"].items())[-1] == ("2030", 0)
    assert with_zero["created"]["later in 2024"] == len(
        catalog(
            Subject="sea",
            created={
                "query": ("2024/01/02 12:01 UTC", "2024/12/31"),
                "range": "min:max",
            },
        )
    )
    transaction.abort()


@pytest.mark.parametrize(
    "facets, message",
    [
        (["nope"], "facet 'nope' is not an index; valid facets: "),
        (
            ["SearchableText"],
            "facet 'SearchableText' is a ZCTextIndex, which has no facet counts",
        ),
        (["created"], "facet 'created': a date index is counted in ranges"),
        (
            [{"index": "created", "ranges": {"old": {"before": "2020/01/01"}}}],
            r"facet 'created': range 'old': .* is not \{'min': date",
        ),
        ([{"index": "path", "depth": 0}], "facet 'path': 'depth' must be a whole"),
        (
            [{"index": "path", "root": "/elsewhere"}],
            "facet 'path': 'root' '/elsewhere' is not in the site",
        ),
        (
            [{"index": "Subject", "depth": 2}],
            "facet 'Subject': 'depth', 'root' and 'ranges' are for path and date",
        ),
        ([{"index": "Subject", "size": 2}], r"unknown key\(s\) size; a facet may"),
        (
            ["Subject", {"index": "path", "name": "Subject"}],
            "facet 'Subject' given twice",
        ),
        ([], "facet_counts: no facet given"),
    ],
)
def test_bad_facets_are_named(pg_layer, facets, message):
    catalog = _content(pg_layer["portal"])
    with pytest.raises(QueryError, match=message):
        catalog.facet_counts(facets=facets)
