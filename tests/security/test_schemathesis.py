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
- a body that matches the documented schema for that status (errors: the `Error` shape);
- for a request that violates the schema, a refusal (4xx: schemathesis'
  `negative_data_rejection`), on every operation except those listed below. The server
  refuses what the schema refuses (docs/api.md "Conventions"). A 413 counts as a refusal
  too: the Atom API answers a list or text over its limit with `LIMIT_EXCEEDED` (413), and
  the schema states those limits as `maxItems` and `maxLength` (docs/atoms.md "Request
  schemas").

Three runs, bounded in time (together about three minutes on SQLite, four to five on
PostgreSQL, on two busy cores):

- the admin key and the agent key, derandomized: the same requests every time, the
  schema's examples and the coverage cases included;
- the admin key with a random seed per test session, so that each run explores new
  requests (generated ones only: the examples and coverage cases would repeat the first run). The seed is printed (`SCHEMATHESIS_SEED=...`) and added to any failure; run
  `SCHEMATHESIS_SEED=<seed> pytest tests/security/test_schemathesis.py` to replay it.

Operations where a schema-violating request may be accepted, and why
(`NEGATIVE_DATA_ACCEPTED`):

- `POST /api/v1/agents/{agent}/memory`, the key-value RPC: docs/kv.md keeps the original
  store's contract that fields an action does not use, and unknown fields, are ignored
  unchecked (an SDK's extra arguments must not break its calls). Its schema therefore
  does not refuse them either, but it lists fields whose type matters only to some
  actions (`key` to get/set/delete), so a wrong type where the action ignores it passes.
- `POST /api/v1/tools/memory`: the memory tool answers every call with 200 and a tool
  result for the model, failures included, and takes the original tool's arguments as
  they are (null means absent); docs/memory-files.md.

Our key is not added to a case generated to send a missing or malformed `Authorization`
(`auth_headers`): such a case goes out as generated and must be refused (401). Schemathesis
drops an explicit `Authorization` itself when the header is the case's only negated location,
but not when the case negates the query too; with the key added back, a case whose query
negation was only an extra parameter (which the server ignores) was a valid request that
the check then expected to be refused.

Why the live server and not schemathesis' `from_wsgi`: both run the same Django stack, but
only the live server parses real HTTP (percent-encoded paths, odd header values,
Content-Length) the way a deployment does, and fetching the schema over HTTP tests the
served schema too. pytest-django's `live_server` costs a flushed database per test, which
for three tests is nothing.
"""

from __future__ import annotations

import importlib
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, seed, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation.meta import negated_parameters
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
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

# Operations whose schema-violating requests may be accepted: see the module docstring.
NEGATIVE_DATA_ACCEPTED = frozenset({"POST /api/v1/agents/{agent}/memory", "POST /api/v1/tools/memory"})


def negative_data_refused(ctx: Any, response: Any, case: schemathesis.Case) -> bool | None:
    """`negative_data_rejection`, with 413 (a list or text over its limit) as a refusal too."""
    if response.status_code == 413:
        return None
    return negative_data_rejection(ctx, response, case)


def checks_for(case: schemathesis.Case) -> list[Any]:
    if case.operation.label in NEGATIVE_DATA_ACCEPTED:
        return CHECKS
    return [*CHECKS, negative_data_refused]


def negates_authorization(case: schemathesis.Case) -> bool:
    """Whether the case was generated to send `Authorization` missing or malformed: one of
    the parameters schemathesis negated, in every location it negated."""
    return any(location == ParameterLocation.HEADER and name.lower() == "authorization"
               for name, location in negated_parameters(case.meta))


def auth_headers(case: schemathesis.Case, secret: str) -> dict[str, str]:
    """The key's header, unless the case negates `Authorization` (module docstring)."""
    return {} if negates_authorization(case) else {"Authorization": f"Bearer {secret}"}


# Seconds for one request: a hanging answer fails the case instead of stalling the run.
TIMEOUT = 30

SEED_VARIABLE = "SCHEMATHESIS_SEED"
# One seed per test session: new requests on every run, replayable from the printed value.
SEED = int(os.environ.get(SEED_VARIABLE) or random.SystemRandom().randrange(2**32))

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
# The random run: fewer cases per operation, so that the three runs together stay within
# about three minutes; over many sessions they add up to far more than the fixed run. It
# generates only: the schema's examples and schemathesis' coverage cases (run in the explicit
# phase) are the same every time, and the admin run above already sends them with this key.
SEEDED = settings(BOUNDED, derandomize=False, max_examples=5, phases=[Phase.generate, Phase.shrink])


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


@pytest.fixture(scope="module", autouse=True)
def _show_the_seed(request: pytest.FixtureRequest) -> None:
    # In the session's output whether or not a test fails (print() alone shows only on failure).
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(f"{SEED_VARIABLE}={SEED} (the random run's seed; set it to replay that run)")


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@BOUNDED
def test_every_answer_to_an_admin_key_is_documented(case: schemathesis.Case, admin_secret: str) -> None:
    case.call_and_validate(headers=auth_headers(case, admin_secret), checks=checks_for(case), timeout=TIMEOUT)


@schema.parametrize()
@BOUNDED
def test_every_answer_to_an_agent_key_is_documented(case: schemathesis.Case, agent_secret: str) -> None:
    case.call_and_validate(headers=auth_headers(case, agent_secret), checks=checks_for(case), timeout=TIMEOUT)


@schema.parametrize()
@SEEDED
@seed(SEED)
def test_random_requests_of_this_session_are_answered_as_documented(case: schemathesis.Case, admin_secret: str) -> None:
    print(f"{SEED_VARIABLE}={SEED}")  # shown with any failure; the note below says how to replay it
    try:
        case.call_and_validate(headers=auth_headers(case, admin_secret), checks=checks_for(case), timeout=TIMEOUT)
    except Exception as exc:
        exc.add_note(f"Replay with {SEED_VARIABLE}={SEED} .venv/bin/pytest tests/security/test_schemathesis.py")
        raise
