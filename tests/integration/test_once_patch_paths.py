"""Differential: a patch of keyword lists stored once written straight into
its columns (``columns.once_patch``, ``processor._write_once``) leaves each
row as the write through ``idx`` and the trigger leaves it.

Both paths run the real ``processor._write_rows`` on the same rows of a
real site, each in a transaction rolled back; the rows after each are
compared whole (``idx``, ``meta``, every typed column, the list each
number names: numbers of lists new in a run differ, identities are not
rolled back).  Values drawn at random: strings of and past ``TEXT_KEPT``,
U+0001 (a NUL as stored), other scripts, duplicates, unsorted lists,
non-strings, lists of one key or of several, rows whose ``idx`` holds the
key already (older schemas, a list the column could not hold), and an
object without a row (``_INSERT_PATCHED``).
"""

from __future__ import annotations

from plone_pgcatalog.extraction import CatalogPatch
from plone_pgcatalog.store import columns
from plone_pgcatalog.store import processor
from psycopg.rows import tuple_row
from psycopg.types.json import Jsonb
from tests.integration.test_typed_columns import _site
from types import SimpleNamespace

import json
import psycopg
import random

ONCE = ("Subject", "allowedRolesAndUsers", "object_provides")

_STRINGS = [
    "a",
    "b",
    "Anonymous",
    "user:x",
    "",
    " ",
    "\x01",
    "a\x01b",
    "é",
    "e\u0301",
    "😀",
    "Z",
    "z",
    "x" * 499,
    "x" * 500,
    "x" * 501,
    "x" * 502,
    "ü" * 501,
    "y" * 700,
]
_OTHERS = [1, 1.0, 0, -2, True, False, None, ["n"], {"k": "v"}, 2**70]


def _value(rng: random.Random):
    shape = rng.random()
    if shape < 0.05:
        return rng.choice(["a", 5, None, True, {"a": 1}])  # not a list
    size = rng.randrange(0, 5)
    items = [rng.choice(_STRINGS) for _ in range(size)]
    if shape < 0.3 and items:
        items.insert(rng.randrange(len(items) + 1), rng.choice(_OTHERS))
    if shape > 0.8 and items:
        items.append(items[0])  # a duplicate
    if rng.random() < 0.5:
        items.sort(key=repr)
    return items


def _pre_state(rng: random.Random):
    """What the row's ``idx`` holds of a key before the patch: nothing (as
    stored once), a list the column holds (an older schema's row), or one
    it cannot (a number among the strings)."""
    return rng.choice([None, None, ["old"], ["old", 7]])


_CAPTURE = (
    "SELECT s.zoid, s.path, s.idx, s.meta::text,"
    " to_jsonb(s) - 'idx' - 'meta' - 'searchable_text' - 'allowedRolesAndUsers:set',"
    " (SELECT terms FROM pgcatalog_keyword_sets"
    ' WHERE id = s."allowedRolesAndUsers:set"),'
    ' s."allowedRolesAndUsers:set" IS NULL'
    " FROM pgcatalog_objects AS s WHERE s.zoid = ANY(%s) ORDER BY s.zoid"
)


def _run(conn, zoids, pre, patches, write_once, monkeypatch):
    monkeypatch.setattr(processor, "_write_once", write_once)
    with conn.transaction(force_rollback=True):
        with conn.cursor(row_factory=tuple_row) as cur:
            for zoid, held in pre.items():
                # Written as a row of an older schema: through the trigger
                # (whole), then the key put back where the trigger took it.
                cur.execute(
                    "UPDATE pgcatalog_objects SET idx = idx || %s WHERE zoid = %s",
                    (Jsonb(held), zoid),
                )
                cur.execute(
                    "SELECT set_config(%s, %s, true)",
                    (columns.KEPT_KEYS, json.dumps(list(ONCE))),
                )
                cur.execute(
                    "UPDATE pgcatalog_objects SET idx = idx || %s WHERE zoid = %s",
                    (Jsonb(held), zoid),
                )
                cur.execute("SELECT set_config(%s, '', true)", (columns.KEPT_KEYS,))
            pending = SimpleNamespace(rows={}, patches={p.zoid: p for p in patches})
            processor._write_rows(cur, pending)
            cur.execute(_CAPTURE, (zoids,))
            return cur.fetchall()


def test_both_paths_leave_the_same_rows(pg_layer, monkeypatch):
    _site(pg_layer, count=6)
    dsn = pg_layer["pgcatalog_dsn"]
    written = []
    write_once = processor._write_once

    def counting(*args):
        done = write_once(*args)
        written.append(len(done))
        return done

    def never(*args):
        return set()

    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT zoid, path FROM pgcatalog_objects WHERE path LIKE '/plone/%'"
            " ORDER BY zoid"
        ).fetchall()
        # An object without a row (``_INSERT_PATCHED``).
        [(ghost,)] = conn.execute(
            "SELECT o.zoid FROM object_state AS o WHERE NOT EXISTS (SELECT 1"
            " FROM pgcatalog_objects AS c WHERE c.zoid = o.zoid)"
            " ORDER BY o.zoid DESC LIMIT 1"
        ).fetchall()
        targets = [*rows, (ghost, "/plone/ghost")]
        zoids = [zoid for zoid, _ in targets]
        differences = []
        for seed in range(250):
            rng = random.Random(seed)
            keys = rng.sample(ONCE, rng.choice([1, 1, 1, 2, 3]))
            pre = {}
            patches = []
            for zoid, path in targets:
                if rng.random() < 0.2:
                    continue
                if zoid != ghost and rng.random() < 0.3:
                    held = {k: _pre_state(rng) for k in keys}
                    held = {k: v for k, v in held.items() if v}
                    if held:
                        pre[zoid] = held
                patches.append(
                    CatalogPatch(
                        zoid=zoid,
                        path=path,
                        values={k: _value(rng) for k in keys},
                        removed=(),
                        meta={},
                        update_metadata=False,
                    )
                )
            through_idx = _run(conn, zoids, pre, patches, never, monkeypatch)
            direct = _run(conn, zoids, pre, patches, counting, monkeypatch)
            if through_idx != direct:
                differences.append((seed, keys, through_idx, direct))
    assert sum(written) > 100  # the direct path did write rows
    for seed, keys, a, b in differences[:3]:
        for ra, rb in zip(a, b):
            if ra != rb:
                print(seed, keys, "\n  idx path:", ra, "\n  direct:  ", rb)
    assert [d[0] for d in differences] == []
