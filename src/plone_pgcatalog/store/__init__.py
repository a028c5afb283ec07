"""The catalog's physical layout in PostgreSQL, and all that depends on it.

The only package that names the table and its columns: ``layout`` (names
and value expressions), ``schema`` (DDL), ``connection`` (connections, the
JSON cursor), ``search`` (reads of one search and of single rows),
``overlay`` (a transaction's pending changes laid over the stored rows),
``relocation`` (rows of moved subtrees), ``reports`` (the statements of
``pgcatalog verify`` and ``stats``), ``processor`` (the only writer, at the
ZODB's two-phase commit), ``ddl`` (the one runner of deferred DDL) and
``upgrade5`` (schema 4 -> 5: the rows from ``object_state`` to the
catalog's own table, online).
Outside it, modules compose SQL from what ``layout`` gives them; a change of
layout lands here and in an upgrade step.

Must not import the tool, the brains or Zope's publisher.
"""
