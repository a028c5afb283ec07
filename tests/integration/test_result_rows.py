"""A result returns the rows that are read, not the whole result.

``len()`` and the first page of a large result cost one query of
``search.FIRST_ROWS`` rows; reading further fetches the rest once; a
transaction that ends while a result is in use does not lose its rows
(what a script that commits every few objects relies on), and costs
nothing: the rest is read then from the later snapshot, each match not
among the rows held once.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import login
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone.app.testing import TEST_USER_NAME
from plone_pgcatalog.store import search
from tests.conftest import committed_site
from tests.conftest import run_from

import pytest
import transaction

DOCUMENTS = search.FIRST_ROWS + 50


def _create_many(layer) -> None:
    portal = layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    folder = api.content.create(container=portal, type="Folder", id="many")
    for number in range(DOCUMENTS):
        api.content.create(container=folder, type="Document", id=f"d{number:03}")


@pytest.fixture(scope="module")
def many_committed():
    """The site with ``DOCUMENTS`` documents in a folder, committed once."""
    return committed_site(_create_many)


@pytest.fixture
def many(many_committed):
    """The portal of a test started from ``many_committed``; the test user
    is a Manager.  The catalog was read once, in a transaction of its own,
    as on a running site: the first read of a process guesses the typed
    columns ready (``connection.likely_columns``) and searches again."""
    for layer in run_from(many_committed):
        portal = layer["portal"]
        portal.portal_catalog.searchResults(path="/plone/many")
        transaction.abort()
        yield portal


def _transferred(searches) -> list[int]:
    """The number of rows each search statement returned."""
    return [searched.rows for searched in searches]


def _paths(brains) -> list[str]:
    return [brain.getPath() for brain in brains]


def test_len_and_the_first_page_transfer_the_first_rows_only(many, searches):
    expected = [f"/plone/many/d{number:03}" for number in range(DOCUMENTS)]
    results = api.content.find(portal_type="Document", sort_on="id")
    assert len(results) == results.actual_result_count == DOCUMENTS
    assert _paths(results[:20]) == expected[:20]
    assert [brain.Title for brain in results[:20]] == [""] * 20
    assert _transferred(searches) == [search.FIRST_ROWS]
    # Reading on fetches the others, once.
    assert _paths(results) == expected
    assert _paths(results[-3:]) == expected[-3:]
    assert _transferred(searches) == [search.FIRST_ROWS, DOCUMENTS - search.FIRST_ROWS]


@pytest.mark.parametrize(
    "window", [{}, {"sort_limit": 30}, {"b_start": 20, "b_size": 25}]
)
def test_the_first_rows_metadata_comes_with_the_search(
    many, searches, metadata_loads, window
):
    """A page of brains costs one round trip, metadata included (the first
    ``search.META_ROWS`` rows'); brains read past them load theirs in one
    more query each window, as before."""
    loads = metadata_loads
    folder = many["many"]
    folder["d003"].setTitle("Third")
    folder["d003"].reindexObject()
    folder["d021"].setTitle("Twenty-first")
    folder["d021"].reindexObject()
    folder["d043"].setTitle("Forty-third")
    folder["d043"].reindexObject()
    transaction.commit()
    titles = {
        "/plone/many/d003": "Third",
        "/plone/many/d021": "Twenty-first",
        "/plone/many/d043": "Forty-third",
    }
    results = api.content.find(portal_type="Document", sort_on="id", **window)
    page = results[: search.META_ROWS]  # (a batch's window: its brains)
    assert [brain.Title for brain in page] == [
        titles.get(brain.getPath(), "") for brain in page
    ]
    assert len(searches) == 1 and loads == []
    # Past them: their metadata in one more query.
    later = results[search.META_ROWS : search.META_ROWS + 3]
    assert [brain.Title for brain in later] == [
        titles.get(brain.getPath(), "") for brain in later
    ]
    assert len(loads) == 1


def test_metadata_first_read_after_a_commit_is_what_is_stored_then(many):
    """The metadata that came with the search is that of its snapshot: a
    brain first read after the transaction committed a change shows the
    change, as a ZCatalog brain made then does."""
    results = api.content.find(portal_type="Document", sort_on="id", sort_limit=5)
    assert len(results) == 5
    page = many["many"]["d000"]
    page.setTitle("Committed after the search")
    page.reindexObject()
    transaction.commit()
    assert results[0].Title == "Committed after the search"


def test_metadata_this_transaction_changed_is_its_own(many, searches):
    """A row this transaction recataloged shows its new metadata, not the
    stored one that came with the search."""
    folder = many["many"]
    folder["d001"].setTitle("Changed, not committed")
    folder["d001"].reindexObject()
    results = api.content.find(portal_type="Document", sort_on="id", sort_limit=5)
    assert [brain.Title for brain in results][:2] == ["", "Changed, not committed"]
    transaction.abort()


def test_a_script_that_commits_while_it_iterates_sees_every_match(many):
    """The rows a search found stay the result's, as ZCatalog's records
    do, even when the script changes them so that they match no more."""
    results = api.content.find(portal_type="Document", review_state="private")
    assert len(results) == DOCUMENTS
    seen = []
    for number, brain in enumerate(results):
        seen.append(brain.getPath())
        api.content.transition(obj=brain.getObject(), transition="publish")
        if number % 10 == 9:
            transaction.commit()
    transaction.commit()
    assert len(seen) == len(set(seen)) == DOCUMENTS
    assert len(api.content.find(portal_type="Document", review_state="private")) == 0


@pytest.mark.parametrize(
    "order",
    [
        {},
        {"sort_on": "sortable_title"},
        {"sort_on": "getObjPositionInParent", "sort_order": "descending"},
    ],
)
def test_the_end_of_a_transaction_costs_nothing(many, searches, order):
    """A page of a large result read in a request: the request's end does
    not fetch the rows nobody read, whatever the order of the result."""
    results = api.content.find(portal_type="Document", **order)
    assert _paths(results[:20])
    transaction.commit()
    assert _transferred(searches) == [search.FIRST_ROWS]
    # Read after the transaction: the rest, from then on.
    assert _paths(results) == _paths(api.content.find(portal_type="Document", **order))
    assert _transferred(searches)[:2] == [
        search.FIRST_ROWS,
        DOCUMENTS - search.FIRST_ROWS,
    ]


def test_the_rest_read_later_is_every_match_not_held(many):
    """Read after its transaction, the rest of a sorted result is every
    match of that moment not among the rows held, in the result's order:
    rows whose sort keys moved before the last row held meanwhile are
    found, and so is an object that matches only now."""
    folder = many["many"]
    for number, page in enumerate(folder.objectValues()):
        page.title = f"t{number:03}"
        page.reindexObject()
    transaction.commit()
    results = api.content.find(portal_type="Document", sort_on="sortable_title")
    assert len(_paths(results[:20])) == 20
    transaction.commit()
    for number in range(120, DOCUMENTS):  # now before every other row
        folder[f"d{number:03}"].title = f"a{number:03}"
        folder[f"d{number:03}"].reindexObject()
    api.content.create(container=folder, type="Document", id="new", title="t999")
    transaction.commit()
    held = [f"/plone/many/d{number:03}" for number in range(search.FIRST_ROWS)]
    moved = [f"/plone/many/d{number:03}" for number in range(120, DOCUMENTS)]
    unmoved = [f"/plone/many/d{number:03}" for number in range(100, 120)]
    assert _paths(results) == held + moved + unmoved + ["/plone/many/new"]
    assert len(results) == DOCUMENTS + 1


def test_a_result_with_pending_changes_is_fetched_before_the_end(many, searches):
    """A search with this transaction's changes laid over its rows reads
    its rest before the transaction ends, from the snapshot and changes
    that found it (after it, they are no longer its own)."""
    folder = many["many"]
    api.content.create(container=folder, type="Document", id="pending")
    results = api.content.find(portal_type="Document", sort_on="getId")
    assert len(_paths(results[:20])) == 20
    transaction.abort()
    assert _transferred(searches)[-2:] == [
        search.FIRST_ROWS,
        DOCUMENTS + 1 - search.FIRST_ROWS,
    ]
    assert _paths(results)[-1] == "/plone/many/pending"
    assert len(results) == DOCUMENTS + 1


def test_a_sorted_result_keeps_its_rows_when_the_script_reorders_them(many):
    """Moving each item read to the bottom of its folder moves the unread
    ones up: a sorted result still gives each of its rows once (the rest
    read after the transaction is every match not held, wherever it
    sorts now)."""
    folder = many["many"]
    results = api.content.find(
        path={"query": "/plone/many", "depth": 1}, sort_on="getObjPositionInParent"
    )
    seen = []
    for number, brain in enumerate(results):
        seen.append(brain.getPath())
        folder.moveObjectsToBottom([brain.getId])
        if number % 10 == 9:
            transaction.commit()
    transaction.commit()
    assert seen == [f"/plone/many/d{number:03}" for number in range(DOCUMENTS)]


def test_a_result_read_after_its_transaction_is_as_long_as_its_rows(many):
    """Read after its transaction, a result ends where its rows end:
    ``len()``, slices and negative indexes follow the rows that still
    match, without an IndexError."""
    results = api.content.find(portal_type="Document")
    assert len(results) == DOCUMENTS
    assert _paths(results[:5])
    transaction.commit()
    api.content.delete(
        objects=[many["many"][f"d{number:03}"] for number in range(140, DOCUMENTS)]
    )
    transaction.commit()
    assert results[-1].getPath() == "/plone/many/d139"
    assert len(results[100:]) == 40
    assert len(results) == 140
    assert len(_paths(results)) == 140


@pytest.mark.parametrize("order", ["ascending", "descending"])
def test_a_script_that_changes_the_sort_key_of_what_it_read(many, order):
    """The rest is every row not held, in the result's order, even when
    the script has changed the sort key of the rows it read."""
    for number, page in enumerate(many["many"].objectValues()):
        page.title = f"t{number:03}"
        page.reindexObject()
    transaction.commit()
    results = api.content.find(
        portal_type="Document", sort_on="sortable_title", sort_order=order
    )
    expected = [f"/plone/many/d{number:03}" for number in range(DOCUMENTS)]
    if order == "descending":
        expected.reverse()
    seen = []
    for number, brain in enumerate(results):
        seen.append(brain.getPath())
        page = brain.getObject()
        page.title = "a" if order == "descending" else "zzz"  # sorts elsewhere now
        page.reindexObject()
        if number % 10 == 9:
            transaction.commit()
    transaction.commit()
    assert seen == expected


def test_a_ranked_result_continues_by_relevance(many, searches):
    for number, page in enumerate(many["many"].objectValues()):
        # Two levels of relevance, each over both sides of the first rows.
        page.title = "harbour harbour" if number % 2 else "harbour"
        page.reindexObject()
    transaction.commit()
    searches.clear()
    results = api.content.find(SearchableText="harbour", portal_type="Document")
    first = [(b.getPath(), b.data_record_normalized_score_) for b in results[:5]]
    transaction.commit()
    assert _transferred(searches) == [search.FIRST_ROWS]
    found = [(b.getPath(), b.data_record_normalized_score_) for b in results]
    transaction.abort()
    again = api.content.find(SearchableText="harbour", portal_type="Document")
    assert found[:5] == first
    assert found == [(b.getPath(), b.data_record_normalized_score_) for b in again]
    assert len(found) == DOCUMENTS
    assert _transferred(searches)[:2] == [
        search.FIRST_ROWS,
        DOCUMENTS - search.FIRST_ROWS,
    ]


def test_a_ranked_rest_read_later_scores_at_most_100(many):
    """Read after its transaction, the rest of a ranked result may hold a
    row that matches better than the best of its first rows: its
    normalized score is 100, as the best's is, never more."""
    for page in many["many"].objectValues():
        page.title = "harbour"
        page.reindexObject()
    transaction.commit()
    results = api.content.find(SearchableText="harbour", portal_type="Document")
    held = {brain.getPath() for brain in results[: search.FIRST_ROWS]}
    transaction.commit()
    later = next(
        page
        for page in many["many"].objectValues()
        if "/".join(page.getPhysicalPath()) not in held
    )
    # Its text is "harbour harbour" now (the id and the title): a better
    # match than each first row's "dNNN harbour".
    later = api.content.rename(obj=later, new_id="harbour")
    transaction.commit()
    scores = {b.getPath(): b.data_record_normalized_score_ for b in results}
    assert len(scores) == DOCUMENTS
    assert scores["/".join(later.getPhysicalPath())] == 100
    assert max(scores.values()) == 100


def test_the_readers_of_one_committed_state_share_its_results(pg_layer, searches):
    """A search is run once per committed state (``snapshots.results``);
    each user's results stay theirs, and nothing is ever stale."""
    from plone.app.testing import logout
    from tests.integration.test_transactions import _in_other_thread

    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    for name in ("a", "b"):
        api.content.create(container=portal, type="Document", id=name)
    transaction.commit()
    searches.clear()  # the searches of the creation

    def found():
        return _paths(api.content.find(portal_type="Document", sort_on="id"))

    assert found() == ["/plone/a", "/plone/b"]
    transaction.begin()  # another request, on the same committed state
    assert found() == ["/plone/a", "/plone/b"]
    assert len(searches) == 1
    # The same statement with other values is another search.
    assert _paths(api.content.find(portal_type="Folder", sort_on="id")) == []
    assert len(searches) == 2
    # Another user's search is another search: an anonymous visitor does
    # not see the private pages the manager's results hold.
    logout()
    assert found() == []
    assert len(searches) == 3
    login(portal, TEST_USER_NAME)
    # A commit makes a new state: its readers run the search again.
    _in_other_thread(
        pg_layer["pgdb"],
        lambda p: api.content.create(container=p, type="Document", id="c"),
    )
    searches.clear()  # the other writer's searches
    transaction.begin()
    assert found() == ["/plone/a", "/plone/b", "/plone/c"]
    assert len(searches) == 1
    # Pending changes of the transaction: searched, and not kept.
    portal.manage_delObjects(["a"])
    assert found() == ["/plone/b", "/plone/c"]
    transaction.abort()
    searches.clear()
    assert found() == ["/plone/a", "/plone/b", "/plone/c"]
    assert searches == []


def test_the_shared_results_can_be_switched_off(pg_layer, searches, monkeypatch):
    from plone_pgcatalog import snapshots

    monkeypatch.setattr(snapshots.results, "enabled", False)
    # A first transaction that reads the typed columns: the next ones'
    # first searches guess them right (``connection.likely_columns``).
    api.content.find(portal_type="Document")
    transaction.commit()
    searches.clear()
    for _ in range(2):
        transaction.begin()
        api.content.find(portal_type="Document")
    assert len(searches) == 2


def test_a_metadata_value_json_has_no_form_for_comes_back(many):
    """A float attribute that is not a number or infinite, in a metadata
    column: its brain gives it back, as ZCatalog's does.  Sent as it was,
    PostgreSQL refused the row's JSON and the commit failed."""
    import math

    catalog = many.portal_catalog
    catalog.addColumn("ratio")
    folder = many["many"]
    for name, value in (("d000", math.nan), ("d001", math.inf), ("d002", -math.inf)):
        folder[name].ratio = value
        folder[name].reindexObject()
    transaction.commit()
    brains = {b.getId: b for b in catalog(path="/plone/many", id=["d000", "d001"])}
    assert math.isnan(brains["d000"].ratio)
    assert brains["d001"].ratio == math.inf
    [brain] = catalog(path="/plone/many", id="d002")
    assert brain.ratio == -math.inf
