"""Keyword lists stored once (``columns.stored_once``): the SQL that
reads them where they are and the trigger that takes them out of
``idx``, as text; and the commit's patches grouped by their keys.  No
database (``tests/integration/test_stored_once.py`` runs them)."""

from __future__ import annotations

from plone_pgcatalog.extraction import CatalogPatch
from plone_pgcatalog.store import columns
from plone_pgcatalog.store.processor import _by_keys
from psycopg import sql

import re

READY = {
    "Subject": "keywords",
    "allowedRolesAndUsers": "keywords",
    "allowedRolesAndUsers:set": "set",
    "portal_type": "text",
}


def test_only_keywords_columns_are_stored_once():
    assert columns.stored_once(READY) == {"Subject", "allowedRolesAndUsers"}
    assert columns.stored_once({"portal_type": "text"}) == frozenset()


def test_whole_idx_gives_back_the_lists_idx_does_not_hold():
    text = columns.whole_idx(sql.SQL("s"), READY).as_string(None)
    assert text == (
        "(jsonb_strip_nulls(jsonb_build_object("
        "'Subject', to_jsonb(s.\"Subject\"), "
        "'allowedRolesAndUsers', to_jsonb(s.\"allowedRolesAndUsers\")))"
        " || s.idx)"
    )
    # ``idx`` comes last: where it holds a list (one the column cannot give
    # back), its own value wins.
    assert columns.whole_idx(sql.SQL("s"), {}).as_string(None) == "s.idx"


def test_value_of_reads_the_column_where_idx_has_no_value():
    assert columns.value_of(sql.SQL("o"), "Subject", READY).as_string(None) == (
        "COALESCE((o.idx -> 'Subject'), to_jsonb(o.\"Subject\"))"
    )
    assert columns.value_of(sql.SQL("o"), "portal_type", READY).as_string(None) == (
        "(o.idx -> 'portal_type')"
    )
    # A column not ready: its lists are all in ``idx``.
    assert columns.value_of(sql.SQL("o"), "Subject", {}).as_string(None) == (
        "(o.idx -> 'Subject')"
    )


def test_the_trigger_takes_out_what_the_column_gives_back():
    typed = {name: kind for name, kind in READY.items()}
    ddl = columns.trigger_ddl(typed, columns.stored_once(READY)).as_string(None)
    for name in ("Subject", "allowedRolesAndUsers"):
        # The key tested first (schema 15): where ``idx`` holds none, the
        # column's JSON is not made.
        assert (
            f"IF NEW.idx ? ''{name}'' AND NEW.\"{name}\" IS NOT NULL"
            f" AND (NEW.idx -> ''{name}'')::text"
            f" = (to_jsonb(NEW.\"{name}\"))::text AND NOT kept ? ''{name}''"
            f" THEN NEW.idx := NEW.idx - ''{name}''; END IF;"
        ) in ddl
    assert "NEW.idx - ''portal_type''" not in ddl
    # Whole rows derive every column; a write that names no key derives
    # the columns of the keys whose value it changes.
    assert "IF TG_OP = ''INSERT'' OR whole THEN" in ddl
    assert "current_setting(''pgcatalog.whole_rows'', true)" in ddl
    assert (
        "IF (NEW.idx -> ''Subject'') IS DISTINCT FROM (OLD.idx -> ''Subject'')"
    ) in ddl
    # The keys an ``UPDATE`` names are looked for in groups, each behind
    # one test, every key in exactly one group.
    groups = re.findall(r"IF patched \?\| ''\{([^}]*)\}''::text\[\] THEN", ddl)
    named = [key for group in groups for key in group.split(",")]
    keys = sorted({columns.source_key(name) for name in typed})
    assert sorted(named) == keys and 1 < len(groups) < len(keys)
    for key in keys:
        assert ddl.count(f"IF patched ? ''{key}'' THEN") == 1
    # Made before the column is ready (``add_column``): nothing taken out.
    assert "NEW.idx - " not in columns.trigger_ddl(typed).as_string(None)


def _patch(zoid: int, values: dict, removed=()) -> CatalogPatch:
    return CatalogPatch(
        zoid=zoid,
        path=f"/plone/p{zoid}",
        values=values,
        removed=tuple(removed),
        meta={},
        update_metadata=False,
    )


def test_patches_are_written_by_the_keys_they_change():
    sharing = [_patch(n, {"allowedRolesAndUsers": ["Anonymous"]}) for n in (1, 2)]
    subject = _patch(3, {"Subject": ["blue"]})
    cleared = _patch(4, {}, removed=["Subject"])
    groups = _by_keys([sharing[0], subject, sharing[1], cleared])
    assert groups == [
        (["allowedRolesAndUsers"], sharing),
        (["Subject"], [subject, cleared]),
    ]


def test_a_lists_number_is_taken_from_its_column_once_derived():
    """The trigger makes a list from ``idx`` once: its number is given by
    ``pgcatalog_keyword_set`` of the list's column just derived, in every
    form (a row written whole, a key named, a key changed)."""
    typed = {name: kind for name, kind in READY.items()}
    ddl = columns.trigger_ddl(typed, columns.stored_once(READY)).as_string(None)
    numbered = (
        'NEW."allowedRolesAndUsers:set" :='
        ' pgcatalog_keyword_set(NEW."allowedRolesAndUsers");'
    )
    assert ddl.count(numbered) == 3
    assert "pgcatalog_keyword_set(CASE" not in ddl
    # Alone (its list's column not derived with it), from ``idx``.
    alone = columns._derive_into(["allowedRolesAndUsers:set"], typed)
    assert alone.as_string(None).startswith("SELECT pgcatalog_keyword_set(CASE")


REGISTERED = {name: (kind, True) for name, kind in READY.items()}


def test_a_patch_of_lists_stored_once_is_written_in_their_columns():
    """``once_patch``: the list and its number set from the value, the
    rows whose ``idx`` holds the key or whose column cannot give the value
    back left to the write through ``idx``."""
    text = columns.once_patch(["allowedRolesAndUsers"], REGISTERED).as_string(None)
    assert "idx =" not in text  # ``idx`` untouched: the trigger does not fire
    # Each distinct list numbered once, then given to its rows.
    assert 'pgcatalog_keyword_set(l."allowedRolesAndUsers")' in text
    assert '"allowedRolesAndUsers:set" = d."allowedRolesAndUsers:set"' in text
    assert "FROM (SELECT DISTINCT vals FROM p)" in text
    assert "NOT s.idx ?| '{allowedRolesAndUsers}'::text[]" in text
    assert '(to_jsonb(l."allowedRolesAndUsers"))::text = (l.vals ->' in text
    both = columns.once_patch(["Subject", "allowedRolesAndUsers"], REGISTERED)
    assert '"Subject" = d."Subject"' in both.as_string(None)


def test_other_patches_are_written_through_idx():
    assert columns.once_patch([], REGISTERED) is None
    # A key of another kind, alone or with a list.
    assert columns.once_patch(["portal_type"], REGISTERED) is None
    assert columns.once_patch(["Subject", "portal_type"], REGISTERED) is None
    # A key without a column, or whose column is not ready.
    assert columns.once_patch(["pgc_tags"], REGISTERED) is None
    filling = {**REGISTERED, "Subject": ("keywords", False)}
    assert columns.once_patch(["Subject"], filling) is None
    # Its list's number is not ready (being filled): the trigger derives it.
    numbering = {**REGISTERED, "allowedRolesAndUsers:set": ("set", False)}
    assert columns.once_patch(["allowedRolesAndUsers"], numbering) is None
