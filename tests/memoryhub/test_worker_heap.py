"""A gunicorn worker freezes its start-up heap once its preloads are done (docs/operations.md
"The start-up heap"): the hook of gunicorn.conf.py, called as gunicorn calls it, with a
stand-in for the worker (it only needs `notify`)."""

from __future__ import annotations

import gc
import runpy
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


class Node:
    self: Node | None = None


class Worker:
    def __init__(self) -> None:
        self.notified = 0

    def notify(self) -> None:
        self.notified += 1


@pytest.fixture
def thawed() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # the rest of the suite collects as usual


def test_the_worker_hook_freezes_what_start_up_loaded(thawed: None, settings) -> None:  # type: ignore[no-untyped-def]
    settings.ATOMS_EMBEDDING_PROVIDER = None  # nothing to load: the hook goes straight to the freeze
    assert gc.get_freeze_count() == 0
    hooks = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    hooks["post_worker_init"](Worker())
    # Everything alive at the call, this test's own objects included, is now frozen.
    assert gc.get_freeze_count() > 10_000
    assert not any(obj is hooks for obj in gc.get_objects())


def test_objects_made_after_the_freeze_are_still_collected(thawed: None, settings) -> None:  # type: ignore[no-untyped-def]
    settings.ATOMS_EMBEDDING_PROVIDER = None
    runpy.run_path(str(ROOT / "gunicorn.conf.py"))["post_worker_init"](Worker())
    node = Node()
    node.self = node  # a reference cycle: only the collector frees it
    gone = weakref.ref(node)
    del node
    assert gone() is not None
    gc.collect()
    assert gone() is None
