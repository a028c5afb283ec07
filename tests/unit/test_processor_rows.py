"""The parameters the state processor binds for pending rows and patches.

Covers ``plone_pgcatalog.store.processor.row_arrays`` (rows of objects whose
rows cataloged in full: one array per column of one ``UPDATE``),
and ``patch_arrays`` (partial reindexes: one array per column of one
merge); the inserts of rows not stored yet read the same arrays.  Each array
is checked against the column its position feeds in the statement's
``unnest(...) AS r(...)``, so a reordering on either side fails.  The
arrays travel in binary (``%b``): in text each JSON value and string is
quoted and escaped into the array's text, and parsed back (1,000 rows'
metadata, values and removed keys: 22.5 ms in text, 9.0 in binary).
Pure: the statements are only read as text.
"""

from __future__ import annotations

from plone_pgcatalog.extraction import CatalogPatch
from plone_pgcatalog.extraction import CatalogRow
from plone_pgcatalog.store import processor
from plone_pgcatalog.store.processor import keeping_arrays
from plone_pgcatalog.store.processor import patch_arrays
from plone_pgcatalog.store.processor import row_arrays
from psycopg.types.json import Json
from psycopg.types.json import Jsonb

import pytest
import re


def _row(zoid, path, idx=None, meta=None, text=None, config="simple"):
    return CatalogRow(
        zoid=zoid,
        path=path,
        idx={} if idx is None else idx,
        meta={} if meta is None else meta,
        searchable_text=text,
        text_config=config,
    )


def _patch(zoid, path, **kw):
    fields = dict(values={}, removed=(), meta={}, update_metadata=False)
    fields.update(kw)
    return CatalogPatch(zoid=zoid, path=path, **fields)


def _unnest_columns(statement) -> list[tuple[str, str]]:
    """``(column name, SQL array type)`` of the statement's ``unnest``."""
    text = statement.as_string(None)
    found = re.search(r"unnest\((.*?)\)\s+AS \w+\((.*?)\)", text)
    types = re.findall(r"%b::(\w+)\[\]", found.group(1))
    names = [n.strip() for n in found.group(2).split(",")]
    assert len(types) == len(names)
    return list(zip(names, types))


def _plain(value):
    return value.obj if isinstance(value, (Json, Jsonb)) else value


def _by_column(statement, arrays) -> dict[str, list]:
    columns = _unnest_columns(statement)
    assert len(arrays) == len(columns)
    return {
        name: [_plain(v) for v in array] for (name, _), array in zip(columns, arrays)
    }


# -- row_arrays ----------------------------------------------------------------


def test_row_arrays_has_one_array_per_column_of_the_update():
    arrays = row_arrays([_row(1, "/plone/a")])
    assert len(arrays) == len(_unnest_columns(processor._UPDATE_ROWS)) == 8
    assert processor._UPDATE_ROWS.as_string(None).count("%b") == 8


def test_row_arrays_feed_each_column_its_value():
    rows = [
        _row(
            11,
            "/plone/folder/doc",
            idx={"portal_type": "Document", "Subject": ["a"]},
            meta={"Title": "Doc"},
            text="some words",
            config="english",
        ),
        _row(12, "/plone", idx={"portal_type": "Plone Site"}),
    ]
    assert _by_column(processor._UPDATE_ROWS, row_arrays(rows)) == {
        "zoid": [11, 12],
        "path": ["/plone/folder/doc", "/plone"],
        "parent_path": ["/plone/folder", "/"],
        "path_depth": [3, 1],
        "idx": [
            {"portal_type": "Document", "Subject": ["a"]},
            {"portal_type": "Plone Site"},
        ],
        "meta": [{"Title": "Doc"}, {}],
        "config": ["english", None],
        "words": ["some words", None],
    }


def test_keeping_arrays_feed_the_kept_indexes_of_each_row():
    rows = [
        CatalogRow(1, "/plone/a", {"Subject": ["a"]}, {}, None, "simple", ("Title",)),
        CatalogRow(2, "/plone/b", {}, {}, None, "simple", ("SearchableText",)),
    ]
    columns = _by_column(processor._UPDATE_KEEPING, keeping_arrays(rows))
    assert columns["idx"] == [{"Subject": ["a"]}, {}]
    assert columns["kept"] == [["Title"], ["SearchableText"]]
    assert columns["keep_text"] == [False, True]
    assert columns["words"] == [None, None]


def test_row_arrays_send_index_values_as_jsonb_and_metadata_as_json():
    # ``meta`` is a json column (schema 4), ``idx`` a jsonb column.
    _, _, _, _, idx, meta, _, _ = row_arrays([_row(1, "/plone/a")])
    assert type(idx[0]) is Jsonb
    assert type(meta[0]) is Json


def test_row_arrays_types_match_the_casts_of_the_statement():
    arrays = row_arrays([_row(1, "/plone/a", text="w"), _row(2, "/plone/b")])
    python_types = {
        "bigint": (int,),
        "integer": (int,),
        "text": (str, type(None)),
        "jsonb": (Jsonb,),
        "json": (Json,),
    }
    columns = _unnest_columns(processor._UPDATE_ROWS)
    for (name, sql_type), array in zip(columns, arrays):
        assert all(isinstance(v, python_types[sql_type]) for v in array), name


def test_row_arrays_of_a_row_with_empty_text_keep_its_config():
    arrays = _by_column(
        processor._UPDATE_ROWS,
        row_arrays([_row(1, "/plone/a", text="", config="german")]),
    )
    assert (arrays["config"], arrays["words"]) == (["german"], [""])


def test_row_arrays_of_a_row_without_text_send_no_config():
    arrays = _by_column(
        processor._UPDATE_ROWS,
        row_arrays([_row(1, "/plone/a", text=None, config="german")]),
    )
    assert (arrays["config"], arrays["words"]) == ([None], [None])


def test_row_arrays_keep_the_order_of_the_rows():
    rows = [_row(z, f"/plone/{z}") for z in (5, 3, 9)]
    zoids, paths, *_ = row_arrays(rows)
    assert zoids == [5, 3, 9]
    assert paths == ["/plone/5", "/plone/3", "/plone/9"]


def test_row_arrays_of_no_rows_are_empty():
    assert row_arrays([]) == ([],) * 8


# -- patch_arrays ----------------------------------------------------------------


def test_patch_arrays_has_one_array_per_column_of_the_merge():
    arrays = patch_arrays([_patch(1, "/plone/a")])
    assert len(arrays) == len(_unnest_columns(processor._PATCH_ROWS)) == 11
    assert processor._PATCH_ROWS.as_string(None).count("%b") == 11


def test_patch_arrays_feed_each_column_its_value():
    patches = [
        _patch(
            21,
            "/plone/a/b",
            values={"review_state": "published"},
            removed=("Subject", "expires"),
            meta={"Title": "B"},
            update_metadata=True,
            text_given=True,
            searchable_text="words",
            text_config="english",
        ),
        _patch(22, "/plone", values={}, removed=()),
    ]
    assert _by_column(processor._PATCH_ROWS, patch_arrays(patches)) == {
        "zoid": [21, 22],
        "path": ["/plone/a/b", "/plone"],
        "parent_path": ["/plone/a", "/"],
        "path_depth": [3, 1],
        "update_metadata": [True, False],
        "meta": [{"Title": "B"}, {}],
        "text_given": [True, False],
        "config": ["english", None],
        "words": ["words", None],
        "removed": [["Subject", "expires"], []],
        "vals": [{"review_state": "published"}, {}],
    }


def test_patch_arrays_types_match_the_casts_of_the_statement():
    arrays = patch_arrays([_patch(1, "/plone/a", text_given=True, searchable_text="w")])
    python_types = {
        "bigint": (int,),
        "integer": (int,),
        "boolean": (bool,),
        "text": (str, type(None)),
        "jsonb": (Jsonb,),
        "json": (Json,),
    }
    columns = _unnest_columns(processor._PATCH_ROWS)
    for (name, sql_type), array in zip(columns, arrays):
        assert all(isinstance(v, python_types[sql_type]) for v in array), name


def test_patch_arrays_send_removed_indexes_as_a_json_list():
    arrays = _by_column(
        processor._PATCH_ROWS, patch_arrays([_patch(1, "/p", removed=("a", "b"))])
    )
    assert arrays["removed"] == [["a", "b"]]


def test_patch_arrays_of_text_given_as_none_send_no_config():
    arrays = _by_column(
        processor._PATCH_ROWS,
        patch_arrays([_patch(1, "/p", text_given=True, searchable_text=None)]),
    )
    assert (arrays["text_given"], arrays["config"], arrays["words"]) == (
        [True],
        [None],
        [None],
    )


def test_patch_arrays_of_no_patches_are_empty():
    assert patch_arrays([]) == ([],) * 11


# -- the inserts take the updates' parameters ---------------------------------------


@pytest.mark.parametrize(
    "update, insert",
    [("_UPDATE_ROWS", "_INSERT_ROWS"), ("_PATCH_ROWS", "_INSERT_PATCHED")],
)
def test_the_insert_of_missing_rows_reads_the_same_arrays(update, insert):
    """``finalize`` runs both statements with one set of arrays."""
    update, insert = getattr(processor, update), getattr(processor, insert)
    assert _unnest_columns(insert) == _unnest_columns(update)
    assert insert.as_string(None).count("%b") == update.as_string(None).count("%b")


def test_the_processor_writes_no_column_of_object_state():
    """Objects that are not cataloged pay nothing for the catalog."""
    assert processor.CatalogStateProcessor().get_extra_columns() == []


def test_the_rows_json_is_orjson_s_with_the_standard_library_s_where_it_refuses():
    """``processor.dumps``: the JSON values json.dumps gives, faster; a key
    that is not a string and an integer beyond 64 bits, which orjson
    refuses, as json.dumps writes them."""
    import json

    value = {"Title": "Café", "n": [1, 2.5, None, True], "t": (1, "a")}
    assert json.loads(processor.dumps(value)) == json.loads(json.dumps(value))
    assert processor.dumps({1: "one"}) == b'{"1": "one"}'
    assert processor.dumps(2**70) == str(2**70).encode()
    # A float that is not finite: null (json.dumps wrote NaN, which
    # PostgreSQL refused).
    assert processor.dumps(float("nan")) == b"null"
    [row] = [_row(7, "/plone/a", idx={"Title": "A"}, meta={"Title": "A"})]
    for array in row_arrays([row])[4:6]:
        assert array[0].dumps is processor.dumps
    [patch] = [_patch(8, "/plone/b", values={"Title": "B"}, removed={"x"})]
    arrays = patch_arrays([patch])
    for position in (5, 9, 10):
        assert arrays[position][0].dumps is processor.dumps


def test_an_undo_is_not_followed_through_registries_and_tools():
    """``processor.holds_no_rows``: the classes whose objects an undo's walk
    to the cataloged holders of restored states stops at."""
    from plone_pgcatalog.store.processor import holds_no_rows

    assert holds_no_rows("five.localsitemanager.registry", "PersistentComponents")
    assert holds_no_rows(
        "zope.component.persistentregistry", "PersistentAdapterRegistry"
    )
    assert holds_no_rows(
        "Products.CMFUid.UniqueIdGeneratorTool", "UniqueIdGeneratorTool"
    )
    # Followed: B-trees (a folder's items, annotations), content, what holds
    # comments, and classes that cannot be imported.
    assert not holds_no_rows("BTrees.OOBTree", "OOBTree")
    assert not holds_no_rows("plone.app.discussion.conversation", "Conversation")
    assert not holds_no_rows("plone.app.contenttypes.content", "Document")
    assert not holds_no_rows("no.such.module", "Gone")
    assert not holds_no_rows("BTrees.OOBTree", "NoSuchClass")
    # Tools whose settings indexes read (workflow chains, type titles).
    assert not holds_no_rows("Products.CMFPlone.WorkflowTool", "WorkflowTool")
    assert not holds_no_rows("Products.CMFCore.TypesTool", "TypesTool")


def test_a_class_whose_module_fails_to_import_is_followed(tmp_path, monkeypatch):
    """An add-on half removed: its module raises on import.  The undo must
    not fail (zodb-pgjsonb aborts it on an error of the hook)."""
    from plone_pgcatalog.store.processor import holds_no_rows

    (tmp_path / "pgc_broken_addon.py").write_text("raise RuntimeError('gone')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert not holds_no_rows("pgc_broken_addon", "Tool")
