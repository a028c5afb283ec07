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

_MESSAGE = (
    "The site's database did not answer ({kind}): too many requests at once,"
    " or the database is restarting. Try again in a few seconds."
)


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

        try:
            return self.app(environ, tracked)
        except UNAVAILABLE as error:
            if started:
                raise
            logger.warning(
                "503 for %s %s: no database connection: %s: %s",
                environ.get("REQUEST_METHOD", "GET"),
                environ.get("PATH_INFO", "/"),
                type(error).__name__,
                str(error).strip(),
            )
            return self._unavailable(environ, start_response, type(error).__name__)

    def _unavailable(
        self, environ: dict, start_response: Callable, kind: str
    ) -> list[bytes]:
        message = _MESSAGE.format(kind=kind)
        accept = environ.get("HTTP_ACCEPT", "")
        if "application/json" in accept or "++api++" in environ.get("PATH_INFO", ""):
            # plone.restapi's shape of an error.
            body = json.dumps({"type": kind, "message": message}).encode()
            content_type = "application/json"
        elif "text/html" in accept:
            body = (
                "<!DOCTYPE html><html><head><title>Service Unavailable</title>"
                "</head><body><h1>Service Unavailable</h1>"
                f"<p>{html.escape(message)}</p></body></html>"
            ).encode()
            content_type = "text/html; charset=utf-8"
        else:
            body = f"Service Unavailable: {message}\n".encode()
            content_type = "text/plain; charset=utf-8"
        start_response(
            "503 Service Unavailable",
            [
                ("Content-Type", content_type),
                ("Content-Length", str(len(body))),
                ("Retry-After", str(self.retry_after)),
                ("Cache-Control", "no-store"),
            ],
        )
        return [body]


def filter_app_factory(app: Callable, global_conf: dict, **local_conf) -> Callable:
    """PasteDeploy's entry point (``egg:plone_pgcatalog#database_unavailable``)."""
    return DatabaseUnavailable(app, local_conf.get("retry_after", RETRY_AFTER))
