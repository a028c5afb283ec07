"""Interfaces of plone_pgcatalog.

Owns: the contracts between the tool, the index translators (the extension
point for add-ons) and the write path.

Must not import implementation modules of this package.
"""

from __future__ import annotations

from plone.base.interfaces import IPloneCatalogTool
from zope.interface import Attribute
from zope.interface import Interface
from zope.publisher.interfaces.browser import IDefaultBrowserLayer


class IPGCatalogTool(IPloneCatalogTool):
    """``portal_catalog`` backed by PostgreSQL.

    Besides Plone's catalog API (``IPloneCatalogTool`` and, through it,
    CMFCore's ``ICatalogTool`` and ``IZCatalog``) it answers what the SQL
    side needs: which index definitions exist and where its site lives.
    """

    def getIndexDefinitions():
        """Return ``{name: index object}`` of every catalog index, as a
        read-only mapping.

        The index objects are ZCatalog's own plug-in index classes, kept
        only as definitions (meta_type, indexed attributes, options); they
        never hold data.
        """


#: What ``IIndexTranslator.extract`` returns for an object without a value.
MISSING = object()


class IIndexTranslator(Interface):
    """How one index type is extracted, stored and queried.

    Registered as a utility named after the index ``meta_type``; an add-on
    that brings its own index type registers one more.  Translators are
    pure: they see objects and query values, never a database.

    A translator's SQL reads its own index's values only (its key of
    ``idx``, its column): a search made before a commit lays over the
    stored rows only the partial reindexes of the indexes it tests or
    sorts on (``PendingCatalog.overlay``).
    """

    query_options = Attribute("Options accepted in a query record, as ZCatalog.")

    def extract(index, obj):
        """Return the JSON-ready value stored in ``idx`` for ``obj``.

        ``MISSING`` (from this module) means that the
        object has no value for this index, as ZCatalog leaves it out.
        """

    def where(index, query, context):
        """Return ``(sql.Composable, params)`` restricting rows to ``query``.

        ``query`` is a ``Products.ZCatalog.query.IndexQuery``, ``context``
        a ``plone_pgcatalog.query.QueryContext`` (site path, text search
        configurations, place in ZCatalog's query plan).  ``None`` means
        that the index found nothing to do: as in ZCatalog, the search then
        has no results.

        A translator may also offer ``sort_presence(index)``: the SQL
        condition of rows that have a sort value (default: ``idx`` has the
        index's key), or None when every row has one.

        A translator may also offer ``relevance(index, query, context)``
        returning ``(sql.Composable, params)`` of an integer score; a
        result that is not sorted on an index is then ordered by it.
        """

    def sort_expressions(index):
        """Return SQL expressions to ``ORDER BY`` for this index, or ``None``
        when the index cannot sort (ZCatalog then raises CatalogError)."""

    # Optional: ``column_kind``, the kind of typed column the index type's
    # values get (``store.columns.KINDS``: "text", "keywords", "boolean",
    # "integer", "range"), derived in SQL from the value ``extract`` gives;
    # None for none.  A translator that declares the attribute is called as
    # ``sort_expressions(index, context)`` and uses the column where
    # ``context.column(name, kind)`` says it is ready.  For "keywords",
    # ``extract`` gives a list or nothing (``MISSING``), never one value:
    # facet counts read ``idx`` only where the column is empty or holds a
    # long string by its first characters.  A list of strings is then
    # stored once, in its column (schema 14, ``store.columns.stored_once``):
    # once the column is ready, ``idx`` no longer holds the key of a row
    # whose column gives the list back.  SQL that reads the index's whole
    # JSON value must read it with ``store.columns.value_of(row, name,
    # context.columns)`` (or the whole row's with ``whole_idx``), never
    # ``idx -> name`` alone; conditions on the column itself need neither.
    # A "text" or "keywords" column holds a string longer than
    # ``store.columns.TEXT_KEPT`` characters by its first ``TEXT_KEPT + 1``
    # (schema 16): test a query value on the column only where
    # ``registry.fits(kind, value)``, else on ``idx``.  For "text"
    # (``store.columns.COMPUTED_KINDS``), an index without its ready column
    # gets from ``context.column`` the value the column would hold,
    # computed from ``idx``: compare it as the column; ``sql_indexes``
    # then declares a B-tree on ``store.columns.held_value`` (as
    # ``FieldTranslator``'s does), which searches so written use.

    # Optional: ``translation_cacheable = True``: the translation of a query
    # naming an index of the type depends only on the index's stored
    # definition, the query's values and ``context`` (no clock, request or
    # setting read in ``where``/``relevance``/``sort_expressions``), so each
    # Zope process keeps it per query (``translations``).  Without it, such
    # queries are translated on every search.  With it, ``cache_value(index,
    # value)`` may return a hashable stand-in for a query value that the
    # translator (``where``, ``relevance``, ``sort_expressions``) reads only
    # in part (the minute of a DateTime), or None.
    #
    # Optional: ``sql_indexes(index_name)``, the SQL indexes the type needs,
    # as ``(kind, method, expression, predicate)`` tuples: ``kind`` a letter
    # that tells an index's SQL indexes apart ("i" for the main one),
    # ``method`` "btree" or "gin", ``expression`` the indexed expression as
    # the translator's own queries write it (``store.layout``), ``predicate``
    # None or a condition that narrows the partial index.  The catalog
    # creates them when an index of the type is added, and drops them with
    # it; without the method, the type gets none.
    #
    # Optional: ``residue(index, query, context)``: for a test whose
    # matches are nearly all rows, the rows it leaves out, as ``(clause,
    # values)`` that SQL indexes answer, or None.  A search whose other
    # conditions name only the grouped columns counts its matches as their
    # groups' counts less these rows (``query._group_count``): the
    # effective range (``DateRangeTranslator``), where ``context
    # .group_counts`` names the column (its indexes are there).
    #
    # Optional: ``index_view``, the class of the index object that
    # ``portal_catalog.Indexes[name]`` gives for the type (a subclass of
    # ``plone_pgcatalog.indexes.IndexView``, such as ``ValueIndexView`` for
    # one value per object): ``uniqueValues``, ``numObjects`` and the rest
    # answered from SQL.  Without it, the type's empty definition answers.
    # So an add-on's index type is one module: its translator, with its
    # SQL indexes and its view.


class IPGCatalogLayer(IDefaultBrowserLayer):
    """Requests of sites where plone_pgcatalog is installed (the profile's
    ``browserlayer.xml``): views and services that need this catalog
    (``@facet-count``) are registered for it."""
