"""``make run``'s sample content (``demo.content``) as the catalog sees it."""

from __future__ import annotations

from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone_pgcatalog.demo.content import create_sample_content
from plone_pgcatalog.demo.content import sample_items

import transaction


def test_published_items_carry_their_publishing_dates(pg_layer):
    """``EffectiveDate``, ``Date`` and the ``effective`` index give the
    planned dates (they were the minute of creation: the date was set as a
    plain attribute ``effective``, hiding the method)."""
    portal = pg_layer["portal"]
    setRoles(portal, TEST_USER_ID, ["Manager"])
    create_sample_content(portal)
    transaction.commit()
    planned = {i.id: i.effective for i in sample_items() if i.effective is not None}
    brains = api.content.find(
        portal_type=["Document", "News Item", "Event", "Folder"],
        review_state="published",
        sort_on="effective",
    )
    found = {b.getId: b for b in brains if b.getId in planned}
    assert len(found) == len(planned)
    for id_, when in planned.items():
        brain = found[id_]
        assert brain.EffectiveDate.startswith(when.strftime("%Y-%m-%dT%H:%M")), id_
        assert brain.effective.asdatetime() == when, id_
        assert callable(brain.getObject().effective)
    dated = [b.getId for b in brains if b.getId in planned]
    assert dated == sorted(planned, key=planned.get)
