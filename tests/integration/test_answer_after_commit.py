"""What a client is told when PostgreSQL stops answering during or right
after a write's commit (``plone_pgcatalog.wsgi``, ``.publication``),
through Zope's real publisher to the plone_pgcatalog site, with the WSGI
filter around it as ``make run``'s instance has it.

The fault: just after zodb-pgjsonb's ``COMMIT`` (or just before it), the
request's PostgreSQL connection is terminated and the pool gives no other
(the server is stopping).  ZODB then fails to begin the next read
snapshot, the publisher's error handling fails the same way, and the
error leaves Zope.  The soak (``benchmarks/soak.py --faults``) met it: the
filter answered such a committed edit "503, try again", and the check
found the edit in the catalog though no answer had acknowledged it.
"""

from __future__ import annotations

from plone import api
from plone.app.testing import SITE_OWNER_NAME
from plone.app.testing import SITE_OWNER_PASSWORD
from plone_pgcatalog.wsgi import DatabaseUnavailable
from psycopg_pool import PoolTimeout
from tests.integration.test_real_consumers import browser_for
from zodb_pgjsonb.instance import PGJsonbStorageInstance
from ZPublisher.utils import basic_auth_encode
from ZPublisher.WSGIPublisher import publish_module

import io
import json
import psycopg
import pytest
import transaction


@pytest.fixture
def document(pg_layer):
    portal = pg_layer["portal"]
    with api.env.adopt_roles(["Manager"]):
        api.content.create(portal, "Document", id="page", title="Before")
    transaction.commit()
    return pg_layer


def _publish(layer, method: str, path: str, body=None) -> tuple[str, dict]:
    """One request through the filter and Zope's publisher, as the site's
    owner, asking for JSON: its status and answer."""
    from AccessControl.SecurityManagement import getSecurityManager
    from AccessControl.SecurityManagement import setSecurityManager
    from zope.component.hooks import getSite
    from zope.component.hooks import setSite

    data = json.dumps(body).encode() if body is not None else b""
    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(data),
        "CONTENT_LENGTH": str(len(data)),
        "CONTENT_TYPE": "application/json",
        "HTTP_ACCEPT": "application/json",
        "HTTP_AUTHORIZATION": basic_auth_encode(SITE_OWNER_NAME, SITE_OWNER_PASSWORD),
    }
    answered = []
    security, site = getSecurityManager(), getSite()
    with browser_for(layer):  # points Zope's publisher at the site's database
        try:
            app = DatabaseUnavailable(publish_module)
            body = b"".join(
                app(
                    environ,
                    lambda status, headers, exc_info=None: answered.append(status),
                )
            )
        finally:
            setSecurityManager(security)
            setSite(site)
    return answered[0], json.loads(body) if body else {}


class ServerStops:
    """Arms the fault: at the next commit of a request, terminate its
    connection (``after_commit``: right after zodb-pgjsonb's ``COMMIT``,
    else just before it) and let the pool give no connection."""

    def __init__(self, monkeypatch, dsn: str, after_commit: bool):
        self.monkeypatch = monkeypatch
        self.dsn = dsn
        self.after_commit = after_commit
        self.fired = False
        original = PGJsonbStorageInstance.tpc_finish

        def tpc_finish(instance, txn, f=None):
            if not self.after_commit:
                self._stop(instance)
            tid = original(instance, txn, f)
            if self.after_commit:
                self._stop(instance)
            return tid

        monkeypatch.setattr(PGJsonbStorageInstance, "tpc_finish", tpc_finish)

    def _stop(self, instance):
        if self.fired:
            return
        self.fired = True
        with psycopg.connect(self.dsn, autocommit=True) as other:
            other.execute(
                "SELECT pg_terminate_backend(%s)", (instance._conn.info.backend_pid,)
            )

        def refuse(*args, **kwargs):
            raise PoolTimeout("couldn't get a connection after 3.00 sec")

        self.monkeypatch.setattr(instance._instance_pool, "getconn", refuse)


def _stored_title(layer) -> str:
    with psycopg.connect(layer["pgcatalog_dsn"]) as conn:
        return conn.execute(
            "SELECT meta ->> 'Title' FROM pgcatalog_objects WHERE path = %s",
            ("/plone/page",),
        ).fetchone()[0]


def _edit_as_the_server_stops(layer, monkeypatch, after_commit: bool):
    """The page's title edited while the fault (``ServerStops``) fires:
    the answer's status and body."""
    fault = ServerStops(monkeypatch, layer["pgcatalog_dsn"], after_commit)
    status, answer = _publish(layer, "PATCH", "/plone/page", {"title": "After"})
    monkeypatch.undo()
    assert fault.fired
    return status, answer


def test_a_write_committed_before_the_server_stopped_is_said_saved(
    document, monkeypatch
):
    status, answer = _edit_as_the_server_stops(document, monkeypatch, True)
    assert status == "500 Internal Server Error"
    assert answer["changes"] == "saved"
    assert answer["type"] == "PoolTimeout"
    assert "Do not send the request again" in answer["message"]
    # And it was: the object and its catalog row.
    assert _stored_title(document) == "After"
    transaction.begin()
    assert document["portal"]["page"].Title() == "After"


def test_a_write_whose_commit_was_cut_off_is_said_unknown(document, monkeypatch):
    status, answer = _edit_as_the_server_stops(document, monkeypatch, False)
    assert status == "500 Internal Server Error"
    assert answer["changes"] == "unknown"
    assert "may or may not have been saved" in answer["message"]
    # Terminated before its COMMIT: PostgreSQL rolled it back.
    assert _stored_title(document) == "Before"


def test_a_write_that_succeeds_is_answered_as_ever(document):
    status, answer = _publish(document, "PATCH", "/plone/page", {"title": "After"})
    assert status == "204 No Content"
    assert _stored_title(document) == "After"
