"""CMFCore's ``processQueue`` with two threads at once (``indexqueue``).

The real ``processQueue`` and ``IndexQueue``; only ``IndexQueue.process``
is replaced, by one that records which thread processed and holds the
first thread inside it until the second has called ``processQueue``.
"""

from __future__ import annotations

from plone_pgcatalog import indexqueue
from Products.CMFCore import indexing

import threading


def _race(monkeypatch) -> dict:
    """Thread "first" processes its queue; meanwhile thread "second"
    calls ``processQueue`` with an item queued.  What each thread got."""
    inside, second_done = threading.Event(), threading.Event()
    processed, outcome = [], {}

    def process(queue):
        name = threading.current_thread().name
        processed.append(name)
        if name == "first":
            inside.set()
            second_done.wait(5)
        queue.queue = []
        return 1

    monkeypatch.setattr(indexing.IndexQueue, "process", process)
    monkeypatch.setattr(indexing.IndexQueue, "hook", lambda queue: None)

    def run(name):
        queue = indexing.getQueue()
        queue.queue = [(indexing.REINDEX, object(), None, 1)]
        try:
            outcome[name] = indexing.processQueue()
        except Exception as error:  # what the race raises
            outcome[name] = error
        finally:
            if name == "second":
                second_done.set()

    first = threading.Thread(target=run, args=("first",), name="first")
    first.start()
    assert inside.wait(5)
    second = threading.Thread(target=run, args=("second",), name="second")
    second.start()
    second.join(5)
    first.join(5)
    return {"processed": processed, **outcome}


def test_each_thread_processes_its_own_queue(monkeypatch):
    indexqueue.install()
    assert isinstance(indexing.processing, indexqueue.PerThreadSet)
    got = _race(monkeypatch)
    assert got == {"processed": ["first", "second"], "first": 1, "second": 1}


def test_cmfcore_alone_skips_the_second_queue(monkeypatch):
    """Why ``install`` exists: with CMFCore's shared set the second thread
    skips its queue.  (Where both threads pass the guard's test before
    either adds to the set, the one that finishes second fails with a
    ``KeyError`` instead: the soak's 500; no test can order that.)"""
    monkeypatch.setattr(indexing, "processing", set())
    got = _race(monkeypatch)
    assert got == {"processed": ["first"], "first": 1, "second": 0}


def test_the_guard_still_stops_processing_again_within_a_thread(monkeypatch):
    indexqueue.install()
    again = []

    def process(queue):
        again.append(indexing.processQueue())  # a search while processing
        queue.queue = []
        return 1

    monkeypatch.setattr(indexing.IndexQueue, "process", process)
    monkeypatch.setattr(indexing.IndexQueue, "hook", lambda queue: None)
    indexing.getQueue().queue = [(indexing.REINDEX, object(), None, 1)]
    assert indexing.processQueue() == 1
    assert again == [0]
    assert len(indexing.processing) == 0
