"""GenericSetup upgrade steps of the ``plone_pgcatalog:default`` profile.

Owns: bringing a site's catalog from one schema version
(``schema.SCHEMA_VERSION``) to the next.  DDL itself needs no step:
zodb-pgjsonb applies the new, idempotent ``schema.BASE_DDL`` before the
first write transaction after a restart.  A step is needed when the stored
forms change and rows must be rewritten, or when DDL would hold the table
long under an exclusive lock (a column's new type): an operator chooses
when that happens, a restart does not.
"""

from __future__ import annotations

from Acquisition import aq_inner
from Acquisition import aq_parent
from collections.abc import Iterator
from functools import partial
from plone.i18n.normalizer.base import baseNormalize
from plone_pgcatalog import fulltext
from plone_pgcatalog import maintenance
from plone_pgcatalog import setuphandlers
from plone_pgcatalog.interfaces import IPGCatalogTool
from plone_pgcatalog.paths import path_clause
from plone_pgcatalog.store import columns
from plone_pgcatalog.store import connection
from plone_pgcatalog.store import ddl
from plone_pgcatalog.store import reports
from plone_pgcatalog.store import schema
from plone_pgcatalog.store import upgrade5
from plone_pgcatalog.store.layout import TABLE
from Products.CMFCore.utils import getToolByName
from psycopg import sql
from psycopg.rows import tuple_row

import json
import logging
import psycopg
import re
import unicodedata

logger = logging.getLogger(__name__)


def to_2(setup_tool) -> None:
    """1 → 2: SearchableText is stored as exact words and stems; new SQL
    indexes (text ranges, Title/Description words, occurrences).

    Rows written by version 1 hold unweighted words that queries of
    version 2 do not match: catalog every object again.  Version 1 kept a
    DateRecurringIndex in one B-tree over all occurrences, which fails past
    a few hundred of them: it is dropped, then every SQL index is created
    as version 2 defines it (both before the rows are written).
    """
    site = aq_parent(aq_inner(setup_tool))
    catalog = getToolByName(site, "portal_catalog")
    if not IPGCatalogTool.providedBy(catalog):
        return
    for name, index in catalog.getIndexDefinitions().items():
        if index.meta_type == "DateRecurringIndex":
            catalog._queue_at_commit(catalog._index_drop(name, index.meta_type))
    catalog.ensure_sql_indexes()
    catalog.clearFindAndRebuild()
    logger.info("plone_pgcatalog 2: %d objects cataloged again", len(catalog))


def to_3(setup_tool) -> None:
    """2 → 3: ``idx`` is kept in the row (storage MAIN, lz4 where the server
    has it), which makes every filter on it about five times cheaper.

    The DDL only changes how new values are stored: catalog every object
    again so that existing rows take the new form too.
    """
    site = aq_parent(aq_inner(setup_tool))
    catalog = getToolByName(site, "portal_catalog")
    if not IPGCatalogTool.providedBy(catalog):
        return
    catalog.clearFindAndRebuild()
    logger.info("plone_pgcatalog 3: %d objects cataloged again", len(catalog))


def to_4(setup_tool) -> None:
    """3 -> 4: the metadata column ``meta`` becomes ``json``: brains read it
    a quarter faster (PostgreSQL sends it as stored, without printing
    ``jsonb`` back to text).

    Nothing to do here any more: the upgrade to 5 (``to_5``), which comes
    next, copies ``meta`` into the catalog's own table as ``json``, where
    changing the type of the column on ``object_state`` would have
    rewritten that table under an exclusive lock.  Until then the catalog
    reads and writes ``meta`` of either type.
    """


def to_5(setup_tool) -> None:
    """4 -> 5: the catalog's rows move from ``object_state`` to the
    catalog's own table, ``pgcatalog_objects``: dense rows, statistics of
    cataloged objects only, and ZODB writes of objects that are not
    cataloged pay nothing for the catalog.

    Online (``store.upgrade5``): after this step's commit, in its own
    connection, the table is built beside from the stored rows in batches
    (writers wait for one batch at most; readers never), kept current by
    triggers meanwhile, then switched to in one short transaction, once no
    request under way holds a snapshot older than the copy.  Until the
    switch the catalog reads and writes the columns on ``object_state``
    through a view of the table's name.  The copy runs in the thread that
    begins this process's next transaction, which waits for it (about 3 s
    per 10,000 rows on a small machine); progress is logged.  A switch
    that does not get its lock, or has to wait for older snapshots, is
    tried again later (``store.ddl.SchemaChange``), without copying again.
    """
    _after_commit(
        setup_tool,
        "catalog table",
        _to_own_table,
        _run_again(4),
    )


def _to_own_table(conn, indexes) -> None:
    if upgrade5.upgrade(conn, indexes, ddl.LOCK_TIMEOUT):
        logger.info("plone_pgcatalog 5: the catalog has its own table")
    # Another site of the database may have moved the rows already, with
    # the SQL indexes its own catalog needs: this one's come now.
    created = schema.create_schema(conn, ddl.LOCK_TIMEOUT, indexes)
    if created:
        logger.info("plone_pgcatalog 5: SQL indexes created: %s", ", ".join(created))


def to_6(setup_tool) -> None:
    """5 -> 6: the hot indexes become typed columns of the catalog's table
    (``store.columns``): FieldIndex and UUIDIndex strings as ``text``,
    KeywordIndex as ``text[]``, BooleanIndex, DateIndex and positions,
    effectiveRange as ``int8range``, each with its SQL index; the
    expression indexes on ``idx`` they replace are dropped.

    Online: after this step's commit, in its own connection, each column is
    added (no rewrite of the table), kept current by a trigger, filled from
    ``idx`` in batches (writers wait for one batch at most, readers never),
    indexed, then used by searches from the next request on.  Until a
    column is ready, searches read ``idx`` as before.  Nothing is cataloged
    again: every column is derived from the stored ``idx``.
    """
    _after_commit(
        setup_tool,
        "typed columns",
        _typed_columns,
        _run_again(5),
    )


def _run_again(source: int) -> str:
    """What an operator does when the step from ``source`` failed after
    its commit: each such step goes on where it stopped."""
    return (
        f"set the version of plone_pgcatalog:default back to {source} in"
        f" portal_setup (portal_setup.setLastVersionForProfile("
        f"'plone_pgcatalog:default', '{source}')) and run the upgrade step"
        f" {source} to {source + 1} again: it goes on where it stopped"
    )


def _still_schema_4(conn, version: int) -> bool:
    """Whether the catalog is still the view of schema 4: the upgrade to 5
    builds the table in the form of this code (typed columns, every row
    written), so the change to ``version`` has nothing to do."""
    with conn.cursor() as cur:
        if schema._relkind(cur, schema.TABLE) == "r":
            return False
    logger.info("plone_pgcatalog %d: comes with the table (upgrade to 5)", version)
    return True


def _after_commit(setup_tool, label: str, change, remedy: str) -> None:
    """Queue ``change(conn, indexes=...)`` with the site's catalog indexes
    (names and meta_types) once the step's transaction has committed."""
    site = aq_parent(aq_inner(setup_tool))
    catalog = getToolByName(site, "portal_catalog")
    if not IPGCatalogTool.providedBy(catalog):
        return
    indexes = [
        (name, index.meta_type) for name, index in catalog.getIndexDefinitions().items()
    ]
    setuphandlers.change_schema_after_commit(
        site, label, partial(change, indexes=indexes), remedy
    )


def _typed_columns(conn, indexes) -> None:
    if _still_schema_4(conn, 6):
        return
    created = schema.create_schema(conn, ddl.LOCK_TIMEOUT, indexes)
    _schema_version(conn, 6)
    logger.info(
        "plone_pgcatalog 6: typed columns and SQL indexes made: %s",
        ", ".join(created) or "none missing",
    )


def to_7(setup_tool) -> None:
    """6 -> 7: the values of wide typed columns (``object_provides``, some
    60 interface names a row) go out of the row, as schema 6 meant: it
    kept them in the row on every site whose catalog was empty when the
    column was made (every new site), which made a Plone page's row 1.2 KB
    instead of 0.5 and every search that reads rows read 2.5 times the
    pages.

    Online (``columns.move_wide_out``): after this step's commit, in its
    own connection, the column's storage changes (an instant under an
    exclusive lock), every row is written again in batches of
    ``columns.FILL_BATCH`` (writers wait for one batch at most, readers
    never), then the table is vacuumed.  The rows' new form takes the
    space of the old one only after ``VACUUM FULL pgcatalog_objects``
    (an exclusive lock for the time of the copy; README, "Operations"),
    which is not needed for the speed of searches that use an index.
    """
    _after_commit(
        setup_tool,
        "wide values out of the row",
        _wide_values_out,
        _run_again(6),
    )


def _wide_values_out(conn, indexes) -> None:
    if _still_schema_4(conn, 7):
        return
    moved = columns.move_wide_out(conn, ddl.LOCK_TIMEOUT)
    _schema_version(conn, 7)
    logger.info(
        "plone_pgcatalog 7: values moved out of the row: %s",
        ", ".join(moved) or "none wide",
    )


def _schema_version(conn, version: int) -> None:
    """Record that the database's catalog is at ``version``."""
    with conn.cursor() as cur:
        cur.execute(
            "UPDATE pgcatalog_state SET value = %s WHERE key = 'schema_version'"
            " AND value < %s",
            (version, version),
        )


def to_8(setup_tool) -> None:
    """7 → 8: the "PostgreSQL catalog" control panel in Site Setup (the
    profile's ``controlpanel.xml``) and the browser layer of the views that
    need this catalog (``browserlayer.xml``: ``@facet-count``).  The
    database schema stays at 7: the profile's version is
    ``PROFILE_VERSION``."""
    for step in ("controlpanel", "browserlayer"):
        setup_tool.runImportStepFromProfile(
            "profile-plone_pgcatalog:default", step, run_dependencies=False
        )


def to_9(setup_tool) -> None:
    """8 → 9 (database schema 7 → 8): a short text's ``tsvector`` in the
    row (``toast_tuple_target`` 1,024, ``schema``): full-text searches read
    it without a lookup in the TOAST table, twice a match (10,000
    documents: 13-20 ms → 4.2-6.2).

    Online (``columns.short_texts_in_row``), as the step 6 to 7: after this
    step's commit, in its own connection, the table's option changes (if a
    restart has not changed it already), then every row is written again
    in batches of ``columns.FILL_BATCH`` (writers wait for one batch at
    most, readers never), then the table is vacuumed.  Searches find the
    same rows before, during and after.
    """
    _after_commit(
        setup_tool,
        "short texts in the row",
        _short_texts_in_row,
        _run_again(8),
    )


def _short_texts_in_row(conn, indexes) -> None:
    if _still_schema_4(conn, 8):
        return
    written = columns.short_texts_in_row(conn, ddl.LOCK_TIMEOUT)
    _schema_version(conn, 8)
    logger.info("plone_pgcatalog 8: rows written again: %d", written)


def to_10(setup_tool) -> None:
    """9 → 10 (database schema 8 → 9): the covering indexes of
    ``portal_type`` and ``review_state`` (``columns.cover``), which include
    the terms every Plone search carries (the site's path, the security
    terms, the effective range): a search's count of their matches reads
    the index only (10,000 documents, ``portal_type=Document`` as the
    Manager: the whole search 12-16 ms → 5-6).

    After this step's commit, in its own connection; each index is built
    in a transaction of its own, which stops writers (not readers) for
    its time (about 0.1 s at 10,000 rows, some seconds at 1,000,000).
    """
    _after_commit(
        setup_tool, "covering indexes", partial(_covering, version=9), _run_again(9)
    )


def _covering(conn, indexes, version: int) -> None:
    """The covering indexes and their partial indexes as this code wants
    them (``columns.cover``), then the database at schema ``version``."""
    _indexes_then_version(
        conn, version, columns.cover, "indexes made again or added", "none"
    )


def _indexes_then_version(conn, version: int, make, done: str, none: str) -> None:
    """``make(conn, lock_timeout)`` (SQL indexes, each in a transaction of
    its own; the names it changed), then the database at schema
    ``version``; ``done`` and those names (or ``none``) in the log."""
    if _still_schema_4(conn, version):
        return
    changed = make(conn, ddl.LOCK_TIMEOUT)
    _schema_version(conn, version)
    logger.info("plone_pgcatalog %d: %s: %s", version, done, ", ".join(changed) or none)


def to_11(setup_tool) -> None:
    """10 → 11 (database schema 9 → 10): the covering indexes also hold the
    date columns listings sort on (``columns.SORTED``), and each of those
    gets a partial index of its untyped values: a sorted window's count of
    its matches reads indexes only (1,000,000 rows, page 2 of
    ``portal_type=Document`` sorted on ``effective``: the count 93.6 ms →
    6.5).

    After this step's commit, in its own connection; each index is built
    in a transaction of its own, which stops writers (not readers) for its
    time (about 0.1 s at 10,000 rows, some seconds at 1,000,000).
    """
    _after_commit(
        setup_tool,
        "covering indexes with sort keys",
        partial(_covering, version=10),
        _run_again(10),
    )


def to_12(setup_tool) -> None:
    """11 → 12 (database schema 10 → 11): the lists of
    ``allowedRolesAndUsers`` are numbered (``columns.NUMBERED``), and the
    covering indexes hold a row's number instead of its list: a search's
    security test on them is a test of a few numbers (500 documents, a
    count of 1,490 matches: 0.54 ms of execution → 0.23).

    Online, after this step's commit, in its own connection: the column
    of the numbers is added (an instant under an exclusive lock), filled
    in batches of ``columns.FILL_BATCH`` rows (writers wait for one batch
    at most, readers never), then each covering index is built again in a
    transaction of its own, which stops writers (not readers) for its time
    (about 0.1 s at 10,000 rows, some seconds at 1,000,000).  Searches use
    the numbers once the column is filled, and find the same rows before,
    during and after.
    """
    _after_commit(setup_tool, "numbered role lists", _numbered, _run_again(11))


def _numbered(conn, indexes) -> None:
    if _still_schema_4(conn, 11):
        return
    made = columns.number(conn, ddl.LOCK_TIMEOUT)
    changed = columns.cover(conn, ddl.LOCK_TIMEOUT)
    _schema_version(conn, 11)
    logger.info(
        "plone_pgcatalog 11: lists numbered: %s; covering indexes made again: %s",
        ", ".join(made) or "none",
        ", ".join(changed) or "none",
    )


def to_13(setup_tool) -> None:
    """12 → 13 (database schema 11 → 12): the trigger that derives the
    typed columns from ``idx`` derives, for an ``UPDATE`` that names the
    keys it changes (``columns.PATCHED_KEYS``: a partial reindex, a
    sharing change), only their columns (1,000 rows given one more role:
    the statement 215 -> 147 ms, the trigger's part of it 97 -> 29).

    After this step's commit, in its own connection: the trigger is made
    again (an instant under the table's lock, which stops writers, not
    readers).  Until then, writes work as before.
    """
    _after_commit(
        setup_tool,
        "keyed trigger",
        partial(
            _trigger_again,
            version=12,
            done="the trigger derives the changed columns only",
        ),
        _run_again(12),
    )


def _trigger_again(conn, indexes, version: int, done: str) -> None:
    """Make the trigger again in this code's form, for schema ``version``
    (``done``: what the new form does, for the log)."""
    if _still_schema_4(conn, version):
        return
    columns.rebuild_trigger(conn)
    _schema_version(conn, version)
    logger.info("plone_pgcatalog %d: %s", version, done)


def to_14(setup_tool) -> None:
    """13 → 14 (database schema 12 → 13): each covering index also holds
    the other covered columns (``columns.COVERED``: ``portal_type`` and
    ``review_state``), so that a listing of a type in a state is counted
    from one index, without reading its matches' rows (1,000,000 rows, the
    latest 20 of 16,950 published Documents: 57.5 -> 7.9 ms).

    After this step's commit, in its own connection; each index is built
    in a transaction of its own, which stops writers (not readers) for
    its time (about 0.1 s at 10,000 rows, 3 s at 1,000,000).  Until then,
    searches find the same rows, reading those rows.
    """
    _after_commit(
        setup_tool,
        "covering indexes of a type and a state",
        partial(_covering, version=13),
        _run_again(13),
    )


def to_15(setup_tool) -> None:
    """14 → 15 (database schema 13 → 14): the lists of a KeywordIndex with
    a typed column are stored once, in the column, no longer in ``idx``
    too (``columns.ONCE_KINDS``): the trigger takes them out of the rows
    it writes, and the rows written before are written again in batches
    (500 documents: a row 3,479 → 2,571 bytes, the table with its TOAST
    8.6 → 6.9 MB; writes as fast as before).

    After this step's commit, in its own connection: the trigger is made
    again (an instant under the table's lock, which stops writers, not
    readers), then the rows are written in batches of
    ``columns.FILL_BATCH`` (writers wait for one batch at most, readers
    never), then ``VACUUM``.  Searches find the same rows before, during
    and after: they read those lists in their columns.
    """
    _after_commit(setup_tool, "lists stored once", _stored_once, _run_again(14))


def _stored_once(conn, indexes) -> None:
    if _still_schema_4(conn, 14):
        return
    columns.rebuild_trigger(conn)
    written = columns.store_once(conn, ddl.LOCK_TIMEOUT)
    if written:
        try:
            conn.execute("VACUUM (ANALYZE) pgcatalog_objects")
        except psycopg.Error as error:
            # The rows are written: autovacuum takes the old versions later.
            logger.warning("plone_pgcatalog 14: VACUUM failed: %s", error)
    _schema_version(conn, 14)
    logger.info("plone_pgcatalog 14: rows with their lists stored once: %d", written)


def to_16(setup_tool) -> None:
    """15 → 16 (database schema 14 → 15): the trigger that derives the
    typed columns does less for each row it writes: a list stored once is
    compared with its column only where ``idx`` holds its key, the keys an
    ``UPDATE`` names are looked for in groups, a list's number is taken
    from its column once derived, and the function that numbers lists
    remembers the last one for the transaction (1,000 rows given one more
    role: the statement 93 -> 76 ms, the same rows written).

    After this step's commit, in its own connection: the trigger is made
    again (an instant under the table's lock, which stops writers, not
    readers).  Until then, writes work as before, a little slower.
    """
    _after_commit(
        setup_tool,
        "lighter trigger",
        partial(_trigger_again, version=15, done="the trigger does less for each row"),
        _run_again(15),
    )


def to_17(setup_tool) -> None:
    """16 → 17 (database schema 15 → 16): the typed columns hold a string
    longer than ``columns.TEXT_KEPT`` characters by its first characters
    (an SQL index entry holds 2,704 bytes at most: a page with a longer
    tag, or a longer value of an add-on's FieldIndex, could not be saved).

    After this step's commit, in its own connection: the trigger is made
    again (an instant under the table's lock, which stops writers, not
    readers).  No row holds such a value: until then, a write of one fails
    as before.
    """
    _after_commit(
        setup_tool,
        "long strings",
        partial(
            _trigger_again,
            version=16,
            done="the typed columns hold long strings by their first characters",
        ),
        _run_again(16),
    )


def to_18(setup_tool) -> None:
    """17 → 18 (database schema 16 → 17): a FieldIndex or UUIDIndex without
    its typed column (a name over 63 bytes, another site's index of
    another type so named, a column that waits for its lock) is served by
    a B-tree on the value the column would hold, a long string by its
    first characters (``columns.held_value``).  Its B-trees on the JSON
    value and on the text failed the commit of a string longer than 2,704
    bytes.

    After this step's commit, in its own connection: the new B-tree is
    built (in a transaction of its own, which stops writers, not readers,
    for its time), then the old ones are dropped (an instant under the
    table's lock).  Searches find the same rows before, during and after,
    on an SQL index throughout.  Sites whose indexes all have their
    columns (every stock Plone site) have nothing to do.
    """
    _after_commit(setup_tool, "held values", _held, _run_again(17))


def _held(conn, indexes) -> None:
    if _still_schema_4(conn, 17):
        return
    made = schema.create_schema(conn, ddl.LOCK_TIMEOUT, indexes)
    dropped = schema.drop_unheld_indexes(conn, ddl.LOCK_TIMEOUT, indexes)
    _schema_version(conn, 17)
    logger.info(
        "plone_pgcatalog 17: B-trees of values as columns hold them instead of"
        " JSON and text: %s; made: %s",
        ", ".join(dropped) or "none",
        ", ".join(made) or "none missing",
    )


def to_19(setup_tool) -> None:
    """18 → 19 (database schema 17 → 18): full text is split and folded as
    Plone's lexicon does (``fulltext``): Japanese, Chinese, Korean and Thai
    in pairs of characters, and only words that start with a Latin letter
    lose their accents.  Before, every word went through plone.i18n's
    ``baseNormalize``, which spells other scripts in Latin letters: a
    search for "日本" missed "は日本" ("hari ben"), one for "privet" found
    "Привет".

    The text indexes (ZCTextIndex: SearchableText, Title, Description and
    an add-on's) of the objects whose words change are read again: the
    objects whose metadata or text kept for snippets hold words that the
    two foldings make differently (none on a site whose texts are all in
    Latin script and whose words start with letters).  With progress in
    the log, committed every ``maintenance.DEFAULT_BATCH_SIZE`` objects
    (memory stays flat on a large site in Japanese, where that is every
    object; the rest commits with the step).  So this step commits the
    upgrade's transaction as it goes (the steps before it first): an
    upgrade interrupted here keeps what it committed, and the next run of
    it reads those objects again.  An add-on's text index of an
    attribute that is neither in the metadata nor in SearchableText is
    read again by ``reindexIndex`` if its texts hold other scripts.
    """
    if not _read_texts_again(
        setup_tool,
        "18: words of other scripts",
        lambda catalog, names: _texts_folded_otherwise(catalog),
    ):
        return
    _after_commit(
        setup_tool,
        "words of other scripts",
        partial(_version_only, version=18),
        _run_again(18),
    )


def to_20(setup_tool) -> None:
    """19 → 20 (the database schema stays 18): an object whose text index
    attribute gives a string without a word (an empty Description, the
    site's own) is indexed with no words, as ZCTextIndex indexes it
    (``registry.TextTranslator.extract``): ``getEntryForObject`` gives
    ``[]`` and ``indexSize`` counts it.  Earlier versions stored nothing
    for it, so Verify listed such rows as stale.  The text indexes of the
    objects whose rows hold no value of one of them are read again
    (``_without_a_text``), batched, with progress in the log, in the
    step's own transaction as the step to 19 (the last batch commits with
    the upgrade)."""
    _read_texts_again(setup_tool, "20: texts without a word", _without_a_text)


def to_21(setup_tool) -> None:
    """20 → 21 (the database schema stays 18; the table of counts comes with
    its DDL at the first start of this code): counts kept per group of
    rows (``columns.GROUPED``: the type, the workflow state, who may see),
    so that a search of those counts its matches from them instead of
    reading an index entry per match (10,000 documents,
    ``portal_type=Document``: 3.3-4.6 -> 1.4-2.1 ms).

    After this step's commit, in its own connection: the triggers that keep
    the counts made, and the counts made from the rows (one ``GROUP BY``
    of the table under the commit lock: writers wait for it, about a
    second at 1,000,000 rows; readers never).  Until then, searches count
    the rows as before.
    """
    _after_commit(
        setup_tool,
        "counts per group",
        partial(_trigger_again, version=18, done="counts kept per group of rows"),
        _run_again(20),
    )


def to_22(setup_tool) -> None:
    """21 → 22 (the database schema stays 18): the SQL indexes of the typed
    column of each DateRangeIndex (``effectiveRange``: B-trees of the
    ranges and of their upper ends, which a site made before had not), so
    that a search of a user who may not see inactive content counts its
    matches from the counts per group, less the rows not in effect now
    that the indexes find (``registry.DateRangeTranslator.residue``).

    After this step's commit, in its own connection: the indexes built in
    a transaction of their own, which stops writers (not readers) for its
    time.  Until then, such searches count their matches from the rows,
    as before.
    """
    _after_commit(
        setup_tool,
        "SQL index of the effective range",
        partial(_column_indexes, version=18),
        _run_again(21),
    )


def to_23(setup_tool) -> None:
    """22 → 23 (the database schema stays 18): the SQL indexes of the
    counts per group (``columns.COUNTS_INDEXES_DDL``), and the counts'
    trigger function in this code's form, whose merge of a commit's change
    finds its groups' rows by the type's index.  At 100,156 rows (2,389
    groups), a round trip included: a type's count 0.37-0.48 -> 0.19-0.23
    ms, a state's as Anonymous 0.55-0.63 -> 0.28-0.35, a change of state
    with its merge 1.33-2.06 -> 0.93-1.14 (``benchmarks/README.rst``,
    "Session 33").

    After this step's commit, in its own connection, under the commit
    lock for an instant (the counts are a table of some thousand rows at
    most).  Until then, the counts are read and merged as before: the same
    counts, more slowly.
    """
    _after_commit(
        setup_tool,
        "SQL indexes of the counts per group",
        partial(_trigger_again, version=18, done="the counts per group indexed"),
        _run_again(22),
    )


def _column_indexes(conn, indexes, version: int) -> None:
    """The typed columns' own SQL indexes that are missing
    (``columns.index_columns``), then the database at schema ``version``."""
    _indexes_then_version(
        conn,
        version,
        columns.index_columns,
        "SQL indexes of typed columns made",
        "none missing",
    )


def _read_texts_again(setup_tool, label: str, find) -> bool:
    """Read the text indexes (ZCTextIndex) of the objects at the paths
    ``find(catalog, names)`` gives again, committing every
    ``maintenance.DEFAULT_BATCH_SIZE`` objects (the rest commits with the
    step), with progress in the log; False where the site's catalog is
    not this add-on's."""
    site = aq_parent(aq_inner(setup_tool))
    catalog = getToolByName(site, "portal_catalog")
    if not IPGCatalogTool.providedBy(catalog):
        return False
    names = sorted(
        name
        for name, index in catalog.getIndexDefinitions().items()
        if index.meta_type == "ZCTextIndex"
    )
    paths = find(catalog, names) if names else []
    logger.info("plone_pgcatalog %s: %d objects to read again", label, len(paths))
    if paths:
        maintenance.reindex_index(
            catalog,
            names,
            pghandler=maintenance.ProgressLogHandler(),
            paths=paths,
            batch_size=maintenance.DEFAULT_BATCH_SIZE,
        )
    return True


def _without_a_text(catalog, names: list[str]) -> list[str]:
    """The paths of the site's rows without a value of one of the text
    indexes ``names`` (SearchableText's in its column, the others' in
    ``idx``): those of objects whose attribute gives no string, which
    stay so, and of those whose string has no word."""
    site, params = path_clause(catalog.site_path(), -1)
    missing = [
        (
            sql.SQL("searchable_text IS NULL")
            if name == "SearchableText"
            else sql.SQL("NOT idx ? {}").format(sql.Literal(name))
        )
        for name in names
    ]
    statement = sql.SQL("SELECT path FROM {} WHERE {} AND ({}) ORDER BY path").format(
        TABLE, site, sql.SQL(" OR ").join(missing)
    )
    conn = connection.read_connection(catalog)
    with conn.transaction():
        with conn.cursor("pgcatalog_texts_20", row_factory=tuple_row) as cursor:
            cursor.execute(statement, params)
            return [path for (path,) in cursor]


def _words_before_18(text: str) -> list[str]:
    """The words schema 17 and before indexed of ``text``: the whole text
    through ``baseNormalize``, then its ``\\w+`` words."""
    folded = baseNormalize(unicodedata.normalize("NFKC", text)).lower()
    return re.findall(r"\w+", folded.replace("_", " "))


#: A character beyond ASCII, as a PostgreSQL regular expression, or (in
#: the metadata's JSON text, which may spell it so) its ``\\u`` escape:
#: ASCII text gives the same words either way.
_BEYOND_ASCII = "[^\\x01-\\x7f]|\\\\u(?!00[0-7])"


def _texts_folded_otherwise(catalog) -> list[str]:
    """The paths of the site's objects whose metadata (Title, Description,
    Subject...) or kept text gives other words now than before schema 18.
    Read by a server-side cursor: on a site in Japanese that is every row."""
    site, params = path_clause(catalog.site_path(), -1)
    statement = reports.NON_ASCII_TEXTS.format(site=site)
    conn = connection.read_connection(catalog)
    paths = []
    with conn.transaction():
        with conn.cursor("pgcatalog_texts_18", row_factory=tuple_row) as cursor:
            cursor.execute(statement, [*params, _BEYOND_ASCII, _BEYOND_ASCII])
            for path, meta, body in cursor:
                if any(
                    _words_before_18(text) != fulltext.words(text)
                    for text in _strings(json.loads(meta) if meta else None, body)
                ):
                    paths.append(path)
    return paths


def _strings(*values) -> Iterator[str]:
    """The strings in ``values`` (metadata values, lists of them, dicts)."""
    for value in values:
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            yield from _strings(*value.values())
        elif isinstance(value, list):
            yield from _strings(*value)


def _version_only(conn, indexes, version: int) -> None:
    """Record schema ``version``: its change was made in the step's own
    transaction."""
    if _still_schema_4(conn, version):
        return
    _schema_version(conn, version)


#: The version of the ``plone_pgcatalog:default`` profile: the schema's
#: (``schema.SCHEMA_VERSION``) up to 7; 8 added the control panel; 9 is
#: schema 8, 10 schema 9, 11 schema 10, 12 schema 11, 13 schema 12, 14
#: schema 13, 15 schema 14, 16 schema 15, 17 schema 16, 18 schema 17, 19,
#: 20, 21, 22 and 23 schema 18.
PROFILE_VERSION = 23
