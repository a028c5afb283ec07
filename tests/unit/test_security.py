"""The security walks of ``security.py`` against the code they stand for.

``permission_roles`` against AccessControl's ``rolesForPermissionOn`` and
``merged_local_roles`` against borg.localrole's merge, on containment
chains of plain Zope objects with random settings (no PostgreSQL).
"""

from __future__ import annotations

from AccessControl.PermissionRole import rolesForPermissionOn
from Acquisition import Implicit
from borg.localrole.default_adapter import DefaultLocalRoleAdapter
from borg.localrole.interfaces import ILocalRoleProvider
from borg.localrole.workspace import WorkspaceLocalRoleManager
from hypothesis import given
from hypothesis import strategies as st
from plone_pgcatalog import security
from zope.component import getGlobalSiteManager
from zope.interface import Interface

import pytest


class Item(Implicit):
    """A containment level: a Zope object with optional settings."""


ROLES = st.lists(st.sampled_from(["Manager", "Reader", "Editor", "Owner"]))
PERMISSION_SETTING = st.one_of(
    st.just(security._MISSING),
    st.none(),
    ROLES,
    ROLES.map(tuple),
)
LOCAL_ROLES = st.dictionaries(st.sampled_from(["ann", "bob", "staff"]), ROLES)
LEVEL = st.tuples(PERMISSION_SETTING, LOCAL_ROLES, st.booleans())


def _chain(levels):
    """The object at the bottom of a chain of ``levels``, top first."""
    current = None
    for permission, local_roles, block in levels:
        item = Item()
        if permission is not security._MISSING:
            setattr(item, security.PERMISSION_ATTRIBUTE, permission)
        item.__ac_local_roles__ = local_roles
        if block:
            item.__ac_local_roles_block__ = True
        current = item if current is None else item.__of__(current)
    return current


@given(st.lists(LEVEL, min_size=1, max_size=6))
def test_permission_roles_are_access_controls(levels):
    leaf = _chain(levels)
    settings = [permission for permission, _, _ in reversed(levels)]
    expected = rolesForPermissionOn(security.PERMISSION, leaf)
    assert list(security.permission_roles(settings)) == list(expected)


def test_a_permission_mapped_to_another_name_is_not_followed():
    with pytest.raises(security.Unsupported):
        security.permission_roles([security._MISSING, "View"])


@pytest.fixture(scope="module")
def default_local_roles():
    registry = getGlobalSiteManager()
    registry.registerAdapter(DefaultLocalRoleAdapter, (Interface,), ILocalRoleProvider)
    yield
    registry.unregisterAdapter(
        DefaultLocalRoleAdapter, (Interface,), ILocalRoleProvider
    )


@given(levels=st.lists(LEVEL, min_size=1, max_size=6))
def test_merged_local_roles_are_borg_localroles(default_local_roles, levels):
    leaf = _chain(levels)
    chain = [(local, block) for _, local, block in reversed(levels)]
    expected = WorkspaceLocalRoleManager("borg", "").getAllLocalRolesInContext(leaf)
    assert security.merged_local_roles(chain) == expected


def test_the_indexer_shortcuts_public_content():
    assert security.allowed_roles_and_users(["Anonymous", "Reader"], {}) == [
        "Anonymous"
    ]
    assert security.allowed_roles_and_users(["Authenticated"], {"bob": {"x"}}) == [
        "Authenticated"
    ]


def test_the_indexer_lists_principals_with_an_allowed_role_but_not_owner():
    allowed = security.allowed_roles_and_users(
        ["Owner", "Reader"], {"ann": {"Owner"}, "bob": {"Editor"}, "cy": {"Reader"}}
    )
    assert sorted(allowed) == ["Reader", "user:ann", "user:cy"]
