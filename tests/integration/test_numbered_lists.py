"""Numbered role lists (``columns.NUMBERED``, schema 11): each distinct list
of ``allowedRolesAndUsers`` has a number (``pgcatalog_keyword_sets``), each
row the number of its list in a column of its own, and a search tests the
numbers of the lists that hold one of the user's terms, on the covering
indexes, which hold the number instead of the list.  The rows found must
be those the list finds: ZCatalog's, as the differential suites check for
every user; here, the numbers themselves, a list numbered as it is first
written (a sharing change, in a transaction, in two at once), searches
with changes pending (the list), a number gone wrong (the health check),
and the upgrade 11 -> 12.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import login
from plone.app.testing import logout
from plone.app.testing import TEST_USER_NAME
from plone_pgcatalog import health
from plone_pgcatalog import snapshots
from plone_pgcatalog.store import columns
from plone_pgcatalog.store import schema
from tests.integration.test_covering import _count_columns
from tests.integration.test_covering import _covering
from tests.integration.test_covering import FULL
from tests.integration.test_typed_columns import _site
from tests.integration.test_upgrades import _upgrade_from

import psycopg
import pytest
import threading
import transaction

NUMBER = columns.set_column("allowedRolesAndUsers")

#: The test of the numbers in a search's statement: against the array of
#: the numbers of the user's lists where there are few, by a semi-join on
#: them where there are many (``columns.MANY_LISTS``).
NUMBERS_TEST = f'"{NUMBER}" = ANY(ARRAY(SELECT s.id FROM "pgcatalog_keyword_sets"'
SEMI_JOIN = f'"{NUMBER}" IN (SELECT s.id FROM "pgcatalog_keyword_sets" AS s'


@pytest.fixture(autouse=True)
def few_lists(monkeypatch):
    """Searches test the numbers against the array of the user's lists
    (``columns.MANY_LISTS``) however many lists earlier tests left in the
    shared database (the lists' table is not restored per test)."""
    monkeypatch.setattr(columns, "MANY_LISTS", float("inf"))


def _misnumbered(dsn: str) -> int:
    """Rows whose number is not that of their list (a row without a list
    has no number)."""
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            f"SELECT count(*) FROM pgcatalog_objects AS o LEFT JOIN"
            f' pgcatalog_keyword_sets AS s ON s.id = o."{NUMBER}"'
            ' WHERE s.terms IS DISTINCT FROM o."allowedRolesAndUsers"'
        ).fetchone()[0]


def _found(**query) -> list[str]:
    return sorted(brain.getPath() for brain in api.content.find(**query))


def _with_lists(dsn: str, search) -> object:
    """What ``search()`` gives with the numbers not ready: searches test
    the lists, as before schema 11."""
    with psycopg.connect(dsn) as conn:
        conn.execute(
            "UPDATE pgcatalog_columns SET ready = false WHERE name = %s", (NUMBER,)
        )
    try:
        snapshots.results.clear()
        transaction.begin()
        return search()
    finally:
        with psycopg.connect(dsn) as conn:
            conn.execute(
                "UPDATE pgcatalog_columns SET ready = true WHERE name = %s", (NUMBER,)
            )
        snapshots.results.clear()
        transaction.begin()


def test_each_row_has_the_number_of_its_list(pg_layer):
    _site(pg_layer, count=4)
    dsn = pg_layer["pgcatalog_dsn"]
    assert _misnumbered(dsn) == 0
    with psycopg.connect(dsn) as conn:
        lists, numbers, rows = conn.execute(
            'SELECT count(DISTINCT "allowedRolesAndUsers"),'
            f' count(DISTINCT "{NUMBER}"), count(*) FROM pgcatalog_objects'
        ).fetchone()
        # One number a list: private and published pages, the site's folders.
        assert 2 <= lists == numbers < rows
        # Each list numbered once.
        assert conn.execute(
            "SELECT count(*) = count(DISTINCT terms) FROM pgcatalog_keyword_sets"
        ).fetchone() == (True,)


@pytest.mark.parametrize("lists", ["few", "many"])
def test_searches_test_the_numbers_and_find_what_the_lists_find(
    pg_layer, searches, monkeypatch, lists
):
    if lists == "many":
        monkeypatch.setattr(columns, "MANY_LISTS", float("-inf"))
    tested = NUMBERS_TEST if lists == "few" else SEMI_JOIN
    portal = _site(pg_layer, count=4)
    dsn = pg_layer["pgcatalog_dsn"]
    # A member who may see one private page only, by a local role: a list
    # no row had before, numbered as the sharing change is written.
    api.user.create(
        email="reader@example.org", username="reader", password="secret-enough"
    )
    api.user.grant_roles(username="reader", obj=portal["page-0"], roles=["Reader"])
    portal["page-0"].reindexObjectSecurity()  # (plone.api leaves it to us)
    transaction.commit()

    def searched() -> dict:
        login(portal, TEST_USER_NAME)
        found = {"Manager": _found(portal_type="Document")}
        # ``not`` on the terms (only, and with others): as the lists.
        search = portal.portal_catalog.unrestrictedSearchResults
        for key in (
            {"not": ["Anonymous"]},
            {"query": ["Reader"], "not": ["user:reader"]},
        ):
            found[repr(key)] = sorted(
                brain.getPath()
                for brain in search(portal_type="Document", allowedRolesAndUsers=key)
            )
        with api.env.adopt_user(username="reader"):
            found["reader"] = _found(portal_type="Document")
        logout()
        found["Anonymous"] = _found(portal_type="Document")
        return found

    numbered = searched()
    assert all(tested in searched.statement for searched in searches[-5:])
    assert '"allowedRolesAndUsers" &&' not in searches[-1].statement
    assert numbered == {
        "{'not': ['Anonymous']}": ["/plone/page-0", "/plone/page-2"],
        "{'query': ['Reader'], 'not': ['user:reader']}": ["/plone/page-2"],
        "Manager": [f"/plone/page-{n}" for n in range(4)],
        "reader": ["/plone/page-0", "/plone/page-1", "/plone/page-3"],
        "Anonymous": ["/plone/page-1", "/plone/page-3"],
    }
    assert _with_lists(dsn, searched) == numbered
    assert '"allowedRolesAndUsers" && ' in searches[-1].statement
    assert NUMBER not in searches[-1].statement
    assert _misnumbered(dsn) == 0


def test_a_count_tests_the_number_on_the_covering_index(
    pg_layer, searches, no_group_counts
):
    # Where its groups are not counted (``test_group_counts``).
    no_group_counts(_site(pg_layer, count=4))
    dsn = pg_layer["pgcatalog_dsn"]
    assert len(api.content.find(portal_type="Document")) == 4
    manager = searches[-1]
    transaction.abort()
    read = _count_columns(dsn, manager.statement, manager.params)
    assert NUMBER in read
    assert "allowedRolesAndUsers" not in read
    assert read <= set(FULL["portal_type"])
    assert _covering(dsn) == FULL


def test_pending_changes_are_found_by_their_lists(pg_layer, searches):
    """A search before the commit sees the transaction's rows, which have
    no number yet: it tests the lists."""
    portal = _site(pg_layer, count=2)
    api.user.create(
        email="reader@example.org", username="reader", password="secret-enough"
    )
    transaction.commit()
    api.user.grant_roles(username="reader", obj=portal["page-0"], roles=["Reader"])
    portal["page-0"].reindexObjectSecurity()
    with api.env.adopt_user(username="reader"):
        assert _found(portal_type="Document") == ["/plone/page-0", "/plone/page-1"]
    assert '"allowedRolesAndUsers" && ' in searches[-1].statement
    assert NUMBER not in searches[-1].statement
    transaction.commit()
    with api.env.adopt_user(username="reader"):
        assert _found(portal_type="Document") == ["/plone/page-0", "/plone/page-1"]
    assert NUMBERS_TEST in searches[-1].statement


def _number_in_transaction(
    dsn: str, terms: list[str], added: threading.Event, hold: threading.Event
):
    """The number of ``terms`` in a transaction left open, once ``added``
    is set, until ``hold``."""
    with psycopg.connect(dsn) as conn:
        number = conn.execute(
            "SELECT pgcatalog_keyword_set(%s::text[])", (terms,)
        ).fetchone()[0]
        added.set()
        hold.wait(10)
        return number


def test_a_list_first_written_by_two_transactions_gets_one_number(pg_layer):
    dsn = pg_layer["pgcatalog_dsn"]
    terms = ["user:first-writer", "Manager"]
    added, release = threading.Event(), threading.Event()
    numbers = []
    first = threading.Thread(
        target=lambda: numbers.append(
            _number_in_transaction(dsn, terms, added, release)
        )
    )
    first.start()
    try:
        with psycopg.connect(dsn) as conn:
            # The first has added the list, not committed: the second waits.
            assert added.wait(10)
            conn.execute("SET lock_timeout = '200ms'")
            try:
                conn.execute("SELECT pgcatalog_keyword_set(%s::text[])", (terms,))
            except psycopg.errors.LockNotAvailable:
                conn.rollback()
            else:
                raise AssertionError("the second did not wait for the first")
            conn.execute("SET lock_timeout = '10s'")
            waiting = threading.Timer(0.3, release.set)
            waiting.start()
            second = conn.execute(
                "SELECT pgcatalog_keyword_set(%s::text[])", (terms,)
            ).fetchone()[0]
            conn.rollback()
    finally:
        release.set()
        first.join()
    assert numbers == [second]
    with psycopg.connect(dsn) as conn:
        assert conn.execute(
            "SELECT count(*) FROM pgcatalog_keyword_sets WHERE terms = %s::text[]",
            (terms,),
        ).fetchone() == (1,)
        conn.execute("DELETE FROM pgcatalog_keyword_sets WHERE terms = %s", (terms,))


def test_a_long_list_is_numbered(pg_layer):
    """Past the 2,704 bytes of a B-tree entry: lists are found by their
    digest."""
    dsn = pg_layer["pgcatalog_dsn"]
    terms = [f"user:member-{n:05d}" for n in range(400)]
    with psycopg.connect(dsn) as conn:
        first = conn.execute(
            "SELECT pgcatalog_keyword_set(%s::text[])", (terms,)
        ).fetchone()[0]
        again = conn.execute(
            "SELECT pgcatalog_keyword_set(%s::text[])", (terms,)
        ).fetchone()[0]
        other = conn.execute(
            "SELECT pgcatalog_keyword_set(%s::text[])", (terms[1:],)
        ).fetchone()[0]
        assert first == again != other
        conn.rollback()


def test_the_last_list_numbered_is_remembered_for_the_transaction(pg_layer):
    """``pgcatalog_keyword_set`` remembers the last list it numbered
    (``columns.LAST_LIST``): the same list again is answered from there,
    another is looked up; a savepoint rolled back takes the remembered
    list with the row it inserted, so the list is numbered anew, with a
    number its table holds."""
    dsn = pg_layer["pgcatalog_dsn"]
    one, two = ["user:memo one", "Anonymous"], ["user:memo-two"]

    def number(conn, terms):
        return conn.execute(
            "SELECT pgcatalog_keyword_set(%s::text[])", (terms,)
        ).fetchone()[0]

    def terms_of(conn, number):
        return conn.execute(
            "SELECT terms FROM pgcatalog_keyword_sets WHERE id = %s", (number,)
        ).fetchone()

    with psycopg.connect(dsn) as conn:
        first = number(conn, one)
        remembered = conn.execute(
            "SELECT current_setting(%s)", (columns.LAST_LIST,)
        ).fetchone()[0]
        assert remembered == f'{first} {{"user:memo one",Anonymous}}'
        assert number(conn, one) == first
        second = number(conn, two)
        assert second != first and number(conn, one) == first
        assert terms_of(conn, first) == (one,) and terms_of(conn, second) == (two,)
        conn.rollback()
        # A new list, numbered in a savepoint rolled back: gone with it.
        with pytest.raises(psycopg.errors.DivisionByZero):
            with conn.transaction():
                number(conn, ["user:memo-three"])
                conn.execute("SELECT 1 / 0")
        third = number(conn, ["user:memo-three"])
        assert terms_of(conn, third) == (["user:memo-three"],)
        conn.rollback()
    with psycopg.connect(dsn) as conn:
        # Another transaction remembers nothing of it.
        assert conn.execute(
            "SELECT current_setting(%s, true)", (columns.LAST_LIST,)
        ).fetchone()[0] in (None, "")


def test_a_wrong_number_is_found_by_the_health_check(pg_layer):
    portal = _site(pg_layer, count=2)
    dsn = pg_layer["pgcatalog_dsn"]
    with psycopg.connect(dsn) as conn:
        conn.execute(
            f'UPDATE pgcatalog_objects SET "{NUMBER}" = (SELECT id FROM'
            f" pgcatalog_keyword_sets AS s WHERE s.terms IS DISTINCT FROM"
            f' pgcatalog_objects."allowedRolesAndUsers" LIMIT 1)'
            " WHERE path = '/plone/page-1'"
        )
    assert _misnumbered(dsn) == 1
    transaction.begin()
    found = health.verify(portal.portal_catalog)
    assert found.stale == [("/plone/page-1", [f"{NUMBER} column"])]
    health.repair(portal.portal_catalog, found)
    transaction.commit()
    assert _misnumbered(dsn) == 0


def test_11_to_12_numbers_the_lists_of_a_schema_10_site(pg_layer, searches):
    portal = _site(pg_layer, count=3)
    dsn = pg_layer["pgcatalog_dsn"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        # Schema 10: no numbers; the covering indexes hold the lists.
        columns._drop_column(conn, NUMBER, "5s")
        assert columns.cover(conn, "5s") == list(columns.COVERED)
        # No list numbered yet: the fill numbers them.
        conn.execute("DELETE FROM pgcatalog_keyword_sets")
        conn.execute(
            "UPDATE pgcatalog_state SET value = 10 WHERE key = 'schema_version'"
        )
    schema_10 = {
        name: [
            "allowedRolesAndUsers" if column == NUMBER else column for column in held
        ]
        for name, held in FULL.items()
    }
    assert _covering(dsn) == schema_10
    transaction.begin()
    before = _found(portal_type="Document")
    assert '"allowedRolesAndUsers" && ' in searches[-1].statement
    _upgrade_from(portal, "11")
    assert _covering(dsn) == FULL
    assert _misnumbered(dsn) == 0
    with psycopg.connect(dsn) as conn:
        assert conn.execute(
            "SELECT value FROM pgcatalog_state WHERE key = 'schema_version'"
        ).fetchone() == (schema.SCHEMA_VERSION,)
    transaction.begin()
    assert _found(portal_type="Document") == before
    assert NUMBERS_TEST in searches[-1].statement


def test_the_indexs_column_takes_its_numbers_with_it(pg_layer):
    """Dropping ``allowedRolesAndUsers``'s column (its index deleted)
    drops the column of its numbers first; the covering indexes are made
    again of the columns left, and come back whole with the column."""
    dsn = pg_layer["pgcatalog_dsn"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        try:
            assert columns.drop_column(conn, "allowedRolesAndUsers", "5s")
            with conn.cursor() as cur:
                known = columns.registered(cur)
                assert "allowedRolesAndUsers" not in known
                assert NUMBER not in known
                assert (
                    "pgcatalog_keyword_set("
                    not in conn.execute(
                        "SELECT prosrc FROM pg_proc WHERE proname = %s",
                        (columns.TRIGGER,),
                    ).fetchone()[0]
                )
            assert _covering(dsn) == {
                name: [c for c in held if c != NUMBER] for name, held in FULL.items()
            }
        finally:
            # Tests share the database's DDL (each restores rows only).
            assert columns.add_column(conn, "allowedRolesAndUsers", "keywords", "5s")
    assert _covering(dsn) == FULL
    assert _misnumbered(dsn) == 0
