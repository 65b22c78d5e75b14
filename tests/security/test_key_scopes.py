"""Keys limited to some KV agents or some Atom policies stay inside them, in their own tenant.

The KV half reuses the isolation matrix: every route naming an agent is sent, with every
method and body of its matrix entry, by keys of A's own tenant limited to another agent.
Every refusal is checked for its exact status and code (docs/api.md "Key kinds and flags"
and "Tenant isolation") and for leaving every row of the tenant as it was.
"""

from __future__ import annotations

import json

import pytest

from tenants.models import Agent, KvRun, Tenant
from tests.conftest import error_of
from tests.security.matrix import API, PARAMS, ApiCase
from tests.security.probe import SAFE, send
from tests.security.routes import all_routes
from tests.security.world import AGENT, CANARY, World, state_of

ROUTES = {route.template: route for route in all_routes()}
AGENT_ROUTES = sorted(t for t in ROUTES if t.startswith("api/v1/agents/<str:agent>"))
KV_KINDS = ["agent", "host", "reviewer", "admin"]


def stored_rows(tenant: Tenant) -> str:
    """Every row the tenant owns (tests/security/world.py `state_of`: KV, memory files,
    Atoms, keys, audit), except the keys' `last_used_at`: authenticating refreshes it
    (docs/api.md "Authentication"), which is bookkeeping, not something a request stored."""
    state = json.loads(state_of(tenant))
    state["tenants.ApiKey"] = [[pair for pair in row if pair[0] != "last_used_at"] for row in state["tenants.ApiKey"]]
    return json.dumps(state, sort_keys=True)


def expected_refusal(case: ApiCase, method: str, kind: str, read_only: bool) -> tuple[int, str]:
    """What a key of A's tenant limited to another agent gets (docs/api.md): a kind the
    endpoint does not allow, and a read-only key on a write, get 403 before any lookup;
    past those checks, the agent outside the key's list is 404 AGENT_NOT_FOUND."""
    if kind not in case.method_kinds.get(method, case.kinds):
        return 403, "PERMISSION_DENIED"
    refuses_read_only = case.refuses_read_only if case.refuses_read_only is not None else method not in SAFE
    if read_only and refuses_read_only:
        return 403, "PERMISSION_DENIED"
    return 404, "AGENT_NOT_FOUND"


@pytest.fixture
def limited(world: World, make_key) -> list[tuple[str, bool, object]]:
    """Keys of A's tenant (every KV kind, writable and read-only) limited to agent `other`."""
    made = []
    for kind in KV_KINDS:
        for read_only in (False, True):
            _, raw = make_key(world.tenant, kind, agents=["other"], read_only=read_only)
            made.append((kind, read_only, world.client_for_raw(raw)))
    return made


def test_the_agent_routes_are_all_checked() -> None:
    assert len(AGENT_ROUTES) >= 12 and all(t in API for t in AGENT_ROUTES)


@pytest.mark.parametrize("template", AGENT_ROUTES)
def test_a_key_limited_to_other_agents_gets_404_for_every_agent_route(template, world, limited) -> None:
    route, case = ROUTES[template], API[template]
    assert isinstance(case, ApiCase)
    path = route.path({p: PARAMS[p](world) for p in route.params})
    query = case.query(world) if case.query else None
    before = stored_rows(world.tenant)
    failures = []
    for method in route.api_methods():
        for body in [None] if method in SAFE else case.bodies(world):
            for kind, read_only, client in limited:
                label = f"{kind}{' read-only' if read_only else ''}"
                expected = expected_refusal(case, method, kind, read_only)
                response, _ = send(client, method, path, body=body, query=query)
                text = response.content.decode()
                code = response.json().get("error", {}).get("code") if response.content else None
                if (response.status_code, code) != expected:
                    failures.append(f"{label} {method} {path} {body}: {response.status_code} {code}, "
                                    f"expected {expected}: {text[:200]}")
                if CANARY["kv_value"] in text or CANARY["kv_run"] in text or world.run_id in text.replace(path, ""):
                    failures.append(f"{label} {method} {path}: shows agent {AGENT}'s data")
    assert not failures, "\n".join(failures)
    assert stored_rows(world.tenant) == before


def test_the_agent_list_shows_only_the_keys_agents(world, make_key) -> None:
    # A's tenant holds only AGENT; listing names no agent, so it creates none.
    for kind in KV_KINDS:
        _, raw = make_key(world.tenant, kind, agents=["other"])
        listed = world.client_for_raw(raw).get("/api/v1/agents").json()["items"]
        assert listed == [], kind
    _, raw = make_key(world.tenant, "agent", agents=["other", AGENT])
    listed = world.client_for_raw(raw).get("/api/v1/agents").json()["items"]
    assert [a["slug"] for a in listed] == [AGENT]  # the control: a listed agent is shown


def test_a_limited_admin_key_may_not_create_or_delete_agents_outside_its_list(world, make_key) -> None:
    _, raw = make_key(world.tenant, "admin", agents=["other"])
    client = world.client_for_raw(raw)
    before = stored_rows(world.tenant)
    for slug in (AGENT, "brand-new"):
        created = client.post("/api/v1/agents", {"slug": slug, "name": "taken over"}, format="json")
        assert created.status_code == 404 and error_of(created)["code"] == "AGENT_NOT_FOUND", slug
        deleted = client.delete(f"/api/v1/agents/{slug}")
        assert deleted.status_code == 404 and error_of(deleted)["code"] == "AGENT_NOT_FOUND", slug
    assert stored_rows(world.tenant) == before
    assert Agent.objects.get(tenant=world.tenant, slug=AGENT).name != "taken over"
    assert not Agent.objects.filter(tenant=world.tenant, slug="brand-new").exists()
    # Inside its list it still manages agents.
    assert client.post("/api/v1/agents", {"slug": "other"}, format="json").status_code == 201
    assert client.delete("/api/v1/agents/other").status_code == 204


def test_another_agents_run_id_is_404_for_a_key_of_an_allowed_agent(world, make_key) -> None:
    _, raw = make_key(world.tenant, "agent", agents=["other"])
    client = world.client_for_raw(raw)
    # The key's first call creates its own agent `other` (docs/kv.md "Implicit agents"); only then
    # is the tenant's state fixed, so the comparison below sees what the run probes changed.
    assert client.get("/api/v1/agents/other/namespaces").status_code == 200
    before = stored_rows(world.tenant)
    for tail in ("", "/journal"):
        response = client.get(f"/api/v1/agents/other/runs/{world.run_id}{tail}")
        assert response.status_code == 404 and error_of(response)["code"] == "RUN_NOT_FOUND", response.content
    closed = client.post(f"/api/v1/agents/other/runs/{world.run_id}/close")
    assert closed.status_code == 404 and error_of(closed)["code"] == "RUN_NOT_FOUND"
    assert stored_rows(world.tenant) == before
    assert KvRun.objects.get(run_id=world.run_id).closed_at is None


# --- Atom policies ---------------------------------------------------------------------------

ATOM_KINDS = ["agent", "ingest", "host", "reviewer", "admin"]


@pytest.fixture
def private_keys(world: World, make_key) -> dict[str, object]:
    """Keys of A's tenant reading and writing only policy `private` (A's atoms are `default`)."""
    return {kind: world.client_for_raw(make_key(world.tenant, kind, read_policies=["private"],
                                                write_policies=["private"])[1]) for kind in ATOM_KINDS}


@pytest.mark.parametrize("kind", ATOM_KINDS)
def test_a_key_of_another_policy_never_recalls_default_atoms(kind, world, private_keys) -> None:
    client = private_keys[kind]
    for endpoint, body in [("search", {"query": "zq canary atom text"}),
                           ("read", {"state": {"query": "zq canary atom text"}})]:
        response = client.post(f"/api/v1/atoms/{endpoint}", body, format="json")
        assert response.status_code == 200, response.content
        assert CANARY["atom"] not in response.content.decode(), endpoint
        assert CANARY["atom_source"] not in response.content.decode(), endpoint


@pytest.mark.parametrize("kind", ATOM_KINDS)
def test_a_key_of_another_policy_may_not_bind_or_use_default(kind, world, private_keys) -> None:
    client = private_keys[kind]
    before = stored_rows(world.tenant)
    search = client.post("/api/v1/atoms/search", {"binding": {"readPolicies": ["default"]}, "query": "zq"},
                         format="json")
    assert search.status_code == 403 and error_of(search)["code"] == "ACCESS_DENIED"
    # An ungranted write policy is ACCESS_DENIED for every kind, before the change itself is
    # looked at (so an agent key's missing input token is never the answer).
    change = {"id": "x", "op": "create", "content": {"text": "into default", "links": []}, "sources": []}
    write = client.post("/api/v1/atoms/write", {"binding": {"writePolicy": "default"}, "changes": [change]},
                        format="json")
    assert write.status_code == 403 and error_of(write)["code"] == "ACCESS_DENIED"
    # Refs issued to other keys of the tenant, to atoms of `default`, stay closed.
    for ref in (world.atom_ref, world.admin_ref):
        inspect = client.post("/api/v1/atoms/inspect", {"ref": ref}, format="json")
        assert inspect.status_code == 403 and error_of(inspect)["code"] == "ACCESS_DENIED"
        assert CANARY["atom"] not in inspect.content.decode()
    assert stored_rows(world.tenant) == before
