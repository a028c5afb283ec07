"""Where to keep the text that snippets need (issue 18): measured.

Usage::

    .venv/bin/python benchmarks/snippet_storage.py [--docs 10000]
        [--dsn postgresql://postgres@127.0.0.1:5432/postgres]

``ts_headline`` needs each object's text as written (the ``searchable_text``
column keeps only its folded words as a ``tsvector``).  Two places are
possible: a ``text`` column of the catalog's table, or a table of its own
beside it (one row per object, keyed by ``zoid``).  In a scratch database
this builds the catalog's table in three variants (without the text, with
it in a column, with it beside) from the same generated documents and
measures:

- the size on disk (the table's heap, its TOAST, the text table), per
  ``--docs`` documents;
- the write cost: inserting every row (batches of 100, one ``unnest``
  statement each, as the state processor writes) and rewriting every row
  once (a reindex that leaves the text alone: ``UPDATE ... SET idx``);
- what the text costs searches that do not read it: a count over the
  table that reads every row's ``idx`` (a sequential scan, as large
  results and facet counts are);
- a snippet page: ``ts_headline`` of 20 rows' whole texts, and the
  catalog's own statement (``store.search.snippets``: passages around the
  first match) on the text table.

Texts are generated to the shape of a content site's pages: a title, a
description and a body whose length in words follows a log-normal law
(median 250 words, one in ten over about 1,100), from a vocabulary of
2,000 words with Zipf's frequencies.  Times are medians of 5 rounds;
compare ratios within a run.
"""

from __future__ import annotations

from plone_pgcatalog.fulltext import highlight
from plone_pgcatalog.store import search
from psycopg import sql
from psycopg.types.json import Json
from psycopg.types.json import Jsonb

import argparse
import math
import os
import psycopg
import random
import statistics
import time

SCRATCH = "pgcatalog_snippet_probe"
VARIANTS = ("without text", "text column", "text table")

_CREATE = """
CREATE TABLE objects (
    zoid bigint PRIMARY KEY, path text, idx jsonb, meta json,
    searchable_text tsvector{extra}
);
"""
# Named as the catalog's, so that ``store.search.snippets`` reads it.
_TEXT_TABLE = (
    "CREATE TABLE pgcatalog_texts (zoid bigint PRIMARY KEY REFERENCES objects"
    " ON DELETE CASCADE, config text NOT NULL, body text NOT NULL)"
)


def _vocabulary(rng: random.Random) -> tuple[list[str], list[float]]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = sorted(
        {
            "".join(rng.choice(letters) for _ in range(rng.randint(2, 11)))
            for _ in range(2200)
        }
    )[:2000]
    rng.shuffle(words)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    return words, weights


def documents(count: int, seed: int = 18) -> list[dict]:
    rng = random.Random(seed)
    words, weights = _vocabulary(rng)
    docs = []
    for number in range(count):
        length = max(20, int(rng.lognormvariate(math.log(250), 1.2)))
        body = rng.choices(words, weights, k=length)
        # Sentences: a capital, a full stop every 8 to 20 words.
        sentences, start = [], 0
        while start < len(body):
            end = start + rng.randint(8, 20)
            sentence = " ".join(body[start:end])
            sentences.append(sentence[:1].upper() + sentence[1:] + ".")
            start = end
        title = " ".join(rng.choices(words, weights, k=5)).capitalize()
        description = " ".join(rng.choices(words, weights, k=20)).capitalize() + "."
        text = f"page-{number} {title} {description} {' '.join(sentences)}"
        docs.append(
            {
                "zoid": number + 1,
                "path": f"/plone/section-{number % 10}/page-{number}",
                "idx": {
                    "portal_type": "Document" if number % 3 else "News Item",
                    "review_state": "published" if number % 2 else "private",
                    "Title": title,
                    "Subject": rng.sample(words[:50], 2),
                },
                "meta": {"Title": title, "Description": description},
                "text": text,
            }
        )
    return docs


def _fill(conn: psycopg.Connection, variant: str, docs: list[dict]) -> float:
    """Write every row, 100 a statement; the seconds it took."""
    column = variant == "text column"
    insert = sql.SQL(
        "INSERT INTO objects (zoid, path, idx, meta, searchable_text{extra})"
        " SELECT d.zoid, d.path, d.idx, d.meta,"
        " to_tsvector('simple'::regconfig, lower(d.body)){value}"
        " FROM unnest(%s::bigint[], %s::text[], %s::jsonb[], %s::json[],"
        " %s::text[]) AS d(zoid, path, idx, meta, body)"
    ).format(
        extra=sql.SQL(", body" if column else ""),
        value=sql.SQL(", d.body" if column else ""),
    )
    texts = sql.SQL(
        "INSERT INTO pgcatalog_texts (zoid, config, body)"
        " SELECT d.zoid, 'english', d.body"
        " FROM unnest(%s::bigint[], %s::text[]) AS d(zoid, body)"
    )
    started = time.perf_counter()
    for start in range(0, len(docs), 100):
        batch = docs[start : start + 100]
        with conn.transaction():
            conn.execute(
                insert,
                (
                    [d["zoid"] for d in batch],
                    [d["path"] for d in batch],
                    [Jsonb(d["idx"]) for d in batch],
                    [Json(d["meta"]) for d in batch],
                    [d["text"] for d in batch],
                ),
            )
            if variant == "text table":
                conn.execute(
                    texts, ([d["zoid"] for d in batch], [d["text"] for d in batch])
                )
    return time.perf_counter() - started


def _rewrite(conn: psycopg.Connection, count: int) -> float:
    """Every row's ``idx`` written again, 100 a statement (the text as it was)."""
    statement = (
        "UPDATE objects AS o SET idx = o.idx || jsonb_build_object('n', %s::int)"
        " WHERE o.zoid = ANY(%s::bigint[])"
    )
    started = time.perf_counter()
    for start in range(1, count + 1, 100):
        with conn.transaction():
            conn.execute(statement, (start, list(range(start, start + 100))))
    return time.perf_counter() - started


def _median(conn: psycopg.Connection, statement: str, params=(), rounds: int = 5):
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        conn.execute(statement, params).fetchall()
        times.append(time.perf_counter() - started)
    return statement and statistics.median(times)


def measure(dsn: str, variant: str, docs: list[dict]) -> dict:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS pgcatalog_texts, objects")
        conn.execute(
            _CREATE.format(extra=", body text" if variant == "text column" else "")
        )
        if variant == "text table":
            conn.execute(_TEXT_TABLE)
        fill = _fill(conn, variant, docs)
        rewrite = _rewrite(conn, len(docs))
        conn.execute("VACUUM (FULL, ANALYZE) objects")
        if variant == "text table":
            conn.execute("VACUUM (FULL, ANALYZE) pgcatalog_texts")
        sizes = conn.execute(
            "SELECT pg_relation_size('objects'),"
            " coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0),"
            " pg_total_relation_size('objects'),"
            " coalesce(pg_total_relation_size(to_regclass('pgcatalog_texts')), 0)"
            " FROM pg_class AS c WHERE c.oid = 'objects'::regclass"
        ).fetchone()
        conn.execute("SET max_parallel_workers_per_gather = 0")
        scan = _median(
            conn,
            "SELECT count(*) FROM objects WHERE idx ->> 'review_state' = 'published'",
        )
        page = list(range(1, len(docs) + 1, max(1, len(docs) // 20)))[:20]
        source = (
            "SELECT zoid, body, 'english' AS config FROM objects"
            if variant == "text column"
            else "SELECT zoid, body, config FROM pgcatalog_texts"
        )
        snippet = passages = None
        word = docs[0]["text"].split()[3].strip(".").lower()
        if variant != "without text":
            snippet = _median(
                conn,
                f"SELECT s.zoid, ts_headline(s.config::regconfig, s.body,"
                f" to_tsquery(s.config::regconfig, %s), 'MaxFragments=1')"
                f" FROM ({source}) AS s WHERE s.zoid = ANY(%s)",
                (word, page),
            )
        if variant == "text table":
            # What a page of results costs: the catalog's own statement,
            # passages around the first match.
            found = highlight(word)
            times = []
            for _ in range(5):
                started = time.perf_counter()
                search.snippets(conn, page, found.query, found.words)
                times.append(time.perf_counter() - started)
            passages = statistics.median(times)
        conn.execute("DROP TABLE IF EXISTS pgcatalog_texts, objects")
    return {
        "passages": passages,
        "heap": sizes[0],
        "toast": sizes[1],
        "table": sizes[2],
        "text table": sizes[3],
        "fill": fill,
        "rewrite": rewrite,
        "scan": scan,
        "snippet": snippet,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument(
        "--dsn",
        default=os.environ.get(
            "PGCATALOG_TEST_DSN", "postgresql://postgres@127.0.0.1:5432/postgres"
        ),
    )
    args = parser.parse_args(argv)
    docs = documents(args.docs)
    text_bytes = sum(len(d["text"].encode()) for d in docs)
    with psycopg.connect(args.dsn, autocommit=True) as admin:
        admin.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(SCRATCH)
            )
        )
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(SCRATCH)))
    scratch = psycopg.conninfo.make_conninfo(args.dsn, dbname=SCRATCH)
    try:
        results = {variant: measure(scratch, variant, docs) for variant in VARIANTS}
    finally:
        with psycopg.connect(args.dsn, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    sql.Identifier(SCRATCH)
                )
            )
    mb = 1024 * 1024
    print(
        f"{args.docs} documents, {text_bytes / mb:.1f} MiB of text"
        f" (median {statistics.median(len(d['text']) for d in docs):.0f} bytes)"
    )
    base = results["without text"]
    for variant, found in results.items():
        print(
            f"- {variant}: heap {found['heap'] / mb:.1f} MiB,"
            f" TOAST {found['toast'] / mb:.1f} MiB,"
            f" table in all {found['table'] / mb:.1f} MiB,"
            f" text table {found['text table'] / mb:.1f} MiB;"
            f" writing {found['fill']:.2f} s"
            f" ({found['fill'] / base['fill']:.2f}x),"
            f" rewriting idx {found['rewrite']:.2f} s"
            f" ({found['rewrite'] / base['rewrite']:.2f}x);"
            f" a scan of idx {found['scan'] * 1000:.1f} ms"
            f" ({found['scan'] / base['scan']:.2f}x)"
            + (
                f"; 20 snippets of whole texts {found['snippet'] * 1000:.2f} ms"
                if found["snippet"] is not None
                else ""
            )
            + (
                f", of passages (store.search.snippets)"
                f" {found['passages'] * 1000:.2f} ms"
                if found["passages"] is not None
                else ""
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
