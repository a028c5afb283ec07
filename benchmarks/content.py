"""Deterministic benchmark content and its creation through Plone's APIs.

Owns: the specification of the documents (a pure function of the number of
documents and the seed: same content on both backends, in every run) and
creating them in a site with plone.api, one commit per item, timing each.

``doc_specs`` is pure; ``create_*`` need a Plone site and a Manager as the
current user.
"""

from __future__ import annotations

from dataclasses import dataclass

import random
import time

SEED = 20251123
#: Folders the documents are spread over (round robin).
SECTIONS = 10
#: The 15 subjects; titles and descriptions use these words too.
TAGS = (
    "alpine",
    "harbor",
    "quantum",
    "meadow",
    "copper",
    "lantern",
    "glacier",
    "orchid",
    "summit",
    "cobalt",
    "falcon",
    "prairie",
    "canyon",
    "ember",
    "willow",
)
FILLER = (
    "annual",
    "report",
    "notes",
    "about",
    "the",
    "project",
    "update",
    "guide",
    "review",
    "plan",
    "meeting",
    "summary",
    "draft",
    "policy",
    "study",
    "overview",
    "field",
    "results",
    "budget",
    "team",
)
#: (state, cumulative probability): published 70 %, private 20 %, pending 10 %.
STATES = (("published", 0.7), ("private", 0.9), ("pending", 1.0))
#: Effective dates: spread over the two years before this day (fixed, so
#: that runs are comparable and nothing is in the future).
EFFECTIVE_BASE = (2025, 1, 1)
EFFECTIVE_SPAN_DAYS = 730


@dataclass(frozen=True)
class DocSpec:
    id: str
    section: str
    title: str
    description: str
    subjects: tuple[str, ...]
    state: str
    #: days before EFFECTIVE_BASE
    effective_days_ago: float


def section_id(number: int) -> str:
    return f"section-{number:02d}"


def doc_specs(count: int, seed: int = SEED) -> list[DocSpec]:
    """The ``count`` documents of a run; the first ``n`` are the same for
    every ``count >= n``."""
    if count < 0:
        raise ValueError(f"count must be >= 0, not {count}")
    rng = random.Random(seed)
    specs = []
    for number in range(count):
        subjects = tuple(rng.sample(TAGS, rng.randint(0, 4)))
        words = list(subjects) + rng.sample(FILLER, 5 - min(len(subjects), 3))
        rng.shuffle(words)
        title = " ".join(words[:5]).capitalize() + f" {number}"
        body = list(subjects) * 2 + rng.choices(FILLER, k=10)
        rng.shuffle(body)
        description = " ".join(body).capitalize() + "."
        draw = rng.random()
        state = next(name for name, limit in STATES if draw < limit)
        specs.append(
            DocSpec(
                id=f"doc-{number:05d}",
                section=section_id(number % SECTIONS),
                title=title,
                description=description,
                subjects=subjects,
                state=state,
                effective_days_ago=rng.uniform(0, EFFECTIVE_SPAN_DAYS),
            )
        )
    return specs


#: The transition that brings a new (private) document to each state.
TRANSITION_TO = {"published": "publish", "pending": "submit", "private": None}


def effective_date(spec: DocSpec):
    from DateTime import DateTime

    year, month, day = EFFECTIVE_BASE
    return DateTime(year, month, day, 12, 0, 0, "UTC") - spec.effective_days_ago


def create_sections(site) -> None:
    """The published folders the documents live in (one commit)."""
    from plone import api

    import transaction

    for number in range(SECTIONS):
        folder = api.content.create(
            container=site,
            type="Folder",
            id=section_id(number),
            title=f"Section {number}",
        )
        api.content.transition(obj=folder, transition="publish")
    transaction.commit()


def create_document(site, spec: DocSpec, commit: bool = True):
    """Create one document, bring it to its state and commit (unless not
    ``commit``: the caller commits a batch)."""
    from plone import api

    import transaction

    doc = api.content.create(
        container=site[spec.section],
        type="Document",
        id=spec.id,
        title=spec.title,
        description=spec.description,
        subject=spec.subjects,
    )
    doc.setEffectiveDate(effective_date(spec))
    transition = TRANSITION_TO[spec.state]
    if transition:
        api.content.transition(obj=doc, transition=transition)
    else:
        doc.reindexObject()
    if commit:
        transaction.commit()
    return doc


def create_documents(site, specs: list[DocSpec], progress=None) -> list[float]:
    """Create every document (one commit each); return ms per document."""
    timings = []
    for number, spec in enumerate(specs, 1):
        started = time.perf_counter()
        create_document(site, spec)
        timings.append((time.perf_counter() - started) * 1000.0)
        if progress and (number % 100 == 0 or number == len(specs)):
            progress(f"created {number}/{len(specs)} documents")
    return timings


def check_documents(site, specs: list[DocSpec]) -> None:
    """Fail loudly if the content is not what the specification says."""
    from plone import api

    for spec in specs[:: max(1, len(specs) // 25)]:
        doc = site[spec.section][spec.id]
        state = api.content.get_state(doc)
        if state != spec.state or tuple(doc.Subject()) != spec.subjects:
            raise RuntimeError(
                f"{spec.id}: state {state!r}, subjects {doc.Subject()!r}; "
                f"expected {spec.state!r}, {spec.subjects!r}"
            )
