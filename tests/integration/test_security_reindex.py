"""``reindexObjectSecurity`` computed from the stored states (security.py).

The oracle is Plone's own ``allowedRolesAndUsers`` indexer called on every
live object, what CMFCore's walk (and ZCatalog) would store.  A seeded
random walk of sharing changes, blocks, workflow transitions and sneaky
changes of descendants compares the catalog with it after every step,
inside the transaction (searches) and after the commit (stored rows).
"""

from __future__ import annotations

from Acquisition import aq_base
from borg.localrole.interfaces import ILocalRoleProvider
from persistent import Persistent
from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone.indexer.interfaces import IIndexableObject
from plone_pgcatalog.store import columns
from plone_pgcatalog.store.connection import ddl_connection
from psycopg import sql
from tests.integration.test_transactions import _in_other_thread
from ZODB.POSException import ConflictError
from zope.component import getGlobalSiteManager
from zope.component import queryMultiAdapter
from zope.interface import alsoProvides
from zope.interface import implementer
from zope.interface import Interface

import pytest
import random
import transaction

PRINCIPALS = ("bob", "carol", "staff")
ROLES = ("Reader", "Editor", "Contributor", "Reviewer", "Owner")


def _build(portal, folders: int = 3, items: int = 4) -> list:
    """``/plone/top`` with subfolders, sub-subfolders and pages."""
    setRoles(portal, TEST_USER_ID, ["Manager"])
    top = api.content.create(container=portal, type="Folder", id="top", title="Top")
    objects = [top]
    for i in range(folders):
        sub = api.content.create(container=top, type="Folder", id=f"f{i}", title="F")
        deeper = api.content.create(container=sub, type="Folder", id="g", title="G")
        objects += [sub, deeper]
        for j in range(items):
            objects.append(
                api.content.create(
                    container=sub if j % 2 else deeper,
                    type="Document",
                    id=f"d{j}",
                    title="D",
                )
            )
    transaction.commit()
    return ["/".join(o.getPhysicalPath()) for o in objects]


def _expected(portal, paths) -> dict[str, list]:
    """What Plone's indexer gives each live object."""
    catalog = portal.portal_catalog
    expected = {}
    for path in paths:
        obj = portal.unrestrictedTraverse(path)
        wrapped = queryMultiAdapter((obj, catalog), IIndexableObject)
        expected[path] = sorted(set(wrapped.allowedRolesAndUsers))
    return expected


def _stored(portal, paths) -> dict[str, list]:
    """Each row's stored list: in its column (stored once), or in ``idx``."""
    value = columns.value_of(
        sql.SQL("pgcatalog_objects"),
        "allowedRolesAndUsers",
        {"allowedRolesAndUsers": "keywords"},
    )
    with ddl_connection(portal.portal_catalog) as conn:
        rows = conn.execute(
            sql.SQL(
                "SELECT path, {} FROM pgcatalog_objects WHERE path = ANY(%s)"
            ).format(value),
            (list(paths),),
        ).fetchall()
    return {path: sorted(value or []) for path, value in rows}


def _found(portal, tokens) -> dict[str, set]:
    """Paths each token finds, searched inside the transaction."""
    catalog = portal.portal_catalog
    return {
        token: {
            b.getPath()
            for b in catalog.unrestrictedSearchResults(
                path="/plone/top", allowedRolesAndUsers=token
            )
        }
        for token in tokens
    }


def _by_token(expected: dict) -> dict[str, set]:
    tokens: dict[str, set] = {}
    for path, values in expected.items():
        for value in values:
            tokens.setdefault(value, set()).add(path)
    for principal in PRINCIPALS:
        tokens.setdefault(f"user:{principal}", set())
    return tokens


def _walk_step(portal, rng: random.Random, paths: list[str]) -> str:
    obj = portal.unrestrictedTraverse(rng.choice(paths))
    folderish = [
        p for p in paths if portal.unrestrictedTraverse(p).isPrincipiaFolderish
    ]
    kind = rng.choice(["share", "share", "unshare", "block", "transition", "sneaky"])
    if kind in ("share", "unshare", "block", "sneaky"):
        obj = portal.unrestrictedTraverse(rng.choice(folderish))
    if kind == "share":
        roles = rng.sample(ROLES, rng.randint(1, 2))
        obj.manage_setLocalRoles(rng.choice(PRINCIPALS), roles)
        if rng.random() < 0.2:
            # The object itself by its own reindex, its subtree apart.
            obj.reindexObject(idxs=["allowedRolesAndUsers"])
            obj.reindexObjectSecurity(skip_self=True)
        else:
            obj.reindexObjectSecurity()
    elif kind == "unshare":
        obj.manage_delLocalRoles([rng.choice(PRINCIPALS)])
        obj.reindexObjectSecurity()
    elif kind == "block":
        obj.__ac_local_roles_block__ = rng.choice([True, False])
        obj.reindexObjectSecurity()
    elif kind == "transition":
        workflow = api.portal.get_tool("portal_workflow")
        transitions = sorted(t["id"] for t in workflow.getTransitionsFor(obj))
        if transitions:
            api.content.transition(obj=obj, transition=rng.choice(transitions))
    else:
        # A descendant changed in this transaction and not reindexed:
        # its stored state is stale, the indexer reads the live object.
        below = [
            p for p in paths if p.startswith("/".join(obj.getPhysicalPath()) + "/")
        ]
        if below:
            child = portal.unrestrictedTraverse(rng.choice(below))
            child.manage_setLocalRoles(rng.choice(PRINCIPALS), ["Reader"])
        obj.reindexObjectSecurity()
    return f"{kind} {'/'.join(obj.getPhysicalPath())}"


def test_random_sharing_walk_keeps_the_indexers_values(pg_layer):
    portal = pg_layer["portal"]
    paths = _build(portal)
    rng = random.Random(20261124)
    done = []
    for step in range(60):
        done.append(_walk_step(portal, rng, paths))
        if rng.random() < 0.3:
            transaction.savepoint()
        expected = _expected(portal, paths)
        assert _found(portal, _by_token(expected)) == _by_token(expected), done
        if rng.random() < 0.6:
            transaction.commit()
            assert _stored(portal, paths) == expected, done
    transaction.commit()
    assert _stored(portal, paths) == _expected(portal, paths), done


def _counting_loads(jar):
    loads = []
    original = jar.setstate

    def setstate(obj):
        loads.append(obj)
        return original(obj)

    jar.setstate = setstate
    return loads


def test_a_sharing_change_loads_no_page_of_the_subtree(pg_layer):
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    top = api.content.create(container=portal, type="Folder", id="top", title="T")
    for i in range(2):
        sub = api.content.create(container=top, type="Folder", id=f"f{i}", title="F")
        for j in range(30):
            api.content.create(container=sub, type="Document", id=f"d{j}", title="D")
    transaction.commit()
    portal._p_jar.cacheMinimize()
    loads = _counting_loads(portal._p_jar)
    top = portal.top
    top.manage_setLocalRoles("bob", ["Reader"])
    top.reindexObjectSecurity()
    transaction.commit()
    loaded = {type(aq_base(o)).__name__ for o in loads}
    assert "Document" not in loaded, loaded
    found = portal.portal_catalog.unrestrictedSearchResults(
        allowedRolesAndUsers="user:bob"
    )
    assert len(found) == 63


class IExtraRoles(Interface):
    """Marks an object whose local roles come from an add-on's provider."""


@implementer(ILocalRoleProvider)
class ExtraRoles:
    def __init__(self, context):
        self.context = context

    def getRoles(self, principal):
        return ["Reader"] if principal == "dave" else []

    def getAllRoles(self):
        return [("dave", ["Reader"])]


def test_an_addons_local_role_provider_is_asked_for_every_object(pg_layer):
    """With an add-on's provider registered, the stored states do not tell
    the local roles: every object is read (CMFCore's walk)."""
    portal = pg_layer["portal"]
    paths = _build(portal, folders=1, items=2)
    registry = getGlobalSiteManager()
    registry.registerAdapter(ExtraRoles, (IExtraRoles,), ILocalRoleProvider, "extra")
    try:
        page = portal.unrestrictedTraverse(paths[-1])
        alsoProvides(page, IExtraRoles)
        transaction.commit()  # a committed state, the sharing change apart
        portal.top.manage_setLocalRoles("bob", ["Reader"])
        portal.top.reindexObjectSecurity()
        transaction.commit()
        expected = _expected(portal, paths)
        assert "user:dave" in expected[paths[-1]]
        assert _stored(portal, paths) == expected
    finally:
        registry.unregisterAdapter(
            ExtraRoles, (IExtraRoles,), ILocalRoleProvider, "extra"
        )
        transaction.abort()


class LocalUsers(Persistent):
    """A stand-in user folder whose local roles are its own."""

    def _getAllLocalRoles(self, context):
        return {"erin": {"Reader"}}


def test_a_user_folder_in_the_subtree_answers_for_its_contents(pg_layer):
    portal = pg_layer["portal"]
    paths = _build(portal, folders=1, items=2)
    folder = portal.top.f0
    folder.acl_users = LocalUsers()
    transaction.commit()  # a committed state, the sharing change apart
    portal.top.manage_setLocalRoles("bob", ["Reader"])
    portal.top.reindexObjectSecurity()
    transaction.commit()
    expected = _expected(portal, paths)
    assert "user:erin" in expected["/plone/top/f0/g"]
    assert _stored(portal, paths) == expected


def test_a_descendant_changed_meanwhile_makes_the_commit_conflict(pg_layer):
    """The value of a page computed from its stored state must not
    overwrite the row another transaction wrote for a newer state."""
    portal = pg_layer["portal"]
    _build(portal, folders=1, items=2)
    portal.top.manage_setLocalRoles("bob", ["Reader"])
    portal.top.reindexObjectSecurity()

    def other(site):
        page = site.top.f0.d1
        page.manage_setLocalRoles("carol", ["Reader"])
        page.reindexObjectSecurity()

    _in_other_thread(pg_layer["pgdb"], other)
    with pytest.raises(ConflictError):
        transaction.commit()
    transaction.abort()


def test_a_permission_mapped_to_another_name_is_read_from_the_object(pg_layer):
    """A setting that names another permission (AccessControl then walks
    that one) is not computed from states: the object and its contents
    are read as CMFCore reads them."""
    portal = pg_layer["portal"]
    paths = _build(portal, folders=1, items=2)
    folder = portal.top.f0
    folder._Access_contents_information_Permission = "View"
    folder._View_Permission = ("Manager", "Reviewer")
    folder.reindexObjectSecurity()
    transaction.commit()
    portal.top.manage_setLocalRoles("bob", ["Reviewer"])
    portal.top.reindexObjectSecurity()
    transaction.commit()
    assert _stored(portal, paths) == _expected(portal, paths)
