"""Site Setup's "PostgreSQL catalog" control panel.

Owns the view ``@@pgcatalog-controlpanel`` (Manage portal, registered for
the site root; its configlet is in the profile's ``controlpanel.xml``):
health at a glance (rows, sizes, schema version and upgrade steps, last
rebuild, slow queries) for site administrators who never open the ZMI, and
the actions verify, repair and rebuild (background jobs, ``jobs``; the page
shows their progress until they end) and the slow-query threshold.

Every action is a POST with plone.protect's authenticator
(``zmi.check_request``).  The figures are ``overview``'s, the work
``jobs``'.

Must not compose SQL.
"""

from __future__ import annotations

from plone_pgcatalog import jobs
from plone_pgcatalog import overview
from plone_pgcatalog import slowlog
from plone_pgcatalog import zmi
from plone_pgcatalog.health import _size
from plone_pgcatalog.interfaces import IPGCatalogTool
from Products.CMFCore.utils import getToolByName
from Products.Five.browser import BrowserView
from Products.Five.browser.pagetemplatefile import ViewPageTemplateFile
from zExceptions import BadRequest

#: What the control panel starts (a subset of the Advanced tab's):
#: name -> (button, its class, the question it asks first).
ACTIONS = {
    "verify": ("Verify", "btn btn-primary", None),
    "repair": ("Verify and repair", "btn btn-secondary", None),
    "rebuild": (
        "Rebuild",
        "btn btn-warning",
        "return confirm('Catalog every object again?')",
    ),
}


class ControlPanel(BrowserView):
    index = ViewPageTemplateFile("controlpanel.pt")
    label = "PostgreSQL catalog"
    description = (
        "The site's catalog lives in PostgreSQL: its health, and the"
        " maintenance a site administrator may need."
    )

    def __call__(self):
        self.message = ""
        self.error = ""
        if self.request.get("REQUEST_METHOD") == "POST":
            return self.handle()
        return self.index()

    @property
    def catalog(self):
        catalog = getToolByName(self.context, "portal_catalog")
        if not IPGCatalogTool.providedBy(catalog):
            raise BadRequest("this site's portal_catalog is not plone_pgcatalog's")
        return catalog

    def handle(self):
        zmi.check_request(self.request)
        form = self.request.form
        url = f"{self.context.absolute_url()}/@@pgcatalog-controlpanel"
        if "action" in form:
            action = form["action"]
            if action not in ACTIONS:
                raise BadRequest(
                    f"unknown action {action!r}; valid: {', '.join(ACTIONS)}"
                )
            try:
                job = zmi.start_operation(self.catalog, action, self.request)
            except jobs.JobRunning as error:
                self.error = str(error)
                return self.index()
            self.request.response.redirect(f"{url}?job={job.id}")
            return ""
        if "slow_query_ms" in form:
            try:
                value = int(form["slow_query_ms"])
            except (TypeError, ValueError):
                value = None
            if value is None or value < -1:
                self.error = (
                    f"slow query threshold {form['slow_query_ms']!r}: a whole"
                    " number of milliseconds, -1 (off) or more"
                )
                return self.index()
            self.catalog.slow_query_ms = value
            self.message = f"Slow query threshold set to {value} ms."
            return self.index()
        raise BadRequest("nothing to do: no action given")

    # -- what the template reads ---------------------------------------------------

    def health(self) -> dict:
        catalog = self.catalog
        db = overview.database(catalog)
        shapes = slowlog.LOG.shapes(catalog.site_path())
        return {
            "rows": db.rows,
            "size": _size(db.table_size),
            "schema_version": db.schema_version,
            "code_version": db.code_version,
            "upgrades": db.upgrades,
            "last_rebuild": db.last_rebuild or "never",
            "server_version": db.server_version,
            "dead_rows": sum(t.dead for t in db.activity),
            "slow_shapes": len(shapes),
            "slow_runs": sum(shape.count for shape in shapes),
            "slowest": shapes[:5],
            "threshold": slowlog.threshold_ms(catalog),
            "ok": db.schema_version == db.code_version and not db.upgrades,
        }

    def actions(self) -> list[dict]:
        return [
            {"id": name, "title": title, "css": css, "confirm": confirm}
            for name, (title, css, confirm) in ACTIONS.items()
        ]

    def job(self):
        return self.catalog.zmi_job(self.request.get("job"))

    def jobs(self):
        return self.catalog.zmi_jobs()[:5]

    def catalog_url(self) -> str:
        return self.catalog.absolute_url()
