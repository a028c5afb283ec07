"""The WSGI filter that answers 503 when no database connection can be had."""

from __future__ import annotations

from plone_pgcatalog.wsgi import DatabaseUnavailable
from plone_pgcatalog.wsgi import FAILURE
from plone_pgcatalog.wsgi import filter_app_factory
from plone_pgcatalog.wsgi import OUTCOME
from plone_pgcatalog.wsgi import SAVED
from plone_pgcatalog.wsgi import UNKNOWN
from psycopg_pool import PoolTimeout

import json
import logging
import psycopg
import pytest


def _failing(error):
    def app(environ, start_response):
        raise error

    return app


def _call(app, **environ):
    answers = []

    def start_response(status, headers, exc_info=None):
        answers.append((status, dict(headers)))

    body = b"".join(app({"PATH_INFO": "/plone", **environ}, start_response))
    [(status, headers)] = answers
    return status, headers, body


def test_a_pool_timeout_is_a_503_naming_its_type_but_not_its_text(caplog):
    app = DatabaseUnavailable(
        _failing(PoolTimeout("couldn't get a connection after 3.00 sec")),
        retry_after=7,
    )
    with caplog.at_level(logging.WARNING, "plone_pgcatalog.wsgi"):
        status, headers, body = _call(app, HTTP_ACCEPT="text/html")
    assert status == "503 Service Unavailable"
    assert headers["Retry-After"] == "7"
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert headers["Content-Length"] == str(len(body))
    assert b"<h1>Service Unavailable</h1>" in body
    assert b"(PoolTimeout)" in body
    assert b"3.00 sec" not in body
    [logged] = caplog.records
    assert logged.getMessage() == (
        "503 for GET /plone: no database connection: PoolTimeout:"
        " couldn't get a connection after 3.00 sec"
    )


def test_an_unreachable_server_is_a_503_without_its_address():
    error = psycopg.OperationalError(
        'connection to server at "10.0.0.5", port 5432 failed: Connection refused'
    )
    status, headers, body = _call(
        DatabaseUnavailable(_failing(error)), HTTP_ACCEPT="application/json"
    )
    assert status == "503 Service Unavailable"
    assert headers["Retry-After"] == "5"
    answer = json.loads(body)
    assert answer["type"] == "OperationalError"
    assert "Try again in a few seconds" in answer["message"]
    assert "10.0.0.5" not in body.decode()


def test_api_paths_get_json_and_others_plain_text():
    app = DatabaseUnavailable(_failing(PoolTimeout("no")))
    _, headers, body = _call(app, PATH_INFO="/plone/++api++/@search")
    assert headers["Content-Type"] == "application/json"
    assert json.loads(body)["type"] == "PoolTimeout"
    _, headers, body = _call(app, HTTP_ACCEPT="*/*")
    assert headers["Content-Type"] == "text/plain; charset=utf-8"
    assert body.startswith(b"Service Unavailable: The site's database did not answer")


def test_other_errors_pass_unchanged():
    app = DatabaseUnavailable(_failing(KeyError("x")))
    with pytest.raises(KeyError):
        _call(app)


def test_an_error_after_the_answer_began_passes_unchanged():
    def app(environ, start_response):
        start_response("200 OK", [])
        raise PoolTimeout("late")

    with pytest.raises(PoolTimeout):
        DatabaseUnavailable(app)({}, lambda status, headers, exc_info=None: None)


def test_answers_pass_through():
    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"hello"]

    assert _call(DatabaseUnavailable(app)) == (
        "200 OK",
        {"Content-Type": "text/plain"},
        b"hello",
    )


def test_the_paste_factory_reads_retry_after():
    app = filter_app_factory(_failing(PoolTimeout("no")), {}, retry_after="12")
    assert _call(app)[1]["Retry-After"] == "12"
    with pytest.raises(ValueError, match="retry_after: '-1' is not a number"):
        filter_app_factory(_failing(PoolTimeout("no")), {}, retry_after="-1")
    with pytest.raises(ValueError, match="retry_after: 'soon' is not a number"):
        filter_app_factory(_failing(PoolTimeout("no")), {}, retry_after="soon")


def _failing_after(commit, error):
    """An application whose transaction's commit got as far as ``commit``
    (``plone_pgcatalog.publication`` notes it), then failed with ERROR."""

    def app(environ, start_response):
        environ[OUTCOME]["commit"] = commit
        raise error

    return app


def test_an_error_after_a_commit_is_a_500_saying_the_changes_were_saved(caplog):
    app = DatabaseUnavailable(_failing_after(SAVED, PoolTimeout("after 3.00 sec")))
    with caplog.at_level(logging.WARNING, "plone_pgcatalog.wsgi"):
        status, headers, body = _call(
            app, REQUEST_METHOD="PATCH", HTTP_ACCEPT="application/json"
        )
    assert status == "500 Internal Server Error"
    assert "Retry-After" not in headers  # sending it again is not safe
    answer = json.loads(body)
    assert answer["type"] == "PoolTimeout"
    assert answer["changes"] == "saved"
    assert answer["message"].startswith("The changes of this request were saved")
    assert "Do not send the request again" in answer["message"]
    [logged] = caplog.records
    assert logged.levelname == "ERROR"
    assert logged.getMessage().startswith(
        "500 for PATCH /plone: the database stopped answering after its commit"
        " began (changes saved): PoolTimeout"
    )


def test_an_error_during_a_commit_is_a_500_saying_the_outcome_is_unknown():
    error = psycopg.OperationalError("server closed the connection unexpectedly")
    app = DatabaseUnavailable(_failing_after(UNKNOWN, error))
    status, headers, body = _call(app, HTTP_ACCEPT="text/html")
    assert status == "500 Internal Server Error"
    assert "Retry-After" not in headers
    assert b"<h1>Internal Server Error</h1>" in body
    assert b"may or may not have been saved" in body
    assert b"closed the connection" not in body


def test_each_request_gets_a_record_of_its_own():
    """A record left by an earlier request (the environ is the server's)
    does not make a later one a 500."""
    environ = {OUTCOME: {"commit": SAVED}}
    app = DatabaseUnavailable(_failing(PoolTimeout("no")))
    status, _, _ = _call(app, **environ)
    assert status == "503 Service Unavailable"


def _handled_then(failure, escaped, commit=None):
    """An application whose publisher noted ``failure`` (the database
    error a try failed with: ``plone_pgcatalog.publication``), then let
    ``escaped`` out, as Zope does when its error handling fails."""

    def app(environ, start_response):
        environ[OUTCOME][FAILURE] = failure
        if commit:
            environ[OUTCOME]["commit"] = commit
        raise escaped

    return app


def test_a_database_error_that_failed_zopes_error_handling_is_a_503(caplog):
    failure = psycopg.errors.AdminShutdown("terminating connection")
    escaped = RuntimeError("generator didn't yield")
    app = DatabaseUnavailable(_handled_then(failure, escaped))
    with caplog.at_level(logging.WARNING, "plone_pgcatalog.wsgi"):
        status, headers, body = _call(app, HTTP_ACCEPT="application/json")
    assert status == "503 Service Unavailable"
    assert headers["Retry-After"] == "5"
    assert json.loads(body)["type"] == "AdminShutdown"
    first, answered = [record.getMessage() for record in caplog.records]
    assert first == (
        "GET /plone failed with AdminShutdown, then Zope's error handling with"
        " RuntimeError: generator didn't yield"
    )
    assert answered.startswith("503 for GET /plone: no database connection")


def test_a_database_error_after_a_commit_that_failed_zopes_error_handling():
    app = DatabaseUnavailable(
        _handled_then(PoolTimeout("no"), RuntimeError("no yield"), commit=SAVED)
    )
    status, _, body = _call(app)
    assert status == "500 Internal Server Error"
    assert b"were saved" in body


def test_other_errors_pass_unchanged_after_a_try_without_a_database_error():
    app = DatabaseUnavailable(_handled_then(None, RuntimeError("no yield")))
    with pytest.raises(RuntimeError, match="no yield"):
        _call(app)
