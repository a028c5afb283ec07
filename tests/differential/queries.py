"""The queries of the differential query-language suite.

Owns: ``QUERIES`` (every index type of a Plone 6.2 site and every query
option, each with how its result is compared), ``STEMMING_QUERIES`` (where
plone_pgcatalog may find more than ZCatalog, never less) and
``UNCOMMITTED_QUERIES`` (read-your-writes, after ``change_without_commit``).

Comparison modes:

``ordered``
    ZCatalog defines the order (``sort_on`` over keys that are unique in
    the result, or ties broken by a second sort index): same paths in the
    same order.
``set``
    No order defined (no ``sort_on``; full text ranks by Okapi BM25, which
    plone_pgcatalog does not reproduce): same paths, any order.
``count``
    A batch without ``sort_on``: which items ZCatalog puts in the window is
    undefined, only ``len`` and ``actual_result_count`` are.
``raises``
    ZCatalog crashes inside an index (TypeError, AttributeError) on input it
    cannot handle: no caller can rely on that class, so plone_pgcatalog
    must raise too (a clear error), of any class.
``tolerated``
    Full text that ZCTextIndex refuses with ParseError although it holds a
    word (stray operators, unbalanced parentheses).  plone_pgcatalog drops
    the stray syntax instead, on purpose (README: "Where results differ"):
    its result must be ZCatalog's result for the case named ``like`` (the
    query as repaired).  Where no word is left (only operators,
    punctuation or negated words), both raise ParseError (``set`` cases
    whose ZCatalog outcome is that error).
``some``
    A limited result without a sort order (``sort_limit`` and no
    ``sort_on``): ZCatalog returns the first matches by its record ids,
    which are consecutive only while its catalog object stays in memory
    (a reloaded catalog starts again from a random number), so which ones
    is an accident of its memory.  Counts as ZCatalog's; every row
    plone_pgcatalog returns must be among ZCatalog's matches of the case
    named ``like`` (the same query without the limit).
``refused``
    ZCatalog answers, but with a result that depends on its internal
    strategy (sorting on a KeywordIndex lists an object once per keyword);
    plone_pgcatalog refuses the query with CatalogError, on purpose
    (README: "Where results differ").

Every mode also compares ``len`` and ``actual_result_count``; where ZCatalog
raises a defined error (ParseError, CatalogError, ValueError...),
plone_pgcatalog must raise an exception of the same class (or a subclass).

``call='dict'`` passes the query as the positional mapping
(``catalog(query)``) instead of keywords: Plone's CatalogTool treats the
two differently (it drops unknown ``sort_on`` names only from keywords).

Words in the full-text queries of ``QUERIES`` have no other inflected form
in the content (checked against PostgreSQL's english and german snowball
stemmers), so stemming cannot change their results.

Must not import plone_pgcatalog.
"""

from __future__ import annotations

from datetime import date
from datetime import datetime
from DateTime import DateTime
from tests.differential.content import DELETED_INDEX
from tests.differential.content import RYW_DELETED
from tests.differential.content import RYW_MOVED_FROM
from tests.differential.content import RYW_MOVED_TO
from tests.differential.content import RYW_NEW
from tests.differential.content import RYW_RENAMED_FROM
from tests.differential.content import RYW_RENAMED_TO
from tests.differential.content import RYW_SHARED
from tests.differential.content import uid_of
from tests.differential.content import VIENNA
from typing import NamedTuple


class Case(NamedTuple):
    name: str
    query: dict
    mode: str  # ordered | set | count | some | raises | tolerated | refused
    call: str = "kw"  # kw: catalog(**query); dict: catalog(query)
    empty: bool = False  # True: ZCatalog finds nothing for the Manager
    like: str = ""  # tolerated, some: the case whose ZCatalog result pg gives
    #: ZCatalog's "iterate the sort index" strategy (no limit, few distinct
    #: sort values) counts in actual_result_count the matches it leaves out
    #: for lack of a sort value; pg counts what it returns (README)
    counts_dropped: bool = False


class StemmingCase(NamedTuple):
    name: str
    query: dict
    extra: tuple[str, ...]  # paths only stemming finds (site-relative)


def _p(path: str) -> str:
    return "/plone/" + path if path else "/plone"


def _dt(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> DateTime:
    """A DateTime in Vienna's winter offset."""
    return DateTime(year, month, day, hour, minute, 0, "GMT+1")


def _vienna(*args) -> datetime:
    return VIENNA.localize(datetime(*args))


IDOCUMENT = "plone.app.contenttypes.interfaces.IDocument"
INEWSITEM = "plone.app.contenttypes.interfaces.INewsItem"
IFOLDER = "plone.app.contenttypes.interfaces.IFolder"
ILINK = "plone.app.contenttypes.interfaces.ILink"
IEVENT = "plone.event.interfaces.IEvent"
IFOLDERISH = "Products.CMFCore.interfaces.IFolderish"
ICONTAINER = "plone.dexterity.interfaces.IDexterityContainer"
TITLE = "sortable_title"

C = Case

QUERIES: list[Case] = [
    # -- FieldIndex: portal_type ---------------------------------------------
    C("portal_type-plain", {"portal_type": "Document"}, "set"),
    C("portal_type-list", {"portal_type": ["News Item", "Event"]}, "set"),
    C("portal_type-tuple", {"portal_type": ("Link", "Folder")}, "set"),
    C("portal_type-record", {"portal_type": {"query": "Event"}}, "set"),
    C(
        "error-field-operator-or",
        {"portal_type": {"query": ["Document", "Link"], "operator": "or"}},
        "set",
    ),
    C(
        "error-field-operator-and",
        {"portal_type": {"query": ["Document", "Link"], "operator": "and"}},
        "set",
    ),
    C(
        "error-field-operator-and-one-value",
        {"portal_type": {"query": "Event", "operator": "and"}},
        "set",
    ),
    C("portal_type-not", {"portal_type": {"not": "Document"}}, "set"),
    C(
        "portal_type-not-list",
        {"portal_type": {"not": ["Document", "Folder", "Event"]}},
        "set",
    ),
    C(
        "portal_type-query-and-not",
        {"portal_type": {"query": ["Document", "News Item"], "not": "News Item"}},
        "set",
    ),
    C(
        "portal_type-range-min-max",
        {"portal_type": {"query": ["Event", "Link"], "range": "min:max"}},
        "set",
    ),
    C(
        "portal_type-range-min",
        {"portal_type": {"query": "Link", "range": "min"}},
        "set",
    ),
    C(
        "portal_type-range-max",
        {"portal_type": {"query": "Document", "range": "max"}},
        "set",
    ),
    C("portal_type-unknown-value", {"portal_type": "Banana"}, "set", empty=True),
    C("portal_type-wrong-case", {"portal_type": "document"}, "set", empty=True),
    C("portal_type-empty-string", {"portal_type": ""}, "set", empty=True),
    C("portal_type-empty-list", {"portal_type": []}, "set", empty=True),
    C(
        "portal_type-record-empty-list",
        {"portal_type": {"query": []}},
        "set",
        empty=True,
    ),
    C("portal_type-none", {"portal_type": None}, "set", empty=True),
    C(
        "error-field-record-operator-without-query",
        {"portal_type": {"operator": "or"}},
        "set",
    ),
    # -- FieldIndex: review_state ------------------------------------------
    C("review_state-published", {"review_state": "published"}, "set"),
    C("review_state-pending", {"review_state": "pending"}, "set"),
    C("review_state-list", {"review_state": ["private", "pending"]}, "set"),
    C("review_state-not-published", {"review_state": {"not": "published"}}, "set"),
    C(
        "review_state-published-sorted",
        {"review_state": "published", "sort_on": TITLE},
        "ordered",
    ),
    C(
        "review_state-pending-sorted-reverse",
        {"review_state": "pending", "sort_on": TITLE, "sort_order": "reverse"},
        "ordered",
    ),
    C(
        "review_state-private-in-en",
        {"review_state": "private", "path": _p("en")},
        "set",
    ),
    # -- FieldIndex: id, getId -----------------------------------------------
    C("id-plain", {"id": "lighthouse-guide"}, "set"),
    C("id-list", {"id": ["report-1", "report-12", "report-24"]}, "set"),
    C("getId-plain", {"getId": "overview"}, "set"),
    C(
        "id-range-min-max",
        {"id": {"query": ["report-1", "report-9"], "range": "min:max"}},
        "set",
    ),
    C(
        "id-range-min-sorted",
        {"id": {"query": "t", "range": "min"}, "sort_on": "id"},
        "ordered",
    ),
    C(
        "getId-not-in-root",
        {
            "getId": {"not": ["front-page", "about"]},
            "path": {"query": _p(""), "depth": 1},
        },
        "set",
    ),
    C("id-unknown", {"id": "no-such-id"}, "set", empty=True),
    C(
        "id-in-other-subtree",
        {"id": "harbour-guide", "path": _p("de")},
        "set",
        empty=True,
    ),
    C(
        "getId-sorted-in-folder",
        {"path": {"query": _p("en/news"), "depth": 1}, "sort_on": "getId"},
        "ordered",
    ),
    # -- FieldIndex: Type, Creator ------------------------------------------
    C("Type-page", {"Type": "Page"}, "set"),
    C("Type-list", {"Type": ["News Item", "Event"]}, "set"),
    C("Type-link", {"Type": "Link"}, "set"),
    C("Creator-member", {"Creator": "member1"}, "set"),
    C("Creator-test-user", {"Creator": "test_user_1_"}, "set"),
    C(
        "Creator-list-sorted-limited",
        {"Creator": ["member1", "test_user_1_"], "sort_on": TITLE, "sort_limit": 20},
        "ordered",
    ),
    C("Creator-not", {"Creator": {"not": "test_user_1_"}}, "set"),
    # -- FieldIndex: sortable_title ----------------------------------------
    C("sortable_title-exact", {TITLE: "gardens reopen after renovation"}, "set"),
    C(
        "sortable_title-range-min-max",
        {TITLE: {"query": ["b", "d"], "range": "min:max"}},
        "set",
    ),
    C(
        "sortable_title-range-min-sorted",
        {TITLE: {"query": "m", "range": "min"}, "sort_on": TITLE},
        "ordered",
    ),
    C(
        "sortable_title-range-max",
        {TITLE: {"query": "archive report 1", "range": "max"}},
        "set",
    ),
    C(
        "sortable_title-range-three-values",
        {TITLE: {"query": ["k", "c", "f"], "range": "min:max"}},
        "set",
    ),
    C(
        "sortable_title-zero-filled-numbers",
        {"path": _p("archive"), "portal_type": "Document", "sort_on": TITLE},
        "ordered",
    ),
    C(
        "sortable_title-accented-first-letter",
        {TITLE: {"query": ["u", "v"], "range": "min:max"}, "sort_on": TITLE},
        "ordered",
    ),
    # -- BooleanIndex -------------------------------------------------------
    C("is_folderish-true", {"is_folderish": True}, "set"),
    C("is_folderish-false-in-en", {"is_folderish": False, "path": _p("en")}, "set"),
    C("is_folderish-record", {"is_folderish": {"query": True}}, "set"),
    C("is_folderish-int-1", {"is_folderish": 1}, "set"),
    C(
        "is_folderish-int-0-documents",
        {"is_folderish": 0, "portal_type": "Document"},
        "set",
    ),
    C("is_folderish-string-true", {"is_folderish": "True"}, "set"),
    C(
        "is_folderish-list",
        {"is_folderish": [True, False], "path": _p("en/links")},
        "set",
    ),
    C(
        "is_folderish-false-sorted-limited",
        {"is_folderish": False, "sort_on": TITLE, "sort_limit": 10},
        "ordered",
    ),
    C("exclude_from_nav-true", {"exclude_from_nav": True}, "set"),
    C(
        "exclude_from_nav-false-children",
        {"exclude_from_nav": False, "path": {"query": _p("en"), "depth": 1}},
        "set",
    ),
    C(
        "exclude_from_nav-false-folders",
        {"exclude_from_nav": False, "portal_type": "Folder"},
        "set",
    ),
    C("is_default_page-true", {"is_default_page": True}, "set"),
    C(
        "is_default_page-false-children",
        {
            "is_default_page": False,
            "path": {"query": _p(""), "depth": 1},
            "portal_type": "Document",
        },
        "set",
    ),
    C("error-boolean-not", {"is_default_page": {"not": True}}, "set"),
    # -- not indexes: metadata column, index deleted, no such name ------------
    C(
        "getRemoteUrl-is-metadata-only",
        {"getRemoteUrl": "https://example.org/lighthouse"},
        "set",
    ),
    C("deleted-index-ignored", {DELETED_INDEX: "x", "portal_type": "Link"}, "set"),
    C(
        "Language-is-not-an-index",
        {"Language": "de", "portal_type": "News Item"},
        "set",
    ),
    C("unknown-key-only", {"no_such_index": "value"}, "set"),
    C("unknown-key-with-index", {"no_such_index": 1, "portal_type": "Event"}, "set"),
    C("empty-query", {}, "set"),
    C("empty-query-positional", {}, "set", call="dict"),
    # -- KeywordIndex: Subject ---------------------------------------------
    C("Subject-umlaut", {"Subject": "Küste"}, "set"),
    C("Subject-accent", {"Subject": "Café"}, "set"),
    C("Subject-sharp-s", {"Subject": "Straße"}, "set"),
    C("Subject-list-or", {"Subject": ["travel", "history"]}, "set"),
    C(
        "Subject-record-and",
        {"Subject": {"query": ["Küste", "Natur"], "operator": "and"}},
        "set",
    ),
    C(
        "Subject-record-and-disjoint",
        {"Subject": {"query": ["history", "Natur"], "operator": "and"}},
        "set",
        empty=True,
    ),
    C(
        "Subject-record-or-one",
        {"Subject": {"query": ["travel"], "operator": "or"}},
        "set",
    ),
    C("Subject-tuple", {"Subject": ("Straße", "Übersicht")}, "set"),
    C("Subject-not", {"Subject": {"not": "history"}}, "set"),
    # No object has it: UnIndex answers with the objects that have a value.
    C("Subject-not-absent", {"Subject": {"not": "nothing-like-this"}}, "set"),
    C(
        "Subject-query-and-not",
        {"Subject": {"query": ["family", "outdoor"], "not": ["history"]}},
        "set",
    ),
    C(
        "Subject-range-min-max",
        {"Subject": {"query": ["K", "O"], "range": "min:max"}},
        "set",
    ),
    C("Subject-range-min", {"Subject": {"query": "t", "range": "min"}}, "set"),
    C(
        "Subject-range-and",
        {
            "Subject": {
                "query": ["Kultur", "Kulturz"],
                "range": "min:max",
                "operator": "and",
            }
        },
        "set",
    ),
    C("Subject-range-max", {"Subject": {"query": "Kz", "range": "max"}}, "set"),
    C("Subject-wrong-case", {"Subject": "küste"}, "set", empty=True),
    C("Subject-without-accent", {"Subject": "Kuste"}, "set", empty=True),
    C("Subject-unknown", {"Subject": "nothing-like-this"}, "set", empty=True),
    C("Subject-empty-list", {"Subject": []}, "set", empty=True),
    C("Subject-empty-string", {"Subject": ""}, "set", empty=True),
    C(
        "Subject-with-type-and-state",
        {"Subject": "travel", "portal_type": "Document", "review_state": "published"},
        "set",
    ),
    C("Subject-sorted", {"Subject": ["Kultur", "Natur"], "sort_on": TITLE}, "ordered"),
    # -- KeywordIndex: object_provides -------------------------------------
    C("object_provides-document", {"object_provides": IDOCUMENT}, "set"),
    C("object_provides-list", {"object_provides": [INEWSITEM, IEVENT]}, "set"),
    C("object_provides-folderish", {"object_provides": IFOLDERISH}, "set"),
    C(
        "object_provides-and-disjoint",
        {"object_provides": {"query": [IDOCUMENT, IFOLDERISH], "operator": "and"}},
        "set",
        empty=True,
    ),
    C(
        "object_provides-and",
        {"object_provides": {"query": [IFOLDER, ICONTAINER], "operator": "and"}},
        "set",
    ),
    C(
        "object_provides-not-in-en",
        {"object_provides": {"not": IDOCUMENT}, "path": _p("en")},
        "set",
    ),
    C(
        "object_provides-link-published",
        {"object_provides": ILINK, "review_state": "published"},
        "set",
    ),
    # -- KeywordIndex: allowedRolesAndUsers (the catalog sets it) -------------
    C(
        "allowedRolesAndUsers-anonymous-given",
        {"allowedRolesAndUsers": ["Anonymous"]},
        "set",
    ),
    C(
        "allowedRolesAndUsers-manager-given",
        {"allowedRolesAndUsers": ["Manager"], "portal_type": "Document"},
        "set",
    ),
    C(
        "allowedRolesAndUsers-user-given",
        {"allowedRolesAndUsers": "user:member1"},
        "set",
    ),
    C(
        "allowedRolesAndUsers-record-given",
        {"allowedRolesAndUsers": {"query": ["Anonymous"], "operator": "and"}},
        "set",
    ),
    C(
        "allowedRolesAndUsers-positional",
        {"allowedRolesAndUsers": ["Anonymous"], "path": _p("team")},
        "set",
        call="dict",
    ),
    # -- KeywordIndex: getRawRelatedItems (nothing indexes it in Plone 6.2) -
    C(
        "getRawRelatedItems-uid",
        {"getRawRelatedItems": uid_of("en/guides/lighthouse-guide")},
        "set",
        empty=True,
    ),
    C(
        "getRawRelatedItems-not",
        {"getRawRelatedItems": {"not": uid_of("about")}, "portal_type": "Link"},
        "set",
        empty=True,
    ),
    # -- UUIDIndex ---------------------------------------------------------
    C("UID-plain", {"UID": uid_of("en/guides/lighthouse-guide")}, "set"),
    C("UID-list", {"UID": [uid_of("about"), uid_of("contact"), uid_of("team")]}, "set"),
    C("UID-record", {"UID": {"query": [uid_of("de/uebersicht")]}}, "set"),
    C(
        "UID-not",
        {
            "UID": {"not": uid_of("en/links/cafe-link")},
            "path": {"query": _p("en/links"), "depth": 1},
        },
        "set",
    ),
    C("UID-unknown", {"UID": "0" * 32}, "set", empty=True),
    C("UID-private-item", {"UID": uid_of("contact")}, "set"),
    C("UID-expired-item", {"UID": uid_of("archive/report-1")}, "set"),
    C("UID-range", {"UID": {"query": ["0", "8"], "range": "min:max"}}, "set"),
    C("UID-sorted", {"path": _p("en/links"), "sort_on": "UID"}, "ordered"),
    C(
        "UID-list-sorted-by-title",
        {
            "UID": [uid_of("about"), uid_of("front-page"), uid_of("impressum")],
            "sort_on": TITLE,
        },
        "ordered",
    ),
    # -- DateIndex: created -------------------------------------------------
    C("created-min", {"created": {"query": _dt(2020, 2, 20), "range": "min"}}, "set"),
    C("created-max", {"created": {"query": _dt(2020, 1, 20), "range": "max"}}, "set"),
    C(
        "created-min-max-list",
        {
            "created": {
                "query": [_dt(2020, 1, 10), _dt(2020, 1, 25)],
                "range": "min:max",
            }
        },
        "set",
    ),
    C(
        "created-min-max-tuple",
        {
            "created": {
                "query": (_dt(2020, 1, 10), _dt(2020, 1, 25)),
                "range": "min:max",
            }
        },
        "set",
    ),
    C(
        "created-min-max-three",
        {
            "created": {
                "query": [_dt(2020, 1, 25), _dt(2020, 1, 10), _dt(2020, 1, 12)],
                "range": "min:max",
            }
        },
        "set",
    ),
    C(
        "created-aware-datetime",
        {"created": {"query": _vienna(2020, 1, 30, 12), "range": "max"}},
        "set",
    ),
    C(
        "created-naive-datetime",
        {"created": {"query": datetime(2020, 1, 30, 12), "range": "max"}},
        "set",
    ),
    C("created-date", {"created": {"query": date(2020, 1, 30), "range": "max"}}, "set"),
    C("created-string", {"created": {"query": "2020/01/15", "range": "max"}}, "set"),
    C(
        "created-iso-string",
        {"created": {"query": "2020-01-15T12:00:00+01:00", "range": "max"}},
        "set",
    ),
    C(
        "created-int-epoch-seconds",
        {"created": {"query": 1579478400, "range": "max"}},
        "set",
    ),
    C(
        "created-float-epoch-seconds",
        {"created": {"query": 1579478400.5, "range": "min"}},
        "set",
    ),
    C(
        "created-mixed-types",
        {"created": {"query": ["2020/01/10", _dt(2020, 1, 12)], "range": "min:max"}},
        "set",
    ),
    C("created-exact", {"created": _dt(2020, 1, 3, 8)}, "set"),
    C(
        "created-exact-list",
        {"created": [_dt(2020, 1, 3, 8), _dt(2020, 1, 5, 14)]},
        "set",
    ),
    C(
        "created-not",
        {
            "created": {"not": _dt(2020, 1, 3, 8)},
            "path": {"query": _p("en"), "depth": 1},
        },
        "set",
    ),
    C("created-sorted-limited", {"sort_on": "created", "sort_limit": 15}, "ordered"),
    C(
        "created-sorted-reverse-news",
        {"portal_type": "News Item", "sort_on": "created", "sort_order": "reverse"},
        "ordered",
    ),
    C(
        "created-bad-string",
        {"created": {"query": "not a date", "range": "min"}},
        "set",
    ),
    C("created-none", {"created": None, "portal_type": "Link"}, "set", empty=True),
    # -- DateIndex: modified, effective, expires, Date ----------------------
    C(
        "modified-sorted-descending-limited",
        {"sort_on": "modified", "sort_order": "descending", "sort_limit": 10},
        "ordered",
    ),
    C(
        "modified-min-max",
        {"modified": {"query": [_dt(2022, 3, 1), _dt(2022, 4, 1)], "range": "min:max"}},
        "set",
    ),
    C(
        "modified-min-string",
        {"modified": {"query": "2022/06/01", "range": "min"}},
        "set",
    ),
    C(
        "effective-min-published-sorted",
        {
            "effective": {"query": _dt(2021, 3, 1), "range": "min"},
            "review_state": "published",
            "sort_on": "effective",
        },
        "ordered",
    ),
    C(
        "effective-max",
        {"effective": {"query": _dt(2000, 12, 31), "range": "max"}},
        "set",
    ),
    C(
        "effective-future-string",
        {"effective": {"query": "2099/01/01", "range": "min"}},
        "set",
    ),
    C("expires-max", {"expires": {"query": _dt(2002, 1, 1), "range": "max"}}, "set"),
    C(
        "expires-min-far",
        {"expires": {"query": _dt(2400, 1, 1), "range": "min"}},
        "set",
    ),
    C(
        "expires-max-sorted",
        {"expires": {"query": _dt(2002, 1, 1), "range": "max"}, "sort_on": "expires"},
        "ordered",
    ),
    C("Date-min", {"Date": {"query": _dt(2021, 6, 1), "range": "min"}}, "set"),
    C(
        "Date-sorted-reverse-limited",
        {"sort_on": "Date", "sort_order": "reverse", "sort_limit": 12},
        "ordered",
    ),
    # -- DateRangeIndex: effectiveRange, show_inactive ----------------------
    C("show_inactive-true", {"show_inactive": True}, "set"),
    C("show_inactive-false", {"show_inactive": False}, "set"),
    C(
        "show_inactive-true-archive",
        {"show_inactive": True, "path": _p("archive")},
        "set",
    ),
    C("effectiveRange-2099", {"effectiveRange": _dt(2099, 6, 1)}, "set"),
    C("effectiveRange-2000", {"effectiveRange": _dt(2000, 6, 1)}, "set"),
    C(
        "effectiveRange-2000-show-inactive",
        {"effectiveRange": _dt(2000, 6, 1), "show_inactive": True},
        "set",
    ),
    C("effectiveRange-string", {"effectiveRange": "2001/01/05"}, "set"),
    C("effectiveRange-datetime", {"effectiveRange": _vienna(2099, 3, 1)}, "set"),
    C(
        "show_inactive-positional",
        {"show_inactive": True, "portal_type": "Document"},
        "set",
        call="dict",
    ),
    # -- ExtendedPathIndex --------------------------------------------------
    C("path-plain", {"path": _p("en")}, "set"),
    C("path-trailing-slash", {"path": _p("en") + "/"}, "set"),
    C("path-depth-0", {"path": {"query": _p("en/guides"), "depth": 0}}, "set"),
    C("path-depth-1", {"path": {"query": _p("en/guides"), "depth": 1}}, "set"),
    C("path-depth-2", {"path": {"query": _p("en/guides"), "depth": 2}}, "set"),
    C("path-depth-minus-1", {"path": {"query": _p("en/guides"), "depth": -1}}, "set"),
    C(
        "path-list-depth-1",
        {"path": {"query": [_p("en/news"), _p("de/nachrichten")], "depth": 1}},
        "set",
    ),
    C("path-tuple", {"path": (_p("archive"), _p("team"))}, "set"),
    C("path-record-list-one", {"path": {"query": [_p("de")]}}, "set"),
    C("path-site-root-depth-0", {"path": {"query": _p(""), "depth": 0}}, "set"),
    C("path-nonexistent", {"path": _p("nowhere")}, "set", empty=True),
    C("path-slash", {"path": "/"}, "set"),
    C("path-relative", {"path": "en/guides"}, "set", empty=True),
    C(
        "path-leaf-depth-0",
        {"path": {"query": _p("en/guides/coast/north/cliffs"), "depth": 0}},
        "set",
    ),
    C(
        "path-operator-and",
        {"path": {"query": [_p("en"), _p("en/news")], "operator": "and"}},
        "set",
    ),
    C(
        "path-depth-string",
        {"path": {"query": _p("de/anleitungen"), "depth": "1"}},
        "raises",
    ),
    C("path-depth-bad", {"path": {"query": _p("de"), "depth": "x"}}, "raises"),
    C("path-team", {"path": _p("team")}, "set"),
    C(
        "path-navtree",
        {"path": {"query": _p("en/guides/coast/north"), "navtree": True}},
        "set",
    ),
    C(
        "path-navtree-start-1",
        {
            "path": {
                "query": _p("en/guides/coast/north"),
                "navtree": True,
                "navtree_start": 1,
            }
        },
        "set",
    ),
    C(
        "path-navtree-start-3",
        {
            "path": {
                "query": _p("en/guides/coast/north"),
                "navtree": True,
                "navtree_start": 3,
            }
        },
        "set",
    ),
    C(
        "path-navtree-depth-0-breadcrumbs",
        {
            "path": {
                "query": _p("en/guides/coast/north/cliffs"),
                "navtree": True,
                "depth": 0,
            }
        },
        "set",
    ),
    C(
        "path-navtree-depth-2",
        {"path": {"query": _p("de/anleitungen"), "navtree": True, "depth": 2}},
        "set",
    ),
    C("path-level-2", {"path": {"query": "guides", "level": 2}}, "set"),
    C("path-level-3-two-steps", {"path": {"query": "coast/north", "level": 3}}, "set"),
    C("path-level-any", {"path": {"query": "north", "level": -1}}, "set"),
    C(
        "path-level-with-depth",
        {"path": {"query": "anleitungen", "level": 2, "depth": 1}},
        "set",
    ),
    C(
        "path-level-0-absolute",
        {"path": {"query": "plone/de", "level": 0, "depth": 1}},
        "set",
    ),
    C("path-not-a-string", {"path": 5}, "raises"),
    # -- GopipIndex: getObjPositionInParent --------------------------------
    C(
        "position-news-ordered",
        {
            "path": {"query": _p("en/news"), "depth": 1},
            "sort_on": "getObjPositionInParent",
        },
        "ordered",
    ),
    C(
        "position-news-reverse",
        {
            "path": {"query": _p("en/news"), "depth": 1},
            "sort_on": "getObjPositionInParent",
            "sort_order": "reverse",
        },
        "ordered",
    ),
    C(
        "position-nachrichten-ordered",
        {
            "path": {"query": _p("de/nachrichten"), "depth": 1},
            "sort_on": "getObjPositionInParent",
        },
        "ordered",
    ),
    C(
        "position-guides-ordered",
        {
            "path": {"query": _p("en/guides"), "depth": 1},
            "sort_on": "getObjPositionInParent",
        },
        "ordered",
    ),
    C(
        "position-site-root-children",
        {"path": {"query": _p(""), "depth": 1}, "sort_on": "getObjPositionInParent"},
        "ordered",
    ),
    C(
        "position-limited",
        {
            "path": {"query": _p("en/news"), "depth": 1},
            "sort_on": "getObjPositionInParent",
            "sort_limit": 5,
        },
        "ordered",
    ),
    C(
        "position-batched",
        {
            "path": {"query": _p("de/nachrichten"), "depth": 1},
            "sort_on": "getObjPositionInParent",
            "b_start": 5,
            "b_size": 5,
        },
        "ordered",
    ),
    C(
        "position-as-query-key",
        {"getObjPositionInParent": 0, "portal_type": "Folder"},
        "set",
        empty=True,
    ),
    C(
        "position-then-title",
        {"path": _p("en/guides"), "sort_on": ["getObjPositionInParent", TITLE]},
        "ordered",
    ),
    # -- ZCTextIndex: SearchableText ---------------------------------------
    C("text-word", {"SearchableText": "renovation"}, "set"),
    C("text-upper-case", {"SearchableText": "RENOVATION"}, "set"),
    C("text-capitalized", {"SearchableText": "Renovation"}, "set"),
    C("text-prefix", {"SearchableText": "renovat*"}, "set"),
    C("text-short-prefix", {"SearchableText": "reno*"}, "set"),
    C("text-prefix-two-letters", {"SearchableText": "fe*"}, "set"),
    C("text-and", {"SearchableText": "renovation AND spring"}, "set"),
    C("text-implicit-and", {"SearchableText": "festival music"}, "set"),
    C("text-or", {"SearchableText": "renovation OR festival"}, "set"),
    C(
        "error-text-not-without-and",
        {"SearchableText": "festival NOT tickets"},
        "tolerated",
        like="text-and-not",
    ),
    C("text-hyphen-not", {"SearchableText": "festival -tickets"}, "set"),
    C("text-and-not", {"SearchableText": "festival AND NOT tickets"}, "set"),
    # Negation on bilingual content (content._negation_items): the negated
    # word in one language's stem, mixed case, hyphenated, accented.
    C("text-not-bilingual", {"SearchableText": "python AND NOT zope"}, "set"),
    C("text-not-mixed-case", {"SearchableText": "PYTHON and not Zope"}, "set"),
    C("text-hyphen-not-upper-case", {"SearchableText": "Python -ZOPE"}, "set"),
    C("text-not-hyphenated", {"SearchableText": "python -Plone-Konferenz"}, "set"),
    C(
        "text-not-phrase",
        {"SearchableText": 'python AND NOT "plone konferenz"'},
        "set",
    ),
    C("text-not-accented", {"SearchableText": "python -Café"}, "set"),
    C("text-not-unaccented", {"SearchableText": "python -CAFE"}, "set"),
    C("text-not-group", {"SearchableText": "python AND NOT (zope OR café)"}, "set"),
    C(
        "text-not-nested",
        {"SearchableText": "python AND NOT (zope AND NOT volto)"},
        "set",
    ),
    C("text-not-in-or", {"SearchableText": "(python AND NOT zope) OR sprint"}, "set"),
    C("text-not-two", {"SearchableText": "python -zope -sprint"}, "set"),
    # An alternative of OR with only negated words: ZCTextIndex raises
    # ParseError (read as ``a | !b`` it would find nearly everything).
    C("text-or-not", {"SearchableText": "festival OR NOT tickets"}, "set"),
    C("text-hyphen-or", {"SearchableText": "-tickets OR festival"}, "set"),
    C("text-or-negated-glob", {"SearchableText": "festival OR -renovatio?"}, "set"),
    C("text-empty-keys", {"SearchableText": ["", ""]}, "set"),
    C(
        "text-parentheses",
        {"SearchableText": "(renovation OR festival) AND spring"},
        "set",
    ),
    C(
        "text-nested-parentheses",
        {"SearchableText": "((confidential OR tickets) AND (budget OR door))"},
        "set",
    ),
    C("text-phrase", {"SearchableText": '"entry is free"'}, "set"),
    C("text-phrase-wrong-order", {"SearchableText": '"free entry"'}, "set", empty=True),
    C("text-phrase-long", {"SearchableText": '"were closed for two years"'}, "set"),
    C("text-phrase-and-word", {"SearchableText": '"entry is free" friends'}, "set"),
    C("text-two-words", {"SearchableText": "two years"}, "set"),
    C("text-umlaut", {"SearchableText": "Übersicht"}, "set"),
    C("text-umlaut-lower", {"SearchableText": "übersicht"}, "set"),
    C("text-umlaut-unaccented", {"SearchableText": "Ubersicht"}, "set"),
    C("text-umlaut-upper", {"SearchableText": "ÜBERSICHT"}, "set"),
    C("text-kueste", {"SearchableText": "Küste"}, "set"),
    C("text-kueste-unaccented", {"SearchableText": "kuste"}, "set"),
    C("text-geoeffnet", {"SearchableText": "geöffnet"}, "set"),
    C("text-sharp-s", {"SearchableText": "Straße"}, "set"),
    C("text-sharp-s-as-ss", {"SearchableText": "strasse"}, "set"),
    C("text-german-or-english", {"SearchableText": "Küste OR coast"}, "set"),
    C("text-hoehlen", {"SearchableText": "Höhlen"}, "set"),
    C("text-number", {"SearchableText": "2001"}, "set"),
    C("text-e-mail", {"SearchableText": "editors@example.org"}, "set"),
    C("text-c-plus-plus", {"SearchableText": "C++"}, "set"),
    C("text-percent", {"SearchableText": "50%"}, "set"),
    C("text-exclamation", {"SearchableText": "renovation!"}, "set"),
    C("text-question-mark-glob", {"SearchableText": "renovatio?"}, "set"),
    C("text-inner-glob", {"SearchableText": "re*tion"}, "set"),
    C("text-negated-glob", {"SearchableText": "festival -renovatio?"}, "set"),
    C("text-glob-or-word", {"SearchableText": "renovat?on OR festival"}, "set"),
    C("text-apostrophe", {"SearchableText": "luthier's"}, "set", empty=True),
    C("text-stop-word", {"SearchableText": "the"}, "set"),
    C("text-stop-word-and-word", {"SearchableText": "the renovation"}, "set"),
    C("text-lower-case-operator", {"SearchableText": "renovation and spring"}, "set"),
    C(
        "text-lone-and",
        {"SearchableText": "AND"},
        "set",
    ),
    C("text-lone-or", {"SearchableText": "OR"}, "set"),
    C(
        "text-lone-not",
        {"SearchableText": "NOT"},
        "set",
    ),
    C(
        "text-leading-and",
        {"SearchableText": "AND renovation"},
        "tolerated",
        like="text-word",
    ),
    C(
        "text-trailing-or",
        {"SearchableText": "renovation OR"},
        "tolerated",
        like="text-word",
    ),
    C(
        "text-only-not",
        {"SearchableText": "NOT renovation"},
        "set",
    ),
    C(
        "text-trailing-not",
        {"SearchableText": "renovation NOT"},
        "tolerated",
        like="text-word",
    ),
    C(
        "text-open-parenthesis",
        {"SearchableText": "(renovation"},
        "tolerated",
        like="text-word",
    ),
    C(
        "text-close-parenthesis",
        {"SearchableText": "renovation)"},
        "tolerated",
        like="text-word",
    ),
    C(
        "text-empty-parentheses",
        {"SearchableText": "()"},
        "set",
    ),
    C(
        "text-lone-quote",
        {"SearchableText": '"'},
        "set",
    ),
    C("text-unclosed-phrase", {"SearchableText": '"entry is'}, "set"),
    C("text-lone-star", {"SearchableText": "*"}, "set"),
    C("text-leading-star", {"SearchableText": "*tion"}, "set", empty=True),
    C(
        "text-punctuation-only",
        {"SearchableText": "!!!"},
        "set",
    ),
    C("text-empty-string", {"SearchableText": ""}, "set", empty=True),
    C("text-unknown-word", {"SearchableText": "xylophone"}, "set", empty=True),
    C("text-list", {"SearchableText": ["renovation", "spring"]}, "set"),
    C("text-record", {"SearchableText": {"query": "confidential"}}, "set"),
    C(
        "text-in-path",
        {"SearchableText": "confidential", "path": _p("team/projects")},
        "set",
    ),
    C(
        "text-with-state",
        {"SearchableText": "festival", "review_state": "published"},
        "set",
    ),
    C(
        "text-sorted-by-title",
        {"SearchableText": "renovation", "sort_on": TITLE},
        "ordered",
    ),
    C(
        "text-sorted-by-start",
        {"SearchableText": "festival", "sort_on": "start"},
        "ordered",
    ),
    C(
        "text-sorted-batched",
        {"SearchableText": "renovation", "sort_on": TITLE, "b_start": 5, "b_size": 5},
        "ordered",
    ),
    C(
        "text-sorted-by-date-reverse",
        {
            "SearchableText": "Eintritt OR Tickets",
            "sort_on": "Date",
            "sort_order": "reverse",
        },
        "ordered",
    ),
    # -- ZCTextIndex: Title, Description -----------------------------------
    C("Title-word", {"Title": "renovation"}, "set"),
    C("Title-glob", {"Title": "renovat?on"}, "set"),
    C("Title-guide", {"Title": "guide"}, "set"),
    C("Title-and", {"Title": "archive AND report"}, "set"),
    C("Title-phrase", {"Title": '"archive report"'}, "set"),
    C("Title-prefix", {"Title": "announce*"}, "set"),
    C("Title-umlaut", {"Title": "Übersicht"}, "set"),
    C(
        "Title-with-type",
        {"Title": "guide", "portal_type": "Document", "path": _p("en/guides/coast")},
        "set",
    ),
    C("Title-number", {"Title": "12"}, "set"),
    C("Description-word", {"Description": "region"}, "set"),
    C("Description-capitalized", {"Description": "Confidential"}, "set"),
    C("Description-or", {"Description": "visitors OR Besucher"}, "set"),
    C("Description-and-not", {"Description": "region AND NOT spring"}, "set"),
    # -- DateRecurringIndex: start, end ------------------------------------
    C("start-exact-first", {"start": _vienna(2030, 1, 5, 10)}, "set"),
    C("start-exact-third-occurrence", {"start": _vienna(2030, 1, 19, 10)}, "set"),
    C(
        "start-exact-datetime-object",
        {"start": DateTime("2030/01/19 10:00 GMT+1")},
        "set",
    ),
    C(
        "start-occurrence-window",
        {
            "start": {
                "query": [_vienna(2030, 1, 25), _vienna(2030, 1, 27)],
                "range": "min:max",
            }
        },
        "set",
    ),
    C(
        "start-occurrence-after-dst",
        {
            "start": {
                "query": [_vienna(2030, 4, 3), _vienna(2030, 4, 5)],
                "range": "min:max",
            }
        },
        "set",
    ),
    C("start-min", {"start": {"query": _vienna(2030, 12, 1), "range": "min"}}, "set"),
    C("start-max", {"start": {"query": _vienna(2030, 2, 1), "range": "max"}}, "set"),
    C(
        "start-max-naive",
        {"start": {"query": datetime(2030, 2, 1), "range": "max"}},
        "set",
    ),
    C("start-max-date", {"start": {"query": date(2030, 2, 1), "range": "max"}}, "set"),
    C("start-max-string", {"start": {"query": "2030/03/10", "range": "max"}}, "raises"),
    C(
        "start-max-DateTime",
        {"start": {"query": DateTime("2030/03/10 GMT+1"), "range": "max"}},
        "set",
    ),
    C("end-min", {"end": {"query": _vienna(2030, 6, 1), "range": "min"}}, "set"),
    C("end-max", {"end": {"query": _vienna(2030, 3, 1), "range": "max"}}, "set"),
    C(
        "ongoing-on-a-day",
        {
            "start": {"query": _vienna(2030, 2, 3), "range": "max"},
            "end": {"query": _vienna(2030, 2, 2), "range": "min"},
        },
        "set",
    ),
    C(
        "start-monthly-window",
        {
            "start": {
                "query": [_vienna(2030, 8, 1), _vienna(2030, 8, 10)],
                "range": "min:max",
            }
        },
        "set",
    ),
    C("start-daily-interval-exact", {"start": _vienna(2030, 7, 13, 10, 30)}, "set"),
    C(
        "start-yearly-window",
        {
            "start": {
                "query": [_vienna(2032, 1, 1), _vienna(2032, 12, 31)],
                "range": "min:max",
            }
        },
        "set",
    ),
    C(
        "start-byday-window",
        {
            "start": {
                "query": [_vienna(2030, 10, 20), _vienna(2030, 10, 25)],
                "range": "min:max",
            }
        },
        "set",
    ),
    C(
        "start-until-late-window",
        {
            "start": {
                "query": [_vienna(2030, 12, 20), _vienna(2030, 12, 31)],
                "range": "min:max",
            }
        },
        "set",
    ),
    C(
        "start-list-of-exact",
        {"start": [_vienna(2030, 1, 5, 10), _vienna(2030, 2, 6, 11, 15)]},
        "set",
    ),
    C("start-sorted", {"sort_on": "start"}, "ordered"),
    C("end-sorted-reverse", {"sort_on": "end", "sort_order": "reverse"}, "ordered"),
    C(
        "start-window-published-sorted",
        {
            "start": {"query": _vienna(2030, 6, 1), "range": "min"},
            "portal_type": "Event",
            "review_state": "published",
            "sort_on": "start",
        },
        "ordered",
    ),
    C(
        "start-min-sorted-limited",
        {
            "start": {"query": _vienna(2030, 3, 1), "range": "min"},
            "sort_on": "start",
            "sort_limit": 5,
        },
        "ordered",
    ),
    C(
        "upcoming-events-listing",
        {
            "portal_type": "Event",
            "end": {"query": DateTime("2030/06/01 GMT+2"), "range": "min"},
            "sort_on": "start",
            "path": _p("de"),
        },
        "ordered",
    ),
    # -- sort_on, sort_order, sort_limit -------------------------------------
    C("sort-title-all", {"sort_on": TITLE}, "ordered"),
    C(
        "sort-title-descending",
        {"sort_on": TITLE, "sort_order": "descending"},
        "ordered",
    ),
    C(
        "sort-title-ascending-explicit",
        {"sort_on": TITLE, "sort_order": "ascending", "portal_type": "Link"},
        "ordered",
    ),
    C(
        "sort-order-uppercase",
        {"sort_on": TITLE, "sort_order": "DESCENDING", "portal_type": "Link"},
        "ordered",
    ),
    C("sort-two-indexes", {"sort_on": ["portal_type", TITLE]}, "ordered"),
    C(
        "sort-two-indexes-one-reverse",
        {"sort_on": ["review_state", "created"], "sort_order": "reverse"},
        "ordered",
        counts_dropped=True,
    ),
    C(
        "sort-two-indexes-two-orders",
        {"sort_on": ["portal_type", TITLE], "sort_order": ["descending", "ascending"]},
        "ordered",
    ),
    C(
        "sort-two-indexes-short-order-list",
        {"sort_on": ["portal_type", TITLE], "sort_order": ["reverse"]},
        "ordered",
    ),
    C(
        "sort-three-indexes",
        {
            "sort_on": ["is_folderish", "review_state", TITLE],
            "sort_order": ["ascending", "descending", "ascending"],
        },
        "ordered",
    ),
    C("sort-tuple", {"sort_on": ("Creator", TITLE), "path": _p("team")}, "ordered"),
    C(
        "sort-boolean-then-title",
        {"sort_on": ["exclude_from_nav", TITLE], "path": _p("en")},
        "ordered",
    ),
    C("sort-limit-1", {"sort_on": TITLE, "sort_limit": 1}, "ordered"),
    C(
        "sort-limit-beyond",
        {"sort_on": TITLE, "sort_limit": 1000, "portal_type": "Link"},
        "ordered",
    ),
    C(
        "sort-limit-without-sort-on",
        {"sort_limit": 5, "portal_type": "Event"},
        "some",
        like="portal_type-record",
    ),
    C(
        "sort-limit-multi",
        {"sort_on": ["portal_type", TITLE], "sort_limit": 7, "sort_order": "reverse"},
        "ordered",
    ),
    C(
        "sort-on-unknown-keywords",
        {"sort_on": "no_such_index", "portal_type": "Link"},
        "set",
    ),
    C(
        "sort-on-unknown-positional",
        {"sort_on": "no_such_index", "portal_type": "Link"},
        "set",
        call="dict",
    ),
    C("sort-on-text-index", {"sort_on": "Title", "portal_type": "Link"}, "ordered"),
    C("sort-on-path-index", {"sort_on": "path", "portal_type": "Link"}, "ordered"),
    C(
        "sort-on-date-range-index",
        {"sort_on": "effectiveRange", "portal_type": "Link"},
        "raises",
    ),
    C("sort-on-keyword-index", {"sort_on": "Subject"}, "refused"),
    C(
        "sort-on-deleted-index",
        {"sort_on": DELETED_INDEX, "portal_type": "Link"},
        "set",
    ),
    C("sort-on-empty-string", {"sort_on": "", "portal_type": "Link"}, "set"),
    C(
        "sort-order-without-sort-on",
        {"sort_order": "reverse", "portal_type": "Link"},
        "set",
    ),
    C(
        "sort-effective-published",
        {
            "review_state": "published",
            "sort_on": "effective",
            "sort_order": "reverse",
            "sort_limit": 10,
            "portal_type": ["Document", "News Item"],
        },
        "ordered",
    ),
    C("sort-id-in-archive", {"path": _p("archive"), "sort_on": "id"}, "ordered"),
    # -- b_start / b_size ----------------------------------------------------
    C("batch-first", {"sort_on": TITLE, "b_start": 0, "b_size": 10}, "ordered"),
    C("batch-second", {"sort_on": TITLE, "b_start": 10, "b_size": 10}, "ordered"),
    C(
        "batch-reverse",
        {"sort_on": TITLE, "sort_order": "reverse", "b_start": 20, "b_size": 7},
        "ordered",
    ),
    C(
        "batch-beyond-end",
        {"sort_on": TITLE, "portal_type": "Link", "b_start": 100, "b_size": 10},
        "ordered",
        empty=True,
    ),
    C(
        "batch-last-partial",
        {"sort_on": TITLE, "portal_type": "Link", "b_start": 20, "b_size": 10},
        "ordered",
    ),
    C(
        "batch-without-sort-on",
        {"portal_type": "Document", "b_start": 0, "b_size": 5},
        "count",
    ),
    C(
        "batch-start-without-size",
        {"sort_on": TITLE, "portal_type": "Link", "b_start": 5},
        "ordered",
    ),
    C(
        "batch-and-sort-limit",
        {"sort_on": TITLE, "sort_limit": 8, "b_start": 4, "b_size": 10},
        "ordered",
    ),
    C("batch-strings", {"sort_on": TITLE, "b_start": "5", "b_size": "5"}, "ordered"),
    C(
        "batch-two-sort-indexes",
        {"sort_on": ["portal_type", TITLE], "b_start": 30, "b_size": 15},
        "ordered",
    ),
    C("batch-bad-size", {"sort_on": TITLE, "b_size": "many"}, "ordered"),
    # -- combinations of indexes -------------------------------------------
    C(
        "combo-type-state-path-subject",
        {
            "portal_type": "Document",
            "review_state": "published",
            "path": _p("en"),
            "Subject": "travel",
        },
        "set",
    ),
    C(
        "combo-news-sorted-created",
        {"portal_type": "News Item", "Language": "en", "sort_on": "created"},
        "ordered",
    ),
    C(
        "combo-text-path-state",
        {
            "SearchableText": "Anleitung",
            "path": _p("de/anleitungen/kueste"),
            "review_state": "published",
        },
        "set",
    ),
    C(
        "combo-start-path-sorted",
        {
            "start": {"query": _vienna(2030, 5, 1), "range": "min"},
            "path": _p("de"),
            "sort_on": "start",
        },
        "ordered",
    ),
    C(
        "combo-navigation-portlet",
        {
            "object_provides": IFOLDERISH,
            "path": {"query": _p("en"), "depth": 1},
            "exclude_from_nav": False,
            "sort_on": "getObjPositionInParent",
        },
        "ordered",
    ),
    C(
        "combo-navtree",
        {
            "path": {
                "query": _p("en/guides/coast"),
                "navtree": True,
                "navtree_start": 1,
            },
            "is_default_page": False,
            "exclude_from_nav": False,
            "review_state": "published",
        },
        "set",
    ),
    C(
        "combo-folder-contents",
        {
            "path": {"query": _p("en/news"), "depth": 1},
            "sort_on": "getObjPositionInParent",
            "b_start": 0,
            "b_size": 5,
        },
        "ordered",
    ),
    C(
        "combo-collection",
        {
            "portal_type": ["News Item", "Event"],
            "review_state": "published",
            "sort_on": "effective",
            "sort_order": "reverse",
            "sort_limit": 10,
        },
        "ordered",
    ),
    C(
        "combo-search-view",
        {
            "SearchableText": "renovation OR Eintritt",
            "portal_type": ["News Item", "Event"],
            "sort_on": "Date",
            "sort_order": "reverse",
        },
        "ordered",
    ),
    C(
        "combo-creator-modified",
        {
            "Creator": "member1",
            "modified": {"query": _dt(2022, 1, 1), "range": "min"},
            "sort_on": "modified",
        },
        "ordered",
    ),
    C(
        "combo-path-subject-type",
        {
            "path": _p("de"),
            "Subject": {"query": ["Straße", "history", "Café"]},
            "Type": ["Page", "News Item"],
        },
        "set",
    ),
    C("combo-id-and-getId", {"id": "cafe-link", "getId": "cafe-link"}, "set"),
    C(
        "combo-id-and-getId-disagree",
        {"id": "cafe-link", "getId": "about"},
        "set",
        empty=True,
    ),
    C(
        "combo-four-indexes",
        {
            "portal_type": "Document",
            "path": _p("team"),
            "Creator": "member1",
            "review_state": ["private", "pending"],
        },
        "set",
    ),
    C(
        "combo-uid-not-and-path",
        {
            "UID": {
                "not": [
                    uid_of("en/news/garden-news"),
                    uid_of("en/news/lighthouse-news"),
                ]
            },
            "path": {"query": _p("en/news"), "depth": 1},
            "sort_on": TITLE,
        },
        "ordered",
    ),
    C(
        "combo-boolean-and-date",
        {"is_folderish": True, "created": {"query": _dt(2020, 1, 3), "range": "min"}},
        "set",
    ),
    C(
        "combo-effective-expires",
        {
            "effective": {"query": _dt(2000, 1, 1), "range": "min"},
            "expires": {"query": _dt(2001, 1, 10), "range": "max"},
        },
        "set",
    ),
    # -- ZCatalog raises --------------------------------------------------
    C(
        "error-text-parse",
        {"SearchableText": "AND OR"},
        "set",
    ),
    C(
        "error-bad-operator",
        {"portal_type": {"query": "Document", "operator": "xor"}},
        "set",
    ),
    C(
        "Subject-unknown-range-name",
        {"Subject": {"query": "travel", "range": "between"}},
        "set",
    ),
    C(
        "created-unknown-range-name",
        {"created": {"query": _dt(2020, 1, 1), "range": "up"}},
        "set",
    ),
    C(
        "error-batch-start-bad",
        {"sort_on": TITLE, "b_start": "x", "b_size": 5},
        "ordered",
    ),
]


STEMMING_QUERIES: list[StemmingCase] = [
    StemmingCase(
        "stem-lighthouses",
        {"SearchableText": "lighthouses"},
        (
            "en/guides/lighthouse-guide",
            "en/events/lighthouse-festival",
            "en/links/lighthouse-link",
            "team/lighthouse-notes",
            "archive/report-1",
        ),
    ),
    StemmingCase(
        "stem-gardens",
        {"SearchableText": "gardens"},
        ("en/guides/garden-guide", "en/links/garden-link"),
    ),
    StemmingCase(
        "stem-libraries",
        {"SearchableText": "libraries"},
        (
            "en/guides/library-guide",
            "en/events/library-festival",
            "en/links/library-link",
        ),
    ),
    StemmingCase(
        "stem-churches",
        {"SearchableText": "churches"},
        (
            "en/guides/coast/north/cliffs/church-guide",
            "en/events/church-festival",
            "en/links/church-link",
        ),
    ),
    StemmingCase(
        "stem-tourist",
        {"SearchableText": "tourist"},
        ("en/news/lighthouse-news", "en/news/garden-news"),
    ),
    StemmingCase(
        "stem-close",
        {"SearchableText": "close"},
        ("en/news/bridge-news", "en/news/meadow-news"),
    ),
    StemmingCase(
        "stem-bruecken",
        {"SearchableText": "Brücken"},
        ("de/anleitungen/bridge-anleitung",),
    ),
    StemmingCase(
        "stem-wiesen",
        {"SearchableText": "Wiesen"},
        (
            "de/anleitungen/kueste/norden/klippen/meadow-anleitung",
            "de/veranstaltungen/meadow-fest",
        ),
    ),
    StemmingCase(
        "stem-kirchen",
        {"SearchableText": "Kirchen"},
        ("de/anleitungen/kueste/norden/klippen/church-anleitung",),
    ),
    StemmingCase(
        "stem-lighthouses-and-practical",
        {"SearchableText": "lighthouses AND practical"},
        ("en/guides/lighthouse-guide",),
    ),
]


UNCOMMITTED_QUERIES: list[Case] = [
    C("ryw-new-by-path", {"path": {"query": _p(RYW_NEW), "depth": 0}}, "set"),
    C("ryw-new-by-text", {"SearchableText": "kingfisher"}, "set"),
    C(
        "ryw-new-published",
        {
            "review_state": "published",
            "path": _p("en/guides"),
            "portal_type": "Document",
        },
        "set",
    ),
    C("ryw-retitled-by-Title", {"Title": "edited"}, "set"),
    C("ryw-retitled-by-sortable_title", {TITLE: "gardens bloom (edited)"}, "set"),
    C("ryw-old-title-gone", {"Title": "renovation", "path": _p("en/news")}, "set"),
    C("ryw-deleted", {"path": {"query": _p("en/links"), "depth": 1}}, "set"),
    C("ryw-deleted-by-uid", {"UID": uid_of(RYW_DELETED)}, "set", empty=True),
    C(
        "ryw-moved-source-folder",
        {
            "path": {"query": _p("en/guides"), "depth": 1},
            "sort_on": "getObjPositionInParent",
        },
        "ordered",
    ),
    C(
        "ryw-moved-target-folder",
        {
            "path": {"query": _p("de/anleitungen"), "depth": 1},
            "sort_on": "getObjPositionInParent",
        },
        "ordered",
    ),
    C("ryw-moved-by-uid", {"UID": uid_of(RYW_MOVED_FROM)}, "set"),
    C("ryw-moved-by-id", {"id": RYW_MOVED_TO.rsplit("/", 1)[1]}, "set"),
    C("ryw-renamed-new-id", {"id": RYW_RENAMED_TO.rsplit("/", 1)[1]}, "set"),
    C(
        "ryw-renamed-old-id",
        {"id": RYW_RENAMED_FROM.rsplit("/", 1)[1]},
        "set",
        empty=True,
    ),
    C(
        "ryw-renamed-position",
        {
            "path": {"query": _p("de/nachrichten"), "depth": 1},
            "sort_on": "getObjPositionInParent",
        },
        "ordered",
    ),
    C("ryw-local-role", {"path": _p(RYW_SHARED)}, "set"),
]


#: Indexes whose ``uniqueValuesFor`` and ``Indexes[name].uniqueValues``
#: (with and without lengths) are compared, as the Manager.
UNIQUE_VALUES_INDEXES: list[str] = [
    "portal_type",
    "review_state",
    "Subject",
    "Creator",
    "Type",
    "is_folderish",
    "exclude_from_nav",
    "is_default_page",
    "object_provides",
    "getRawRelatedItems",
    "created",
    "start",
]
