"""plone_pgcatalog: Plone's portal_catalog as SQL over PostgreSQL JSONB.

The package is a Plone add-on; its pieces, in the order data flows through
them, are described in ``DESIGN.md`` of the project and in each module's
docstring.
"""

from plone_pgcatalog import indexqueue
from plone_pgcatalog import ordering
from plone_pgcatalog import security

# Content of a site whose catalog is ours reindexes the security of a
# subtree from the stored states (security.py); other sites keep CMFCore's.
security.install()
# CMFCore's indexing queue guard, per thread (indexqueue.py).
indexqueue.install()
# plone.folder's reorders without an event refresh positions (ordering.py).
ordering.install()
