"""Property: any rejected batch leaves storage unchanged (issue requirement)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atoms.models import Atom, EraseDependency, Origin, ReplayRecord, Revision, Slot
from memoryhub.models import AuditEvent
from tests.atoms.api.helpers import create

TABLES = [Atom, Revision, Slot, Origin, EraseDependency, ReplayRecord, AuditEvent]

texts = st.text(min_size=0, max_size=40)
bad_changes = st.one_of(
    st.builds(lambda t: {"id": "x", "op": "create", "content": {"text": t}, "sources": []}, texts),
    st.builds(lambda t: create("x", t, links={"r": {"local": "nowhere"}}), texts),
    st.builds(lambda t: create("x", t, sources=[{"ref": "ref:00000000-0000-4000-8000-000000000000"}]), texts),
    st.builds(lambda t: create("x", t, links={"r": {"ref": "x", "local": "y"}}), texts),
    st.builds(lambda t: {"id": "x", "op": "retire", "target": 5}, texts),
    st.just({"id": "", "op": "create", "content": {"text": "x", "links": []}, "sources": []}),
)


def _snapshot() -> list[int]:
    return [model.objects.count() for model in TABLES]


@pytest.mark.django_db
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(good=st.lists(texts, max_size=3), bad=bad_changes, position=st.integers(min_value=0, max_value=3))
def test_a_rejected_batch_changes_nothing(I, good, bad, position):
    before = _snapshot()
    changes = [create(f"g{i}", text) for i, text in enumerate(good)]
    changes.insert(min(position, len(changes)), bad)
    response = I.write(*changes)
    assert response.status_code >= 400
    assert _snapshot() == before
