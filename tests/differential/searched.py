"""What a query gives, as the differential tests of values compare it
(``test_field_value_types``, ``test_index_value_types``,
``test_long_values``, ``test_nul_characters``)."""

from __future__ import annotations

import copy
import transaction


def outcome(catalog, query: dict) -> tuple:
    """``(paths in the result's order, actual_result_count)``, or
    ``("raised", the first three classes of the exception's MRO)``."""
    try:
        brains = catalog.unrestrictedSearchResults(**copy.deepcopy(query))
        return [brain.getPath() for brain in brains], brains.actual_result_count
    except Exception as exc:  # the outcome to compare
        return ("raised", [cls.__name__ for cls in type(exc).__mro__][:3])


def ids_found(catalog, queries) -> dict:
    """``{name: ids}`` of ``queries`` (``(name, query, ordered?)``): in the
    result's order where the query sorts, else sorted."""
    found = {}
    for name, query, ordered in queries:
        ids = [brain.getId for brain in catalog.unrestrictedSearchResults(**query)]
        found[name] = ids if ordered else sorted(ids)
    return found


def before_and_after_commit(found) -> dict:
    """``found()`` before the transaction's commit (this transaction's
    changes laid over the rows) and after it: ``{"pending": ...,
    "committed": ...}``."""
    pending = found()
    transaction.commit()
    return {"pending": pending, "committed": found()}
