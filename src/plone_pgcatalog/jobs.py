"""Long catalog work started from a web page, run in the background.

A rebuild of a large site takes minutes; a browser request that waited for
it would time out in a proxy and show nothing meanwhile.  So the ZMI's
Advanced and Indexes tabs and the control panel start their long
operations here: each runs in a thread of the Zope process with its own
ZODB connection (and so its own PostgreSQL connection), as the system
user, as ``pgcatalog`` on the command line runs them, and reports its
progress through ZCatalog's progress-handler interface (``JobProgress``).
The pages read ``Job.status()`` (the tool's ``manage_jobStatus``, JSON)
until the job has ended, and then show its result or error.

Owns: ``Job`` (what ran, by whom, progress, result), the registry of this
process's jobs (the last ``KEEP`` of them; one running job per site at a
time in this process, so two rebuilds started here never race; work that
must not be lost waits for the running one, ``start_or_queue``), and the
thread's Zope set-up (request, site, security) and transaction: work that
does not commit by itself is committed once at its end (run again after a
conflict), or aborted on error; nothing is half-written.

Jobs live in the memory of the Zope process that started them: another
instance of the same site does not see them, and a restart forgets them
(the work a rebuild committed in batches stays); behind a load balancer,
send an operator's requests to one instance (sticky sessions), or the
job's page may ask another one, which answers that it has no such job.

Must not compose SQL; the work is the tool's API and ``health``'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from plone_pgcatalog.errors import PGCatalogError

import contextlib
import itertools
import logging
import threading
import time
import transaction

logger = logging.getLogger("plone_pgcatalog.jobs")

#: Ended jobs kept for the pages to show.
KEEP = 20
#: Runs of a job's work that conflicts with another transaction.
ATTEMPTS = 3
#: Objects per transaction of the jobs that commit in batches ("Update
#: Catalog", reindexing): their memory stays flat on a large site.
BATCH_SIZE = 1000


class JobRunning(PGCatalogError):
    """A job is already running on this site."""


@dataclass
class Job:
    id: int
    title: str
    site_path: str
    user: str
    started: float = field(default_factory=time.time)
    #: "running", "done" or "failed"
    state: str = "running"
    #: what the job does now (the progress handler's ``init``)
    phase: str = ""
    current: int = 0
    total: int | None = None
    #: the progress handler's ``info`` lines (the last 50)
    lines: list[str] = field(default_factory=list)
    ended: float | None = None
    result: str = ""
    error: str = ""

    @property
    def running(self) -> bool:
        return self.state == "running"

    def status(self) -> dict:
        """What the pages show, as JSON."""
        elapsed = (self.ended or time.time()) - self.started
        percent = None
        if self.total:
            percent = min(100, round(100 * self.current / self.total))
        return {
            "id": self.id,
            "title": self.title,
            "site": self.site_path,
            "user": self.user,
            "state": self.state,
            "phase": self.phase,
            "current": self.current,
            "total": self.total,
            "percent": percent,
            "elapsed": round(elapsed, 1),
            "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.started)),
            "lines": self.lines[-10:],
            "result": self.result,
            "error": self.error,
        }


class JobProgress:
    """ZCatalog's ``IProgressHandler``, writing into a ``Job``."""

    def __init__(self, job: Job):
        self.job = job

    def init(self, ident, max, savepoint=None):
        self.job.phase = str(ident)
        self.job.total = max
        self.job.current = 0

    def info(self, text):
        self.job.lines.append(str(text))
        del self.job.lines[:-50]

    def report(self, current, *args, **kw):
        self.job.current = current

    def output(self, text):
        self.info(text)

    def finish(self):
        if self.job.total is not None:
            self.job.current = max(self.job.current, self.job.total)


_lock = threading.Lock()
_jobs: dict[int, Job] = {}
_ids = itertools.count(1)


def get(job_id: int) -> Job | None:
    with _lock:
        return _jobs.get(job_id)


def jobs(site_path: str | None = None) -> list[Job]:
    """This process's jobs, newest first (of one site, if given)."""
    with _lock:
        found = list(_jobs.values())
    found = [job for job in found if site_path in (None, job.site_path)]
    return sorted(found, key=lambda job: -job.id)


def running(site_path: str) -> Job | None:
    return next((job for job in jobs(site_path) if job.running), None)


#: ``work(tool, progress)``: the job's work on the thread's own tool; the
#: text it returns is the job's result.
Work = Callable[[object, JobProgress], str]


def start(tool, title: str, work: Work, user: str = "") -> Job:
    """Run ``work`` in the background on ``tool``'s site; the job.

    Raises ``JobRunning`` if a job runs on the site already.
    """
    return _launch(
        tool.site_path(), tool.getPhysicalPath(), tool._p_jar.db(), title, work, user
    )


def start_or_queue(tool, title: str, work: Work, user: str = "") -> Job | None:
    """``start``, or, while a job runs on the site, start ``work`` when it
    ends (None then): work that must not be lost (the repair after an
    undo, ``undo``), where a page's button would say "wait"."""
    site_path, tool_path = tool.site_path(), tool.getPhysicalPath()
    db = tool._p_jar.db()
    try:
        return _launch(site_path, tool_path, db, title, work, user)
    except JobRunning:
        with _lock:
            _queued.setdefault(site_path, []).append((tool_path, db, title, work, user))
        # The running job may have ended meanwhile, not seeing this one.
        _start_queued(site_path)
        return None


#: Work waiting for the site's running job to end (``start_or_queue``):
#: site path -> ``(tool path, db, title, work, user)`` in order.
_queued: dict[str, list[tuple]] = {}


def _start_queued(site_path: str) -> None:
    """Start the next work queued for the site, unless a job runs there."""
    with _lock:
        waiting = _queued.get(site_path)
        busy = any(j.running and j.site_path == site_path for j in _jobs.values())
        if busy or not waiting:
            return
        tool_path, db, title, work, user = waiting.pop(0)
    try:
        _launch(site_path, tool_path, db, title, work, user)
    except JobRunning:  # another started first: after that one, then
        with _lock:
            _queued.setdefault(site_path, []).insert(
                0, (tool_path, db, title, work, user)
            )


def _launch(site_path: str, tool_path: tuple, db, title: str, work: Work, user: str):
    """``start`` with what the thread needs of the tool."""
    with _lock:
        busy = next(
            (j for j in _jobs.values() if j.running and j.site_path == site_path),
            None,
        )
        if busy is not None:
            raise JobRunning(
                f"{busy.title!r} (started by {busy.user or 'unknown'} at"
                f" {busy.status()['started']}) is still running on {site_path}:"
                " wait until it ends"
            )
        job = Job(next(_ids), title, site_path, user)
        _jobs[job.id] = job
        for old in sorted(j.id for j in _jobs.values() if not j.running)[:-KEEP]:
            del _jobs[old]
    thread = threading.Thread(
        target=_run,
        args=(db, tool_path, job, work),
        name=f"pgcatalog-job-{job.id}",
        daemon=True,
    )
    thread.start()
    return job


def _run(db, tool_path: tuple, job: Job, work: Work) -> None:
    """The thread: Zope set up as for a request, ``work``, the commit;
    ``work`` runs again from a fresh transaction after a conflict (as Zope
    retries a request), up to ``ATTEMPTS`` times."""
    from AccessControl.SecurityManagement import newSecurityManager
    from AccessControl.SecurityManagement import noSecurityManager
    from AccessControl.SpecialUsers import system
    from Testing.makerequest import makerequest
    from transaction.interfaces import TransientError
    from zope.component.hooks import setSite
    from zope.globalrequest import setRequest

    conn = request = None
    try:
        # Inside the try: a pool that has no connection now, or a database
        # that is down, ends the job as failed (not "running" forever).
        conn = db.open()
        app = makerequest(conn.root()["Application"])
        request = app.REQUEST
        request["PARENTS"] = [app]
        setRequest(request)
        newSecurityManager(None, system)
        for attempt in range(1, ATTEMPTS + 1):
            transaction.begin()
            tool = app.unrestrictedTraverse(tool_path)
            setSite(tool.aq_parent)
            try:
                result = work(tool, JobProgress(job))
                transaction.get().note(f"pgcatalog: {job.title}")
                transaction.commit()
                break
            except TransientError:
                transaction.abort()
                if attempt == ATTEMPTS:
                    raise
                job.lines.append(
                    f"conflict with another transaction: again ({attempt})"
                )
                conn.sync()
        job.result = result or "done"
        job.state = "done"
        logger.info("%s on %s: %s", job.title, job.site_path, job.result)
    except Exception as error:  # the job's end, shown on the page
        job.error = f"{type(error).__name__}: {error}"
        job.state = "failed"
        logger.exception("%s on %s failed", job.title, job.site_path)
    finally:
        job.ended = time.time()
        with contextlib.suppress(Exception):
            transaction.abort()
        noSecurityManager()
        setSite(None)
        setRequest(None)
        if request is not None:
            request.close()
        if conn is not None:
            conn.close()
        _start_queued(job.site_path)


def wait(job: Job, timeout: float = 600) -> Job:
    """Block until ``job`` has ended (tests, scripts)."""
    deadline = time.monotonic() + timeout
    while job.running and time.monotonic() < deadline:
        time.sleep(0.05)
    return job


# -- the operations the pages start ------------------------------------------------


def _took(started: float) -> str:
    from plone_pgcatalog.maintenance import duration

    return duration(time.monotonic() - started)


def rebuild(tool, progress: JobProgress) -> str:
    """Catalog every content object again, committing in batches."""
    started = time.monotonic()
    count = tool.rebuild(pghandler=progress)
    return f"{count} objects cataloged in {_took(started)}"


def update(tool, progress: JobProgress) -> str:
    """Catalog again every object the catalog holds (ZCatalog's "Update
    Catalog", ``refreshCatalog(clear=1)``): an object that no longer exists
    or fails to catalog loses its row."""
    from plone_pgcatalog.maintenance import refresh_catalog

    started = time.monotonic()
    # Committed in batches, each row replaced (never cleared first: readers
    # would see an empty catalog until the last batch).
    count = refresh_catalog(tool, clear=1, pghandler=progress, batch_size=BATCH_SIZE)
    return f"{count} objects cataloged again or dropped in {_took(started)}"


def _verified(tool, progress: JobProgress, roots=None):
    from plone_pgcatalog import health

    import io

    found = health.verify(tool, progress, roots)
    out = io.StringIO()
    found.report(out, show=20)
    return found, out.getvalue().strip()


def verify(tool, progress: JobProgress) -> str:
    """Compare the catalog with the content (``pgcatalog verify``)."""
    return _verified(tool, progress)[1]


def repair(tool, progress: JobProgress, roots=None) -> str:
    """Verify; catalog missing and stale objects, forget orphan rows;
    verify again (``pgcatalog verify --repair``).  With ``roots``, the
    rows and content at and below those paths only (``repair_below``)."""
    from plone_pgcatalog import health

    found, report = _verified(tool, progress, roots)
    if not found.problems:
        return report
    health.repair(tool, found)
    transaction.get().note(f"pgcatalog: repair {tool.site_path()}")
    transaction.commit()
    transaction.begin()
    again = _verified(tool, progress, roots)[1]
    return f"{report}\nrepaired; verified again:\n{again}"


def repair_below(roots: list[str]) -> Work:
    """``repair`` of the rows and content at and below the paths ``roots``
    of the site (after an undo: ``undo``)."""

    def work(tool, progress: JobProgress) -> str:
        return repair(tool, progress, roots)

    return work


def reindex(names: list[str]) -> Work:
    """Read the indexes ``names`` again for every cataloged object."""

    def work(tool, progress: JobProgress) -> str:
        from plone_pgcatalog.maintenance import reindex_index

        started = time.monotonic()
        count = reindex_index(
            tool, list(names), pghandler=progress, batch_size=BATCH_SIZE
        )
        return f"{', '.join(names)} reindexed: {count} objects in {_took(started)}"

    return work


def clear(names: list[str]) -> Work:
    """Empty the indexes ``names`` (a search on them finds nothing until
    they are reindexed)."""

    def work(tool, progress: JobProgress) -> str:
        from plone_pgcatalog.maintenance import clear_index

        counts = [clear_index(tool, name, progress) for name in names]
        return f"{', '.join(names)} cleared in {max(counts, default=0)} objects"

    return work
