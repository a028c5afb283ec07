"""plone_pgcatalog: Plone's portal_catalog as SQL over PostgreSQL JSONB.

The package is a Plone add-on; its pieces, in the order data flows through
them, are described in ``DESIGN.md`` of the project and in each module's
docstring.
"""
