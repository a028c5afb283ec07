"""A small site for differential tests: a folder and numbered pages.

Must not import plone_pgcatalog: the same code builds the oracle's site.
"""

from __future__ import annotations

from collections.abc import Callable
from plone import api
from plone.app.testing import setRoles
from plone.app.testing import TEST_USER_ID
from plone.app.textfield.value import RichTextValue

import transaction

SUBJECTS = ("alpha", "beta", "gamma")


def build_pages(
    portal,
    count: int,
    title: Callable[[int], str],
    description: Callable[[int], str] = lambda number: "",
) -> None:
    """A published folder ``folder`` and ``count`` pages ``page-NN``
    (every fourth in the folder, the others in the site) titled
    ``title(number)``, with the first ``number % 4`` of ``SUBJECTS`` as
    tags; every other one published; committed."""
    setRoles(portal, TEST_USER_ID, ["Manager"])
    folder = api.content.create(
        container=portal, type="Folder", id="folder", title="Folder"
    )
    for number in range(count):
        container = folder if number % 4 == 0 else portal
        page = api.content.create(
            container=container,
            type="Document",
            id=f"page-{number:02d}",
            title=title(number),
            subject=SUBJECTS[: number % 4],
            description=description(number),
        )
        if number % 2 == 0:
            api.content.transition(obj=page, transition="publish")
    api.content.transition(obj=folder, transition="publish")
    transaction.commit()


def add_documents(portal, documents: dict[str, dict]) -> None:
    """Documents in the site, created as a Manager, not committed:
    ``{id: fields}`` (``title``, ``description``, ``subject``..., and
    ``text`` as HTML)."""
    setRoles(portal, TEST_USER_ID, ["Manager"])
    with api.env.adopt_roles(["Manager"]):
        for page_id, fields in documents.items():
            if "text" in fields:
                html = RichTextValue(fields["text"], "text/html", "text/x-html-safe")
                fields = {**fields, "text": html}
            api.content.create(container=portal, type="Document", id=page_id, **fields)
