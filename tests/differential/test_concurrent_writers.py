"""Differential: two writers change one folder at the same time, with the
stock ZCatalog and with plone_pgcatalog.

Each scenario runs in both sites.  Writer A makes its change; writer B, in
another thread with its own connection and transaction, makes the same kind
of change in the same folder and commits first.  Before A commits, the test
lists what A's commit meets, as ZODB meets it: every object that A stores,
or read as current, and that B committed since A read it.  For each one:
its class, whether it belongs to the catalog (reachable from
``portal_catalog`` when the writers start) and whether ZODB's conflict
resolution merges the two changes (ZODB's own ``tryToResolveConflict`` on
the version both read, B's and A's).  A ``ConflictError`` alone would prove
nothing: a commit stops at the first object that does not merge, and that
one may lie outside the catalog (CMFUid's ``portal_uidgenerator`` counter).
Then A commits, and the real commit must fail on a listed object that does
not merge, or succeed when there is none.

Measured with Products.ZCatalog 7.4 and BTrees 6.5 on this small site:

- Editing two sibling pages: the writers share no object but the catalog's,
  and some of ZCatalog's do not merge: ZCTextIndex's word info
  (``_wordinfo``: for a word of fewer than ten documents the value is a
  dict, which BTrees' conflict resolution cannot compare, so two changes to
  a bucket holding such a word conflict even on different keys; a small
  site has one bucket) and, here, ``sortable_title``'s forward index (both
  delete a key, one of them the bucket's first).  With plone_pgcatalog the
  writers share no object at all and both commit.
- Adding a page each to one folder: both sites conflict outside the catalog
  on the same objects (CMFUid's counter, the folder, its ordering), so both
  need the publisher's retry; ZCatalog also conflicts on its own objects
  (word info, ``cmf_uid``, ``is_folderish``, its records), plone_pgcatalog
  on none.
"""

from __future__ import annotations

from Acquisition import aq_base
from collections import Counter
from dataclasses import dataclass
from persistent import Persistent
from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from Products.CMFCore.indexing import processQueue
from Products.ZCatalog.ZCatalog import ZCatalog
from Products.ZCTextIndex.ZCTextIndex import ZCTextIndex
from tests.conftest import collect_in
from tests.integration.test_transactions import _in_other_thread as in_other_thread
from ZODB.ConflictResolution import ConflictResolvingStorage
from ZODB.POSException import ConflictError
from ZODB.serialize import referencesf
from ZODB.utils import get_pickle_metadata
from ZODB.utils import load_current
from ZODB.utils import z64

import pytest
import transaction

#: Where the classes of a stock catalog's own objects live.
CATALOG_MODULES = (
    "BTrees.",
    "Products.ZCatalog.",
    "Products.PluginIndexes.",
    "Products.ZCTextIndex.",
    "Products.ExtendedPathIndex.",
    "Products.DateRecurringIndex.",
)

#: The word info of these text indexes changes with every page.
TEXT_INDEXES = ("SearchableText", "Title")


@dataclass(frozen=True)
class Conflict:
    """An object that both writers changed: A's commit has to merge it."""

    oid: bytes
    class_name: str
    name: str  # "SearchableText._wordinfo" for a stock catalog's part
    in_catalog: bool
    merges: bool


@dataclass(frozen=True)
class Outcome:
    """What writer A's commit met, listed before it and raised by it."""

    conflicts: tuple[Conflict, ...]
    failed_on: bytes | None  # oid of the commit's ConflictError

    def not_merged(self) -> list[Conflict]:
        return [c for c in self.conflicts if not c.merges]

    def in_catalog(self) -> list[Conflict]:
        return [c for c in self.conflicts if c.in_catalog]

    def outside_catalog(self) -> Counter:
        """(class, merges) of the conflicts outside the catalog, counted."""
        return Counter(
            (c.class_name, c.merges) for c in self.conflicts if not c.in_catalog
        )


class _Versions(ConflictResolvingStorage):
    """The version both writers read, which ZODB's conflict resolution
    loads: its ``tryToResolveConflict`` then merges the same three
    versions on any storage."""

    def __init__(self, read: bytes):
        self.read = read

    def loadSerial(self, oid, serial):
        return self.read


def _merges(oid, read: tuple, committed: tuple, mine: bytes) -> bool:
    try:
        _Versions(read[0]).tryToResolveConflict(
            oid, committed[1], read[1], mine, committedData=committed[0]
        )
    except ConflictError:
        return False
    return True


def _catalog_oids(portal) -> set[bytes]:
    """Oids of the persistent objects reachable from ``portal_catalog``."""
    storage = portal._p_jar.db().storage
    seen = set()
    todo = [aq_base(portal.portal_catalog)._p_oid]
    while todo:
        oid = todo.pop()
        if oid not in seen:
            seen.add(oid)
            todo.extend(referencesf(load_current(storage, oid)[0]))
    return seen


def _part_names(catalog) -> dict[bytes, str]:
    """``index._attribute`` for the BTrees of a stock catalog's indexes and
    lexicons, ``_catalog._attribute`` for its records; none for ours."""
    catalog = aq_base(catalog)
    if not isinstance(catalog, ZCatalog):
        return {}
    names = {}

    def name_parts(owner, prefix):
        owner._p_activate()
        for attribute, value in vars(owner).items():
            if isinstance(value, Persistent) and value._p_oid is not None:
                names.setdefault(value._p_oid, f"{prefix}.{attribute}")

    name_parts(catalog._catalog, "_catalog")
    for index_id, index in catalog._catalog.indexes.items():
        index = aq_base(index)
        name_parts(index, index_id)
        if isinstance(index, ZCTextIndex):
            name_parts(index.index, index_id)  # the Okapi index: word info
    for lexicon_id, lexicon in catalog.objectItems():
        name_parts(aq_base(lexicon), lexicon_id)
    return names


def _conflicts_of_commit(conn, catalog_oids, names) -> tuple[Conflict, ...]:
    """What committing ``conn``'s transaction now meets (see module)."""
    processQueue()  # as CMFCore's before-commit hook does
    # A savepoint writes every change of the transaction, pickled, with the
    # serial it was read at, to the connection's temporary store.
    transaction.savepoint()
    pending = conn._savepoint_storage
    storage = conn.db().storage
    snapshot = conn._normal_storage  # loads what this transaction read
    conflicts = []

    def add(oid, data, merges):
        module, class_name = get_pickle_metadata(data)
        conflicts.append(
            Conflict(
                oid=oid,
                class_name=f"{module}.{class_name}",
                name=names.get(oid, class_name),
                in_catalog=oid in catalog_oids,
                merges=merges,
            )
        )

    for oid in sorted(pending.index):
        mine, read_serial = pending.load(oid)
        if read_serial == z64:
            continue  # created by this transaction
        committed = load_current(storage, oid)
        if committed[1] != read_serial:
            read = snapshot.load(oid)
            assert read[1] == read_serial
            add(oid, mine, _merges(oid, read, committed, mine))
    # Objects read as current (BTrees do so for the nodes above a changed
    # bucket) must not have changed at all: a ReadConflictError.
    for oid, read_serial in conn._readCurrent.items():
        committed = load_current(storage, oid)
        if committed[1] != read_serial:
            add(oid, committed[0], False)
    return tuple(conflicts)


def _in_other_thread(portal, work) -> None:
    """Run ``work(portal)`` in its own thread, connection and transaction,
    on the database of ``portal``, and commit, as a Zope worker does."""
    in_other_thread(portal._p_jar.db(), work)


def _concurrently(layer, mine, theirs) -> Outcome:
    """``mine(portal)`` here, ``theirs(portal)`` committed meanwhile in
    another thread; then what this transaction's commit meets."""
    portal = layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    folder = api.content.create(container=portal, type="Folder", id="f", title="F")
    api.content.create(container=folder, type="Document", id="a", title="A")
    api.content.create(container=folder, type="Document", id="b", title="B")
    transaction.commit()
    catalog_oids = _catalog_oids(portal)
    names = _part_names(portal.portal_catalog)

    mine(portal)
    _in_other_thread(portal, theirs)
    conflicts = _conflicts_of_commit(portal._p_jar, catalog_oids, names)
    try:
        transaction.commit()
    except ConflictError as error:
        transaction.abort()
        return Outcome(conflicts, error.oid)
    return Outcome(conflicts, None)


def _retitle(path: str, title: str):
    def retitle(portal):
        page = portal.unrestrictedTraverse(path)
        page.title = title
        page.reindexObject()

    return retitle


def _add(page_id: str, title: str):
    def add(portal):
        api.content.create(
            container=portal["f"], type="Document", id=page_id, title=title
        )

    return add


def _in_both_sites(mine, theirs) -> dict[str, Outcome]:
    return {
        name: collect_in(name, lambda layer: _concurrently(layer, mine, theirs))
        for name in ("zcatalog", "pg")
    }


@pytest.fixture(scope="module")
def edits() -> dict[str, Outcome]:
    """A retitles page ``a``, B page ``b`` of the same folder."""
    return _in_both_sites(_retitle("f/a", "A mine"), _retitle("f/b", "B theirs"))


@pytest.fixture(scope="module")
def additions() -> dict[str, Outcome]:
    """A and B each add a page to the same folder."""
    return _in_both_sites(_add("mine", "Mine"), _add("theirs", "Theirs"))


def _describe(conflicts) -> list[str]:
    return [f"{c.name} ({c.class_name}) merges={c.merges}" for c in conflicts]


def test_editing_siblings_with_zcatalog_conflicts_only_on_the_catalog(edits):
    """Two pages of one folder share no object but ZCatalog's, and some of
    ZCatalog's do not merge: the word info of its text indexes, which two
    edits of a small site always both change.  A's commit fails on one."""
    outcome = edits["zcatalog"]
    assert outcome.conflicts, "the writers shared no object"
    assert outcome.in_catalog() == list(outcome.conflicts), _describe(outcome.conflicts)
    assert all(c.class_name.startswith(CATALOG_MODULES) for c in outcome.conflicts)
    not_merged = {c.name for c in outcome.not_merged()}
    assert {f"{index}._wordinfo" for index in TEXT_INDEXES} <= not_merged
    assert outcome.failed_on in {c.oid for c in outcome.not_merged()}


def test_editing_siblings_with_pgcatalog_shares_no_object(edits):
    """The same edits with plone_pgcatalog: no object is written by both
    writers, and both commit."""
    outcome = edits["pg"]
    assert outcome.conflicts == (), _describe(outcome.conflicts)
    assert outcome.failed_on is None


def test_adding_to_one_folder_conflicts_outside_the_catalog_alike(additions):
    """Outside the catalog both sites meet the same conflicts (same classes,
    same number, same merges): CMFUid's counter, the folder and its
    ordering do not merge; plone_pgcatalog adds no conflict of its own."""
    zcatalog, pg = additions["zcatalog"], additions["pg"]
    assert ("Products.CMFUid.UniqueIdGeneratorTool.UniqueIdGeneratorTool", False) in (
        pg.outside_catalog()
    )
    assert pg.outside_catalog() == zcatalog.outside_catalog()


def test_adding_to_one_folder_with_zcatalog_conflicts_on_its_objects(additions):
    """ZCatalog's own objects, which both writers change, do not merge
    either: its text indexes' word info among them."""
    outcome = additions["zcatalog"]
    in_catalog = outcome.in_catalog()
    assert all(c.class_name.startswith(CATALOG_MODULES) for c in in_catalog)
    not_merged = {c.name for c in in_catalog if not c.merges}
    assert {f"{index}._wordinfo" for index in TEXT_INDEXES} <= not_merged, _describe(
        in_catalog
    )


def test_adding_to_one_folder_with_pgcatalog_conflicts_on_no_catalog_object(
    additions,
):
    outcome = additions["pg"]
    assert outcome.in_catalog() == [], _describe(outcome.in_catalog())
    assert outcome.conflicts  # the scenario does conflict, outside


@pytest.mark.parametrize("site", ["zcatalog", "pg"])
def test_the_commit_fails_on_a_listed_object_that_does_not_merge(additions, site):
    """The list agrees with the real commit: it fails on one of the objects
    the list says do not merge."""
    outcome = additions[site]
    assert outcome.failed_on in {c.oid for c in outcome.not_merged()}
