"""The ``pgcatalog`` console script, run as a subprocess on a real site.

The site is the demo instance's (``plone_pgcatalog.demo.instance``): a
Zope process creates it in a database of its own, with its zope.conf,
which every command here is given.  (The test layers' site cannot serve:
its component registry is pickled as a reference to plone.testing's
stacked registries, which only exist in the test process.)  The database
is restored from a snapshot before each test; effects are read back with
SQL on a fresh connection.  The progress bar is also tested alone.
"""

from __future__ import annotations

from pathlib import Path
from plone_pgcatalog import embedded
from plone_pgcatalog import testing
from plone_pgcatalog.cli import progress_handler
from plone_pgcatalog.cli import ProgressBarHandler
from plone_pgcatalog.maintenance import ProgressLogHandler
from plone_pgcatalog.store import schema
from Products.ZCatalog.interfaces import IProgressHandler
from psycopg import sql
from zope.interface.verify import verifyObject

import io
import os
import psycopg
import pty
import pytest
import subprocess
import sys
import threading

BIN = Path(sys.executable).parent
SCRIPT = BIN / "pgcatalog"


class Instance:
    """The demo instance: its database and zope.conf."""

    def __init__(self, dsn: str, conf: Path):
        self.dsn = dsn
        self.conf = conf
        self.snapshot = testing.DatabaseSnapshot(dsn)

    def run(self, *args: str, stderr_tty: bool = False):
        """``pgcatalog -C zope.conf ARGS``: (returncode, stdout, stderr)."""
        command = [str(SCRIPT), "-C", str(self.conf), *args]
        if stderr_tty:
            return _run_with_tty(command)
        found = subprocess.run(command, capture_output=True, text=True, timeout=600)
        return found.returncode, found.stdout, found.stderr

    def script(self, tmp_path: Path, code: str) -> None:
        """Run ``code`` in Zope's own ``zconsole run`` (``app`` is the root)."""
        path = tmp_path / "script.py"
        path.write_text(code, encoding="utf-8")
        subprocess.run(
            [str(BIN / "zconsole"), "run", str(self.conf), str(path)],
            check=True,
            capture_output=True,
            timeout=600,
        )

    def sql(self, statement, params=()) -> list[tuple]:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            cursor = conn.execute(statement, params)
            return cursor.fetchall() if cursor.description else []

    def rows(self) -> dict[str, tuple]:
        """path -> (zoid, idx, meta) of every cataloged row of the site."""
        found = self.sql(
            "SELECT path, zoid, idx, meta FROM pgcatalog_objects" " WHERE path LIKE %s",
            ("/Plone%",),
        )
        return {path: tuple(rest) for path, *rest in found}

    def counter(self) -> int:
        found = self.sql("SELECT value FROM pgcatalog_state WHERE key = 'counter'")
        return found[0][0]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    server = testing.server_dsn()
    name = f"pgcatalog_cli_{os.getpid()}"
    dsn = embedded.ensure_database(server, name, fresh=True)
    var = tmp_path_factory.mktemp("demo")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "plone_pgcatalog.demo.instance",
            "--dsn",
            dsn,
            "--var",
            str(var),
            "--no-serve",
        ],
        check=True,
        capture_output=True,
        timeout=900,
    )
    instance = Instance(dsn, var / "instance" / "etc" / "zope.conf")
    # The demo's objects are cataloged while they are created (an effective
    # date then has its creation-time timezone object): start from rows a
    # rebuild gives, which is what verify compares with.
    code, _, err = instance.run("rebuild")
    assert code == 0, err
    instance.snapshot.take()
    yield instance
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))


@pytest.fixture
def site(demo):
    demo.snapshot.restore()
    return demo


def _run_with_tty(command):
    """Run ``command`` with a terminal as its stderr (the progress bar)."""
    master, slave = pty.openpty()
    chunks = []

    def drain():
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        process = subprocess.run(
            command, stdout=subprocess.PIPE, stderr=slave, text=True, timeout=600
        )
    finally:
        os.close(slave)
        reader.join(timeout=10)
        os.close(master)
    err = b"".join(chunks).decode("utf-8", "replace")
    return process.returncode, process.stdout, err


# -- the commands --------------------------------------------------------------


def test_stats_counts_rows_types_states_and_reports_sizes(site):
    rows = site.rows()
    code, out, err = site.run("stats")
    assert code == 0, err
    assert out.startswith("catalog of /Plone\n")
    assert f"  rows: {len(rows)}\n" in out
    version = schema.SCHEMA_VERSION
    assert f"  schema version: {version} (this code: {version})\n" in out
    assert f"  change counter: {site.counter()}\n" in out
    documents = sum(
        1 for _, idx, _ in rows.values() if idx["portal_type"] == "Document"
    )
    per_type = out.split("rows per portal_type:\n")[1].split("rows per")[0]
    assert f"  Document: {documents}\n" in per_type and "  Plone Site: 1\n" in per_type
    per_state = out.split("rows per review_state:\n")[1].split("catalog column")[0]
    published = sum(
        1 for _, idx, _ in rows.values() if idx.get("review_state") == "published"
    )
    assert f"  published: {published}\n" in per_state
    assert "  idx: " in out and "  searchable_text: " in out
    sql_indexes = out.split("SQL indexes (every site of the database):\n")[1]
    assert "  pgcatalog_idx: " in sql_indexes
    assert "  pgcatalog_path: " in sql_indexes


def test_verify_of_a_site_in_order_finds_nothing(site):
    rows = site.rows()
    code, out, err = site.run("verify")
    assert code == 0, out + err
    assert (
        out == f"catalog of /Plone is in order: {len(rows)} objects, {len(rows)} rows\n"
    )


def test_verify_reports_missing_orphan_and_stale_rows_and_repair_fixes_them(
    site, tmp_path
):
    # orphan: an object deleted without uncataloging it (the last of its
    # folder: no other position changes)
    news = sorted(
        (idx["getObjPositionInParent"], path)
        for path, (_, idx, _) in site.rows().items()
        if path.startswith("/Plone/news/")
    )
    gone = news[-1][1]
    site.script(
        tmp_path,
        "import transaction\n"
        f"app.Plone.news._delObject({gone.rsplit('/', 1)[1]!r}, suppress_events=True)\n"
        "transaction.commit()\n",
    )
    # missing: the catalog row of one object deleted
    site.sql(
        "DELETE FROM pgcatalog_objects WHERE path = %s",
        ("/Plone/about/team",),
    )
    # stale: a wrong index value, a wrong metadata value
    site.sql(
        "UPDATE pgcatalog_objects SET idx = jsonb_set(idx, '{review_state}', %s)"
        " WHERE path = %s",
        ('"bogus"', "/Plone/library/glacier-handbook"),
    )
    site.sql(
        "UPDATE pgcatalog_objects SET meta = jsonb_set(meta::jsonb, '{Title}', %s)"
        " WHERE path = %s",
        ('"Wrong"', "/Plone/events/glacier-meetup"),
    )
    # a typed column set by hand (its trigger derives it from idx only)
    site.sql(
        "UPDATE pgcatalog_objects SET portal_type = 'Bogus' WHERE path = %s",
        ("/Plone/news",),
    )
    code, out, err = site.run("verify")
    assert code == 1, out + err
    assert out.startswith(
        "catalog of /Plone: 5 problems (1 missing, 1 orphan, 3 stale)"
    )
    assert "missing: 1\n  /Plone/about/team\n" in out
    assert f"orphan: 1\n  {gone}\n" in out
    assert (
        "stale: 3\n  /Plone/events/glacier-meetup (Title)\n"
        "  /Plone/library/glacier-handbook (review_state)\n"
        "  /Plone/news (portal_type column)\n"
    ) in out

    code, out, err = site.run("verify", "--repair", "--show", "1")
    assert code == 0, out + err
    first, second = out.split("repaired; verifying again\n")
    assert "stale: 3\n  /Plone/events/glacier-meetup (Title)\n" in first
    assert "  ... and 2 more\n" in first
    assert second.startswith("catalog of /Plone is in order: ")
    rows = site.rows()
    assert "/Plone/about/team" in rows
    assert gone not in rows
    assert rows["/Plone/library/glacier-handbook"][1]["review_state"] != "bogus"
    assert rows["/Plone/events/glacier-meetup"][2]["Title"] != "Wrong"
    code, out, err = site.run("verify")
    assert code == 0, out + err


def test_reindex_of_an_unknown_index_fails_with_the_valid_names(site):
    counter = site.counter()
    code, out, err = site.run("reindex", "Title", "no_such_index")
    assert code == 2
    assert out == ""
    error = err.strip().splitlines()[-1]
    assert error.startswith("pgcatalog: error: unknown index 'no_such_index';")
    assert "valid indexes: " in error and "Title" in error and "portal_type" in error
    assert "Traceback" not in err
    assert site.counter() == counter  # nothing committed


def test_reindex_reads_the_given_index_again(site):
    path = "/Plone/library/glacier-handbook"
    title = site.rows()[path][1]["Title"]
    site.sql(
        "UPDATE pgcatalog_objects SET idx = jsonb_set(idx, '{Title}', %s),"
        " meta = jsonb_set(meta::jsonb, '{Title}', %s) WHERE path = %s",
        ('"wrong"', '"Wrong"', path),
    )
    code, out, err = site.run("reindex", "--batch-size", "7", "Title")
    assert code == 0, err
    rows = site.rows()
    assert out == f"reindexed Title in the catalog of /Plone: {len(rows)} objects\n"
    # Committed every 7 objects (memory stays flat), the rest at the end.
    notes = site.sql(
        "SELECT description FROM transaction_log WHERE description LIKE %s",
        ("plone_pgcatalog reindex Title /Plone: batch %",),
    )
    assert len(rows) > 7 and len(notes) == len(rows) // 7
    assert "batch 1 committed (7 objects)" in err
    # Not a terminal: the progress goes to the log.
    assert "reindexing ('Title',): started" in err
    assert "reindexing ('Title',): done in" in err
    assert rows[path][1]["Title"] == title
    # Metadata is not read by reindexIndex (as in ZCatalog).
    assert rows[path][2]["Title"] == "Wrong"


def test_rebuild_keeps_the_same_rows_and_draws_a_bar_on_a_terminal(site):
    before = site.rows()
    counter = site.counter()
    code, out, err = site.run("rebuild", stderr_tty=True)
    assert code == 0, err
    assert out == f"rebuilt the catalog of /Plone: {len(before)} objects\n"
    assert "\rRebuilding catalog: Plone/portal_catalog [" in err
    assert "/s" in err
    assert "Rebuilding catalog: Plone/portal_catalog: done in " in err
    assert site.counter() > counter  # it committed
    assert site.rows() == before


# -- bad input -------------------------------------------------------------------


def test_an_unknown_site_is_named_with_the_sites_found(site):
    code, out, err = site.run("--site", "Nope", "stats")
    assert code == 2
    assert err.strip().splitlines()[-1] == (
        "pgcatalog: error: no Plone site 'Nope'; sites found: Plone"
    )
    assert "Traceback" not in err


def test_an_explicit_site_is_used(site):
    code, out, err = site.run("--site", "/Plone", "verify")
    assert code == 0, out + err
    assert out.startswith("catalog of /Plone is in order: ")


def test_an_unknown_command_and_an_unreadable_zope_conf_fail_in_one_line(tmp_path):
    conf = tmp_path / "zope.conf"
    conf.write_text("instancehome /nowhere\n", encoding="utf-8")
    found = subprocess.run(
        [str(SCRIPT), "-C", str(conf), "defrag"], capture_output=True, text=True
    )
    assert found.returncode == 2
    assert found.stderr.startswith("pgcatalog: error: argument COMMAND: invalid")
    assert "'defrag'" in found.stderr and len(found.stderr.splitlines()) == 1

    missing = tmp_path / "no-such.conf"
    found = subprocess.run(
        [str(SCRIPT), "-C", str(missing), "stats"], capture_output=True, text=True
    )
    assert found.returncode == 2
    assert found.stderr == (
        f"pgcatalog: error: cannot read the Zope configuration '{missing}':"
        " No such file or directory\n"
    )

    conf.write_text(
        "%import zodb_pgjsonb\n<zodb_db main>\n  <pgjsonb>\n"
        "    no-such-key 1\n  </pgjsonb>\n</zodb_db>\n",
        encoding="utf-8",
    )
    found = subprocess.run(
        [str(SCRIPT), "-C", str(conf), "stats"], capture_output=True, text=True
    )
    assert found.returncode == 2
    lines = found.stderr.strip().splitlines()
    assert lines[-1].startswith(f"pgcatalog: error: bad Zope configuration '{conf}':")
    assert "no-such-key" in lines[-1]
    assert "Traceback" not in found.stderr


def test_the_module_runs_as_a_script_too():
    found = subprocess.run(
        [sys.executable, "-m", "plone_pgcatalog.cli", "--help"],
        capture_output=True,
        text=True,
    )
    assert found.returncode == 0
    assert "rebuild" in found.stdout and "verify" in found.stdout


# -- the progress bar ------------------------------------------------------------


class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_bar_shows_count_percentage_rate_and_eta_on_one_line():
    stream, clock = io.StringIO(), _Clock()
    bar = ProgressBarHandler(stream, clock=clock, width=100, interval=0)
    bar.init("rebuild", 40)
    clock.now = 105.0
    bar.report(10)
    assert bar.line() == (
        "rebuild [#######.......................] 10/40  25.0% 2.0/s ETA 0:00:15"
    )
    assert stream.getvalue().endswith("\r" + bar.line() + "\x1b[K")
    assert "\n" not in stream.getvalue()
    clock.now = 120.0
    bar.report(40)
    bar.finish()
    assert stream.getvalue().endswith("\nrebuild: done in 0:00:20\n")


def test_bar_past_an_estimated_maximum_shows_count_and_rate_only():
    clock = _Clock()
    bar = ProgressBarHandler(io.StringIO(), clock=clock, width=80, interval=0)
    bar.init("rebuild", 4)
    clock.now = 102.0
    bar.report(6)
    assert bar.line().endswith("] 6 3.0/s")
    assert "ETA" not in bar.line()


def test_bar_redraws_at_most_every_interval():
    stream, clock = io.StringIO(), _Clock()
    bar = ProgressBarHandler(stream, clock=clock, width=80, interval=1.0)
    bar.init("x", 1000)
    for i in range(1, 21):
        clock.now += 0.25
        bar.report(i)
    # init, then one redraw per second of the 5 seconds
    assert stream.getvalue().count("\r") == 1 + 5


def test_bar_info_prints_a_line_and_redraws():
    stream = io.StringIO()
    bar = ProgressBarHandler(stream, clock=_Clock(), width=80)
    bar.init("x", 10)
    bar.info("57 objects cataloged")
    assert "\r\x1b[Kx: 57 objects cataloged\n\rx [" in stream.getvalue()


class _TTY(io.StringIO):
    def isatty(self):
        return True


def test_progress_handler_is_a_bar_on_a_terminal_and_log_lines_elsewhere():
    bar = progress_handler(_TTY())
    assert isinstance(bar, ProgressBarHandler)
    assert verifyObject(IProgressHandler, bar)
    log = progress_handler(io.StringIO())
    assert isinstance(log, ProgressLogHandler)
