"""Property: any rejected batch leaves storage unchanged (issue requirement)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from atoms.models import Atom, EraseDependency, Origin, ReplayRecord, Revision, Slot
from memoryhub.models import AuditEvent
from tests.atoms.api.helpers import create
from tests.conftest import error_of

TABLES = [Atom, Revision, Slot, Origin, EraseDependency, ReplayRecord, AuditEvent]

# U+0000 has its own answer before any change is read (400 INVALID_CHARACTER, docs/api.md
# "Input boundary"), so the texts leave it out and every bad change keeps its own code.
# U+0000 and lone surrogates have their own answer (docs/api.md "Input boundary") and
# surrogates cannot even be encoded as a JSON body: texts here are other text.
texts = st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)),
                min_size=0, max_size=40)
# Each bad change with the code the Atom API answers for it (docs/atoms.md, the error table).
bad_changes = st.one_of(
    st.builds(lambda t: ({"id": "x", "op": "create", "content": {"text": t}, "sources": []}, "INVALID_INPUT"), texts),
    st.builds(lambda t: (create("x", t, links={"r": {"local": "nowhere"}}), "INVALID_REF"), texts),
    st.builds(lambda t: (create("x", t, sources=[{"ref": "ref:00000000-0000-4000-8000-000000000000"}]), "INVALID_REF"),
              texts),
    st.builds(lambda t: (create("x", t, links={"r": {"ref": "x", "local": "y"}}), "INVALID_INPUT"), texts),
    st.builds(lambda t: ({"id": "x", "op": "retire", "target": 5}, "INVALID_REF"), texts),
    st.just(({"id": "", "op": "create", "content": {"text": "x", "links": []}, "sources": []}, "INVALID_SCHEMA")),
)


def _snapshot() -> list[int]:
    return [model.objects.count() for model in TABLES]


@pytest.mark.django_db
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(good=st.lists(texts, max_size=3), bad=bad_changes, position=st.integers(min_value=0, max_value=3))
def test_a_rejected_batch_changes_nothing(I, good, bad, position):
    bad_change, code = bad
    before = _snapshot()
    changes = [create(f"g{i}", text) for i, text in enumerate(good)]
    index = min(position, len(changes))
    changes.insert(index, bad_change)
    response = I.write(*changes)
    assert response.status_code == 400, response.content
    error = error_of(response)
    assert error["code"] == code, error
    assert error["details"]["path"].startswith(f"changes[{index}]"), error  # the bad change, not a good one
    assert _snapshot() == before
