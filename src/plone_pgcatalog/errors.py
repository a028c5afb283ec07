"""Errors raised by plone_pgcatalog.

Owns: the one error base and its subclasses.  Each subclass also inherits
what callers already catch (``CatalogError``, ``ValueError``, ZODB's
``ConflictError``), so code written for ZCatalog keeps working.

Must not import anything else from this package.
"""

from __future__ import annotations

from DateTime.interfaces import DateError as DateTimeDateError
from DateTime.interfaces import SyntaxError as DateTimeSyntaxError
from DateTime.interfaces import TimeError as DateTimeTimeError
from Products.ZCatalog.Catalog import CatalogError
from Products.ZCTextIndex.ParseTree import ParseError
from transaction.interfaces import TransientError


class PGCatalogError(Exception):
    """Base of every error plone_pgcatalog raises."""


class PGCatalogConfigurationError(PGCatalogError, CatalogError):
    """The catalog is not usable as configured (no PostgreSQL, no storage)."""


class UnknownIndexError(PGCatalogError, CatalogError):
    """A query or a management call names an index that does not exist."""


class QueryError(PGCatalogError, ValueError):
    """A query value cannot be translated; the message names index and value."""


class TextQueryError(QueryError, ParseError):
    """A full-text search string without a word to search (only
    punctuation, operators or negated words): where ZCTextIndex raises its
    ``ParseError``, which Plone's consumers catch (the search page shows
    nothing, the Catalog vocabulary of related items and folder contents
    drops SearchableText and lists everything)."""


class SearchTimeout(PGCatalogError, CatalogError):
    """A catalog read ran longer than the catalog's statement timeout and
    PostgreSQL cancelled it; the request's snapshot stays usable."""


class ConnectionLost(PGCatalogError, TransientError):
    """The PostgreSQL connection of the request's catalog reads was lost
    (a server restart, ``pg_terminate_backend``, a network failure).  A
    ``TransientError``: Zope's publisher runs the request again (three
    times at most), in a new transaction, for which zodb-pgjsonb connects
    anew."""


class DateSyntaxError(QueryError, DateTimeSyntaxError):
    """A query date DateTime cannot parse (also DateTime's SyntaxError)."""


class InvalidDateError(QueryError, DateTimeDateError):
    """A query date that does not exist (also DateTime's DateError)."""


class InvalidTimeError(QueryError, DateTimeTimeError):
    """A query time that does not exist (also DateTime's TimeError)."""


def date_error(index_name: str, value, cause: Exception | None = None) -> QueryError:
    """The error for a query date of ``index_name`` that is not one.

    Of DateTime's own class where DateTime refused it, so that callers
    catching DateTime's errors (as ZCatalog lets them through) still do.
    """
    message = f"index {index_name!r}: {value!r} is not a date"
    for base, error in (
        (DateTimeSyntaxError, DateSyntaxError),
        (DateTimeDateError, InvalidDateError),
        (DateTimeTimeError, InvalidTimeError),
    ):
        if isinstance(cause, base):
            return error(message)
    return QueryError(message)
