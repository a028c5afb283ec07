"""What a client is told when the request's transaction cannot even begin
(``plone_pgcatalog.wsgi``, ``.publication``), through Zope's real
publisher to the plone_pgcatalog site, with the WSGI filter around it.

The fault, as the soak (``benchmarks/soak.py --faults``) met it: an
operator terminates every connection of the instance, the one a request
holds and the idle ones in the pool.  Zope's ``transaction_pubevents``
begins the request's transaction; ZODB's ``newTransaction`` has
zodb-pgjsonb begin a read snapshot, whose ``BEGIN`` fails on the held
connection and again on the dead one the pool hands out next.  Zope's
error handling then renders an error page (the third connection works),
decides the error is handled and returns from its context manager without
entering it: ``RuntimeError: generator didn't yield`` leaves Zope, and
waitress answered a bare 500 (the soak's "500 waitress error page").
Nothing of the request had run: the filter answers 503, as for a
connection that could not be had.
"""

from __future__ import annotations

from tests.integration import test_answer_after_commit as after_commit
from ZODB.Connection import Connection

import logging
import psycopg

#: A page titled "Before" (fixture), and one request through the filter
#: and Zope's publisher.
document = after_commit.document
_publish = after_commit._publish


class TerminatedAtBegin:
    """Arms the fault: when the next request's transaction begins
    (``Connection.newTransaction`` with a sync: ``TransactionManager.begin``;
    the open and the end of a transaction do not sync), terminate the
    instance's connection, and let the pool hand out one that is dead too."""

    def __init__(self, monkeypatch, dsn: str):
        self.monkeypatch = monkeypatch
        self.dsn = dsn
        self.fired = False
        original = Connection.newTransaction

        def new_transaction(connection, txn, sync=True):
            if sync and not self.fired:
                self.fired = True
                self._terminate(connection._storage)
            return original(connection, txn, sync)

        monkeypatch.setattr(Connection, "newTransaction", new_transaction)

    def _kill(self, conn: psycopg.Connection) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))

    def _terminate(self, instance) -> None:
        self._kill(instance._conn)
        pool = instance._instance_pool
        getconn = pool.getconn
        handed = []

        def dead_then_as_ever(*args, **kwargs):
            conn = getconn(*args, **kwargs)
            if not handed:  # an idle pooled connection, terminated too
                handed.append(conn)
                self._kill(conn)
            return conn

        self.monkeypatch.setattr(pool, "getconn", dead_then_as_ever)


def test_a_request_whose_transaction_cannot_begin_is_a_503(
    document, monkeypatch, caplog
):
    fault = TerminatedAtBegin(monkeypatch, document["pgcatalog_dsn"])
    with caplog.at_level(logging.WARNING, "plone_pgcatalog.wsgi"):
        status, answer = _publish(document, "GET", "/plone/page")
    monkeypatch.undo()
    assert fault.fired
    # What left Zope was its error handling's own error.
    [escaped] = [
        record.getMessage()
        for record in caplog.records
        if record.name == "plone_pgcatalog.wsgi" and "failed with" in record.message
    ]
    assert escaped.startswith("GET /plone/page failed with AdminShutdown, then")
    assert "RuntimeError: generator didn't yield" in escaped
    assert status == "503 Service Unavailable"
    assert answer["type"] == "AdminShutdown"  # of psycopg.OperationalError
    assert "Try again in a few seconds" in answer["message"]
    # And the site answers the next request.
    status, answer = _publish(document, "GET", "/plone/page")
    assert status == "200 OK"
    assert answer["title"] == "Before"
