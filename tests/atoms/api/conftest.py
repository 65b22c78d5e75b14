"""Fixtures of the atom API tests: tenant T1 (acme) with keys I (ingest), W (agent), X (host),
Z (admin), all reading and writing `default`; a clock the tests can move."""

from __future__ import annotations

from typing import Any

import pytest

from tests.atoms import clock
from tests.atoms.api.helpers import AtomsClient


@pytest.fixture(autouse=True)
def frozen_clock(settings: Any) -> Any:
    settings.ATOMS_CLOCK = "tests.atoms.clock.now"
    clock.set_now(0)
    return clock


@pytest.fixture
def keys(acme, make_key, client_for) -> dict[str, AtomsClient]:
    made = {}
    for name, kind in [("I", "ingest"), ("W", "agent"), ("X", "host"), ("Z", "admin"), ("R", "reviewer")]:
        key, raw = make_key(acme, kind)
        made[name] = AtomsClient(client_for(raw), key)
    return made


@pytest.fixture
def I(keys):  # noqa: E743 - the one-letter key names every atom test uses
    return keys["I"]


@pytest.fixture
def W(keys):
    return keys["W"]


@pytest.fixture
def Z(keys):
    return keys["Z"]


@pytest.fixture
def X(keys):
    return keys["X"]
