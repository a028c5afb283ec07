"""The tool's ZMI tabs, with ZCatalog's names and more, read from SQL.

Owns ``CatalogManagement``, the mixin of ``PGCatalogTool`` that gives it
ZCatalog's tabs (Catalog, Indexes, Metadata, Advanced, Query Report) and a
Database tab: their page templates (``www/``), the form handlers they post
to, and the job pages (``jobs``: progress read as JSON until the job ends).

Every form that changes something is a POST carrying plone.protect's
authenticator (``_check``); the figures come from ``overview``, the long
work from ``jobs``.  ZCatalog's own maintenance methods
(``manage_catalogRebuild`` ...) stay on the tool, synchronous, for scripts
and for Plone's old forms that call them.

Must not compose SQL.
"""

from __future__ import annotations

from AccessControl import ClassSecurityInfo
from AccessControl.class_init import InitializeClass
from AccessControl.Permissions import manage_zcatalog_entries
from AccessControl.Permissions import manage_zcatalog_indexes
from OFS.Folder import Folder
from plone_pgcatalog import jobs
from plone_pgcatalog import overview
from plone_pgcatalog import slowlog
from Products.PageTemplates.PageTemplateFile import PageTemplateFile
from urllib.parse import quote
from zExceptions import BadRequest
from zExceptions import Forbidden

import json

#: Index types the Indexes tab adds (a name and the attributes to index);
#: others (DateRangeIndex, ZCTextIndex, ...) need options: catalog.xml.
ADDABLE_TYPES = (
    "FieldIndex",
    "KeywordIndex",
    "DateIndex",
    "BooleanIndex",
    "UUIDIndex",
)

#: The operations of the Advanced tab and of the control panel.
OPERATIONS = {
    "verify": ("Verify", jobs.verify),
    "repair": ("Verify and repair", jobs.repair),
    "update": ("Update catalog", jobs.update),
    "rebuild": ("Clear and rebuild", jobs.rebuild),
}


def _page(name: str) -> PageTemplateFile:
    return PageTemplateFile(f"www/{name}", globals(), __name__=name)


def check_request(request) -> None:
    """A change must come as a POST with plone.protect's authenticator."""
    from plone.protect import CheckAuthenticator

    if request.get("REQUEST_METHOD", "GET") != "POST":
        raise Forbidden("this form must be sent with POST")
    CheckAuthenticator(request)


def check_if_published(tool, name: str) -> None:
    """``check_request`` when the tool's method ``name`` is the object the
    request publishes (a URL or a form calls it), not when Python code
    calls it.  ZCatalog's maintenance buttons change only the pending
    store, which plone.protect's automatic CSRF check does not see."""
    from Acquisition import aq_base

    request = getattr(tool, "REQUEST", None)
    published = request.get("PUBLISHED") if request is not None else None
    if getattr(published, "__name__", None) != name:
        return
    if aq_base(getattr(published, "__self__", None)) is aq_base(tool):
        check_request(request)


def _user(request) -> str:
    user = request.get("AUTHENTICATED_USER")
    return user.getUserName() if user is not None else ""


def start_operation(tool, operation: str, request) -> jobs.Job:
    """Start one of ``OPERATIONS`` as a job (pages' POST handlers)."""
    if operation not in OPERATIONS:
        raise BadRequest(
            f"unknown operation {operation!r}; valid: {', '.join(OPERATIONS)}"
        )
    title, work = OPERATIONS[operation]
    return jobs.start(tool, title, work, _user(request))


class CatalogManagement:
    """ZMI tabs of the tool (see module)."""

    security = ClassSecurityInfo()

    manage_options = (
        {"label": "Contents", "action": "manage_main"},
        {"label": "Catalog", "action": "manage_catalogView"},
        {"label": "Indexes", "action": "manage_catalogIndexes"},
        {"label": "Metadata", "action": "manage_catalogSchema"},
        {"label": "Advanced", "action": "manage_catalogAdvanced"},
        {"label": "Query Report", "action": "manage_catalogReport"},
        {"label": "Database", "action": "manage_catalogDatabase"},
    ) + tuple(
        option
        for option in Folder.manage_options
        if option["label"] not in ("Contents", "View")
    )

    security.declareProtected(manage_zcatalog_entries, "manage_catalogView")
    manage_catalogView = _page("catalogView.zpt")
    security.declareProtected(manage_zcatalog_entries, "manage_objectInformation")
    manage_objectInformation = _page("catalogObjectInformation.zpt")
    security.declareProtected(manage_zcatalog_entries, "manage_catalogIndexes")
    manage_catalogIndexes = _page("catalogIndexes.zpt")
    security.declareProtected(manage_zcatalog_entries, "manage_catalogSchema")
    manage_catalogSchema = _page("catalogSchema.zpt")
    security.declareProtected(manage_zcatalog_entries, "manage_catalogAdvanced")
    manage_catalogAdvanced = _page("catalogAdvanced.zpt")
    security.declareProtected(manage_zcatalog_entries, "manage_catalogReport")
    manage_catalogReport = _page("catalogReport.zpt")
    security.declareProtected(manage_zcatalog_entries, "manage_catalogExplain")
    manage_catalogExplain = _page("catalogExplain.zpt")
    security.declareProtected(manage_zcatalog_entries, "manage_catalogDatabase")
    manage_catalogDatabase = _page("catalogDatabase.zpt")
    security.declareProtected(manage_zcatalog_entries, "manage_catalogJob")
    manage_catalogJob = _page("catalogJob.zpt")

    # -- what the templates read --------------------------------------------------

    @security.protected(manage_zcatalog_entries)
    def zmi_catalog_page(self, within: str = "", start: int = 0, size: int = 50):
        """A page of cataloged objects (Catalog tab), or an error text."""
        try:
            return overview.catalog_page(self, within, int(start or 0), int(size))
        except ValueError as error:
            return str(error)

    @security.protected(manage_zcatalog_entries)
    def zmi_index_figures(self):
        return overview.index_figures(self)

    @security.protected(manage_zcatalog_entries)
    def zmi_addable_types(self):
        return ADDABLE_TYPES

    @security.protected(manage_zcatalog_entries)
    def zmi_database(self):
        return overview.database(self)

    @security.protected(manage_zcatalog_entries)
    def zmi_query_report(self):
        return overview.query_report(self)

    @security.protected(manage_zcatalog_entries)
    def zmi_explain(self, key: str):
        """``(shape, plan lines)``, or None for a shape no longer kept."""
        try:
            return overview.explain(self, key)
        except KeyError:
            return None

    @security.protected(manage_zcatalog_entries)
    def zmi_jobs(self):
        return [job.status() for job in jobs.jobs(self.site_path())]

    @security.protected(manage_zcatalog_entries)
    def zmi_job(self, id):
        try:
            job = jobs.get(int(id))
        except (TypeError, ValueError):
            job = None
        if job is None or job.site_path != self.site_path():
            return None
        return job.status()

    @security.protected(manage_zcatalog_entries)
    def zmi_operations(self):
        return [(key, title) for key, (title, _) in OPERATIONS.items()]

    @security.protected(manage_zcatalog_entries)
    def zmi_size(self, size) -> str:
        from plone_pgcatalog.health import _size

        return "" if size is None else _size(int(size))

    @security.protected(manage_zcatalog_entries)
    def zmi_entry(self, rid) -> dict:
        """The entry of record ``rid``: ``{"metadata": [(name, shown)],
        "indexes": [...]}``, by name."""

        def shown(values: dict) -> list[tuple[str, str]]:
            return [
                (name, value if isinstance(value, str) else repr(value))
                for name, value in sorted(values.items())
            ]

        try:
            rid = int(rid)
        except (TypeError, ValueError):
            raise BadRequest(f"record id {rid!r}: a number is needed") from None
        return {
            "path": self.getpath(rid),
            "metadata": shown(self.getMetadataForRID(rid)),
            "indexes": shown(self.getIndexDataForRID(rid)),
        }

    @security.protected(manage_zcatalog_entries)
    def zmi_page_url(self, within: str, start: int) -> str:
        """The Catalog tab at ``start``, filtered by ``within``."""
        from urllib.parse import urlencode

        query = urlencode({"within": within or "", "start": int(start)})
        return f"{self.absolute_url()}/manage_catalogView?{query}"

    @security.protected(manage_zcatalog_entries)
    def zmi_columns(self) -> list[str]:
        return sorted(self.schema())

    # -- forms ------------------------------------------------------------------

    @security.protected(manage_zcatalog_entries)
    def manage_jobStatus(self, id=None, REQUEST=None):
        """A job's progress, as JSON (the job pages poll it)."""
        status = self.zmi_job(id)
        if REQUEST is not None:
            REQUEST.RESPONSE.setHeader(
                "Content-Type", "application/json; charset=utf-8"
            )
            REQUEST.RESPONSE.setHeader("Cache-Control", "no-store")
            if status is None:
                REQUEST.RESPONSE.setStatus(404)
        found = status if status is not None else {"error": "no such job"}
        return json.dumps(found).encode("utf-8")

    @security.protected(manage_zcatalog_entries)
    def manage_startOperation(self, operation: str, REQUEST, RESPONSE=None):
        """Start an operation of the Advanced tab; show its job."""
        check_request(REQUEST)
        return self._started(lambda: start_operation(self, operation, REQUEST))

    @security.protected(manage_zcatalog_indexes)
    def manage_indexesForm(
        self, ids=(), reindex=None, clear=None, delete=None, REQUEST=None
    ):
        """The Indexes tab's buttons: reindex or clear the indexes ``ids``
        in the background, or delete them."""
        check_request(REQUEST)
        names = [ids] if isinstance(ids, str) else list(ids or ())
        if not names:
            raise BadRequest("no index selected")
        unknown = sorted(set(names) - set(self.indexes()))
        if unknown:
            raise BadRequest(f"unknown index {', '.join(map(repr, unknown))}")
        if delete is not None:
            for name in names:
                self.delIndex(name)
            return self._back("manage_catalogIndexes", f"Deleted {', '.join(names)}")
        if reindex is not None:
            title, work = f"Reindex {', '.join(names)}", jobs.reindex(names)
        elif clear is not None:
            if "path" in names:
                raise BadRequest(
                    "index 'path' cannot be cleared: it is the rows' own column"
                    " (a rebuild writes it again)"
                )
            title, work = f"Clear {', '.join(names)}", jobs.clear(names)
        else:
            raise BadRequest("no button pressed: reindex, clear or delete")
        return self._started(lambda: jobs.start(self, title, work, _user(REQUEST)))

    def _started(self, start):
        request = self.REQUEST
        try:
            job = start()
        except jobs.JobRunning as error:
            return self._back("manage_catalogAdvanced", str(error))
        request.RESPONSE.redirect(
            f"{self.absolute_url()}/manage_catalogJob?id={job.id}"
        )
        return ""

    @security.protected(manage_zcatalog_indexes)
    def manage_addIndexForm(self, name="", type="", indexed_attrs="", REQUEST=None):
        """Add an index (Indexes tab)."""
        from ZPublisher.HTTPRequest import record

        check_request(REQUEST)
        name = name.strip()
        if not name:
            raise BadRequest("the new index needs a name")
        if name in self.indexes():
            raise BadRequest(f"index {name!r} exists")
        if type not in ADDABLE_TYPES:
            raise BadRequest(
                f"index type {type!r} cannot be added here; valid:"
                f" {', '.join(ADDABLE_TYPES)} (others: catalog.xml)"
            )
        extra = record()
        extra.indexed_attrs = indexed_attrs.strip() or name
        self.addIndex(name, type, extra)
        return self._back(
            "manage_catalogIndexes",
            f"Index {name} added: reindex it to fill it",
        )

    @security.protected(manage_zcatalog_indexes)
    def manage_addColumnForm(self, name="", REQUEST=None):
        """Add a metadata column (Metadata tab)."""
        check_request(REQUEST)
        name = name.strip()
        if not name:
            raise BadRequest("the new column needs a name")
        if name in self.schema():
            raise BadRequest(f"metadata column {name!r} exists")
        self.addColumn(name)
        return self._back(
            "manage_catalogSchema",
            f"Column {name} added: update the catalog to fill it",
        )

    @security.protected(manage_zcatalog_indexes)
    def manage_delColumnsForm(self, names=(), REQUEST=None):
        """Delete metadata columns (Metadata tab)."""
        check_request(REQUEST)
        names = [names] if isinstance(names, str) else list(names or ())
        if not names:
            raise BadRequest("no column selected")
        for name in names:
            self.delColumn(name)
        return self._back("manage_catalogSchema", f"Deleted {', '.join(names)}")

    @security.protected(manage_zcatalog_entries)
    def manage_slowQueryThreshold(self, slow_query_ms=None, REQUEST=None):
        """Set the slow-query threshold (ms; -1 turns the log off)."""
        check_request(REQUEST)
        try:
            value = int(slow_query_ms)
        except (TypeError, ValueError):
            raise BadRequest(
                f"slow query threshold {slow_query_ms!r}: a whole number of"
                " milliseconds is needed (-1: off)"
            ) from None
        if value < -1:
            raise BadRequest(f"slow query threshold {value}: -1 or more")
        self.slow_query_ms = value
        return self._back("manage_catalogReport", f"Threshold set to {value} ms")

    @security.protected(manage_zcatalog_entries)
    def manage_clearQueryReport(self, REQUEST=None):
        """Forget this site's slow query shapes (of this process)."""
        check_request(REQUEST)
        slowlog.LOG.clear(self.site_path())
        return self._back("manage_catalogReport", "Query report cleared")

    def _back(self, page: str, message: str) -> str:
        self.REQUEST.RESPONSE.redirect(
            f"{self.absolute_url()}/{page}?manage_tabs_message={quote(message)}"
        )
        return ""


InitializeClass(CatalogManagement)
