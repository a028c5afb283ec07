"""Bad input never reaches SQL as text: a property of ``build_query``.

Owns: hypothesis strategies of malformed catalog queries (``bad_values``,
``hostile_text``, ``index_query``, ``options``) over the index types of a
Plone 6.2 site, and the properties that ``query.build_query`` keeps for any
of them, with real ZCatalog index objects as definitions:

- it raises a ``ValueError`` or ``CatalogError`` whose message names a key
  of the query (or a ``sort_on`` name), or an exception of a class that
  ZCatalog raises for the same query: a real, empty ZCatalog ``Catalog``
  holding the same index objects is the oracle (its ``searchResults``,
  and each index's ``query_index`` on its own);
- or the SQL text holds none of the query's strings (every value is a bound
  parameter) and has exactly one ``%s`` per parameter;
- and every parameter is one PostgreSQL accepts: no NUL character, no lone
  surrogate, no NaN or infinity in JSON.  (A value that cannot match must be
  left out or rejected with a clear error, not sent to fail in PostgreSQL.)

``EXAMPLES`` (known kinds of bad input) run first on every run, then the
generated queries.

Every generated string carries ``SENTINEL`` at a generated position, so
"the SQL text contains none of the values" is exact: the sentinel occurs in
no SQL the translators write.  The strategies are also used by
tests/integration/test_bad_input.py.

Pure: no database, no Zope site; it calls ``build_query`` only.  It loads
every module of plone_pgcatalog (``_import_every_module``), not to use them,
but because hypothesis draws constants from the loaded modules of the code
under test: loading all of them makes the generated queries depend on the
commit only.
"""

from __future__ import annotations

from Acquisition import Implicit
from datetime import date
from datetime import datetime
from datetime import timezone
from DateTime import DateTime
from hypothesis import example
from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
from plone_pgcatalog.query import build_query
from plone_pgcatalog.query import query_names
from plone_pgcatalog.query import QueryContext
from Products.ZCatalog.Catalog import CatalogError
from Products.ZCatalog.query import IndexQuery
from psycopg.types.json import Jsonb

import importlib
import json
import math
import pkgutil
import plone_pgcatalog
import re


def _import_every_module() -> None:
    """Load every module of plone_pgcatalog.

    Hypothesis also draws constants found in the source of the loaded
    modules of the code under test; with all of them loaded, what it
    generates depends on the commit only, not on which tests ran first.
    """
    for info in pkgutil.walk_packages(plone_pgcatalog.__path__, "plone_pgcatalog."):
        importlib.import_module(info.name)


_import_every_module()


#: In every generated string; in no SQL text that a translator writes.
SENTINEL = "\u2603"


class Opaque:
    """A value of a type no index knows (default comparison, stable repr)."""

    def __repr__(self) -> str:
        return "<Opaque>"


#: Strings that break naive SQL, JSON, LIKE patterns, text search syntax,
#: psycopg's placeholders or PostgreSQL's text type.
HOSTILE_TEXT = (
    "",
    " ",
    "\x00",
    "a\x00b",
    "\x01\x1f\x7f",
    "\t\n\r",
    "'",
    '"',
    "';--",
    "x'); DROP TABLE object_state; --",
    "/* c */",
    "*/",
    "$$",
    "$tag$",
    "\\",
    "\\x00",
    "%s",
    "%(x)s",
    "%%",
    "%",
    "_",
    "{}",
    "{0}",
    "?|",
    "@>",
    "->>",
    "::text",
    "\ud800",
    "2024-13-45",
    "yesterday-ish",
    "Küste",
    "*",
    "AND",
    "OR NOT",
    '"unclosed',
    "(",
    ")",
    "a*b",
    "!",
    "&|",
    ":*",
    "/",
    "//",
    "/plone/../..",
)

#: Dates nobody can parse, in the forms date indexes are given.
UNPARSABLE_DATES = ("2024-13-45", "yesterday-ish", "", "31.02.2024", "0000-00-00")


def hostile_text() -> st.SearchStrategy[str]:
    """A hostile string with ``SENTINEL`` inserted at some position."""
    core = st.one_of(
        st.sampled_from(HOSTILE_TEXT),
        st.text(
            alphabet=st.sampled_from("a'\";-/*$\\%(){}?|&!:\x00\x01\x7f ü"),
            max_size=8,
        ),
    )
    return st.builds(with_sentinel, core, st.integers(min_value=0, max_value=8))


def with_sentinel(text: str, at: int) -> str:
    """``text`` with ``SENTINEL`` inserted at ``at`` (modulo its length)."""
    at = at % (len(text) + 1)
    return text[:at] + SENTINEL + text[at:]


def bad_scalars() -> st.SearchStrategy:
    """Values of the wrong type for any index."""
    return st.sampled_from(
        (
            None,
            True,
            False,
            0,
            -1,
            2**31,
            2**63,
            2**64,
            -(2**70),
            1.5,
            math.nan,
            math.inf,
            -math.inf,
            b"bytes",
            b"\x00\xff",
            Opaque(),
            date(2024, 1, 1),
            datetime(2024, 1, 1, tzinfo=timezone.utc),
            datetime(1, 1, 1),
            DateTime("2024/01/01 12:00:00 GMT+1"),
        )
    )


class Many(list):
    """A list of 10,000 values that hypothesis' reports show in one line."""

    def __repr__(self) -> str:
        return f"<{len(self)} values: {self[0]!r}, {self[1]!r}, ...>"

    def __deepcopy__(self, memo) -> Many:
        return Many(self)


#: 10,000 different values.
TEN_THOUSAND = Many(f"v{n}" for n in range(10_000))


def ten_thousand(value) -> Many:
    """10,000 times ``value``."""
    return Many([value] * 10_000)


def bad_values(valid: st.SearchStrategy | None = None) -> st.SearchStrategy:
    """One query value: valid (when given), wrong, nested or huge."""
    scalar = st.one_of(hostile_text(), bad_scalars(), st.sampled_from(UNPARSABLE_DATES))
    if valid is not None:
        scalar = st.one_of(valid, scalar)
    mixed = st.nothing() if valid is None else st.tuples(valid, scalar).map(list)
    return st.one_of(
        # A valid value next to a bad one: a result must not hide the bad one.
        mixed,
        scalar,
        st.lists(scalar, max_size=4),
        st.tuples(scalar, scalar),
        st.lists(st.lists(scalar, max_size=2), min_size=1, max_size=2),
        st.dictionaries(st.sampled_from(("a", "query", "range")), scalar, max_size=2),
        st.frozensets(st.sampled_from(("a", "b")), max_size=2),
        # 10,000 values: one array parameter, never 10,000 placeholders.
        st.one_of(st.builds(ten_thousand, scalar), st.just(TEN_THOUSAND)),
    )


RANGES = ("min", "max", "min:max", "max:min", "sideways", "", None, 5, "MIN")
OPERATORS = ("and", "or", "AND", "xor", "", "not")
DEPTHS = (-2, -1, 0, 1, 2, "deep", None, 1.5, 2**63, "1", True)
LEVELS = (-1, 0, 1, 2**40, "x", None, 0.5)
NAVTREES = (True, False, "yes", 0, 1, None)
NAVTREE_STARTS = (0, 1, -5, 2**40, "top", None)


def options(value: st.SearchStrategy) -> st.SearchStrategy[dict]:
    """A record: ``query`` plus known options with bad values and unknown ones."""
    return st.fixed_dictionaries(
        {},
        optional={
            "query": value,
            "range": st.sampled_from(RANGES),
            "operator": st.sampled_from(OPERATORS),
            "not": value,
            "depth": st.sampled_from(DEPTHS),
            "level": st.sampled_from(LEVELS),
            "navtree": st.sampled_from(NAVTREES),
            "navtree_start": st.sampled_from(NAVTREE_STARTS),
            "sideways": st.just(1),
        },
    )


def index_query(valid: st.SearchStrategy | None = None) -> st.SearchStrategy:
    """What one index key of a query is given: a value, a record, or
    records nested in ``query`` (up to 30 deep)."""
    value = bad_values(valid)
    return st.one_of(
        value,
        options(value),
        st.builds(nested, value, st.integers(min_value=1, max_value=30)),
    )


def nested(inner, depth: int) -> dict:
    record = {"query": inner}
    for _ in range(depth - 1):
        record = {"query": record}
    return record


SORT_ORDERS = (
    "reverse",
    "descending",
    "ascending",
    "sideways",
    5,
    None,
    b"reverse",
    ["reverse", 3],
    "",
)
BATCH_VALUES = (
    3,
    0,
    1,
    -1,
    "10",
    "ten",
    "",
    1.5,
    math.nan,
    math.inf,
    2**31,
    2**63,
    2**70,
    None,
    [],
    {},
)


def window_options(index_names: tuple[str, ...]) -> st.SearchStrategy[dict]:
    """None, or some of ``sort_on``, ``sort_order``, ``b_size``, ``b_start``,
    ``sort_limit`` (valid values first: hypothesis favours them)."""
    names = st.sampled_from(index_names)
    return st.one_of(
        st.just({}),
        st.fixed_dictionaries(
            {},
            optional={
                "sort_on": st.one_of(
                    names,
                    st.lists(names, max_size=3),
                    st.sampled_from(("no_such_index", "", None, 5, b"id")),
                    st.lists(
                        st.one_of(names, st.sampled_from(({}, 5, None))), max_size=3
                    ),
                ),
                "sort_order": st.sampled_from(SORT_ORDERS),
                "b_size": st.sampled_from(BATCH_VALUES),
                "b_start": st.sampled_from(BATCH_VALUES),
                "sort_limit": st.sampled_from(BATCH_VALUES),
            },
        ),
    )


# -- the index definitions of a Plone 6.2 site, one per type -------------------


class _Site(Implicit):
    """Where the catalog lives: /plone/portal_catalog."""

    def getPhysicalPath(self):
        return ("", "plone", "portal_catalog")


class _Recurrence:
    recurdef = "recurrence"
    until = ""


class _TextExtra:
    doc_attr = "SearchableText"
    lexicon_id = "plone_lexicon"
    index_type = "Okapi BM25 Rank"


def empty_catalog():
    """A real, empty ZCatalog ``Catalog`` with one index of each type a
    Plone site has: its index objects are the definitions ``build_query``
    reads, and the catalog itself is the oracle of what ZCatalog raises."""
    from plone.folder.nogopip import GopipIndex
    from Products.DateRecurringIndex.index import DateRecurringIndex
    from Products.ExtendedPathIndex.ExtendedPathIndex import ExtendedPathIndex
    from Products.PluginIndexes.BooleanIndex.BooleanIndex import BooleanIndex
    from Products.PluginIndexes.DateIndex.DateIndex import DateIndex
    from Products.PluginIndexes.DateRangeIndex.DateRangeIndex import DateRangeIndex
    from Products.PluginIndexes.FieldIndex.FieldIndex import FieldIndex
    from Products.PluginIndexes.KeywordIndex.KeywordIndex import KeywordIndex
    from Products.PluginIndexes.UUIDIndex.UUIDIndex import UUIDIndex
    from Products.ZCatalog.Catalog import Catalog
    from Products.ZCTextIndex.Lexicon import CaseNormalizer
    from Products.ZCTextIndex.Lexicon import Splitter
    from Products.ZCTextIndex.ZCTextIndex import PLexicon
    from Products.ZCTextIndex.ZCTextIndex import ZCTextIndex

    site = _Site()
    site.plone_lexicon = PLexicon("plone_lexicon", "", Splitter(), CaseNormalizer())
    site._catalog = Catalog()
    catalog = site._catalog.__of__(site)
    indexes = {
        "portal_type": FieldIndex("portal_type"),
        "Subject": KeywordIndex("Subject"),
        "created": DateIndex("created"),
        "is_folderish": BooleanIndex("is_folderish"),
        "UID": UUIDIndex("UID"),
        "effectiveRange": DateRangeIndex(
            "effectiveRange", since_field="effective", until_field="expires"
        ),
        "path": ExtendedPathIndex("path"),
        "getObjPositionInParent": GopipIndex("getObjPositionInParent", caller=site),
        "SearchableText": ZCTextIndex(
            "SearchableText", extra=_TextExtra(), caller=site
        ),
        "start": DateRecurringIndex("start", extra=_Recurrence()),
    }
    for name, index in indexes.items():
        catalog.addIndex(name, index)
    return catalog


CATALOG = empty_catalog()
DEFINITIONS = {name: CATALOG.getIndex(name) for name in CATALOG.indexes}
INDEX_NAMES = tuple(DEFINITIONS)


@st.composite
def queries(draw) -> dict:
    """A query of one to three index keys, window options, unknown keys."""
    query: dict = {}
    names = draw(
        st.lists(st.sampled_from(INDEX_NAMES), min_size=1, max_size=3, unique=True)
    )
    for name in names:
        query[name] = draw(index_query())
        if draw(st.integers(min_value=0, max_value=9)) == 0:
            # Old-style options: ``<index>_<option>`` next to the value.
            option = draw(st.sampled_from(("operator", "range", "not", "depth", "xyz")))
            query[f"{name}_{option}"] = draw(
                st.one_of(st.sampled_from(OPERATORS + RANGES[:4]), bad_values())
            )
    query.update(draw(window_options(INDEX_NAMES)))
    if draw(st.booleans()):
        query[draw(hostile_text())] = draw(bad_values())
    return query


# -- checking a translation ----------------------------------------------------


def _names_a_key(message: str, query: dict) -> bool:
    """Whether ``message`` names a key of the query or a ``sort_on`` name."""
    names = list(query)
    for key in ("sort_on", "sort-on"):
        sort_on = query.get(key)
        names += sort_on if isinstance(sort_on, (list, tuple)) else [sort_on]
    return any(
        isinstance(name, str)
        and (repr(name) in message or message.startswith(f"{name}:"))
        for name in names
    )


def zcatalog_errors(query: dict) -> tuple[type, ...]:
    """The classes of what ZCatalog raises for ``query`` on no data.

    The empty catalog's ``searchResults`` (sort arguments, list
    canonicalization, the first index in its plan), then every index of
    the query on its own, as it would be when the others found something:
    any of them may be the first to fail in a catalog with data.
    """
    errors = []
    try:
        CATALOG.searchResults(dict(query))
    except Exception as exc:  # the oracle's outcome, whatever it is
        errors.append(type(exc))
    for index in DEFINITIONS.values():
        for name in query_names(index):
            if name not in query:
                continue
            try:
                record = IndexQuery(
                    query,
                    name,
                    getattr(index, "query_options", ("query",)),
                    getattr(index, "operators", ("or", "and")),
                    getattr(index, "useOperator", "or"),
                )
                if record.keys is not None and hasattr(index, "query_index"):
                    index.query_index(record, None)
            except Exception as exc:  # the oracle's outcome, whatever it is
                errors.append(type(exc))
    return tuple(errors)


def _translate(query: dict):
    return build_query(
        query,
        DEFINITIONS,
        "/plone",
        QueryContext(text_configs=("english", "german")),
    )


def _check_raised(query: dict, exc: Exception) -> None:
    if isinstance(exc, (ValueError, CatalogError)) and _names_a_key(str(exc), query):
        return
    expected = zcatalog_errors(query)
    assert isinstance(exc, expected), (
        f"{type(exc).__name__}: {exc} names no key of the query, and ZCatalog "
        f"raises {[cls.__name__ for cls in expected] or 'nothing'}"
    )


_PLACEHOLDER = re.compile(r"%%|%\(\w*\)[sbt]|%[sbt]")


def _placeholders(text: str) -> list[str]:
    return [token for token in _PLACEHOLDER.findall(text) if token != "%%"]


def _leaves(value):
    if isinstance(value, Jsonb):
        yield from _leaves(value.obj)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def _refused_by_postgresql(param) -> str | None:
    """Why PostgreSQL (or psycopg) would refuse ``param``, or None."""
    if isinstance(param, Jsonb):
        try:
            json.dumps(param.obj, allow_nan=False)
        except (ValueError, TypeError) as exc:
            return f"{param.obj!r} is not JSON: {exc}"
    if isinstance(param, (list, tuple)):
        reasons = (_refused_by_postgresql(item) for item in param)
        return next((reason for reason in reasons if reason), None)
    for leaf in _leaves(param):
        if isinstance(leaf, str):
            if "\x00" in leaf:
                return f"{leaf!r} holds a NUL character"
            try:
                leaf.encode("utf-8")
            except UnicodeEncodeError:
                return f"{leaf!r} cannot be encoded in UTF-8"
    return None


SETTINGS = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


#: Known kinds of bad input, tried on every run before the generated ones.
EXAMPLES = (
    {"portal_type": "a\x00" + SENTINEL},
    {"path": "/plone/a\x00" + SENTINEL},
    {"path": {"query": ["/plone\x00" + SENTINEL], "depth": 0}},
    {"Subject": ["\ud800" + SENTINEL, "b" + SENTINEL]},
    {"portal_type": math.nan},
    {"created": "2024-13-45"},
    {"created": {"query": DateTime("2024/01/01"), "range": 5}},
    {"SearchableText": {"query": {"query": SENTINEL}}},
    {"portal_type": SENTINEL, "b_size": 2**70, "b_start": math.inf},
    {"portal_type": SENTINEL, "sort_on": "portal_type", "sort_order": 5},
    {"path": {"query": "/plone" + SENTINEL, "depth": 2**63}},
    {"Subject": TEN_THOUSAND},
)


def _with_examples(test):
    for query in reversed(EXAMPLES):
        test = example(query=query)(test)
    return test


@SETTINGS
@_with_examples
@given(queries())
def test_values_are_bound_parameters_or_rejected_naming_the_key(query):
    try:
        plan = _translate(query)
    except Exception as exc:  # judged below: which errors are allowed
        _check_raised(query, exc)
        return
    statement, params = plan.ids_query()
    text = statement.as_string(None)
    assert SENTINEL not in text, f"a query value is in the SQL text: {text}"
    found = _placeholders(text)
    assert set(found) <= {"%s"}, f"placeholders other than %s: {set(found)}"
    assert len(found) == len(
        params
    ), f"{len(found)} placeholders, {len(params)} parameters"
    count, count_params = plan.count_query()
    assert len(_placeholders(count.as_string(None))) == len(count_params)


@SETTINGS
@_with_examples
@given(queries())
def test_every_parameter_is_one_postgresql_accepts(query):
    try:
        plan = _translate(query)
    except Exception as exc:  # judged below: which errors are allowed
        _check_raised(query, exc)
        return
    _, params = plan.ids_query()
    refused = [reason for reason in map(_refused_by_postgresql, params) if reason]
    assert not refused, f"PostgreSQL refuses parameters: {refused}"


def test_the_sentinel_is_in_no_sql_of_a_plain_query():
    # The property above means something only if the sentinel survives
    # into the parameters.
    plan = _translate({"portal_type": "a" + SENTINEL, "Subject": [SENTINEL]})
    statement, params = plan.ids_query()
    assert SENTINEL not in statement.as_string(None)
    assert any(SENTINEL in repr(param) for param in params)


def test_the_placeholder_count_sees_every_form():
    assert _placeholders("a = %s AND b = %(x)s AND c LIKE '%%' AND d = %b") == [
        "%s",
        "%(x)s",
        "%b",
    ]
