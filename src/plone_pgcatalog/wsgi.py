"""A WSGI filter: "503 Service Unavailable" when no database connection
can be had, instead of waitress's bare "500 Internal Server Error".

Zope's publisher opens the request's ZODB connection before its error
handling (``ZPublisher.WSGIPublisher.load_app``): when zodb-pgjsonb's pool
has no free connection within its timeout (``psycopg_pool.PoolTimeout``),
or PostgreSQL cannot be reached (``psycopg.OperationalError``), the error
escapes the application and waitress answers a bare 500.  This filter,
just outside Zope in the PasteDeploy pipeline, answers those requests with
503 and ``Retry-After`` (clients and load balancers try again later),
naming the error's type but never its text (host names, ports, SQL), and
logs the whole error once.  An error after the application has begun its
answer, or of any other kind, passes unchanged.

The same error can also fail Zope's error handling, and another error
leaves Zope instead.  When PostgreSQL's connections are terminated, the
read snapshot that begins the request's transaction can fail
(``ZPublisher.WSGIPublisher.transaction_pubevents``, before the request is
published); Zope renders its error page for it, decides the error is
handled and returns without publishing: ``RuntimeError: generator didn't
yield`` leaves Zope.  ``plone_pgcatalog.publication`` notes the database
error each try fails with (``FAILURE``), and the filter answers for that
error whatever then escapes.

A 503 says that nothing was done, so that sending the request again is
safe.  Such an error can also escape after the request's transaction
wrote: ZODB begins the next read snapshot right after the ``COMMIT``
(``Connection.afterCompletion``), and when PostgreSQL stops just then,
that poll fails, the publisher's error handling fails the same way and
the error leaves Zope.  What the transaction did is then in the request's
``OUTCOME`` record (``plone_pgcatalog.publication`` fills it from the
publisher's events): a transaction that had changes and committed is
answered "500: your changes were saved", one whose commit failed midway
"500: they may or may not have been saved", neither with ``Retry-After``.

Its use in an instance's PasteDeploy pipeline, just before ``zope``:
README, "Reliability" (``make run``'s instance has it,
``demo.instance.zope_ini_text``).

Must not import Zope: it wraps any WSGI application.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from psycopg_pool import PoolTimeout

import html
import json
import logging
import psycopg

logger = logging.getLogger(__name__)

#: Seconds a client is told to wait before trying again.
RETRY_AFTER = 5

#: The errors that mean "no database connection for this request".
UNAVAILABLE = (PoolTimeout, psycopg.OperationalError)

#: The environ key of the request's record of what its transaction did: a
#: dict this filter puts there, which ``plone_pgcatalog.publication`` fills
#: (Zope's request copies the environ, not its values).
OUTCOME = "plone_pgcatalog.outcome"

#: ``OUTCOME[FAILURE]``: the database error (of ``UNAVAILABLE``) the
#: request's last try failed with, which Zope's error handling rendered or
#: not; None when that try failed with another error.
FAILURE = "failure"

#: ``OUTCOME["commit"]``: the transaction had changes and committed them.
SAVED = "saved"
#: ``OUTCOME["commit"]``: the transaction had changes; its commit failed
#: after it began, perhaps while PostgreSQL was committing them.
UNKNOWN = "unknown"

_MESSAGE = (
    "The site's database did not answer ({kind}): too many requests at once,"
    " or the database is restarting. Try again in a few seconds."
)

_AFTER_COMMIT = {
    SAVED: (
        "The changes of this request were saved, but the site's database"
        " stopped answering ({kind}) before the answer was ready."
        " Do not send the request again: reload the page to see them."
    ),
    UNKNOWN: (
        "The site's database stopped answering ({kind}) while the changes of"
        " this request were being saved: they may or may not have been saved."
        " Check before sending the request again."
    ),
}


class DatabaseUnavailable:
    """The filter (see module)."""

    def __init__(self, app: Callable, retry_after: int = RETRY_AFTER):
        self.app = app
        try:
            self.retry_after = int(retry_after)
        except (TypeError, ValueError):
            self.retry_after = -1
        if self.retry_after < 0:
            raise ValueError(
                f"retry_after: {retry_after!r} is not a number of seconds (0 or more)"
            )

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        started = []

        def tracked(status, headers, exc_info=None):
            started.append(status)
            return start_response(status, headers, exc_info)

        outcome = environ[OUTCOME] = {}
        try:
            return self.app(environ, tracked)
        except Exception as escaped:
            error = _database_error(escaped, outcome)
            if error is None or started:
                raise
            kind = type(error).__name__
            method = environ.get("REQUEST_METHOD", "GET")
            path = environ.get("PATH_INFO", "/")
            if error is not escaped:
                logger.warning(
                    "%s %s failed with %s, then Zope's error handling with %s: %s",
                    method,
                    path,
                    kind,
                    type(escaped).__name__,
                    escaped,
                )
            commit = outcome.get("commit")
            if commit in _AFTER_COMMIT:
                logger.error(
                    "500 for %s %s: the database stopped answering after its"
                    " commit began (changes %s): %s: %s",
                    method,
                    path,
                    commit,
                    kind,
                    str(error).strip(),
                )
                message = _AFTER_COMMIT[commit].format(kind=kind)
                return _answer(
                    environ,
                    start_response,
                    "500 Internal Server Error",
                    {"type": kind, "message": message, "changes": commit},
                    [],
                )
            logger.warning(
                "503 for %s %s: no database connection: %s: %s",
                method,
                path,
                kind,
                str(error).strip(),
            )
            return _answer(
                environ,
                start_response,
                "503 Service Unavailable",
                {"type": kind, "message": _MESSAGE.format(kind=kind)},
                [("Retry-After", str(self.retry_after))],
            )


def _database_error(escaped: Exception, outcome: dict) -> Exception | None:
    """The database error to answer for ``escaped``, the error that left
    the application: itself, or the one the request failed with before
    Zope's error handling failed (``FAILURE``); None for other errors."""
    if isinstance(escaped, UNAVAILABLE):
        return escaped
    return outcome.get(FAILURE)


def _answer(
    environ: dict, start_response: Callable, status: str, error: dict, headers: list
) -> list[bytes]:
    """Answer ``error`` (its ``type`` and ``message``, and for JSON any other
    keys) as JSON, HTML or text, whichever the request accepts."""
    message = error["message"]
    title = status.split(" ", 1)[1]
    accept = environ.get("HTTP_ACCEPT", "")
    if "application/json" in accept or "++api++" in environ.get("PATH_INFO", ""):
        # plone.restapi's shape of an error.
        body = json.dumps(error).encode()
        content_type = "application/json"
    elif "text/html" in accept:
        body = (
            f"<!DOCTYPE html><html><head><title>{title}</title>"
            f"</head><body><h1>{title}</h1>"
            f"<p>{html.escape(message)}</p></body></html>"
        ).encode()
        content_type = "text/html; charset=utf-8"
    else:
        body = f"{title}: {message}\n".encode()
        content_type = "text/plain; charset=utf-8"
    start_response(
        status,
        [
            ("Content-Type", content_type),
            ("Content-Length", str(len(body))),
            *headers,
            ("Cache-Control", "no-store"),
        ],
    )
    return [body]


def filter_app_factory(app: Callable, global_conf: dict, **local_conf) -> Callable:
    """PasteDeploy's entry point (``egg:plone_pgcatalog#database_unavailable``)."""
    return DatabaseUnavailable(app, local_conf.get("retry_after", RETRY_AFTER))
