"""The write scenarios, run after the read scenarios on the same content.

Owns: timing edits, workflow transitions, the rename and the sharing
change of a folder with 1,000 descendants, and ``clearFindAndRebuild``,
each through Plone's own APIs and each ending with a commit (the commit is
where both backends pay for their catalog writes).

Every function gets a ``session`` (see worker.py) and returns plain data.
"""

from __future__ import annotations

from content import DocSpec

import time
import transaction

#: Documents edited and transitioned (each on its own commit).
EDITS = 50
#: The big folder: SUBFOLDERS folders of documents, 1,000 descendants in
#: all unless ``--big-folder`` says otherwise.
BIG_FOLDER = "big-folder"
SUBFOLDERS = 10
BIG_FOLDER_DESCENDANTS = 1000
BIG_COMMIT_EVERY = 100
#: Each of rename and sharing runs this many times (there and back).
REPEATS = 2


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0


def modify_documents(session, specs: list[DocSpec]) -> list[float]:
    """Edit title and description, reindex, commit: ms per document."""
    timings = []
    with session.request() as (site, conn):
        for spec in specs[:EDITS]:
            started = time.perf_counter()
            doc = site[spec.section][spec.id]
            doc.title = f"{spec.title} (edited)"
            doc.description = f"{spec.description} Edited."
            doc.reindexObject()
            transaction.commit()
            timings.append(_ms_since(started))
    return timings


def transition_documents(session, specs: list[DocSpec]) -> list[float]:
    """Retract published documents (published -> private): ms per document."""
    from plone import api

    timings = []
    chosen = [spec for spec in specs if spec.state == "published"][:EDITS]
    with session.request() as (site, conn):
        for spec in chosen:
            started = time.perf_counter()
            doc = site[spec.section][spec.id]
            api.content.transition(obj=doc, transition="retract")
            transaction.commit()
            timings.append(_ms_since(started))
    return timings


def docs_per_subfolder(descendants: int) -> int:
    """Documents in each subfolder for ``descendants`` in all."""
    return max(descendants // SUBFOLDERS - 1, 0)


def create_item(container, item: int, of: str, where: str):
    """Document ``item-NNN`` of ``container``, titled "Item N of ``of``",
    described as "An item of ``where``." (the big folder's items, and the
    batches ``profile_writes.py`` creates)."""
    from plone import api

    return api.content.create(
        container=container,
        type="Document",
        id=f"item-{item:03d}",
        title=f"Item {item} of {of}",
        description=f"An item of {where}.",
    )


def create_big_folder(session, descendants: int = BIG_FOLDER_DESCENDANTS) -> dict:
    """The private folder with ``descendants`` private descendants (commits
    every 100 items)."""
    from plone import api

    started = time.perf_counter()
    created = 0
    with session.request() as (site, conn):
        # Private, like an intranet area shared with someone: for published
        # content the allowedRolesAndUsers indexer gives ["Anonymous"]
        # whatever the local roles, and a sharing change would change nothing.
        big = api.content.create(
            container=site, type="Folder", id=BIG_FOLDER, title="Big folder"
        )
        for number in range(SUBFOLDERS):
            sub = api.content.create(
                container=big,
                type="Folder",
                id=f"sub-{number:02d}",
                title=f"Sub {number}",
            )
            created += 1
            for item in range(docs_per_subfolder(descendants)):
                create_item(sub, item, f"sub {number}", "the big folder")
                created += 1
                if created % BIG_COMMIT_EVERY == 0:
                    transaction.commit()
        transaction.commit()
    seconds = time.perf_counter() - started
    return {
        "descendants": created,
        "seconds": seconds,
        "ms_per_item": seconds * 1000 / created,
    }


def rename_big_folder(session) -> list[float]:
    """Rename the big folder and commit, there and back: ms each."""
    from plone import api

    timings = []
    names = [BIG_FOLDER + "-renamed", BIG_FOLDER]
    for number in range(REPEATS):
        with session.request() as (site, conn):
            current = names[(number - 1) % 2]
            started = time.perf_counter()
            api.content.rename(obj=site[current], new_id=names[number % 2])
            transaction.commit()
            timings.append(_ms_since(started))
    return timings


def share_big_folder(session, principal: str) -> list[float]:
    """Give ``principal`` a local role on the big folder, reindex its
    security, commit; then take it away again: ms each."""
    timings = []
    for number in range(REPEATS):
        with session.request() as (site, conn):
            big = site[BIG_FOLDER]
            started = time.perf_counter()
            if number % 2 == 0:
                big.manage_setLocalRoles(principal, ["Reader", "Editor"])
            else:
                big.manage_delLocalRoles([principal])
            big.reindexObjectSecurity()
            transaction.commit()
            timings.append(_ms_since(started))
    return timings


def check_sharing(session, principal: str, descendants: int) -> None:
    """The local role reached the catalog of the descendants (sanity)."""
    with session.request() as (site, conn):
        big = site[BIG_FOLDER]
        big.manage_setLocalRoles(principal, ["Reader"])
        big.reindexObjectSecurity()
        path = "/".join(big.getPhysicalPath())
        found = len(
            site.portal_catalog.unrestrictedSearchResults(
                path=path, allowedRolesAndUsers=f"user:{principal}"
            )
        )
        transaction.abort()
    expected = 1 + SUBFOLDERS * (1 + docs_per_subfolder(descendants))
    if found != expected:
        raise RuntimeError(f"sharing reached {found} catalog entries, not {expected}")


def rebuild_catalog(session) -> dict:
    """``clearFindAndRebuild`` and commit: objects per second."""
    with session.request() as (site, conn):
        catalog = site.portal_catalog
        started = time.perf_counter()
        catalog.clearFindAndRebuild()
        transaction.commit()
        seconds = time.perf_counter() - started
    with session.request() as (site, conn):
        count = len(site.portal_catalog)
    return {"objects": count, "seconds": seconds, "objects_per_s": count / seconds}
