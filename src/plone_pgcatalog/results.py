"""The query path of the tool: a query dict in, lazy results out.

Owns what a search does between the tool's ``searchResults`` (which adds
the security terms) and the brains: the transaction's pending changes laid
over the stored rows (``store.overlay``), the translation
(``query.build_query``, with the languages whose stems full text matches),
one round trip through the snapshot cache (``store.search``,
``snapshots.results``), the slow-query log (``slowlog``), and
``brains.LazyResults`` whose metadata comes from PostgreSQL (the first
rows' with the search), or from the transaction for rows it cataloged.

Must not compose SQL itself.
"""

from __future__ import annotations

from Acquisition import aq_base
from Acquisition import aq_chain
from Acquisition import aq_inner
from Acquisition import aq_parent
from operator import itemgetter
from plone_pgcatalog import slowlog
from plone_pgcatalog import snapshots
from plone_pgcatalog.brains import LazyResults
from plone_pgcatalog.conflicts import found_by_searches
from plone_pgcatalog.errors import SearchTimeout
from plone_pgcatalog.fulltext import highlight
from plone_pgcatalog.fulltext import snippet_html
from plone_pgcatalog.fulltext import text_config
from plone_pgcatalog.paths import in_subtree
from plone_pgcatalog.pending import current_pending
from plone_pgcatalog.query import is_large
from plone_pgcatalog.query import QueryContext
from plone_pgcatalog.query import read_indexes
from plone_pgcatalog.query import row_test
from plone_pgcatalog.registry import get_translator
from plone_pgcatalog.registry import TextTranslator
from plone_pgcatalog.registry import TRANSLATORS
from plone_pgcatalog.store import connection
from plone_pgcatalog.store import search
from plone_pgcatalog.store.columns import many_lists
from plone_pgcatalog.store.overlay import Overlay
from plone_pgcatalog.translations import translations

import logging
import psycopg
import reprlib
import time

logger = logging.getLogger(__name__)


#: How much of a query an error message shows (values may be any length).
_SHOWN = reprlib.Repr(maxstring=80, maxother=80, maxlist=8, maxdict=12)


def _shown(query: dict) -> str:
    """``query`` for an error message: shortened, without the user's roles
    and groups (``allowedRolesAndUsers``)."""
    return _SHOWN.repr(
        {key: value for key, value in query.items() if key != "allowedRolesAndUsers"}
    )


def search_results(
    catalog, query: dict, match_all: bool = False, metadata: bool = True
) -> LazyResults:
    """The lazy results of ``query`` in ``catalog``, as ZCatalog's
    ``searchResults`` gives them (without the security terms the tool adds).
    Without ``metadata`` the search does not read its first rows' metadata
    (for callers that only count)."""
    pending = current_pending()
    read = None if pending or match_all else _uid_read(catalog, query)
    if read is not None:
        found, searched_in = read
        rest, later = None, False
    else:
        found, rest, later, searched_in = _search(
            catalog, query, pending, match_all, metadata
        )
    found_by_searches().update(map(itemgetter(0), found.ids))
    # The metadata that came with the rows is that of this snapshot
    # (``searched_in``): read after a commit (a script that changes what it
    # found), brains show what is stored then, as ZCatalog's do.

    # Rows this transaction cataloged have their metadata here, not in
    # PostgreSQL yet.
    pending_meta: dict[int, dict] = {}
    if pending:
        pending_meta.update((zoid, row.meta) for zoid, row in pending.rows.items())
        pending_meta.update(
            (zoid, patch.meta)
            for zoid, patch in pending.patches.items()
            if patch.update_metadata
        )

    def load_metadata(zoids):
        stored = [zoid for zoid in zoids if zoid not in pending_meta]
        # The first rows' came with the search (``search.META_ROWS``).
        loaded = {}
        if searched_in is not None and connection.snapshot_id(catalog) == searched_in:
            loaded = search.metadata_given(found, stored)
        missing = [zoid for zoid in stored if zoid not in loaded]
        if missing:
            with connection.reading(catalog) as conn:
                loaded.update(search.load_metadata(conn, missing))
        loaded.update(
            (zoid, pending_meta[zoid]) for zoid in zoids if zoid in pending_meta
        )
        return loaded

    return LazyResults(
        found.ids,
        found.total,
        catalog,
        catalog._catalog.names,
        load_metadata,
        found.scores,
        load_snippets=_snippet_loader(catalog, query, pending),
        rest=rest,
        # Read after its transaction, the rest is every match of the later
        # snapshot not among the rows held, in the result's order (a
        # script that commits while it iterates sees each match once,
        # whatever it changed in those it read); ZCatalog, too, reads its
        # records then.  Else it is fetched before the transaction ends.
        rest_later=later,
    )


#: The keys of a query that ZCatalog's ``search`` does not read (in both
#: spellings, ``query.sort_attr``): its arguments say how to sort.
_SORT_KEYS = tuple(
    f"sort{sep}{what}" for sep in "_-" for what in ("on", "order", "limit")
)


def search_query(query: dict, sort_index, reverse, limit) -> dict:
    """The ``searchResults`` query of ZCatalog's ``search(query,
    sort_index, reverse, limit)``: ``query`` without its own sort keys,
    sorted on ``sort_index`` (an index name, or a list of them), in reverse
    where ``reverse`` is true (one flag, or one per name), at most
    ``limit`` (``sort_limit``, which ZCatalog's ``searchResults`` passes as
    ``search``'s ``limit``)."""
    converted = {key: value for key, value in query.items() if key not in _SORT_KEYS}
    if sort_index is not None:
        converted["sort_on"] = sort_index
        flags = reverse if isinstance(reverse, (list, tuple)) else [reverse]
        orders = ["reverse" if flag else "ascending" for flag in flags]
        converted["sort_order"] = orders if len(orders) > 1 else orders[0]
    if limit is not None:
        converted["sort_limit"] = limit
    return converted


def unmerged(catalog, found: LazyResults, sort_index):
    """ZCatalog's ``search`` result with ``merge`` false, from the merged
    one (``found``), for ``Catalog.mergeResults``, which sorts the results
    of several catalogs together and gets each brain by the getter of the
    entries (ZCatalog's ``_catalog.__getitem__``; here one that gives the
    brains of ``found``, by record id or ``(1, score, rid)``):

    - sorted (``sort_index``: a name or a list of them): ``(key, rid,
      getter)`` per result, ``key`` the index's value for the object (a
      tuple of them for several indexes), in ZCatalog's form
      (``documentToKeyMap``);
    - searched for words, unsorted: ``(score, (1, score, rid), getter)``;
    - otherwise the results themselves, as ZCatalog gives them.

    The keys of the results are read in one statement per sort index."""
    if sort_index is None and (not found or found[0].data_record_score_ is None):
        return found  # read no further than ZCatalog's lazy result would
    brains = list(found)
    by_rid = {brain.getRID(): brain for brain in brains}

    def getter(entry):
        return by_rid[entry[2] if isinstance(entry, tuple) else entry]

    if sort_index is None:
        return [
            (b.data_record_score_, (1, b.data_record_score_, b.getRID()), getter)
            for b in brains
        ]
    names = sort_index if isinstance(sort_index, (list, tuple)) else [sort_index]
    keys = [
        catalog._catalog.getIndex(name).documentToKeyMap().read(by_rid)
        for name in names
    ]
    rows = []
    for rid in by_rid:
        values = tuple(key_of.get(rid) for key_of in keys)
        rows.append((values if len(names) > 1 else values[0], rid, getter))
    return rows


def vacated(query: dict, pending) -> bool:
    """Whether ``query`` asks for one subtree that a move of this
    transaction took every row away from, and where nothing was cataloged
    since: its result is empty, whatever else it asks.

    plone.app.discussion's subscriber of moves asks the catalog for the
    comments at each moved object's old path, once per object, in the
    move's transaction: with this transaction's changes laid over the rows,
    each search cost more the more objects the move had reindexed (a folder
    of 1,000 items renamed: 54 s against ZCatalog's 5.8).  Only a path
    given as one absolute path, with or without ``depth``."""
    if not pending.moves:
        return False
    path = query.get("path")
    if isinstance(path, dict):
        if set(path) - {"query", "depth"}:
            return False
        path = path.get("query")
    if isinstance(path, (list, tuple)) and len(path) == 1:
        path = path[0]
    if not isinstance(path, str) or not path.startswith("/"):
        return False
    path = path.rstrip("/") or "/"
    for position, (old, _new) in enumerate(pending.moves):
        if not in_subtree(path, old):
            continue
        # Rows brought there since: by a later move, or cataloged anew.
        later = [new for _old, new in pending.moves[position:]]
        return not (
            any(in_subtree(new, path) or in_subtree(path, new) for new in later)
            or any(in_subtree(row.path, path) for row in pending.rows.values())
            or any(in_subtree(p.path, path) for p in pending.patches.values())
        )
    return False


def _search(
    catalog, query: dict, pending, match_all: bool, metadata: bool
) -> tuple[search.Found, object, bool, tuple | None]:
    """``(found, rest, later, searched_in)``: what ``query`` found in one
    round trip, what fetches the rest of its rows (None when they all
    came), whether that rest is read from a later snapshot when the result
    is read after its transaction, and the snapshot it was found in."""
    if pending is not None and vacated(query, pending):
        return search.Found([], 0), None, False, None
    started = time.perf_counter()
    if pending:
        definitions = catalog.getIndexDefinitions()
        overlay = pending.overlay(
            read_indexes(query, definitions), row_test(query, definitions)
        )
    else:
        overlay = Overlay()
    configs = query_text_configs(query, catalog)
    large = is_large(connection.catalog_rows(catalog))
    lists = many_lists(connection.numbered_lists(catalog))

    def translate(read: tuple[dict[str, str], bool, frozenset | None]):
        columns, alone, counted = read
        return translations.translate(
            query,
            catalog.getIndexDefinitions(),
            catalog.site_path(),
            QueryContext(
                text_configs=configs,
                columns=columns,
                large=large,
                site_alone=alone,
                many_lists=lists,
                group_counts=counted,
            ),
            overlay,
            match_all=match_all,
            snapshot=connection.snapshot_id(catalog),
        )

    # The typed columns the request's snapshot has ready, and whether the
    # site is alone in the table, are read once per transaction, with its
    # first catalog statement.  When this search is that statement, it is
    # translated as the last snapshot had them and sent in the same round
    # trip (``search_first``), and translated again if they were not those.
    first = connection.first_read(catalog)
    if first:
        translated_with = (
            connection.likely_columns(catalog),
            connection.likely_alone(catalog),
            connection.likely_group_counts(catalog),
        )
    else:
        translated_with = _as_read(catalog)
    plan = translate(translated_with)

    def as_ready() -> None:
        # In ``reading``: ``plan`` as its snapshot has the columns and sites.
        nonlocal plan, translated_with
        ready = _as_read(catalog)
        if ready != translated_with:
            plan, translated_with = translate(ready), ready

    def run() -> search.Found:
        if first:
            statement, params = search.search_statement(plan, metadata)
            rows = connection.search_first(
                catalog, statement, params, search.keep_plan(plan)
            )
            if rows is not None and _as_read(catalog) == translated_with:
                with connection.reading(catalog) as conn:
                    return search.found_by(conn, plan, rows, metadata)
        # The guess was wrong, or the search failed (``reading`` sets the
        # savepoint again, and the error is raised again if it is the
        # search's own).
        with connection.reading(catalog) as conn:
            as_ready()
            return search.run_search(conn, plan, metadata)

    try:
        found = snapshots.results.get(
            _result_key(catalog, plan),
            run,
            keep=lambda found: len(found.ids) <= snapshots.RESULT_ROWS,
        )
    except SearchTimeout as error:
        slowlog.observe(
            catalog,
            started,
            lambda: (_shown(query), *search.search_statement(plan, metadata), None),
            error=str(error),
            kept=bool(search.keep_plan(plan)),
        )
        raise SearchTimeout(f"{error}; the query: {_shown(query)}") from error.__cause__
    except (psycopg.errors.UndefinedColumn, psycopg.errors.UndefinedTable):
        # The catalog's table is created before the first write
        # transaction; until then nothing is cataloged.
        logger.info("catalog table not created yet: empty result")
        found = search.Found([], 0)
    slowlog.observe(
        catalog,
        started,
        lambda: (_shown(query), *search.search_statement(plan, metadata), found.total),
        kept=bool(search.keep_plan(plan)),
    )
    # The rest of a result read after its transaction comes from a later
    # snapshot; pending changes laid over the rows are the transaction's
    # own, and a storage that does not tell its snapshot cannot tell.
    searched_in = connection.snapshot_id(catalog)
    later = searched_in is not None and not plan.source_params

    def rest(offset: int) -> tuple[list, list | None]:
        with connection.reading(catalog) as conn:
            # Perhaps a later snapshot, or the first read of the
            # transaction when the result was a kept one.
            as_ready()
            if later and connection.snapshot_id(catalog) != searched_in:
                more = search.fetch_others(conn, plan, found)
            else:
                more = search.fetch_rest(conn, plan, offset)
        found_by_searches().update(map(itemgetter(0), more.ids))
        return more.ids, more.scores

    whole = plan.windowed or plan.python_slice
    return found, None if whole else rest, later, searched_in


def _uid_read(catalog, query: dict) -> tuple[search.Found, tuple] | None:
    """What plone.app.uuid's ``unrestrictedSearchResults(UID=uid)`` finds,
    and the snapshot it is of, when this transaction read that UID's rows
    already in its snapshot (``UUIDIndexView._rids_for``,
    ``snapshots.remember_uid``), else None.

    plone.app.uuid asks the UID index for a UID's path
    (``uuidToPhysicalPath``, ``uuidToObject``) and searches for its brain
    (``uuidToCatalogBrain``, ``uuidToURL``).  Where a caller asks for both
    (the benchmark's ``uid_lookups``; a page that shows a link's object and
    its URL), the search is answered without a translation or a round
    trip, with the rows the lookup read (the rows of the site whose ``UID``
    is ``uid``, by record id, as the search's statement finds them); their
    metadata is loaded, in the same snapshot, if a brain's is read.  Only
    for the query of the UID alone, with no pending changes (the callers'
    condition), and while ``UID`` is the only index that answers the key
    ``UID`` (``translations.answering``: worked out once per state of the
    definitions)."""
    if len(query) != 1:
        return None
    uid = query.get("UID")
    if type(uid) is not str or not uid:
        return None
    # Asked only now: every other search goes on without it.
    snapshot = connection.snapshot_id(catalog)
    if snapshot is None:
        return None
    rows = snapshots.uid_read((*snapshot, catalog.site_path()), "UID", uid)
    if rows is None:
        return None
    indexes = catalog.getIndexDefinitions()
    if translations.answering(indexes, "UID", snapshot) != ("UID",):
        return None
    if indexes.stored["UID"].meta_type != "UUIDIndex":
        return None
    return search.found_read(rows), snapshot


def _snippet_loader(catalog, query: dict, pending):
    """What loads the snippets of a window of brains (``{zoid: {"snippet":
    html}}``), or None when ``query`` searches no words.  Nothing is done
    for snippets before one is read (a brain gives its snippet only where
    the user may read it: ``security.may_read_text``)."""
    words = _searched_text(query.get("SearchableText"))
    if not words:
        return None

    def load_snippets(zoids: list[int]) -> dict:
        found = highlight(words)
        if found is None:
            return {}  # only negated words: nothing to mark
        try:
            with connection.reading(catalog) as conn:
                loaded = search.snippets(
                    conn,
                    zoids,
                    found.query,
                    found.words,
                    _pending_texts(pending, zoids),
                    found.prefixes,
                )
        except psycopg.errors.UndefinedTable:
            # The texts' table comes with the schema at the next start.
            logger.info("no texts table yet: no snippets")
            return {}
        return {
            zoid: {
                "snippet": snippet_html(
                    snippet.marked, snippet.text_starts, snippet.text_ends
                )
            }
            for zoid, snippet in loaded.items()
        }

    return load_snippets


def _pending_texts(pending, zoids: list[int]) -> dict[int, tuple[str, str] | None]:
    """``{zoid: (config, text), or None}`` of the rows of ``zoids`` whose
    SearchableText this transaction wrote (``search.snippets``)."""
    texts: dict[int, tuple[str, str] | None] = {}
    if not pending:
        return texts
    for zoid in zoids:
        written = pending.rows.get(zoid) or pending.patches.get(zoid)
        if written is not None and written.text_given:
            source = written.text_source
            texts[zoid] = None if source is None else (written.text_config, source)
    return texts


def _searched_text(value) -> str:
    """The words of a ``SearchableText`` criterion (a string, a list of
    them, or ``{"query": ...}``)."""
    if isinstance(value, dict):
        value = value.get("query")
    if isinstance(value, (list, tuple)):
        value = " ".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def _result_key(catalog, plan) -> tuple | None:
    """The key of ``snapshots.results`` for a search's rows, or None
    when they are not the stored rows alone (pending changes)."""
    if plan.source_params or not snapshots.results.enabled:
        return None  # not composing a key nobody will look up
    snapshot = connection.snapshot_id(catalog)
    if snapshot is None:
        return None
    # The site: a statement translated for a site alone in the table has
    # no path in it, and one sent on a wrong guess of that
    # (``search_first``) is run again with the path, its rows kept under
    # its own text.
    return (*snapshot, catalog.site_path(), *plan.window_text, plan.python_slice)


def _as_read(catalog) -> tuple[dict[str, str], bool, frozenset | None]:
    """What a search is translated with, as the current transaction's
    snapshot has it: the ready typed columns, whether the site is alone
    in the table, and the counts per group (``connection.group_counts``)."""
    return (
        connection.ready_columns(catalog),
        connection.site_alone(catalog),
        connection.group_counts(catalog),
    )


#: Our translators that read no text configuration (all but ZCTextIndex's).
_NO_LANGUAGES = tuple(
    translator
    for translator in TRANSLATORS.values()
    if not isinstance(translator, TextTranslator)
)


def query_text_configs(query: dict, catalog) -> tuple[str, ...]:
    """``text_configs`` of ``query`` where a translator of an index it
    names may read them (``QueryContext.text_configs``): ZCTextIndex's, or
    an add-on's; else none.  Plone's language settings, read from the
    registry for every search, were about a tenth of a search whose
    result is kept (``portal_type=Document`` with metadata, 0.30 -> 0.25
    ms, ``benchmarks/README.rst``, "Session 28")."""
    indexes = catalog.getIndexDefinitions()
    snapshot = connection.snapshot_id(catalog)
    for name in query:
        for index_name in translations.answering(indexes, name, snapshot):
            if get_translator(indexes[index_name].meta_type) not in _NO_LANGUAGES:
                return text_configs(query, catalog)
    return ()


def text_configs(query: dict, catalog=None) -> tuple[str, ...]:
    """Languages whose stems a full-text query matches.

    Those the query asks for with ``Language``, else the catalog's site's
    available languages (Plone's language settings).
    """
    languages = query.get("Language")
    if isinstance(languages, dict):
        languages = languages.get("query")
    if isinstance(languages, str):
        languages = [languages]
    if not isinstance(languages, (list, tuple)) or not languages:
        languages = site_languages(catalog)
    configs = {text_config(language) for language in languages}
    configs.discard("simple")
    return tuple(sorted(configs))


def site_languages(catalog=None) -> list[str]:
    """The languages Plone's settings offer (default language first): of
    the site of ``catalog`` (a catalog tool), else of the current site.

    The current site's are the catalog's own (or a sub-site's of it), but
    where code works on a site that it has not made the current one (a
    move between sites, a script that walks several sites, none current):
    then they are read from the registry of the catalog's site, an object
    of it (the component registry hands out another site's utilities only
    below the current site)."""
    from plone.registry.interfaces import IRegistry
    from zope.component import queryUtility
    from zope.component.hooks import getSite

    site = None if catalog is None else aq_parent(aq_inner(catalog))
    if site is not None and not _within(getSite(), site):
        registry = getattr(aq_base(site), "portal_registry", None)
    else:
        registry = queryUtility(IRegistry)
    if registry is None:
        return [""]
    default = registry.get("plone.default_language") or ""
    available = registry.get("plone.available_languages") or []
    return [default, *available]


def _within(current, site) -> bool:
    """Whether the current site ``current`` is ``site`` or below it."""
    if current is None:
        return False
    base = aq_base(site)
    if aq_base(current) is base:
        return True  # the common case, without walking up
    return any(aq_base(item) is base for item in aq_chain(aq_inner(current)))
