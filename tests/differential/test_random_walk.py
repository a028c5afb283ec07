"""Differential: a seeded random walk of content changes, ZCatalog as the oracle.

Owns the walk: ``STEPS`` operations drawn from ``random.Random(SEED)`` and
from the current content (create, edit, partial reindex, move, rename, copy,
delete, workflow transitions, local roles, ordering, several of them in one
transaction, savepoint rollback, abort), done through Plone's own APIs.  The
whole walk runs in a stock ZCatalog site, then in a plone_pgcatalog site;
after every step a battery of queries (as the Manager, as ``member1`` with
local roles, as Anonymous, and unrestricted counts) records its outcomes.
The test compares the two records step by step and reports the first step
where they differ, with the operations that led there.

Deterministic: choices come only from the seeded generator and from the
content itself (ids and paths in sorted order, never from catalog results),
so both sites make the same choices.  Nothing compares or sorts on dates:
creation and modification dates differ between the sites, effective dates
are set to a fixed value at creation (publishing would otherwise set them to
"now", which the effectiveRange filter of restricted searches compares with).

Must not import plone_pgcatalog: the same walk runs on the oracle's site.
"""

from __future__ import annotations

from Acquisition import aq_base
from dataclasses import dataclass
from dataclasses import field
from datetime import datetime
from datetime import timedelta
from DateTime import DateTime
from tests.conftest import collect_in
from tests.differential.content import become
from tests.differential.content import event_zone
from tests.differential.content import MEMBER
from tests.differential.content import MEMBER_PASSWORD

import copy
import pytest
import random
import traceback
import transaction

#: The walk is reproducible from these two numbers.
SEED = 4242
STEPS = 500

#: Bounds that keep the battery fast (result sizes) and paths short.
MAX_ITEMS = 90
MAX_DEPTH = 5  # path elements below the site
MAX_COPY = 8  # items in a copied subtree

TYPES = ("Folder", "Document", "News Item", "Event")
ID_PREFIX = {"Folder": "f", "Document": "d", "News Item": "n", "Event": "e"}
TYPE_WORD = {
    "Folder": "folder",
    "Document": "page",
    "News Item": "news",
    "Event": "event",
}
STATES = ("private", "pending", "published")

#: Words of titles, descriptions and texts, and of the full-text queries.
#: None is another's inflected form (english snowball stems them apart), so
#: pgcatalog's stemming cannot find more than ZCatalog finds.
WORDS = (
    "amber",
    "basalt",
    "cobalt",
    "dune",
    "ember",
    "fjord",
    "glacier",
    "heron",
    "indigo",
    "juniper",
    "kestrel",
    "lagoon",
)
SUBJECTS = ("Küste", "Café", "travel", "history", "outdoor", "Straße")

#: Fixed effective date of every item (see module docstring).
EFFECTIVE = DateTime("2020/06/01 10:00:00 GMT+1")

#: Local-role changes for member1: roles, or None to remove them.
LOCAL_ROLES = (("Reader",), ("Editor",), ("Contributor", "Reader"), ("Reviewer",), None)

#: Relative weights of the kinds of step; "batch", "savepoint" and "abort"
#: group basic operations in one transaction.
WEIGHTS = {
    "create": 20,
    "edit": 8,
    "partial": 8,
    "move": 8,
    "rename": 6,
    "copy": 5,
    "delete": 8,
    "workflow": 12,
    "local_roles": 6,
    "ordering": 8,
    "batch": 5,
    "savepoint": 4,
    "abort": 3,
}
BASIC = tuple(k for k in WEIGHTS if k not in ("batch", "savepoint", "abort"))

SITE = "/plone"


# --- the content -----------------------------------------------------------


def _items(portal) -> list[tuple[str, object]]:
    """Every item of the walk as (path below the site, object), sorted."""
    found = []

    def visit(container, prefix: str) -> None:
        for oid in sorted(container.objectIds()):
            obj = container._getOb(oid)
            # aq_base: tools would acquire the site's portal_type.
            portal_type = getattr(aq_base(obj), "portal_type", None)
            if portal_type not in TYPES:
                continue
            found.append((prefix + oid, obj))
            if portal_type == "Folder":
                visit(obj, prefix + oid + "/")

    visit(portal, "")
    return sorted(found, key=lambda item: item[0])


def _depth(path: str) -> int:
    return path.count("/") + 1 if path else 0


def _inside(path: str, ancestor: str) -> bool:
    return path == ancestor or path.startswith(ancestor + "/")


def _height(items, path: str) -> int:
    """Levels of the subtree at ``path``, the item itself included."""
    return max(_depth(p) for p, _ in items if _inside(p, path)) - _depth(path) + 1


def _size(items, path: str) -> int:
    return sum(1 for p, _ in items if _inside(p, path))


def _html(*words: str) -> str:
    return f"<p>The {words[0]} near the {words[1]}.</p>"


class Walk:
    """The walk's state in one site: the generator, the counter of new ids,
    the description of the current step and the folders it touched."""

    def __init__(self, portal, seed: int):
        self.portal = portal
        self.rng = random.Random(seed)
        self.counter = 0
        self.log: list[str] = []
        self.focus: set[str] = set()
        self.inside: dict[str, Outcome] = {}
        # One move or rename per transaction: see ``_basic``.
        self.moved = False

    def new_id(self, portal_type: str) -> str:
        self.counter += 1
        return f"{ID_PREFIX[portal_type]}{self.counter}"

    def words(self, count: int) -> list[str]:
        return self.rng.sample(WORDS, count)

    def title(self, portal_type: str) -> str:
        self.counter += 1
        return (
            f"{self.words(1)[0].capitalize()} {TYPE_WORD[portal_type]} {self.counter}"
        )

    def obj(self, path: str):
        return self.portal.unrestrictedTraverse(path) if path else self.portal

    def note(self, text: str) -> None:
        self.log.append(text)

    def touch(self, *paths: str) -> None:
        self.focus.update(paths)


# --- the operations: choose from the content, note, then act ----------------


def op_create(walk: Walk) -> None:
    from plone import api
    from plone.app.textfield.value import RichTextValue

    items = _items(walk.portal)
    containers = [""] + [
        p for p, o in items if o.portal_type == "Folder" and _depth(p) < MAX_DEPTH
    ]
    parent = walk.rng.choice(containers)
    portal_type = walk.rng.choice(TYPES)
    new_id = walk.new_id(portal_type)
    fields = {
        "title": walk.title(portal_type),
        "description": "About {} and {}.".format(*walk.words(2)),
        "subject": tuple(walk.rng.sample(SUBJECTS, walk.rng.randint(0, 2))),
    }
    if portal_type != "Folder":
        fields["text"] = RichTextValue(
            _html(*walk.words(2)), "text/html", "text/x-html-safe"
        )
    if portal_type == "Event":
        start = event_zone(walk.counter).localize(
            datetime(2031, 1 + walk.counter % 12, 1 + walk.counter % 28, 10)
        )
        fields.update(start=start, end=start + timedelta(hours=2))
        if walk.counter % 2:
            fields["recurrence"] = "RRULE:FREQ=WEEKLY;COUNT=3"
    walk.note(f"create {portal_type} {new_id} in /{parent} {fields['title']!r}")
    walk.touch(parent)
    obj = api.content.create(
        container=walk.obj(parent),
        type=portal_type,
        id=new_id,
        safe_id=False,
        **fields,
    )
    obj.setEffectiveDate(EFFECTIVE)
    obj.reindexObject(idxs=["effective", "effectiveRange"])


def op_edit(walk: Walk) -> None:
    from plone.app.textfield.value import RichTextValue
    from zope.event import notify
    from zope.lifecycleevent import ObjectModifiedEvent

    path, obj = walk.rng.choice(_items(walk.portal))
    names = ["title", "description", "subject"]
    if obj.portal_type != "Folder":
        names.append("text")
    changed = walk.rng.sample(names, walk.rng.randint(1, len(names)))
    changed.sort()
    walk.note(f"edit /{path} {','.join(changed)}")
    walk.touch(path.rpartition("/")[0])
    for name in changed:
        if name == "title":
            obj.title = walk.title(obj.portal_type)
        elif name == "description":
            obj.setDescription("Edited: {} {}.".format(*walk.words(2)))
        elif name == "subject":
            obj.setSubject(tuple(walk.rng.sample(SUBJECTS, walk.rng.randint(0, 3))))
        else:
            obj.text = RichTextValue(
                _html(*walk.words(2)), "text/html", "text/x-html-safe"
            )
    notify(ObjectModifiedEvent(obj))
    obj.reindexObject()


def op_partial(walk: Walk) -> None:
    """Change one attribute and reindex only the named index: the other
    indexes (sortable_title, SearchableText) keep their old values, as in
    ZCatalog, and the metadata follows the object."""
    from plone.app.textfield.value import RichTextValue

    path, obj = walk.rng.choice(_items(walk.portal))
    choices = ["Title", "Subject", "Description", "exclude_from_nav"]
    if obj.portal_type != "Folder":
        choices.append("SearchableText")
    index = walk.rng.choice(choices)
    walk.note(f"partial reindex /{path} idxs=[{index}]")
    walk.touch(path.rpartition("/")[0])
    if index == "Title":
        obj.title = walk.title(obj.portal_type)
    elif index == "Subject":
        obj.setSubject(tuple(walk.rng.sample(SUBJECTS, walk.rng.randint(0, 3))))
    elif index == "Description":
        obj.setDescription("Partly: {} {}.".format(*walk.words(2)))
    elif index == "exclude_from_nav":
        obj.exclude_from_nav = not getattr(obj, "exclude_from_nav", False)
    else:
        obj.text = RichTextValue(_html(*walk.words(2)), "text/html", "text/x-html-safe")
    obj.reindexObject(idxs=[index])


def op_move(walk: Walk) -> None:
    from plone import api

    items = _items(walk.portal)
    path, obj = walk.rng.choice(items)
    parent, _, oid = path.rpartition("/")
    height = _height(items, path)
    targets = [
        p
        for p in [""] + [p for p, o in items if o.portal_type == "Folder"]
        if p != parent and not _inside(p, path) and _depth(p) + height <= MAX_DEPTH
        # api.content.move returns target[old id]: no collisions.
        and oid not in walk.obj(p).objectIds()
    ]
    if not targets:
        walk.note(f"move /{path}: nowhere to go")
        return
    target = walk.rng.choice(targets)
    walk.note(f"move /{path} to /{target}")
    walk.touch(parent, target)
    walk.moved = True
    api.content.move(source=obj, target=walk.obj(target))


def op_rename(walk: Walk) -> None:
    from plone import api

    items = _items(walk.portal)
    # Half of the renames are of folders with content, which moves every
    # path below them.
    full = [p for p, o in items if o.portal_type == "Folder" and _size(items, p) > 1]
    if full and walk.rng.random() < 0.5:
        path = walk.rng.choice(full)
    else:
        path = walk.rng.choice(items)[0]
    obj = walk.obj(path)
    new_id = walk.new_id(obj.portal_type)
    walk.note(f"rename /{path} to {new_id} ({_size(items, path)} items)")
    walk.touch(path.rpartition("/")[0])
    walk.moved = True
    api.content.rename(obj=obj, new_id=new_id)


def op_copy(walk: Walk) -> None:
    from plone import api

    items = _items(walk.portal)
    sources = [p for p, _ in items if _size(items, p) <= MAX_COPY]
    path = walk.rng.choice(sources)
    height = _height(items, path)
    targets = [
        p
        for p in [""] + [p for p, o in items if o.portal_type == "Folder"]
        if not _inside(p, path) and _depth(p) + height <= MAX_DEPTH
    ]
    if not targets or len(items) + _size(items, path) > MAX_ITEMS:
        walk.note(f"copy /{path}: no room")
        return
    target = walk.rng.choice(targets)
    obj = walk.obj(path)
    new_id = walk.new_id(obj.portal_type) if walk.rng.random() < 0.3 else None
    walk.note(f"copy /{path} to /{target}" + (f" as {new_id}" if new_id else ""))
    walk.touch(target)
    api.content.copy(source=obj, target=walk.obj(target), id=new_id)


def op_delete(walk: Walk) -> None:
    from plone import api

    items = _items(walk.portal)
    subtrees = [p for p, _ in items if _size(items, p) > 1]
    if subtrees and walk.rng.random() < 0.4:
        path = walk.rng.choice(subtrees)
    else:
        path = walk.rng.choice([p for p, _ in items if _size(items, p) == 1])
    walk.note(f"delete /{path} ({_size(items, path)} items)")
    walk.touch(path.rpartition("/")[0])
    # The link-integrity check is Plone's normal path; it searches the
    # catalog for the subtree before anything is deleted.
    api.content.delete(obj=walk.obj(path))


def op_workflow(walk: Walk) -> None:
    from plone import api

    path, obj = walk.rng.choice(_items(walk.portal))
    workflow = api.portal.get_tool("portal_workflow")
    transitions = sorted(t["id"] for t in workflow.getTransitionsFor(obj))
    if not transitions:
        walk.note(f"transition /{path}: none available")
        return
    name = walk.rng.choice(transitions)
    walk.note(f"transition /{path} {name} (from {api.content.get_state(obj)})")
    walk.touch(path.rpartition("/")[0])
    api.content.transition(obj=obj, transition=name)


def op_local_roles(walk: Walk) -> None:
    from plone import api

    items = _items(walk.portal)
    folders = [p for p, o in items if o.portal_type == "Folder"]
    pool = folders if folders and walk.rng.random() < 0.7 else [p for p, _ in items]
    path = walk.rng.choice(pool)
    obj = walk.obj(path)
    walk.touch(path.rpartition("/")[0])
    if walk.rng.random() < 0.12:
        blocked = bool(getattr(aq_base(obj), "__ac_local_roles_block__", False))
        walk.note(f"{'enable' if blocked else 'disable'} role acquisition /{path}")
        if blocked:
            api.content.enable_roles_acquisition(obj=obj)
        else:
            api.content.disable_roles_acquisition(obj=obj)
        return
    roles = walk.rng.choice(LOCAL_ROLES)
    walk.note(f"local roles /{path} {MEMBER}={roles}")
    if roles is None:
        obj.manage_delLocalRoles([MEMBER])
    else:
        obj.manage_setLocalRoles(MEMBER, list(roles))
    obj.reindexObjectSecurity()


def op_ordering(walk: Walk) -> None:
    items = _items(walk.portal)
    containers = [""] + [p for p, o in items if o.portal_type == "Folder"]
    candidates = [
        p
        for p in containers
        if sum(1 for q, _ in items if q.rpartition("/")[0] == p) > 1
    ]
    if not candidates:
        walk.note("reorder: no folder with two items")
        return
    path = walk.rng.choice(candidates)
    folder = walk.obj(path)
    ids = [q.rpartition("/")[2] for q, _ in items if q.rpartition("/")[0] == path]
    moved = walk.rng.choice(ids)
    how = walk.rng.choice(("top", "bottom", "delta", "delta"))
    walk.touch(path)
    if how == "top":
        walk.note(f"reorder /{path} moveObjectsToTop {moved}")
        folder.moveObjectsToTop([moved])
    elif how == "bottom":
        walk.note(f"reorder /{path} moveObjectsToBottom {moved}")
        folder.moveObjectsToBottom([moved])
    else:
        delta = walk.rng.choice((-3, -1, 1, 2))
        walk.note(f"reorder /{path} moveObjectsByDelta {moved} {delta}")
        folder.moveObjectsByDelta([moved], delta)


OPERATIONS = {
    "create": op_create,
    "edit": op_edit,
    "partial": op_partial,
    "move": op_move,
    "rename": op_rename,
    "copy": op_copy,
    "delete": op_delete,
    "workflow": op_workflow,
    "local_roles": op_local_roles,
    "ordering": op_ordering,
}


def _basic(walk: Walk) -> None:
    """One basic operation; creations while the site is small, no growth
    beyond ``MAX_ITEMS``."""
    count = len(_items(walk.portal))
    if count < 6:
        kind = "create"
    else:
        kinds = list(BASIC)
        if walk.moved:
            # CMFCore's indexing queue leaves ZCatalog entries at old paths
            # when one transaction moves an object twice (the oracle would
            # hold objects that do not exist): one move per transaction.
            kinds = [k for k in kinds if k not in ("move", "rename")]
        weights = [WEIGHTS[k] for k in kinds]
        kind = walk.rng.choices(kinds, weights)[0]
        if count >= MAX_ITEMS and kind == "create":
            kind = "delete"
    OPERATIONS[kind](walk)


# --- outcomes and the battery -----------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What one query gave: paths (with metadata), counts, or the
    exception's classes.  ``ties`` is the oracle's: sizes of the runs of
    equal sort keys in its order, inside which any order is right."""

    paths: tuple[str, ...] = ()
    length: int = 0
    total: int = 0
    metadata: tuple[tuple, ...] = ()  # (Title, review_state) per path
    ties: tuple[int, ...] = ()
    error: tuple[str, ...] = ()
    message: str = ""

    def __str__(self) -> str:
        if self.error:
            return f"raised {self.error[0]}: {self.message}"
        return f"{self.length} of {self.total}: {list(self.paths)[:25]}"


def _error(exc: Exception) -> Outcome:
    return Outcome(
        error=tuple(cls.__name__ for cls in type(exc).__mro__), message=str(exc)[:300]
    )


@dataclass(frozen=True)
class Query:
    name: str
    user: str  # manager | member | anonymous | unrestricted
    query: dict = field(default_factory=dict)
    mode: str = "set"  # set | ordered | count
    metadata: bool = False


def _tree(user: str) -> Query:
    return Query(
        "tree by position",
        user,
        {"path": SITE, "sort_on": "getObjPositionInParent"},
        "ordered",
        metadata=True,
    )


def _children(user: str, folder: str) -> Query:
    return Query(
        f"children of /{folder}",
        user,
        {
            "path": {"query": f"{SITE}/{folder}".rstrip("/"), "depth": 1},
            "sort_on": "getObjPositionInParent",
        },
        "ordered",
    )


def battery(step: int, focus: list[str]) -> list[Query]:
    """The queries after step ``step``; ``focus``: folders it touched.

    Values rotate with the step, so the walk asks many values and each step
    stays cheap.
    """
    word = WORDS[step % len(WORDS)]
    other = WORDS[(step * 5 + 3) % len(WORDS)]
    third = WORDS[(step * 7 + 1) % len(WORDS)]
    subject = SUBJECTS[step % len(SUBJECTS)]
    # Full text alternates between a word and a prefix.
    text = word if step % 2 else third[:3] + "*"
    queries = [
        _tree("manager"),
        *(_children("manager", folder) for folder in focus or [""]),
        Query(
            "tree by title",
            "manager",
            {"path": SITE, "sort_on": "sortable_title"},
            "ordered",
        ),
        Query("type", "manager", {"portal_type": TYPES[step % 4]}),
        Query("state", "manager", {"review_state": STATES[step % 3]}),
        Query(
            "subjects",
            "manager",
            {"Subject": [subject, SUBJECTS[(step + 2) % len(SUBJECTS)]]},
        ),
        Query("text", "manager", {"SearchableText": text}),
        Query("title word", "manager", {"Title": other}),
        _tree("member"),
        _children("member", focus[0] if focus else ""),
        Query(
            "items by title, reversed",
            "member",
            {
                "portal_type": ["Document", "News Item", "Event"],
                "sort_on": "sortable_title",
                "sort_order": "reverse",
            },
            "ordered",
        ),
        Query("text", "member", {"SearchableText": other}),
        _tree("anonymous"),
        Query("subject", "anonymous", {"Subject": subject}),
        Query("text", "anonymous", {"SearchableText": third}),
        Query("len(catalog)", "unrestricted", {"len": True}, "count"),
        Query("everything", "unrestricted", {"path": SITE}),
    ]
    return queries


def _sort_keys(catalog, brains, sort_on: str) -> list:
    """The oracle's sort key of each brain, as ZCatalog's sort uses it."""
    if sort_on == "getObjPositionInParent":
        # GopipIndex.documentToKeyMap: the live position in the container.
        keys = []
        root = catalog.getPhysicalRoot()
        for brain in brains:
            parent, _, oid = brain.getPath().rpartition("/")
            container = root.unrestrictedTraverse(parent, None)
            position = getattr(aq_base(container), "getObjectPosition", None)
            keys.append(container.getObjectPosition(oid) if position else 0)
        return keys
    index = catalog._catalog.getIndex(sort_on)
    return [index.getEntryForObject(brain.getRID()) for brain in brains]


def _runs(keys: list) -> tuple[int, ...]:
    runs: list[int] = []
    for position, key in enumerate(keys):
        if position and key == keys[position - 1]:
            runs[-1] += 1
        else:
            runs.append(1)
    return tuple(runs)


def run_query(catalog, case: Query, oracle: bool) -> Outcome:
    query = copy.deepcopy(case.query)  # neither catalog may change the case
    try:
        if case.user == "unrestricted":
            if query.pop("len", False):
                count = len(catalog)
                return Outcome(length=count, total=count)
            results = catalog.unrestrictedSearchResults(**query)
        else:
            results = catalog(**query)
        brains = list(results)
        paths = tuple(brain.getPath() for brain in brains)
        metadata = ()
        if case.metadata:
            metadata = tuple((brain.Title, brain.review_state) for brain in brains)
        ties = ()
        if oracle and "sort_on" in query:
            ties = _runs(_sort_keys(catalog, brains, query["sort_on"]))
        return Outcome(paths, len(results), results.actual_result_count, metadata, ties)
    except Exception as exc:  # the outcome to compare, not a test failure
        return _error(exc)


def run_battery(portal, queries: list[Query], oracle: bool) -> dict:
    catalog = portal.portal_catalog
    outcomes = {}
    for case in queries:
        become(portal, "manager" if case.user == "unrestricted" else case.user)
        outcomes[f"{case.name}@{case.user}"] = (case, run_query(catalog, case, oracle))
    become(portal, "manager")
    return outcomes


# --- the walk ---------------------------------------------------------------


@dataclass
class Step:
    number: int
    operation: str
    error: Outcome | None
    outcomes: dict  # name@user -> (Query, Outcome)
    kind: str = ""
    #: Catalog paths without an object and objects without a catalog path.
    ghosts: tuple[str, ...] = ()
    unindexed: tuple[str, ...] = ()


def _next_request(portal) -> None:
    """What a new request starts without: ZCatalog's per-request cache.

    ZCatalog caches index results in the request, keyed by each index's
    change counter.  An abort rolls the counters back, so a request that
    outlived a transaction (as the one request of this walk does) would be
    answered from results of the aborted changes.  Zope gives every request
    a fresh one; so does the walk, whenever a transaction ends.
    """
    portal.REQUEST.other.pop("__catalog_cache__", None)


def _inside_check(walk: Walk, label: str, oracle: bool) -> None:
    """Read-your-writes: the Manager's tree before the transaction ends."""
    case = _tree("manager")
    walk.inside[f"{label}: {case.name}@manager"] = (
        case,
        run_query(walk.portal.portal_catalog, case, oracle),
    )


def _do_step(walk: Walk, kind: str, oracle: bool) -> None:
    if kind in BASIC:
        OPERATIONS[kind](walk)
    elif kind == "batch":
        for _ in range(walk.rng.randint(2, 3)):
            _basic(walk)
    elif kind == "savepoint":
        savepoint = transaction.savepoint()
        _basic(walk)
        _inside_check(walk, "in savepoint", oracle)
        savepoint.rollback()
        _next_request(walk.portal)  # the counters went back too
        walk.note("rollback")
        _inside_check(walk, "after rollback", oracle)
        if walk.rng.random() < 0.5:
            _basic(walk)
    else:
        assert kind == "abort", kind
        for _ in range(walk.rng.randint(1, 2)):
            _basic(walk)
        _inside_check(walk, "before abort", oracle)
        transaction.abort()
        _next_request(walk.portal)
        walk.note("abort")
        return
    _inside_check(walk, "before commit", oracle)
    transaction.commit()
    _next_request(walk.portal)


def _choose_kind(walk: Walk) -> str:
    if len(_items(walk.portal)) < 6:
        return "create"
    kinds = list(WEIGHTS)
    return walk.rng.choices(kinds, [WEIGHTS[k] for k in kinds])[0]


def walk_site(portal, oracle: bool) -> list[Step]:
    """Run the whole walk in ``portal``; the records of every step."""
    from plone import api

    become(portal, "manager")
    api.user.create(
        email="member1@example.org", username=MEMBER, password=MEMBER_PASSWORD
    )
    transaction.commit()
    walk = Walk(portal, SEED)
    steps = []
    for number in range(STEPS):
        walk.log, walk.focus, walk.inside = [], set(), {}
        walk.moved = False
        become(portal, "manager")
        kind = _choose_kind(walk)
        error = None
        try:
            _do_step(walk, kind, oracle)
        except Exception as exc:  # the outcome to compare
            transaction.abort()
            _next_request(portal)
            error = _error(exc)
            error = Outcome(
                error=error.error,
                message=error.message + "\n" + traceback.format_exc(limit=-4),
            )
        # Folders the step touched that still exist, at most two.
        focus = [
            f
            for f in sorted(walk.focus)
            if f and portal.unrestrictedTraverse(f, None) is not None
        ][:2]
        outcomes = dict(walk.inside)
        outcomes.update(run_battery(portal, battery(number, focus), oracle))
        everything = outcomes["everything@unrestricted"][1].paths
        content = {f"{SITE}/{path}" for path, _ in _items(portal)} | {SITE}
        steps.append(
            Step(
                number,
                "; ".join(walk.log),
                error,
                outcomes,
                kind,
                tuple(sorted(set(everything) - content)),
                tuple(sorted(content - set(everything))),
            )
        )
    return steps


def _record(layer_name: str) -> list[Step]:
    oracle = layer_name == "zcatalog"
    try:
        return collect_in(layer_name, lambda layer: walk_site(layer["portal"], oracle))
    except Exception:
        pytest.fail(
            f"the walk in the {layer_name} site failed:\n"
            + traceback.format_exc(limit=-6),
            pytrace=False,
        )


@pytest.fixture(scope="module")
def walks():
    return _record("zcatalog"), _record("pg")


# --- comparison --------------------------------------------------------------


def _in_runs(paths: tuple[str, ...], ties: tuple[int, ...]) -> list[str]:
    """``paths`` with each of the oracle's runs of equal keys sorted."""
    result, start = [], 0
    for size in ties:
        result.extend(sorted(paths[start : start + size]))
        start += size
    return result + list(paths[start:])


def difference(case: Query, expected: Outcome, actual: Outcome) -> str | None:
    """How ``actual`` differs from the oracle's ``expected``, or None."""
    if expected.error or actual.error:
        if expected.error[:1] == actual.error[:1]:
            return None
        return f"ZCatalog {expected}\npgcatalog {actual}"
    lines = []
    if (actual.length, actual.total) != (expected.length, expected.total):
        lines.append(
            f"counts: ZCatalog {expected.length} of {expected.total}; "
            f"pgcatalog {actual.length} of {actual.total}"
        )
    only_zcatalog = sorted(set(expected.paths) - set(actual.paths))
    only_pg = sorted(set(actual.paths) - set(expected.paths))
    if only_zcatalog or only_pg:
        lines.append(f"only ZCatalog ({len(only_zcatalog)}): {only_zcatalog[:10]}")
        lines.append(f"only pgcatalog ({len(only_pg)}): {only_pg[:10]}")
    elif case.mode == "ordered" and _in_runs(actual.paths, expected.ties) != _in_runs(
        expected.paths, expected.ties
    ):
        lines.append(f"ZCatalog order: {list(expected.paths)[:30]}")
        lines.append(f"pgcatalog order: {list(actual.paths)[:30]}")
    elif case.metadata:
        meta_zc = dict(zip(expected.paths, expected.metadata))
        meta_pg = dict(zip(actual.paths, actual.metadata))
        wrong = [
            f"{path}: ZCatalog {meta_zc[path]}, pgcatalog {meta_pg[path]}"
            for path in sorted(meta_zc)
            if meta_zc[path] != meta_pg[path]
        ]
        lines.extend(wrong[:10])
    return "\n".join(lines) or None


def _report(zcatalog: list[Step], pg: list[Step], number: int, detail: str) -> str:
    first = max(0, number - 15)
    history = "\n".join(
        f"  {step.number:4d} [{step.kind}] {step.operation}"
        + (f"  -> raised {step.error.error[0]}" if step.error else "")
        for step in zcatalog[first : number + 1]
    )
    return (
        f"step {number} of seed {SEED}: {zcatalog[number].operation}\n"
        f"{detail}\n"
        f"operations {first}..{number} (ZCatalog site):\n{history}"
    )


def first_difference(zcatalog: list[Step], pg: list[Step]) -> str | None:
    for expected, actual in zip(zcatalog, pg):
        number = expected.number
        if expected.operation != actual.operation:
            return _report(
                zcatalog,
                pg,
                number,
                f"the walks diverged: pgcatalog site did {actual.operation!r}",
            )
        if (expected.error is None) != (actual.error is None) or (
            expected.error and expected.error.error[:1] != actual.error.error[:1]
        ):
            return _report(
                zcatalog,
                pg,
                number,
                f"the operation: ZCatalog {expected.error or 'succeeded'}\n"
                f"pgcatalog {actual.error or 'succeeded'}",
            )
        assert expected.outcomes.keys() == actual.outcomes.keys(), number
        for name, (case, outcome) in expected.outcomes.items():
            detail = difference(case, outcome, actual.outcomes[name][1])
            if detail:
                return _report(
                    zcatalog,
                    pg,
                    number,
                    f"query {name}: {case.query}\n{detail}",
                )
    if len(zcatalog) != len(pg):
        return f"the walks have {len(zcatalog)} and {len(pg)} steps"
    return None


# --- tests -------------------------------------------------------------------


def test_the_walk_is_long_and_varied(walks):
    zcatalog, _ = walks
    assert len(zcatalog) == STEPS >= 500
    kinds = {kind: sum(1 for s in zcatalog if s.kind == kind) for kind in WEIGHTS}
    assert all(count >= 5 for count in kinds.values()), kinds
    # Operations that ZCatalog's site refuses prove nothing; a few are fine
    # (none are expected).
    failed = [(s.number, s.operation, str(s.error)) for s in zcatalog if s.error]
    assert not failed, failed[:5]
    # The oracle must stay true to the content, or comparing with it proves
    # nothing (see ``_basic``).
    broken = [(s.number, s.operation, s.ghosts, s.unindexed) for s in zcatalog]
    broken = [entry for entry in broken if entry[2] or entry[3]]
    assert not broken, broken[:3]
    # The oracle finds something for the restricted users too.
    last = zcatalog[-1].outcomes
    assert len(last["tree by position@manager"][1].paths) > 20
    assert last["tree by position@anonymous"][1].paths
    assert last["tree by position@member"][1].paths


def test_every_step_gives_what_zcatalog_gives(walks):
    zcatalog, pg = walks
    difference_found = first_difference(zcatalog, pg)
    assert difference_found is None, difference_found
