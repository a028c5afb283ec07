"""Undo on a history-preserving zodb-pgjsonb storage, on a real Plone site.

zodb-pgjsonb restores the states an undone transaction wrote and tells
the state processors first (``undone``).  The catalog cannot read the
restored objects there: its rows stay as the undone transaction left
them, where ZCatalog's BTrees are restored with the content.  So the undo
goes on, the log names the cataloged objects it concerns, and after its
commit a Verify and repair job (``undo``) mends the rows in the
background: searches then find what ZCatalog's would (the content as the
undo restored it).  Rows of states the undo deletes go with them (the
foreign key).
"""

from __future__ import annotations

from contextlib import contextmanager
from plone import api
from plone.app.discussion.interfaces import IConversation
from plone.app.testing import SITE_OWNER_NAME
from plone.testing.zope import addRequestContainer
from plone.testing.zope import login
from plone_pgcatalog import embedded
from plone_pgcatalog import jobs
from plone_pgcatalog import startup
from plone_pgcatalog import testing
from plone_pgcatalog import undo
from plone_pgcatalog.store import processor
from tests.conftest import _set_up
from ZODB.DB import DB
from zodb_pgjsonb.storage import PGJsonbStorage
from zope.component import createObject
from zope.component.hooks import setSite
from zope.globalrequest import setRequest

import logging
import os
import psycopg
import pytest
import threading
import time
import transaction


@contextmanager
def plone_site(db, profiles: tuple):
    """A Plone site made with ``profiles`` in a new Zope application on
    ``db``, current, its request set up and its owner logged in; closed
    after."""
    conn = db.open()
    try:
        from OFS.Application import AppInitializer
        from OFS.Application import Application

        root = conn.root()
        root["Application"] = Application()
        transaction.commit()
        app = addRequestContainer(root["Application"])
        AppInitializer(app).initialize()
        transaction.commit()
        testing.create_site(app, profiles)
        transaction.commit()
        request = app.REQUEST
        request["PARENTS"] = [app]
        setRequest(request)
        portal = app[testing.SITE_ID]
        setSite(portal)
        login(app["acl_users"], SITE_OWNER_NAME)
        yield portal
    finally:
        transaction.abort()
        setSite(None)
        setRequest(None)
        conn.close()
        db.close()


@pytest.fixture
def site():
    """The test site on a history-preserving storage of a new database,
    with the configuration of the PostgreSQL layer (not its site)."""
    _set_up(testing.PGCATALOG_FIXTURE)
    server = testing.server_dsn()
    name = f"pgcatalog_undo_{os.getpid()}"
    dsn = embedded.ensure_database(server, name, fresh=True)
    storage = PGJsonbStorage(dsn, cache_warm_pct=0, history_preserving=True)
    processor.register(storage)
    db = DB(storage)
    startup.prepare_database(db)
    try:
        profiles = testing.EXTENSION_PROFILES + (testing.PGCATALOG_PROFILE,)
        with plone_site(db, profiles) as portal:
            yield portal, dsn
    finally:
        testing.drop_database(server, name)


def _commit(note: str) -> None:
    """Commit with ``note``, by which ``_undo`` finds the transaction."""
    transaction.get().note(note)
    transaction.commit()


def _undo(portal, *notes: str) -> jobs.Job:
    """Undo the transactions noted ``notes`` as the ZMI's Undo tab does (in
    the request's transaction, several at once); the one repair job the
    commit started (at once, or after the job running), ended."""
    db = portal._p_jar.db()
    ids = [i["id"] for i in db.undoInfo(0, 50) if i["description"] in notes]
    assert len(ids) == len(notes)
    before = {job.id for job in jobs.jobs()}
    db.undoMultiple(ids)
    transaction.commit()
    return _repaired(before)


def _repaired(before: set) -> jobs.Job:
    """The one repair job started since the jobs ``before``, ended."""
    deadline = time.monotonic() + 60
    new = []
    while not new and time.monotonic() < deadline:
        new = [job for job in jobs.jobs() if job.id not in before]
        time.sleep(0.05)
    [job] = new
    assert job.title == undo.TITLE
    jobs.wait(job)
    assert job.state == "done", job.error
    transaction.begin()  # a snapshot after the job's commit
    return job


def _paths(**query) -> list[str]:
    catalog = api.portal.get_tool("portal_catalog")
    return sorted(b.getPath() for b in catalog.unrestrictedSearchResults(**query))


def test_an_undone_edit_and_rename_are_mended_in_the_catalog(site, caplog):
    portal, dsn = site
    folder = api.content.create(container=portal, type="Folder", id="f", title="F")
    api.content.create(container=folder, type="Document", id="p", title="Alpha")
    _commit("create")
    page = folder["p"]
    page.title = "Bravo"
    page.reindexObject()
    _commit("edit")
    assert _paths(Title="Bravo") == ["/plone/f/p"]

    with caplog.at_level(logging.WARNING, logger=processor.__name__):
        job = _undo(portal, "edit")
    assert "stale" in job.result and "repaired" in job.result
    # Only what the undo concerns is read: the page, not the whole site.
    assert "(0 missing, 0 orphan, 1 stale) in 1 objects, 1 rows" in job.result
    [logged] = [r.message for r in caplog.records if "undo of transaction" in r.message]
    assert "concerns 1 cataloged objects (/plone/f/p)" in logged
    assert portal["f"]["p"].title == "Alpha"
    assert _paths(Title="Alpha") == ["/plone/f/p"]
    assert _paths(Title="Bravo") == []

    # A rename moves the folder's rows at its commit; undone, they come
    # back, found by the folder's B-tree of items (restored, not cataloged).
    api.content.rename(obj=portal["f"], new_id="g")
    _commit("rename")
    assert _paths(path="/plone/g") == ["/plone/g", "/plone/g/p"]
    _undo(portal, "rename")
    assert _paths(path="/plone/f") == ["/plone/f", "/plone/f/p"]
    assert _paths(path="/plone/g") == []
    assert [b.Title for b in api.content.find(path="/plone/f/p")] == ["Alpha"]


def test_undone_creations_take_their_rows_along(site, caplog):
    portal, dsn = site
    api.content.create(container=portal, type="Document", id="new", title="New")
    _commit("create")
    api.content.create(container=portal, type="Document", id="next", title="Next")
    _commit("create next")
    assert _paths(id=["new", "next"]) == ["/plone/new", "/plone/next"]
    with caplog.at_level(logging.WARNING, logger="plone_pgcatalog.undo"):
        _undo(portal, "create", "create next")
    # One job for both: a second would have found the first running.
    assert "still running" not in caplog.text
    assert "new" not in portal.objectIds()
    assert _paths(id=["new", "next"]) == []
    with psycopg.connect(dsn) as conn:
        assert conn.execute(
            "SELECT count(*) FROM pgcatalog_objects WHERE path = '/plone/new'"
        ).fetchone() == (0,)


def test_an_undone_creation_in_a_folder_reads_the_folder(site, caplog):
    """A creation also changes the site's registry (five.intid) and tools
    (the uid generator, the history storage): none of them holds rows, and
    the repair reads the folder whose items the undo restores, not the
    site."""
    portal, dsn = site
    folder = api.content.create(container=portal, type="Folder", id="f")
    api.content.create(container=folder, type="Document", id="kept")
    _commit("folder")
    api.content.create(container=folder, type="Document", id="x", title="Undone")
    _commit("x")
    assert _paths(Title="Undone") == ["/plone/f/x"]

    with caplog.at_level(logging.WARNING, logger=processor.__name__):
        job = _undo(portal, "x")
    [logged] = [r.message for r in caplog.records if "undo of transaction" in r.message]
    assert "concerns 1 cataloged objects (/plone/f)" in logged
    assert "in 2 objects, 2 rows" in job.result
    assert "x" not in portal["f"]
    assert _paths(Title="Undone") == []
    assert _paths(path="/plone/f") == ["/plone/f", "/plone/f/kept"]


def test_an_undo_without_a_request_or_site_says_how_to_mend(site, caplog):
    portal, dsn = site
    setSite(None)
    setRequest(None)
    undone = undo.Undone([1], {"/plone/f"})
    with caplog.at_level(logging.WARNING, logger="plone_pgcatalog.undo"):
        assert undo.mend(True, undone) == []
    assert "run it on the sites of /plone/f" in caplog.text
    setSite(portal)
    assert undo.mend(False, undone) == []  # the undo failed


def test_an_undone_transition_is_mended(site):
    """A transition that changes no permission stores only the object's
    workflow history (a mapping without a row): the object holding it is
    found through zodb-pgjsonb's references (helper-35's review)."""
    portal, dsn = site
    portal.portal_workflow.setChainForPortalTypes(("Folder",), ("folder_workflow",))
    api.content.create(container=portal, type="Folder", id="f", title="F")
    _commit("create")
    api.content.transition(obj=portal["f"], transition="publish")
    _commit("publish")
    assert _paths(review_state="published") == ["/plone/f"]
    _undo(portal, "publish")
    assert api.content.get_state(portal["f"]) == "visible"
    assert _paths(review_state="published") == []
    assert _paths(review_state="visible") == ["/plone/f"]


def test_an_undo_while_a_job_runs_is_mended_after_it(site):
    """The repair waits for the job running on the site (a Verify, a
    rebuild) and runs after it, where it was lost (helper-35's review)."""
    portal, dsn = site
    page = api.content.create(container=portal, type="Document", id="p", title="A")
    _commit("create")
    page.title = "B"
    page.reindexObject()
    _commit("edit")
    release = threading.Event()
    running = jobs.start(
        portal.portal_catalog, "Held", lambda tool, progress: release.wait(60) and ""
    )
    db = portal._p_jar.db()
    before = {job.id for job in jobs.jobs()}
    [edit] = [i["id"] for i in db.undoInfo(0, 50) if i["description"] == "edit"]
    db.undo(edit)
    transaction.commit()
    assert [job for job in jobs.jobs() if job.id not in before] == []  # queued
    release.set()
    jobs.wait(running)
    _repaired(before)
    assert _paths(Title="A") == ["/plone/p"]
    assert _paths(Title="B") == []


@pytest.fixture
def discussion_site(site):
    """The undo test site with plone.app.discussion's profile, comments
    enabled and allowed on pages (``testing.enable_discussion``, as the
    discussion layers have them), committed."""
    portal, dsn = site
    testing.enable_discussion(portal.getPhysicalRoot())
    _commit("discussion")
    setSite(portal)
    yield portal, dsn


def _add_comment(page, text: str) -> str:
    """A comment of the site owner on ``page``; its id in the conversation."""
    comment = createObject("plone.Comment")
    comment.text = text
    comment.creator = SITE_OWNER_NAME
    comment.author_username = SITE_OWNER_NAME
    return IConversation(page).addComment(comment)


def _published_page(portal):
    """The page ``/plone/p``, published (``total_comments`` counts the
    comments Anonymous may view, by the page's permission), committed."""
    portal.portal_workflow.setChainForPortalTypes(
        ("Document",), ("simple_publication_workflow",)
    )
    page = api.content.create(container=portal, type="Document", id="p", title="P")
    api.content.transition(obj=page, transition="publish")
    _commit("create")
    return page


def _total_comments(path: str) -> tuple:
    """The page's ``total_comments``: the index's (the paths it finds with
    the page's count of comments) and the metadata column's."""
    [brain] = api.portal.get_tool("portal_catalog").unrestrictedSearchResults(
        path={"query": path, "depth": 0}
    )
    count = brain.total_comments
    return count, _paths(total_comments=count, path=path)


def test_an_undone_comment_deletion_is_mended(discussion_site, caplog):
    """A comment is kept in the B-trees of a conversation, an annotation of
    its page: the deletion's undo restores those and the comment's state,
    none of them with a row, and the page is found above them through
    zodb-pgjsonb's references.  The repair below it catalogs the
    comment again (``health`` walks comments as a rebuild does) and mends
    the page's count."""
    portal, dsn = discussion_site
    page = _published_page(portal)
    comment_id = _add_comment(page, "Northern lights tonight")
    _commit("comment")
    comment_path = f"/plone/p/++conversation++default/{comment_id}"
    assert _paths(portal_type="Discussion Item") == [comment_path]
    assert _total_comments("/plone/p") == (1, ["/plone/p"])

    del IConversation(page)[comment_id]
    _commit("delete comment")
    assert _paths(portal_type="Discussion Item") == []
    assert _total_comments("/plone/p") == (0, ["/plone/p"])

    with caplog.at_level(logging.WARNING, logger=processor.__name__):
        job = _undo(portal, "delete comment")
    [logged] = [r.message for r in caplog.records if "undo of transaction" in r.message]
    # Only the page: five.intid's utility, which forgot the comment too, is
    # held by the site's registry, which holds no rows (it led to the site,
    # and the job read all of it).
    assert "concerns 1 cataloged objects (/plone/p)" in logged
    assert "(1 missing, 0 orphan, 1 stale) in 2 objects, 1 rows" in job.result
    conversation = IConversation(portal["p"])
    assert list(conversation.keys()) == [comment_id]
    assert _paths(portal_type="Discussion Item", path="/plone/p") == [comment_path]
    assert _paths(SearchableText="lights") == [comment_path]
    assert _total_comments("/plone/p") == (
        conversation.total_comments(),
        ["/plone/p"],
    )
    assert conversation.total_comments() == 1


def test_an_undone_comment_addition_takes_its_row_along(discussion_site):
    """The addition's undo deletes the comment's state (its row goes with
    it, the foreign key) and restores the conversation's B-trees: the
    page's count is mended by the repair.  The first comment made the
    conversation; the second, undone, only changed it."""
    portal, dsn = discussion_site
    page = _published_page(portal)
    first = _add_comment(page, "Northern lights tonight")
    _commit("first comment")
    second = _add_comment(page, "Clouds over the harbour")
    _commit("second comment")
    assert _paths(SearchableText="harbour") == [
        f"/plone/p/++conversation++default/{second}"
    ]
    assert _total_comments("/plone/p") == (2, ["/plone/p"])

    job = _undo(portal, "second comment")
    # The row was gone before the repair (the foreign key); the page stale.
    assert "(0 missing, 0 orphan, 1 stale)" in job.result
    conversation = IConversation(portal["p"])
    assert list(conversation.keys()) == [first]
    assert _paths(SearchableText="harbour") == []
    assert _paths(portal_type="Discussion Item") == [
        f"/plone/p/++conversation++default/{first}"
    ]
    assert _total_comments("/plone/p") == (
        conversation.total_comments(),
        ["/plone/p"],
    )
    assert conversation.total_comments() == 1


def _undo_and_repair(portal, note: str) -> list:
    """Undo the transaction noted ``note``; the repair jobs its commit
    started (none where the undo concerned no catalog row), ended."""
    db = portal._p_jar.db()
    [tid] = [i["id"] for i in db.undoInfo(0, 50) if i["description"] == note]
    before = {job.id for job in jobs.jobs()}
    db.undo(tid)
    transaction.commit()
    # ``undo.mend`` starts its jobs in the commit's after-commit hook.
    started = [job for job in jobs.jobs() if job.id not in before]
    for job in started:
        jobs.wait(job)
        assert job.state == "done", job.error
    transaction.begin()
    return started


def test_an_undone_workflow_chain_change_is_mended(site):
    """A change of a type's workflow (a tool's setting) and the reindex of
    its objects' states, in one transaction: the objects' own states are
    not written, only portal_workflow's chains (held by a tool) and the
    rows.  ZCatalog's undo restores its BTrees with the chains: the page
    is found as private again."""
    portal, dsn = site
    workflow = portal.portal_workflow
    workflow.setChainForPortalTypes(("Document",), ("simple_publication_workflow",))
    page = api.content.create(container=portal, type="Document", id="p", title="P")
    _commit("create")
    assert _paths(review_state="private", portal_type="Document") == ["/plone/p"]

    workflow.setChainForPortalTypes(("Document",), ("one_state_workflow",))
    page.reindexObject(idxs=["review_state"])
    _commit("chain")
    assert _paths(review_state="published", portal_type="Document") == ["/plone/p"]

    _undo_and_repair(portal, "chain")
    assert workflow.getChainForPortalType("Document") == (
        "simple_publication_workflow",
    )
    assert api.content.get_state(portal["p"]) == "private"
    assert _paths(review_state="private", portal_type="Document") == ["/plone/p"]
    assert _paths(review_state="published", portal_type="Document") == []


def test_an_undone_type_title_change_is_mended(site):
    """A type's title (its FTI, an item of the portal_types tool) and the
    reindex of its objects' ``Type``: undone, ZCatalog gives the old
    title."""
    portal, dsn = site
    api.content.create(container=portal, type="Document", id="p", title="P")
    _commit("create")
    fti = portal.portal_types["Document"]
    old = fti.title
    fti.title = "Article"
    portal["p"].reindexObject(idxs=["Type"])
    _commit("type title")
    assert _paths(Type="Article") == ["/plone/p"]

    _undo_and_repair(portal, "type title")
    assert portal.portal_types["Document"].title == old
    assert _paths(Type="Article") == []
    assert _paths(Type=old) == ["/plone/p"]


def test_an_undone_deletion_in_the_site_is_mended(site):
    portal, dsn = site
    api.content.create(container=portal, type="Document", id="d", title="Gone")
    _commit("create")
    api.content.delete(obj=portal["d"], check_linkintegrity=False)
    _commit("delete")
    assert _paths(Title="Gone") == []
    _undo_and_repair(portal, "delete")
    assert "d" in portal.objectIds()
    assert _paths(Title="Gone") == ["/plone/d"]


def test_an_undone_cut_and_paste_is_mended(site):
    portal, dsn = site
    source = api.content.create(container=portal, type="Folder", id="a")
    api.content.create(container=portal, type="Folder", id="b")
    inner = api.content.create(container=source, type="Folder", id="box")
    api.content.create(container=inner, type="Document", id="p", title="Moved")
    _commit("create")
    api.content.move(source=portal["a"]["box"], target=portal["b"])
    _commit("move")
    assert _paths(Title="Moved") == ["/plone/b/box/p"]
    _undo_and_repair(portal, "move")
    assert "box" in portal["a"].objectIds()
    assert _paths(Title="Moved") == ["/plone/a/box/p"]
    assert _paths(path="/plone/b") == ["/plone/b"]
    assert _paths(path="/plone/a") == ["/plone/a", "/plone/a/box", "/plone/a/box/p"]


def test_an_undone_sharing_change_is_mended(site):
    portal, dsn = site
    folder = api.content.create(container=portal, type="Folder", id="f")
    api.content.create(container=folder, type="Document", id="p")
    _commit("create")
    folder.manage_setLocalRoles("sharer", ["Reader"])
    folder.reindexObjectSecurity()
    _commit("share")
    assert _paths(allowedRolesAndUsers="user:sharer") == ["/plone/f", "/plone/f/p"]
    _undo_and_repair(portal, "share")
    assert _paths(allowedRolesAndUsers="user:sharer") == []


def test_an_undone_rename_leaves_kept_words_gone(site):
    """Where this catalog differs (README, "A text index whose attribute
    gives no string"): a Link without a URL keeps its SearchableText's
    words, a rename catalogs it anew without them, as in ZCatalog; the
    undo of the rename brings the object back at its path, but not the
    words, which the repair cannot read from the content.  ZCatalog's undo
    restores its record with them (``test_undo_zcatalog_oracle.
    test_zcatalog_an_undone_rename_brings_back_kept_words``)."""
    portal, _ = site
    link = api.content.create(container=portal, type="Link", id="link", title="L")
    link.remoteUrl = "http://harbour.example"
    link.reindexObject()
    _commit("create")
    link.remoteUrl = ""
    link.reindexObject()
    _commit("no url")
    assert _paths(SearchableText="harbour") == ["/plone/link"]
    api.content.rename(obj=link, new_id="renamed")
    _commit("rename")
    assert _paths(SearchableText="harbour") == []
    _undo(portal, "rename")
    assert _paths(path="/plone/link") == ["/plone/link"]
    assert _paths(Title="L") == ["/plone/link"]
    assert _paths(SearchableText="harbour") == []
