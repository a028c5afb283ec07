"""Lazy results and brains.

Owns: the sequence a search returns and the brains in it.  The search
itself fetched ``(zoid, path)`` of the window and the metadata of its
first rows (``search.META_ROWS``); the others' is loaded in windows of
brains as they are read (``MetadataBatch``), and all is decoded per brain
and column when it is read.

Brains have ZCatalog's brain API (``ICatalogBrain``): ``getPath``,
``getURL``, ``getObject``, ``_unrestrictedGetObject``, ``getRID``,
``has_key``, metadata as attributes and items (``Missing.Value`` when a
column has no value), and they are acquisition-wrapped in the catalog as
ZCatalog's are.  Must not build SQL; it calls ``search.load_metadata``.
"""

from __future__ import annotations

from Acquisition import aq_base
from Acquisition import aq_get
from Acquisition import aq_inner
from Acquisition import aq_parent
from Acquisition import Implicit
from collections.abc import Callable
from plone_pgcatalog import metadata
from plone_pgcatalog.security import may_read_text
from plone_pgcatalog.store.search import META_ROWS
from Products.ZCatalog.interfaces import ICatalogBrain
from zope.globalrequest import getRequest
from zope.interface import implementer
from zope.interface.common.sequence import IFiniteSequence
from ZPublisher.BaseRequest import RequestContainer
from ZTUtils.Lazy import Lazy

import logging
import Missing
import transaction
import weakref

logger = logging.getLogger(__name__)

#: Types of metadata values stored as they are (``metadata.encode``).
_PLAIN = frozenset({str, int, float, bool, type(None)})


class MetadataBatch:
    """The metadata of one result, loaded in windows as brains are read
    (and so its snippets, with another ``load``).

    Reading the first brain's metadata loads it for that brain and the
    ``FIRST_WINDOW - 1`` after it (a listing page); each later miss loads
    as many brains from the one read as are loaded so far.  A page of a
    large result costs one small query, not the whole result's metadata;
    reading every brain costs a number of queries that grows with the
    logarithm of the result's size.
    """

    #: as many as come with the search (``search.META_ROWS``)
    FIRST_WINDOW = META_ROWS

    def __init__(self, zoids: list[int], load: Callable[[list[int]], dict]):
        self._zoids = zoids
        self._load = load
        self._rows: dict[int, dict] = {}

    def get(self, position: int, zoid: int) -> dict:
        if zoid not in self._rows:
            size = max(self.FIRST_WINDOW, len(self._rows))
            window = [
                z
                for z in self._zoids[position : position + size]
                if z not in self._rows
            ]
            loaded = self._load(window)
            for z in window:
                self._rows[z] = loaded.get(z) or {}
        return self._rows[zoid]


@implementer(ICatalogBrain)
class PGCatalogBrain(Implicit):
    """One search result; see the module docstring."""

    __allow_access_to_unprotected_subobjects__ = True

    data_record_score_ = None
    data_record_normalized_score_ = None

    def __init__(
        self,
        zoid: int,
        path: str,
        schema,
        batch: MetadataBatch,
        position: int = 0,
        snippets: MetadataBatch | None = None,
    ):
        self.data_record_id_ = zoid
        self._position = position
        self._path = path
        self._schema = schema
        self._batch = batch
        self._snippets = snippets
        #: the row's metadata, as stored (``metadata``), once read
        self._raw: dict | None = None
        self._decoded: dict = {}

    @property
    def snippet(self) -> str | None:
        """The passage of the object's text where the search's words
        matched, as HTML (escaped; the words in ``<mark>``), or None: the
        search had no SearchableText, the object has no text, or the user
        may find it but not read it (``security.may_read_text``).  Loaded
        for a window of brains at once, as metadata."""
        if self._snippets is None:
            return None
        found = self._snippets.get(self._position, self.data_record_id_)
        snippet = found.get("snippet")
        if snippet is None or not may_read_text(self):
            return None
        return snippet

    def _value(self, name: str):
        # The hot path of a listing: one dict lookup for a plain value (a
        # string, number, boolean or None is returned as stored, never
        # copied), no exception.  Others are decoded once per brain, so that
        # a list read twice is the same list.
        raw = self._raw
        if raw is None:
            raw = self._raw = self._batch.get(self._position, self.data_record_id_)
        value = raw.get(name, Missing.Value)
        if type(value) in _PLAIN:
            return value
        decoded = self._decoded
        if name not in decoded:
            decoded[name] = metadata.decode(value)
        return decoded[name]

    def __getattr__(self, name: str):
        if name in self._schema and name[:1] != "_":
            return self._value(name)
        raise AttributeError(name)

    def __getitem__(self, name: str):
        if name not in self._schema:
            raise KeyError(name)
        return self._value(name)

    def has_key(self, key: str) -> bool:
        return key in self._schema

    def __contains__(self, name: str) -> bool:
        return name in self._schema

    def __repr__(self) -> str:
        return f"<PGCatalogBrain {self._path!r}>"

    def getPath(self) -> str:
        return self._path

    def getRID(self) -> int:
        return self.data_record_id_

    def getURL(self, relative: int = 0) -> str:
        request = aq_get(self, "REQUEST", None)
        if request is None:
            request = getRequest()
        return request.physicalPathToURL(self._path, relative)

    def _traversal_root(self):
        """The catalog, or the root in the request's context if unwrapped."""
        parent = aq_parent(aq_inner(self))
        if aq_get(parent, "REQUEST", None) is None:
            request = getRequest()
            if request is not None:
                root = parent.getPhysicalRoot()
                parent = aq_base(root).__of__(RequestContainer(REQUEST=request))
        return parent

    def _unrestrictedGetObject(self):
        return self._traversal_root().unrestrictedTraverse(self._path)

    def getObject(self, REQUEST=None):
        # As ZCatalog: the last step is checked, the ones above it are not.
        path = self._path.split("/")
        parent = self._traversal_root()
        if len(path) > 1:
            parent = parent.unrestrictedTraverse(path[:-1])
        return parent.restrictedTraverse(path[-1])


def _column(name: str) -> property:
    def read(brain):
        return brain._value(name)

    read.__name__ = name
    return property(read, doc=f"The metadata column {name!r}.")


#: ``{metadata columns: brain class}`` (``brain_class``)
_BRAIN_CLASSES: dict[frozenset, type] = {}


def brain_class(schema: frozenset) -> type:
    """The brain class of results whose metadata columns are ``schema``:
    ``PGCatalogBrain`` with a property for each column, made once per set
    of columns.

    A listing reads a few columns of each brain.  Found on the class, a
    column costs one call; by ``__getattr__``, which Python calls after the
    attribute was not found, it cost twice as much (0.46 against 1.01 us
    a read, ``benchmarks/README.rst``, "Kept answers without a round
    trip").  The names ``__getattr__`` does not answer are left out, and so
    are those of the brain's own attributes, which win over a column as
    before: ``getPath``, ``data_record_id_``...
    """
    made = _BRAIN_CLASSES.get(schema)
    if made is None:
        columns = {
            name: _column(name)
            for name in schema
            if name[:1] != "_"
            and not name.startswith("data_record_")
            and not hasattr(PGCatalogBrain, name)
        }
        made = type(PGCatalogBrain.__name__, (PGCatalogBrain,), columns)
        if len(_BRAIN_CLASSES) >= 32:  # schemas come and go with addColumn
            _BRAIN_CLASSES.clear()
        _BRAIN_CLASSES[schema] = made
    return made


@implementer(IFiniteSequence)
class LazyResults(Lazy):
    """What ``searchResults`` returns: a sequence of brains.

    A ``ZTUtils.Lazy`` like ZCatalog's results, so that code adapting those
    (plone.restapi's serializer, for one) adapts these too.  ``len()`` is
    the number of brains in it (the window, when ``b_size`` or
    ``sort_limit`` cut it); ``actual_result_count`` is the number of
    matches, as in ZCatalog.

    A result without a window may hold only its first rows: ``rest(offset)``
    then fetches ``(ids, scores)`` of all the others, the first time a brain
    past them is read.  The rows are those of the search's snapshot, which
    ends with the transaction.  Read after it (``rest_later``), the rest is
    every match of the snapshot of that moment that is not among the rows
    held, in the result's order (ZCatalog, too, reads its records then; a
    script that commits while it iterates sees each match once, whatever it
    changed in those it read), and the end of the transaction costs
    nothing.  Without ``rest_later`` the rest is fetched before the
    transaction commits or aborts, if the result is still in use then.
    """

    __allow_access_to_unprotected_subobjects__ = True

    def __init__(
        self,
        ids: list[tuple[int, str]],
        actual_result_count: int,
        catalog,
        schema,
        load_metadata: Callable[[list[int]], dict],
        scores: list | None = None,
        rest: Callable[[int], tuple[list, list | None]] | None = None,
        rest_later: bool = False,
        load_snippets: Callable[[list[int]], dict] | None = None,
    ):
        # Copies: the lists may be shared (``snapshots.results``), and these
        # grow when the rest is fetched.
        self._ids = list(ids)
        self._scores = None if scores is None else list(scores)
        self._rest = rest if len(ids) < actual_result_count else None
        self._len = actual_result_count if self._rest else len(ids)
        self.actual_result_count = actual_result_count
        self._catalog = catalog
        self._schema = frozenset(schema)
        self._brain_class = brain_class(self._schema)
        self._zoids = [zoid for zoid, _ in ids]
        self._batch = MetadataBatch(self._zoids, load_metadata)
        self._snippets = (
            None if load_snippets is None else MetadataBatch(self._zoids, load_snippets)
        )
        if self._snippets is not None:
            # Whom a snippet is for (``security.may_read_text``): a brain's
            # property sees the brain without the catalog it is wrapped in.
            self._snippets.catalog = catalog
        if self._rest is not None and not rest_later:
            _fetch_before_the_transaction_ends(self)

    def __len__(self) -> int:
        return self._len

    def _fetch_rest(self) -> None:
        if self._rest is None:
            return
        ids, scores = self._rest(len(self._ids))
        self._rest = None
        self._ids.extend(ids)
        self._zoids.extend(zoid for zoid, _ in ids)
        if self._scores is not None and scores is not None:
            self._scores.extend(scores)
        self._len = len(self._ids)

    def _reaches_the_rest(self, window: slice) -> bool:
        start, stop, _step = window.indices(len(self))
        return self._rest is not None and max(start, stop) > len(self._ids)

    def _brain(self, position: int) -> PGCatalogBrain:
        if position >= len(self._ids):
            self._fetch_rest()
            if position >= len(self._ids):
                # Read after its transaction, the rest was shorter than the
                # count (objects that no longer match); ``len()`` says so now.
                raise IndexError(position)
        zoid, path = self._ids[position]
        brain = self._brain_class(
            zoid, path, self._schema, self._batch, position, self._snippets
        )
        if self._scores is not None:
            score, normalized = self._scores[position]
            brain.data_record_score_ = score
            brain.data_record_normalized_score_ = normalized
        return brain.__of__(self._catalog)

    def __getitem__(self, position):
        if isinstance(position, slice):
            if self._reaches_the_rest(position):
                self._fetch_rest()  # first: its length may differ from the count
            return [self._brain(i) for i in range(*position.indices(len(self)))]
        if position < 0 or position >= len(self._ids):
            self._fetch_rest()  # counted from the end: from the final length
        if position < 0:
            position += len(self)
        if not 0 <= position < len(self):
            raise IndexError(position)
        return self._brain(position)

    def __iter__(self):
        position = 0
        while position < len(self):  # the length is final once all is read
            yield self._brain(position)
            position += 1

    def __repr__(self) -> str:
        return f"<LazyResults of {len(self)} (of {self.actual_result_count})>"


_UNFINISHED = "plone_pgcatalog.unfinished"


def _fetch_before_the_transaction_ends(results: LazyResults) -> None:
    """Have ``results`` fetch the rest of their rows before the transaction
    commits or aborts, if they are still in use by then and not read to
    the end."""
    txn = transaction.get()
    try:
        unfinished = txn.data(_UNFINISHED)
    except KeyError:
        unfinished = weakref.WeakSet()
        txn.set_data(_UNFINISHED, unfinished)
        txn.addBeforeCommitHook(_fetch_all, (unfinished,))
        txn.addBeforeAbortHook(_fetch_all, (unfinished,))
    unfinished.add(results)


def _fetch_all(unfinished: weakref.WeakSet) -> None:
    for results in list(unfinished):
        try:
            results._fetch_rest()
        except Exception:
            # An abort must go on; reading past the first rows will fetch
            # them again, from the next transaction's snapshot.
            logger.warning("could not fetch the rest of %r", results, exc_info=True)
