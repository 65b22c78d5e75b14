"""Index tests: the api fixtures (keys I, W, X, Z on tenant acme) with the fake provider."""

from __future__ import annotations

from typing import Any

import pytest

from atoms.embedding import forget_providers
from atoms.vector_index import forget_opened
from tests.atoms.api.conftest import I, W, X, Z, frozen_clock, keys  # noqa: F401 - fixtures

FAKE = {"class": "atoms.core.embedding.FakeHashProvider", "options": {"dimensions": 64}}


@pytest.fixture(autouse=True)
def fake_provider(settings: Any, tmp_path: Any) -> dict[str, Any]:
    settings.ATOMS_EMBEDDING_PROVIDER = FAKE
    settings.ATOMS_VECTOR_INDEX_ROOT = tmp_path / "vector-index"
    forget_providers()
    forget_opened()
    yield FAKE
    forget_providers()
    forget_opened()
