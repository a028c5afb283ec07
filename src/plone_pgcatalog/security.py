"""Security reindex of a subtree without loading its objects.

Owns: ``reindexObjectSecurity`` of content whose catalog is a
``PGCatalogTool``.  CMFCore's version searches the subtree, loads every
object and reads ``allowedRolesAndUsers`` of each: a sharing change on a
folder of 5,000 items loads 5,000 objects, as ZCatalog does.

Here the descendants' values are computed from what decides them, read
from their committed states in one query (the JSON zodb-pgjsonb keeps of
each object), without loading them:

- Plone's indexer (``Products.CMFPlone.CatalogTool.allowedRolesAndUsers``)
  takes the roles that have "Access contents information" on the object
  (``rolesForPermissionOn``) and every principal with one of those roles
  among the object's merged local roles (borg.localrole).
- Both walk up the containment chain, reading on each object its own
  attributes only (names that begin with an underscore are never
  acquired): the permission's role setting
  (``_Access_contents_information_Permission``, a tuple stops the walk),
  ``__ac_local_roles__`` and ``__ac_local_roles_block__`` (stops the
  merge).  Inside the subtree those are in the states; from the reindexed
  object up, the live objects answer (they are loaded anyway).

So each descendant's value is exactly what the indexer would give, as
long as nothing else takes part: ``supported()`` checks that the site
uses Plone's indexer, borg.localrole's plug-in and default adapter only,
and no local user folder.  Otherwise, and for every object whose state
in PostgreSQL may not be what the object is now (changed, cataloged or
queued in this transaction, a state whose form is not understood), the
object is loaded and reindexed as CMFCore does.  Values that did not
change are not written; the others become partial reindexes of the
transaction (``PendingCatalog.patch``), written at commit.

Must not write: it reads one snapshot through the request's connection.
"""

from __future__ import annotations

from AccessControl.Permission import getPermissionIdentifier
from AccessControl.SecurityManagement import getSecurityManager
from Acquisition import aq_base
from Acquisition import aq_inner
from Acquisition import aq_parent
from dataclasses import dataclass
from plone_pgcatalog.extraction import CatalogPatch
from plone_pgcatalog.extraction import index_value
from plone_pgcatalog.interfaces import MISSING
from plone_pgcatalog.ordering import pg_catalog
from plone_pgcatalog.paths import in_subtree
from plone_pgcatalog.paths import path_clause
from plone_pgcatalog.pending import current_pending
from plone_pgcatalog.registry import get_translator
from plone_pgcatalog.store import columns
from plone_pgcatalog.store import connection
from plone_pgcatalog.store import layout
from Products.CMFCore.CMFCatalogAware import CatalogAware
from Products.CMFCore.indexing import getQueue
from Products.CMFCore.utils import getToolByName
from psycopg import sql
from types import SimpleNamespace
from zExceptions import Unauthorized
from ZODB.utils import p64
from ZODB.utils import u64
from zope.component import getSiteManager
from zope.proxy import getProxiedObject
from zope.proxy import isProxy

import importlib
import logging
import psycopg

logger = logging.getLogger(__name__)

INDEX = "allowedRolesAndUsers"
#: The permission Plone's indexer asks for.
PERMISSION = "Access contents information"
PERMISSION_ATTRIBUTE = getPermissionIdentifier(PERMISSION)
LOCAL_ROLES = "__ac_local_roles__"
BLOCK = "__ac_local_roles_block__"
#: ``rolesForPermissionOn``'s roles when no object sets the permission.
DEFAULT_ROLES = ("Manager",)


class Unsupported(Exception):
    """A state or setting this module does not compute: load the object."""


_MISSING = object()


# -- what the indexer does, on values instead of objects ---------------------


def permission_roles(settings: list) -> tuple | list:
    """``rolesForPermissionOn`` over the permission's settings of the
    containment chain, the object's first (``_MISSING`` where an object
    has none), as AccessControl walks them."""
    found = None
    for roles in settings:
        if roles is _MISSING:
            continue
        if roles is None:
            return ("Anonymous",)
        if type(roles) is tuple:
            return roles if found is None else found + list(roles)
        if isinstance(roles, str):
            # Mapped to another permission's name: not followed here.
            raise Unsupported("permission mapped to another name")
        if roles:
            found = list(roles) if found is None else found + list(roles)
    return DEFAULT_ROLES if found is None else found


def merged_local_roles(chain: list) -> dict[str, set]:
    """borg.localrole's ``getAllLocalRolesInContext``: ``(local roles,
    block)`` of each object of the chain, the object's first; the merge
    stops after an object that blocks acquisition."""
    merged: dict[str, set] = {}
    for local_roles, block in chain:
        for principal, roles in local_roles.items():
            merged.setdefault(principal, set()).update(roles)
        if block:
            break
    return merged


def allowed_roles_and_users(roles, local_roles: dict) -> list[str]:
    """Plone's ``allowedRolesAndUsers`` indexer, from its two inputs."""
    allowed = set(roles)
    if "Anonymous" in allowed:
        return ["Anonymous"]
    elif "Authenticated" in allowed:
        return ["Authenticated"]
    for user, user_roles in local_roles.items():
        if allowed.intersection(user_roles):
            allowed.update(["user:" + user])
    allowed.discard("Owner")
    return list(allowed)


# -- reading settings from states and from live objects ----------------------


@dataclass(frozen=True)
class Settings:
    """What one object contributes to its descendants' security."""

    #: its own "Access contents information" setting, or ``_MISSING``
    permission: object
    #: its own local roles: principal -> roles
    local_roles: dict
    #: whether it blocks the acquisition of local roles
    block: bool


def _permission_value(value):
    """A stored permission setting as Python has it (JSON: tuple as
    ``{"@t": [...]}``, list as an array, None as null)."""
    if value is None or value is _MISSING:
        return value
    if isinstance(value, dict) and set(value) == {"@t"} and _strings(value["@t"]):
        return tuple(value["@t"])
    if isinstance(value, list) and _strings(value):
        return value
    if isinstance(value, str):
        return value  # permission_roles() says it is not followed
    raise Unsupported(f"permission setting {value!r}")


def _local_roles_value(value) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise Unsupported(f"local roles {value!r}")
    local_roles = {}
    for principal, roles in value.items():
        if isinstance(roles, dict) and set(roles) == {"@t"}:
            roles = roles["@t"]
        if not isinstance(roles, list) or not _strings(roles):
            raise Unsupported(f"local roles of {principal!r}: {roles!r}")
        local_roles[principal] = roles
    return local_roles


def _block_value(value) -> bool:
    if value is None or isinstance(value, (bool, int, str)):
        return bool(value)
    raise Unsupported(f"local roles block {value!r}")


def _strings(values) -> bool:
    return isinstance(values, list) and all(isinstance(v, str) for v in values)


_CLASSES: dict[tuple[str, str], object] = {}


def _class(module: str, name: str):
    key = (module, name)
    if key not in _CLASSES:
        try:
            _CLASSES[key] = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as error:
            raise Unsupported(f"class {module}.{name}") from error
    return _CLASSES[key]


def stored_settings(module: str, name: str, attributes: dict) -> Settings:
    """The settings of an object from the attributes its stored state has
    (a class attribute stands in for an attribute the state lacks)."""
    cls = _class(module, name)

    def own(attribute):
        if attribute in attributes:
            return attributes[attribute]
        value = getattr(cls, attribute, _MISSING)
        if callable(value):
            raise Unsupported(f"{attribute} of {module}.{name} is computed")
        return value

    local_roles = own(LOCAL_ROLES)
    block = own(BLOCK)
    return Settings(
        permission=_permission_value(own(PERMISSION_ATTRIBUTE)),
        local_roles=_local_roles_value(
            None if local_roles is _MISSING else local_roles
        ),
        block=_block_value(None if block is _MISSING else block),
    )


def _chain_above(obj) -> tuple[list, dict]:
    """The permission settings of ``obj`` and its containers up to the
    top, and ``obj``'s merged local roles, read from the live objects."""
    settings = []
    current = obj
    while current is not None:
        # Read as AccessControl reads it: getattr on the wrapper (an
        # underscore name is not acquired, so this is the object's own).
        try:
            value = getattr(current, PERMISSION_ATTRIBUTE)
        except (AttributeError, Unauthorized):
            value = _MISSING
        if isinstance(value, str):
            raise Unsupported("permission mapped to another name")
        settings.append(value)
        current = aq_inner(current)
        current = aq_parent(current) if current is not None else None
    acl_users = getToolByName(obj, "acl_users")
    return settings, acl_users._getAllLocalRoles(obj)


# -- when the computation is the indexer's --------------------------------------


def _registries(site_manager) -> list:
    """``site_manager`` and the registries it inherits from (the global one)."""
    found, todo = [], [site_manager]
    while todo:
        registry = todo.pop()
        if any(registry is seen for seen in found):
            continue
        found.append(registry)
        todo.extend(getattr(registry, "__bases__", ()))
    return found


def _registered(registries, interface) -> list:
    """Adapter registrations of ``registries`` providing ``interface``."""
    return [
        r
        for registry in registries
        for r in registry.registeredAdapters()
        if r.provided.isOrExtends(interface)
    ]


#: ``_plone_adapters_only`` by the registries' identities and generations.
_ADAPTERS_CHECKED: dict[tuple, bool] = {}


def _plone_adapters_only(site_manager) -> bool:
    """Whether Plone's indexer and borg.localrole's default adapter are
    the only ones that take part (no add-on's indexer of the index, local
    role provider or workspace).

    Remembered until a registry changes (its generation counts every
    registration), so that it costs nothing on each call.
    """
    # From where borg.localrole itself imports it: its old place warns.
    from borg.localrole.bbb.interfaces import IWorkspace
    from borg.localrole.default_adapter import DefaultLocalRoleAdapter
    from borg.localrole.interfaces import ILocalRoleProvider
    from plone.indexer.interfaces import IIndexer
    from Products.CMFPlone import CatalogTool

    registries = _registries(site_manager)
    key = tuple(
        (getattr(aq_base(r), "_p_oid", None) or id(aq_base(r)), r.adapters._generation)
        for r in registries
    )
    if key not in _ADAPTERS_CHECKED:
        indexers = [
            r.factory for r in _registered(registries, IIndexer) if r.name == INDEX
        ]
        providers = [r.factory for r in _registered(registries, ILocalRoleProvider)]
        _ADAPTERS_CHECKED.clear()  # one site manager's answer is enough to keep
        _ADAPTERS_CHECKED[key] = (
            indexers == [CatalogTool.allowedRolesAndUsers]
            and providers == [DefaultLocalRoleAdapter]
            and not _registered(registries, IWorkspace)
        )
    return _ADAPTERS_CHECKED[key]


def supported(catalog, obj) -> bool:
    """Whether the values computed here are the indexer's, for this site:
    Plone's indexer, borg.localrole's adapter and PAS plug-in only."""
    from borg.localrole.workspace import WorkspaceLocalRoleManager
    from Products.PlonePAS import pas
    from Products.PlonePAS.interfaces.plugins import ILocalRolesPlugin

    if set(getattr(obj, "_cmf_security_indexes", ())) != {INDEX}:
        return False
    index = catalog.getIndexDefinitions().get(INDEX)
    if index is None or index.meta_type != "KeywordIndex":
        return False
    if list(index.getIndexSourceNames()) != [INDEX]:
        return False
    if not _plone_adapters_only(getSiteManager(catalog)):
        return False
    acl_users = getToolByName(obj, "acl_users", None)
    if acl_users is None:
        return False
    if getattr(type(aq_base(acl_users)), "_getAllLocalRoles", None) is not (
        pas._getAllLocalRoles
    ):
        return False
    try:
        plugins = acl_users.plugins.listPlugins(ILocalRolesPlugin)
    except KeyError:  # PAS not set up yet (a site being created)
        return False
    return all(
        isinstance(aq_base(plugin), WorkspaceLocalRoleManager) for _, plugin in plugins
    )


# -- the subtree ---------------------------------------------------------------

_ATTRIBUTES = [PERMISSION_ATTRIBUTE, LOCAL_ROLES, BLOCK]
#: State keys of containers: a BTree folder's items (``_tree``), an OFS
#: folder's (``_objects``); such a container may hold a user folder.
_CONTAINER_KEYS = ["_tree", "_objects"]

#: Each cataloged row of a subtree: its stored value, the serial of its
#: state, and the security attributes of its state.  ``plain`` is false
#: for a state that is not a plain attribute mapping (zodb-pgjsonb marks
#: its other forms with "@" keys).
_SUBTREE = sql.SQL(
    "SELECT c.zoid, o.tid, c.path, o.class_mod, o.class_name, c.value,"
    " jsonb_typeof(o.state) = 'object' AND NOT EXISTS ("
    "  SELECT 1 FROM jsonb_object_keys(o.state) AS k WHERE k LIKE '@%%'),"
    " CASE WHEN jsonb_typeof(o.state) = 'object' THEN ("
    "  SELECT jsonb_object_agg(key, value) FROM jsonb_each(o.state)"
    "  WHERE key = ANY(%s::text[])) END,"
    " jsonb_typeof(o.state) = 'object' AND o.state ?| %s::text[]"
    " FROM (SELECT zoid, path, {value} AS value FROM {table}"
    " WHERE {subtree}) AS c JOIN {objects} AS o ON o.zoid = c.zoid"
)


@dataclass(frozen=True)
class StoredRow:
    zoid: int
    #: the transaction that stored the object's state
    tid: int
    path: str
    #: the stored value of the index (its JSON), None if it has none
    value: list | None
    #: the settings of its state, or None where they cannot be read
    settings: Settings | None
    #: whether the object holds items (one of them could be a user folder)
    container: bool


def read_subtree(
    conn: psycopg.Connection, root: str, ready: dict[str, str]
) -> list[StoredRow]:
    """The cataloged rows at and below ``root`` with their settings;
    ``ready``: the typed columns ready in the snapshot (the index's value
    may be stored in its column only: ``columns.value_of``)."""
    subtree, params = path_clause(root, -1)
    statement = _SUBTREE.format(
        value=columns.value_of(layout.TABLE, INDEX, ready),
        table=layout.TABLE,
        objects=layout.OBJECTS,
        subtree=subtree,
    )
    rows = []
    with connection.json_cursor(conn) as cursor:
        cursor.execute(
            statement, (_ATTRIBUTES, _CONTAINER_KEYS, *params), prepare=False
        )
        for (
            zoid,
            tid,
            path,
            module,
            name,
            value,
            plain,
            attributes,
            container,
        ) in cursor:
            try:
                if not plain:
                    raise Unsupported("state is not an attribute mapping")
                settings = stored_settings(module, name, attributes or {})
            except Unsupported as why:
                logger.debug("security of %s read from the object: %s", path, why)
                settings = None
            rows.append(StoredRow(zoid, tid, path, value, settings, bool(container)))
    return rows


def _queued() -> set[int]:
    """Oids of the objects waiting in CMFCore's indexing queue."""
    oids = set()
    for entry in getQueue().getState():
        queued = entry[1]
        if isProxy(queued):
            queued = getProxiedObject(queued)
        oid = getattr(aq_base(queued), "_p_oid", None)
        if oid is not None:
            oids.add(u64(oid))
    return oids


class _Subtree:
    """The settings of a subtree's objects, from their stored states."""

    def __init__(self, obj, root: str, rows: list[StoredRow], live: set[int]):
        self.obj = obj
        self.root = root
        self.rows = {row.path: row for row in rows}
        self.live = live
        self._chains: dict[str, tuple[list, list] | None] = {}
        self._user_folders: dict[str, bool] = {}

    def chain(self, path: str) -> tuple[list, list] | None:
        """The permission settings and ``(local roles, block)`` of the
        object at ``path`` and its containers up to the root (exclusive),
        or None where one of them is not known from a stored state."""
        if path not in self._chains:
            self._chains[path] = self._chain(path)
        return self._chains[path]

    def _chain(self, path: str) -> tuple[list, list] | None:
        row = self.rows.get(path)
        if row is None or row.settings is None or row.zoid in self.live:
            return None
        if self._holds_user_folder(row):
            return None  # its own items' acl_users is the indexer's
        parent = path.rsplit("/", 1)[0]
        above = ([], []) if parent == self.root else self.chain(parent)
        if above is None:
            return None
        settings = row.settings
        return (
            [settings.permission, *above[0]],
            [(settings.local_roles, settings.block), *above[1]],
        )

    def _holds_user_folder(self, row: StoredRow) -> bool:
        """Whether the object holds an ``acl_users`` (which the indexer
        would ask for its local roles instead of the site's)."""
        if not row.container:
            return False
        relative = row.path[len(self.root) + 1 :]
        try:
            container = self.obj.unrestrictedTraverse(relative)
        except (AttributeError, KeyError):
            return True  # not where the catalog says: read from the object
        return getattr(aq_base(container), "acl_users", None) is not None


def reindex_subtree(catalog, obj, skip_self: bool = False) -> bool:
    """``obj.reindexObjectSecurity(skip_self)``, without loading the
    descendants whose stored states tell their value.

    Returns False, having done nothing, where the computation would not be
    the indexer's (``supported``), the transaction moved or removed catalog
    rows, or ``obj`` holds no items (the caller then does CMFCore's walk).
    """
    if not getattr(aq_base(obj), "isPrincipiaFolderish", False):
        return False  # no descendants: CMFCore's walk is one object
    pending = current_pending()
    if pending is not None and (
        pending.moves
        or pending.removed_paths
        or pending.cleared_subtrees
        or pending.kept_subtrees
    ):
        return False
    if not supported(catalog, obj):
        return False
    root = "/".join(obj.getPhysicalPath())
    with connection.reading(catalog) as conn:
        rows = read_subtree(conn, root, connection.ready_columns(catalog))
    if any(row.path != root for row in rows):
        try:
            above_permissions, above_local_roles = _chain_above(obj)
        except Unsupported:
            return False
    jar = connection._jar(obj)
    # Objects whose stored state may not be what they are now.
    live = connection.changed_in_transaction(obj) | _queued()
    reread = set()
    if pending is not None:
        live.update(pending.rows)
        live.update(pending.patches)
        # Cataloged in this transaction: found by CMFCore's search too.
        reread.update(
            row.path for row in pending.rows.values() if in_subtree(row.path, root)
        )
    index = catalog.getIndexDefinitions()[INDEX]
    translator = get_translator(index.meta_type)
    subtree = _Subtree(obj, root, rows, live)
    patches = []
    for row in rows:
        if row.path == root:
            if not skip_self:
                reread.add(row.path)
            continue
        found = subtree.chain(row.path)
        if found is None:
            reread.add(row.path)
            continue
        permissions, local_roles = found
        try:
            roles = permission_roles([*permissions, *above_permissions])
        except Unsupported:
            reread.add(row.path)
            continue
        merged = merged_local_roles([*local_roles, (above_local_roles, True)])
        allowed = allowed_roles_and_users(roles, merged)
        # As stored: a principal id with a NUL character (a local role
        # set by a script or an import) failed the commit.
        value = index_value(translator, index, SimpleNamespace(**{INDEX: allowed}))
        if value == row.value or (value is MISSING and row.value is None):
            continue
        patches.append(
            CatalogPatch(
                zoid=row.zoid,
                path=row.path,
                values={} if value is MISSING else {INDEX: value},
                removed=(INDEX,) if value is MISSING else (),
                meta={},
                update_metadata=False,
            )
        )
    if patches:
        pending = catalog.pending_changes()
        for patch in patches:
            pending.patch(patch)
    # A value computed from the states these rows had must not overwrite
    # the row of a newer state another transaction commits meanwhile:
    # ZODB's read-conflict check, as if each object had been loaded.
    for row in rows:
        if row.path not in reread and row.zoid not in live:
            jar._readCurrent.setdefault(p64(row.zoid), p64(row.tid))
    for path in sorted(reread):
        _reindex_object(obj, root, path)
    logger.debug(
        "security of %s: %d rows read, %d changed, %d objects read again",
        root,
        len(rows),
        len(patches),
        len(reread),
    )
    return True


def _reindex_object(obj, root: str, path: str) -> None:
    """CMFCore's step for one object: its security indexes read again."""
    try:
        target = (
            obj if path == root else obj.unrestrictedTraverse(path[len(root) + 1 :])
        )
    except (AttributeError, KeyError):
        return  # as CMFCore: not there any more
    changed = getattr(target, "_p_changed", 0)
    target.reindexObject(idxs=obj._cmf_security_indexes, update_metadata=0)
    if changed is None:
        target._p_deactivate()


# -- the method ------------------------------------------------------------------

_cmf_reindex_object_security = CatalogAware.reindexObjectSecurity


def reindexObjectSecurity(self, skip_self=False):
    """CMFCore's ``reindexObjectSecurity``; set-based where the catalog is
    a ``PGCatalogTool`` and ``reindex_subtree`` can compute the values."""
    catalog = pg_catalog(self)  # its site's, also where that is not current
    if catalog is not None and reindex_subtree(catalog, self, skip_self):
        return
    _cmf_reindex_object_security(self, skip_self)


def install() -> None:
    """Make content use ``reindexObjectSecurity`` above (at import)."""
    CatalogAware.reindexObjectSecurity = reindexObjectSecurity


# -- who may read a snippet -------------------------------------------------------

#: What a snippet, a passage of the object's text, needs (a search asks
#: for ``PERMISSION``, as Plone's ``allowedRolesAndUsers``).
SHOWN_WITH = "View"


def text_hidden_states(catalog) -> frozenset:
    """``(portal_type, review_state)`` of the items a user may find but
    not view: workflow states that grant "View" to other roles than
    "Access contents information" (a "listed but restricted" workflow;
    plone.app.discussion's comments, whose View comes from the item they
    comment).  ``(type, None)`` for a type without a workflow, which takes
    both from its container, where a folderish type has such a state;
    ``(None, state)`` for a state of a workflow no type's chain names,
    where a placeful policy may give it.  Empty where every state grants
    both alike."""
    workflows = getToolByName(catalog, "portal_workflow", None)
    types = getToolByName(catalog, "portal_types", None)
    if workflows is None or types is None:
        return frozenset({(None, None)})  # no workflows to read: check all
    hidden: set = set()
    chained: set[str] = set()
    without_workflow = []
    folders_differ = False
    for type_id, fti in types.objectItems():
        chain = workflows.getChainForPortalType(type_id)
        if not chain:
            without_workflow.append(type_id)
        for workflow_id in chain:
            chained.add(workflow_id)
            for state_id in _differing_states(workflows.getWorkflowById(workflow_id)):
                hidden.add((type_id, state_id))
                folders_differ = folders_differ or _folderish(fti)
    for workflow_id in workflows.getWorkflowIds():
        if workflow_id not in chained:
            hidden.update(
                (None, state_id)
                for state_id in _differing_states(
                    workflows.getWorkflowById(workflow_id)
                )
            )
    if folders_differ or any(type_id is None for type_id, _ in hidden):
        hidden.update((type_id, None) for type_id in without_workflow)
    return frozenset(hidden)


def _differing_states(workflow) -> list[str]:
    states = getattr(workflow, "states", None)
    if states is None:
        return []
    differing = []
    for state_id, state in states.objectItems():
        roles = getattr(state, "permission_roles", None) or {}
        if roles.get(SHOWN_WITH) != roles.get(PERMISSION):
            differing.append(state_id)
    return differing


def _folderish(fti) -> bool:
    """Whether items of the type ``fti`` may hold items (unknown: yes)."""
    from Products.CMFCore.interfaces import IFolderish
    from zope.dottedname.resolve import resolve

    try:
        return IFolderish.implementedBy(resolve(fti.klass))
    except (AttributeError, ImportError, TypeError, ValueError):
        return True


def may_read_text(brain) -> bool:
    """Whether the user may read the text of ``brain``'s object (its
    snippet): always, unless its type and state are of
    ``text_hidden_states`` (worked out once per result); then the object
    is loaded and asked for "View"."""
    results = brain._snippets
    catalog = results.catalog
    hidden = getattr(results, "text_hidden", None)
    if hidden is None:
        hidden = results.text_hidden = text_hidden_states(catalog)
    if not hidden:
        return True
    portal_type = getattr(brain, "portal_type", None)
    state = getattr(brain, "review_state", None)
    if not (
        (portal_type, state) in hidden
        or (portal_type, None) in hidden
        or (None, state) in hidden
        or (None, None) in hidden
    ):
        return True
    obj = catalog.unrestrictedTraverse(brain.getPath(), None)
    if obj is None:
        return False
    return bool(getSecurityManager().checkPermission(SHOWN_WITH, obj))
