from __future__ import annotations

from pathlib import Path

import pytest

from tests.tenants.memory.helpers import Mem, set_volume


@pytest.fixture
def mem(acme, make_key, client_for) -> Mem:
    """An agent key of acme with approval off, so its writes apply at once (new tenants stage them)."""
    set_volume(acme, approval="off")
    return Mem(client_for(make_key(acme, "agent")[1]))


@pytest.fixture
def reviewer_mem(acme, make_key, client_for) -> Mem:
    return Mem(client_for(make_key(acme, "reviewer")[1]))


@pytest.fixture
def root(settings, tmp_path: Path) -> Path:
    """A volume root of the test's own, so the memory files are projected onto disk."""
    settings.MEMORYHUB_VOLUME_ROOT = tmp_path / "volumes"
    return settings.MEMORYHUB_VOLUME_ROOT
