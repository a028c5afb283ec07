"""Errors raised by plone_pgcatalog.

Owns: the one error base and its subclasses.  Each subclass also inherits
what callers already catch (``CatalogError``, ``ValueError``, ZODB's
``ConflictError``), so code written for ZCatalog keeps working.

Must not import anything else from this package.
"""

from __future__ import annotations

from Products.ZCatalog.Catalog import CatalogError


class PGCatalogError(Exception):
    """Base of every error plone_pgcatalog raises."""


class PGCatalogConfigurationError(PGCatalogError, CatalogError):
    """The catalog is not usable as configured (no PostgreSQL, no storage)."""


class UnknownIndexError(PGCatalogError, CatalogError):
    """A query or a management call names an index that does not exist."""


class QueryError(PGCatalogError, ValueError):
    """A query value cannot be translated; the message names index and value."""
