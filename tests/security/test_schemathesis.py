"""The API against its own OpenAPI schema, over HTTP, with schemathesis.

The schema is fetched from `/api/v1/schema/` of pytest-django's live server when the test
runs, so every operation in it is exercised, including endpoints added after this file was
written. Requests go over a real socket through the whole stack (middleware, key
authentication, throttling, the error handler), with a real admin key and a real agent
key of a test tenant. Each operation gets the schema's examples, schemathesis' coverage
cases (boundaries, missing and wrong-typed fields, missing auth) and a few generated cases,
valid and invalid; every answer must be:

- no 5xx;
- a documented status code of that operation;
- of a documented content type, with documented required headers;
- a body that matches the documented schema for that status (errors: the `Error` shape).

Hypothesis is derandomized and bounded (`max_examples`), so the run is the same every time
and takes a minute or two.

Why the live server and not schemathesis' `from_wsgi`: both run the same Django stack, but
only the live server parses real HTTP (percent-encoded paths, odd header values,
Content-Length) the way a deployment does, and fetching the schema over HTTP tests the
served schema too. pytest-django's `live_server` costs a flushed database per test, which
for two tests is nothing.

Not checked here: whether the API accepts every schema-valid request and refuses every
schema-violating one (schemathesis' `positive_data_acceptance` / `negative_data_rejection`);
the schema is deliberately looser than the validation in places (agent slugs, limits).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tenants.models import Tenant

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]

BOUNDED = settings(
    max_examples=8,
    derandomize=True,
    database=None,
    deadline=None,
    phases=[Phase.explicit, Phase.generate, Phase.shrink],
    # A live server answers slower than hypothesis expects of a unit test; that is fine here.
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture,
                           HealthCheck.data_too_large],
)


def _forget_cached_encoders() -> None:
    # Providers and opened vector indexes are cached per process; drop them so the settings
    # below take effect (and do not leak into later tests).
    for module, function in (("atoms.embedding", "forget_providers"), ("atoms.vector_index", "forget_opened")):
        try:
            getattr(importlib.import_module(module), function)()
        except (ImportError, AttributeError):
            pass


@pytest.fixture
def fake_encoder(settings: Any, tmp_path: Path) -> Iterator[None]:
    """The deterministic test encoder instead of MiniLM: the indexing that follows every Atom
    write stays fast, and the index endpoints do real work instead of INDEX_NOT_READY."""
    settings.ATOMS_EMBEDDING_PROVIDER = {"class": "atoms.core.embedding.FakeHashProvider", "options": {"dimensions": 64}}
    settings.ATOMS_VECTOR_INDEX_ROOT = tmp_path / "vector-index"
    _forget_cached_encoders()
    yield
    _forget_cached_encoders()


@pytest.fixture
def api_schema(live_server: Any, eager: None, fake_encoder: None, acme: Tenant) -> schemathesis.BaseSchema:
    # Fetched over HTTP from the running server: what clients see is what is tested.
    return schemathesis.openapi.from_url(f"{live_server.url}/api/v1/schema/?format=json")


@pytest.fixture
def admin_secret(acme: Tenant, make_key: Any) -> str:
    return make_key(acme, "admin", name="schemathesis admin")[1]


@pytest.fixture
def agent_secret(acme: Tenant, make_key: Any) -> str:
    return make_key(acme, "agent", name="schemathesis agent")[1]


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@BOUNDED
def test_every_answer_to_an_admin_key_is_documented(case: schemathesis.Case, admin_secret: str) -> None:
    case.call_and_validate(headers={"Authorization": f"Bearer {admin_secret}"}, checks=CHECKS)


@schema.parametrize()
@BOUNDED
def test_every_answer_to_an_agent_key_is_documented(case: schemathesis.Case, agent_secret: str) -> None:
    case.call_and_validate(headers={"Authorization": f"Bearer {agent_secret}"}, checks=CHECKS)
