"""Bad input: malformed queries answer as ZCatalog answers them, never
with a PostgreSQL error, never by ignoring the bad part.

Owns: the content of a small site (``build_content``: ~20 pages, folders,
news, events and a link, with subjects holding SQL meta-characters), the
strategy of malformed queries over the real index set of a Plone 6.2 site
(``queries``; the value pools come from
tests/unit/test_bad_input_translation.py), and the judgement of one
query's outcomes (``judge``).

Design, deterministic and honest:

1. ``QUERIES`` is generated once, at import, by hypothesis itself: for
   each index of the site, a ``@given`` function with ``derandomize=True``
   (seeded per index) and no example database collects the queries it is
   given.  No query is picked by hand and none is filtered by its outcome.
   Hypothesis also draws constants from the source of the loaded modules
   of the code under test: the unit module loads all of plone_pgcatalog
   first, so the list depends on the commit only (a test checks that a
   new process generates the same list).
2. The module fixture builds the same content in the plone_pgcatalog site
   and then in the stock ZCatalog site (the oracle; the two layers cannot
   be active at once) and runs every query in both as the Manager,
   through ``unrestrictedSearchResults`` and through ``searchResults``,
   recording paths and counts or the exception.
3. One test per query and call judges the two outcomes (``judge``):

   a. ZCatalog raises E: pgcatalog raises E (or a subclass), or a
      ``ValueError`` whose message names a key of the query;
   b. ZCatalog returns results: pgcatalog returns the same (as sets; for a
      window without a defined order, the counts), or raises a
      ``ValueError`` naming the value where ZCatalog's answer is
      accidental: either ZCatalog raises too once it looks at the part
      that pgcatalog's error names (``probe_of``: ZCatalog stops at the
      first index that finds nothing and reads the batch arguments only
      when there is a result), or the case is listed in ``ACCIDENTAL``
      with the reason;
   c. pgcatalog never raises a psycopg error.

4. In the pgcatalog site, after the replay, hypothesis also hunts for
   queries that make PostgreSQL fail (property c alone, needing no
   oracle), so that it can shrink what it finds to a minimal query.

Must not import plone_pgcatalog's internals: both sites are driven through
``portal_catalog`` only (the strategies' module imports plone_pgcatalog for
its own, pure tests).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from datetime import datetime
from datetime import timedelta
from DateTime import DateTime
from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import Phase
from hypothesis import settings
from hypothesis import strategies as st
from pathlib import Path
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from tests.conftest import run_in
from tests.differential.content import apply_states
from tests.unit.test_bad_input_translation import bad_values
from tests.unit.test_bad_input_translation import hostile_text
from tests.unit.test_bad_input_translation import index_query
from tests.unit.test_bad_input_translation import OPERATORS
from tests.unit.test_bad_input_translation import RANGES
from tests.unit.test_bad_input_translation import window_options

import copy
import hashlib
import math
import pytest
import pytz
import subprocess
import sys
import traceback
import transaction

VIENNA = pytz.timezone("Europe/Vienna")

#: Keywords of the content, some with SQL meta-characters.
SUBJECTS = ("alpha", "beta", "O'Brien; --", "Küste", "%s", "50% $$")


def uid_of(path: str) -> str:
    return hashlib.md5(path.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Item:
    path: str  # site-relative
    portal_type: str
    title: str
    subjects: tuple[str, ...] = ()
    state: str = "published"
    start: datetime | None = None
    hours: int = 1
    recurrence: str | None = None
    effective: DateTime | None = None
    expires: DateTime | None = None
    exclude_from_nav: bool = False


def _items() -> tuple[Item, ...]:
    words = (
        "Lighthouse",
        "Garden",
        "Bridge",
        "Harbour",
        "Library",
        "Museum",
        "Market",
        "Castle",
        "Mountain",
        "River",
    )
    items = [
        Item("folder", "Folder", "Lighthouse folder", ("alpha",)),
        Item("folder/sub", "Folder", "Sub folder", (), "private"),
    ]
    for n, word in enumerate(words):
        container = "folder/" if n % 3 == 0 else ""
        items.append(
            Item(
                f"{container}page-{n:02d}",
                "Document",
                f"{word} page {n}",
                tuple(SUBJECTS[(n + k) % len(SUBJECTS)] for k in range(n % 3)),
                ("published", "private", "pending")[n % 3],
                exclude_from_nav=n % 4 == 1,
                # One page expired, one effective only in the future.
                expires=DateTime("2001/01/01 10:00:00 GMT+1") if n == 4 else None,
                effective=DateTime("2099/01/01 10:00:00 GMT+1") if n == 5 else None,
            )
        )
    items += [
        Item("folder/news-1", "News Item", "Garden news", ("beta", "Küste")),
        Item("news-2", "News Item", "Harbour reopens", ("O'Brien; --",), "private"),
        Item(
            "event-1",
            "Event",
            "Lighthouse festival",
            ("alpha",),
            start=VIENNA.localize(datetime(2030, 1, 5, 10, 0)),
        ),
        Item(
            "folder/event-2",
            "Event",
            "Weekly market",
            ("%s",),
            start=VIENNA.localize(datetime(2030, 3, 7, 9, 30)),
            hours=2,
            recurrence="RRULE:FREQ=WEEKLY;COUNT=3",
        ),
        Item(
            "event-3",
            "Event",
            "Castle concert",
            (),
            "private",
            start=VIENNA.localize(datetime(2029, 12, 31, 20, 0)),
            hours=3,
        ),
        Item("link-1", "Link", "Museum website", ("50% $$",)),
        Item("folder/sub/page-deep", "Document", "Deep river page", ("beta",)),
    ]
    return tuple(items)


ITEMS = _items()


def build_content(portal) -> None:
    """Create ``ITEMS`` with fixed UIDs and dates, in three commits."""
    from plone import api
    from plone.uuid.interfaces import IMutableUUID

    setRoles(portal, TEST_USER_ID, ["Manager"])
    for item in ITEMS:
        parent, _, id_ = item.path.rpartition("/")
        container = portal.unrestrictedTraverse(parent) if parent else portal
        fields = {
            "title": item.title,
            "subject": item.subjects,
            "exclude_from_nav": item.exclude_from_nav,
        }
        if item.portal_type == "Event":
            fields.update(
                start=item.start,
                end=item.start + timedelta(hours=item.hours),
                recurrence=item.recurrence,
            )
        if item.portal_type == "Link":
            fields["remoteUrl"] = "https://example.org/museum"
        obj = api.content.create(
            container=container, type=item.portal_type, id=id_, safe_id=False, **fields
        )
        IMutableUUID(obj).set(uid_of(item.path))
    transaction.commit()
    apply_states(portal, ITEMS)
    transaction.commit()
    # Dates last, so that the steps above cannot change them.
    names = list(portal.portal_catalog.indexes())
    for position, item in enumerate(ITEMS):
        obj = portal.unrestrictedTraverse(item.path)
        obj.creation_date = DateTime("2020/01/01 08:00:00 GMT+1") + position
        obj.setModificationDate(DateTime("2022/01/01 08:00:00 GMT+1") + position / 2.0)
        effective = item.effective
        if effective is None and item.state == "published":
            effective = DateTime("2021/01/01 09:00:00 GMT+1") + position
        obj.setEffectiveDate(effective)
        obj.setExpirationDate(item.expires)
        obj.reindexObject(idxs=names)
    transaction.commit()


# -- the queries -----------------------------------------------------------------

_DATES = st.sampled_from(
    (
        DateTime("2021/01/05 12:00:00 GMT+1"),
        DateTime("2030/01/05 10:00:00 GMT+1"),
        datetime(2022, 1, 3, 9, 0, tzinfo=pytz.utc),
        date(2021, 1, 10),
        "2021-01-07",
    )
)
_TEXT = st.sampled_from(
    (
        "lighthouse",
        "garden page",
        "light*",
        "castle OR river",
        "NOT garden",
        "museum AND website",
    )
)
_UIDS = st.sampled_from([uid_of(item.path) for item in ITEMS[:4]])
_BOOLEANS = st.sampled_from((True, False, 0, 1))

#: Every index of the Plone 6.2 test site: meta_type and valid values.
INDEXES: dict[str, tuple[str, st.SearchStrategy]] = {
    "Creator": ("FieldIndex", st.just(TEST_USER_ID)),
    "cmf_uid": ("FieldIndex", st.sampled_from((1, 2))),
    "Date": ("DateIndex", _DATES),
    "Description": ("ZCTextIndex", _TEXT),
    "SearchableText": ("ZCTextIndex", _TEXT),
    "Subject": ("KeywordIndex", st.sampled_from(SUBJECTS)),
    "Title": ("ZCTextIndex", _TEXT),
    "Type": ("FieldIndex", st.sampled_from(("Page", "Folder", "Event", "News Item"))),
    "UID": ("UUIDIndex", _UIDS),
    "allowedRolesAndUsers": (
        "KeywordIndex",
        st.sampled_from(("Anonymous", "Manager", "user:test_user_1_")),
    ),
    "created": ("DateIndex", _DATES),
    "effective": ("DateIndex", _DATES),
    "effectiveRange": ("DateRangeIndex", _DATES),
    "end": ("DateRecurringIndex", _DATES),
    "exclude_from_nav": ("BooleanIndex", _BOOLEANS),
    "expires": ("DateIndex", _DATES),
    "getId": ("FieldIndex", st.sampled_from(("page-01", "folder", "event-1"))),
    "getObjPositionInParent": ("GopipIndex", st.sampled_from((0, 1, 2))),
    "getRawRelatedItems": ("KeywordIndex", _UIDS),
    "id": ("FieldIndex", st.sampled_from(("page-02", "news-1", "sub"))),
    "in_reply_to": ("FieldIndex", _UIDS),
    "is_default_page": ("BooleanIndex", _BOOLEANS),
    "is_folderish": ("BooleanIndex", _BOOLEANS),
    "modified": ("DateIndex", _DATES),
    "object_provides": (
        "KeywordIndex",
        st.sampled_from(
            (
                "plone.app.contenttypes.interfaces.IDocument",
                "plone.dexterity.interfaces.IDexterityContainer",
            )
        ),
    ),
    "path": (
        "ExtendedPathIndex",
        st.sampled_from(("/plone/folder", "/plone", "folder/sub")),
    ),
    "portal_type": (
        "FieldIndex",
        st.sampled_from(("Document", "Folder", "Event", "News Item", "Link")),
    ),
    "review_state": (
        "FieldIndex",
        st.sampled_from(("published", "private", "pending")),
    ),
    "sortable_title": ("FieldIndex", st.sampled_from(("lighthouse folder", ""))),
    "start": ("DateRecurringIndex", _DATES),
    "sync_uid": ("FieldIndex", _UIDS),
}
INDEX_NAMES = tuple(INDEXES)

#: Matches every item: puts a result in front of the bad part, so that the
#: indexes after it in ZCatalog's plan see it.
EVERYTHING = {"portal_type": ["Document", "Event", "Folder", "Link", "News Item"]}


@st.composite
def queries(draw, first: str | None = None) -> dict:
    """Malformed values for index ``first`` (or any) and maybe another
    index, with bad options.  (Hypothesis favours the first of a choice;
    the rare additions test for a middle value.)"""
    query: dict = dict(EVERYTHING) if draw(st.booleans()) else {}
    names = [first] if first else []
    names += draw(
        st.lists(st.sampled_from(INDEX_NAMES), min_size=1 - len(names), max_size=1)
    )
    for name in names:
        query[name] = draw(index_query(INDEXES[name][1]))
        if draw(st.integers(min_value=0, max_value=9)) == 5:
            # Old-style options: ``<index>_<option>`` next to the value.
            option = draw(st.sampled_from(("operator", "range", "not", "depth", "xyz")))
            query[f"{name}_{option}"] = draw(
                st.one_of(st.sampled_from(OPERATORS + RANGES[:4]), bad_values())
            )
    query.update(draw(window_options(INDEX_NAMES)))
    if draw(st.integers(min_value=0, max_value=4)) == 2:
        query["show_inactive"] = draw(st.sampled_from((True, False, "yes", None, 0)))
    if draw(st.integers(min_value=0, max_value=4)) == 2:
        query[draw(hostile_text())] = draw(bad_values())
    return query


#: Hypothesis' settings for collecting queries: generation only, no database.
_COLLECT = settings(
    deadline=None,
    database=None,
    phases=[Phase.generate],
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)


def _generated(per_index: int) -> list[dict]:
    """``per_index`` queries about each index (hypothesis favours some
    choices: drawing the index too would leave some without any)."""
    found: list[dict] = []
    for name in INDEX_NAMES:

        def collect(query):
            found.append(query)

        # derandomize seeds from the function's digest, to which hypothesis'
        # pytest plugin adds the parametrize id this way: one seed per index.
        collect._hypothesis_internal_add_digest = name.encode()
        settings(_COLLECT, max_examples=per_index, derandomize=True)(
            given(queries(first=name))(collect)
        )()
    return found


QUERIES = _generated(8)
CALLS = ("unrestricted", "restricted")


# -- running and judging ---------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What one query gave: paths and counts, or the exception."""

    paths: tuple[str, ...] = ()
    length: int = 0
    total: int = 0
    error: tuple[str, ...] = ()  # class names of the exception's MRO
    message: str = ""
    database_error: bool = False

    def __str__(self) -> str:
        if self.error:
            return f"raised {self.error[0]}: {self.message}"
        paths = list(self.paths)
        shown = paths if len(paths) <= 8 else paths[:8] + ["..."]
        return f"{self.length} of {self.total}: {shown}"


def _from_the_driver(exc: Exception) -> bool:
    """A psycopg error, or one psycopg raised while sending a value
    (UnicodeEncodeError for a lone surrogate)."""
    import psycopg

    if isinstance(exc, psycopg.Error):
        return True
    frames = traceback.extract_tb(exc.__traceback__)
    package = str(Path(psycopg.__file__).parent)
    return bool(frames) and frames[-1].filename.startswith((package, "psycopg_binary"))


def run_query(catalog, query: dict, call: str) -> Outcome:
    # A copy per run: a catalog that changed the dict must not change the
    # query the other site gets.
    query = copy.deepcopy(query)
    if call == "unrestricted":
        search = catalog.unrestrictedSearchResults
    else:
        search = catalog.searchResults
    try:
        results = search(**query)
        paths = tuple(brain.getPath() for brain in results)
        return Outcome(paths, len(results), results.actual_result_count)
    except Exception as exc:  # the outcome to compare, not a test failure
        return Outcome(
            error=tuple(cls.__name__ for cls in type(exc).__mro__),
            message=str(exc)[:500],
            database_error=_from_the_driver(exc),
        )


def _parts(value):
    """``value``, what it holds and the keys of its records (long lists:
    their first items)."""
    yield value
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _parts(item)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for item in list(value)[:3]:
            yield from _parts(item)


def named_keys(message: str, query: dict) -> list[str]:
    """The keys of the query, or ``sort_on`` names, that ``message`` names."""
    names = list(query)
    for key in ("sort_on", "sort-on"):
        sort_on = query.get(key)
        names += sort_on if isinstance(sort_on, (list, tuple)) else [sort_on]
    return [
        name
        for name in names
        if isinstance(name, str)
        and (repr(name) in message or message.startswith(f"{name}:"))
    ]


def names_a_value(message: str, query: dict) -> bool:
    """Whether ``message`` shows a value of the query (its repr, maybe cut)."""
    parts = (part for value in query.values() for part in _parts(value))
    return any(repr(part)[:40] in message for part in parts)


def probe_of(query: dict, message: str) -> dict | None:
    """The parts of ``query`` that pgcatalog's error names, behind a result.

    ZCatalog stops at the first index that finds nothing, and reads
    ``b_start``, ``b_size`` and ``sort_limit`` only when there is a result:
    a part it never looked at may be one it cannot answer.  The probe puts
    ``EVERYTHING`` in front of the named parts (with their
    ``<index>_<option>`` keys), so that ZCatalog looks at them.
    """
    names = [name for name in named_keys(message, query) if name in query]
    if not names:
        return None
    probe = dict(EVERYTHING)
    for key, value in query.items():
        if any(key == name or key.startswith(f"{name}_") for name in names):
            probe[key] = value
    return probe


def _windowed(query: dict) -> bool:
    return any(
        query.get(key) not in (None, "", 0)
        for key in ("b_size", "b_start", "sort_limit")
    )


def _negative_batch(query: dict, message: str) -> bool:
    values = [query.get(key) for key in ("b_start", "b_size")]
    return any(isinstance(value, (int, float)) and value < 0 for value in values)


#: Where ZCatalog's answer to a malformed query is an accident of its
#: implementation, so that pgcatalog may raise a ValueError naming the key
#: and the value instead: (why, predicate over the query and pgcatalog's
#: message).  The probe of pgcatalog's error (``probe_of``) covers the
#: other case: ZCatalog never looked at the bad part.
ACCIDENTAL = (
    (
        "ZCatalog slices its result with b_start and b_size as a Python list: "
        "negative ones count from the end (b_size=-1: all but the last item)",
        _negative_batch,
    ),
)


def _sorts_on_keywords(query: dict, message: str) -> bool:
    sort_on = query.get("sort_on")
    names = sort_on if isinstance(sort_on, (list, tuple)) else [sort_on]
    return "sort index" in message and any(
        isinstance(name, str)
        and INDEXES.get(name, ("",))[0] in ("KeywordIndex", "DateRangeIndex")
        and repr(name) in message
        for name in names
    )


def _text_syntax(query: dict, expected: Outcome) -> bool:
    texts = [name for name in query if INDEXES.get(name, ("",))[0] == "ZCTextIndex"]
    return bool(texts) and "ParseError" in expected.error


#: Differences README.rst lists as on purpose ("Where results differ from
#: ZCatalog, on purpose"): sorting on a KeywordIndex or a DateRangeIndex
#: raises CatalogError;
#: where ZCTextIndex raises ParseError, the stray syntax is dropped.


def _accidental(
    query: dict, expected: Outcome, actual: Outcome, probe: Outcome | None
) -> bool:
    """Whether pgcatalog's error is the better answer where ZCatalog gave a
    result: ZCatalog raises too once it looks at the named part (the same
    class, or any if pgcatalog's ValueError names a value of the query), or
    finds nothing for it even then (README: bad values raise a ValueError
    where ZCatalog returns an empty result), or the case is listed in
    ``ACCIDENTAL``."""
    if probe is not None and probe.error and probe.error[0] in actual.error:
        return True
    if probe is not None and not probe.error and (probe.paths or expected.paths):
        return False
    if probe is None and not any(
        applies(query, actual.message) for _, applies in ACCIDENTAL
    ):
        return False
    return "ValueError" in actual.error and names_a_value(actual.message, query)


def judge(
    query: dict, expected: Outcome, actual: Outcome, probe: Outcome | None = None
) -> str | None:
    """Why ``actual`` (pgcatalog) is wrong, given ``expected`` (ZCatalog)
    and what ZCatalog answered to the probe of pgcatalog's error."""
    if actual.database_error:
        return f"PostgreSQL failed: {actual}"
    if _sorts_on_keywords(query, actual.message) and "CatalogError" in actual.error:
        return None  # on purpose (README)
    if expected.error:
        if not actual.error:
            if _text_syntax(query, expected):
                return None  # on purpose (README): stray syntax is dropped
            return f"ZCatalog {expected}; pgcatalog ignored the bad part: {actual}"
        if expected.error[0] in actual.error:
            return None
        if "ValueError" in actual.error and named_keys(actual.message, query):
            return None
        return f"ZCatalog {expected}; pgcatalog {actual}"
    if actual.error:
        if _accidental(query, expected, actual, probe):
            return None
        why = f" (ZCatalog, asked the named part alone: {probe})" if probe else ""
        return f"ZCatalog {expected}; pgcatalog {actual}{why}"
    if (actual.length, actual.total) != (expected.length, expected.total):
        return f"len/actual_result_count: ZCatalog {expected}; pgcatalog {actual}"
    if _windowed(query) and expected.length != expected.total:
        return None  # which items a window holds is defined by the order only
    if sorted(actual.paths) != sorted(expected.paths):
        missing = sorted(set(expected.paths) - set(actual.paths))
        extra = sorted(set(actual.paths) - set(expected.paths))
        return f"paths differ: missing {missing}, extra {extra}"
    return None


# -- the sites -------------------------------------------------------------------


def _indexes_of(catalog) -> dict[str, str]:
    return {
        name: catalog._catalog.getIndex(name).meta_type for name in catalog.indexes()
    }


#: Kinds of bad input that reach PostgreSQL unless the translation stops
#: them (run in the pgcatalog site only: property c needs no oracle).
DATABASE_TRAPS = (
    {"portal_type": "a\x00b"},
    {"path": "/plone/a\x00b"},
    {"path": {"query": "/plone\x00", "depth": 0}},
    {"Subject": ["\ud800"]},
    {"sortable_title": math.nan},
    {"portal_type": "Document", "b_size": -1},
    {"portal_type": "Document", "b_size": 2**70},
    {"portal_type": "Document", "b_start": 2**70, "b_size": 1},
    {"SearchableText": " ".join(f"w{n}" for n in range(10_000))},
    {"Title": [f"w{n}" for n in range(10_000)]},
)


def _hunt_database_errors(catalog) -> str | None:
    """Hypothesis on the pgcatalog site alone: a query that makes
    PostgreSQL fail, shrunk to a minimal one (None if none is found)."""

    @settings(
        _COLLECT,
        max_examples=120,
        derandomize=True,
        phases=[Phase.generate, Phase.shrink],
    )
    @given(queries(), st.sampled_from(CALLS))
    def no_database_error(query, call):
        outcome = run_query(catalog, query, call)
        assert not outcome.database_error, str(outcome)

    try:
        no_database_error()
    except Exception as exc:  # hypothesis' report, with the minimal query
        return "".join(traceback.format_exception(exc))[-6000:]
    return None


def _record(layer, pg: dict | None = None) -> dict:
    """Run every query in ``layer``'s site.  In the oracle's site (``pg``
    given), also the probes of pgcatalog's ValueErrors."""
    runner = run_in(layer)
    try:
        portal = next(runner)["portal"]
        build_content(portal)
        catalog = portal.portal_catalog
        records: dict = {
            "indexes": _indexes_of(catalog),
            "all": run_query(catalog, {"path": "/plone"}, "unrestricted"),
        }
        for number, query in enumerate(QUERIES):
            for call in CALLS:
                records[(number, call)] = run_query(catalog, query, call)
                actual = pg.get((number, call)) if pg is not None else None
                if actual is not None and "ValueError" in actual.error:
                    probe = probe_of(query, actual.message)
                    if probe is not None:
                        records[("probe", number, call)] = run_query(
                            catalog, probe, call
                        )
        if pg is None:
            for number, query in enumerate(DATABASE_TRAPS):
                records[("trap", number)] = run_query(catalog, query, "unrestricted")
            records["hunt"] = _hunt_database_errors(catalog)
        transaction.abort()
        return records
    finally:
        runner.close()


@pytest.fixture(scope="module")
def outcomes():
    from plone_pgcatalog.testing import PGCATALOG_FUNCTIONAL_TESTING
    from plone_pgcatalog.testing import ZCATALOG_FUNCTIONAL_TESTING

    pg = _record(PGCATALOG_FUNCTIONAL_TESTING)
    return _record(ZCATALOG_FUNCTIONAL_TESTING, pg=pg), pg


# -- the tests -------------------------------------------------------------------


def _digest(queries: list[dict]) -> str:
    def canonical(value):
        # A set's repr follows the process' string hashing.
        if isinstance(value, (set, frozenset)):
            return sorted(map(canonical, value), key=repr)
        if isinstance(value, dict):
            return [(key, canonical(item)) for key, item in value.items()]
        if isinstance(value, (list, tuple)):
            return [canonical(item) for item in value]
        return value

    return hashlib.md5(repr(canonical(queries)).encode("utf-8")).hexdigest()


def test_the_queries_are_the_same_in_every_process():
    # As CI generates them, whatever ran before: in a new process that
    # imports nothing else.
    script = (
        "from tests.integration.test_bad_input import QUERIES, _digest;"
        "print(_digest(QUERIES))"
    )
    root = Path(__file__).parents[2]
    found = subprocess.run(
        [sys.executable, "-c", script],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()[-1]
    assert found == _digest(QUERIES)


def test_the_strategy_knows_every_index_of_the_site(outcomes):
    zcatalog, pg = outcomes
    expected = {name: meta_type for name, (meta_type, _) in INDEXES.items()}
    assert zcatalog["indexes"] == expected
    assert pg["indexes"] == expected


def test_both_sites_hold_the_same_content(outcomes):
    zcatalog, pg = outcomes
    assert len(zcatalog["all"].paths) == len(ITEMS) + 1  # and the site
    assert judge({}, zcatalog["all"], pg["all"]) is None


def test_the_queries_reach_the_indexes(outcomes):
    # The oracle must find something often and fail often, or the
    # comparison proves little.
    zcatalog, _ = outcomes
    answers = [zcatalog[(n, "unrestricted")] for n in range(len(QUERIES))]
    found = sum(1 for outcome in answers if outcome.paths)
    failed = sum(1 for outcome in answers if outcome.error)
    assert found > len(QUERIES) // 10, found
    assert failed > len(QUERIES) // 4, failed


@pytest.mark.parametrize("number", range(len(DATABASE_TRAPS)))
def test_known_traps_do_not_reach_postgresql(outcomes, number):
    _, pg = outcomes
    outcome = pg[("trap", number)]
    assert not outcome.database_error, f"{_shown(DATABASE_TRAPS[number])}: {outcome}"


def test_no_generated_query_makes_postgresql_fail(outcomes):
    _, pg = outcomes
    assert pg["hunt"] is None, pg["hunt"]


@pytest.mark.parametrize(
    "number,call",
    [
        pytest.param(n, call, id=f"q{n:03d}-{call}")
        for n in range(len(QUERIES))
        for call in CALLS
    ],
)
def test_bad_query_answers_as_zcatalog_does(outcomes, number, call):
    zcatalog, pg = outcomes
    query = QUERIES[number]
    complaint = judge(
        query,
        zcatalog[(number, call)],
        pg[(number, call)],
        zcatalog.get(("probe", number, call)),
    )
    assert complaint is None, f"{_shown(query)}\n{complaint}"


def _shown(query: dict) -> str:
    def short(value):
        if isinstance(value, dict):
            return {key: short(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)) and len(value) > 6:
            return f"<{len(value)} values: {value[:2]!r}...>"
        if isinstance(value, float) and math.isnan(value):
            return "nan"
        return value

    return f"query {short(query)!r}"
