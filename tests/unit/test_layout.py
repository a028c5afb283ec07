"""The physical layout is known to ``plone_pgcatalog.store`` alone.

A change of the catalog's table (schema 5) must land in that package and in
the upgrade steps that migrate to it, not across the code base.
"""

from __future__ import annotations

from pathlib import Path
from plone_pgcatalog.store import layout

import plone_pgcatalog
import pytest

PACKAGE = Path(plone_pgcatalog.__file__).parent

#: Modules outside ``store`` that may name the table, and why.
ALLOWED = {
    # Upgrade steps name what they migrate.
    "upgrades.py",
    # Test fixtures snapshot zodb-pgjsonb's tables, the catalog's among them.
    "testing.py",
}


def _modules_outside_the_store() -> list[Path]:
    return sorted(
        path
        for path in PACKAGE.rglob("*.py")
        if "store" not in path.relative_to(PACKAGE).parts and path.name not in ALLOWED
    )


def test_there_are_modules_to_check():
    names = {path.name for path in _modules_outside_the_store()}
    assert {"query.py", "registry.py", "tool.py", "cli.py", "indexes.py"} <= names


@pytest.mark.parametrize("table", [layout.TABLE, layout.OBJECTS], ids=str)
@pytest.mark.parametrize(
    "path",
    _modules_outside_the_store(),
    ids=lambda path: str(path.relative_to(PACKAGE)),
)
def test_only_the_store_names_the_tables(path, table):
    """The catalog's table, and zodb-pgjsonb's that it reads beside it."""
    table = table.as_string(None)
    lines = [
        f"{number}: {line.strip()}"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if table in line
    ]
    assert not lines, f"{path.name} names {table}; ask store.layout instead"


def test_index_value_expressions_are_the_layouts():
    assert layout.json_key("Subject").as_string(None) == "(idx -> 'Subject')"
    assert (
        layout.text_key("it's").as_string(None) == "((idx ->> 'it''s') COLLATE \"C\")"
    )
    assert layout.words("Title").as_string(None) == (
        "to_tsvector('simple'::regconfig, COALESCE(idx ->> 'Title', ''))"
    )
    assert layout.has_key("start").as_string(None) == "idx ? 'start'"
    assert layout.TABLE.as_string(None) == "pgcatalog_objects"
