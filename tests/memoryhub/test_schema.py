from __future__ import annotations

import io

import yaml
from django.core.management import call_command

EXPECTED = {
    ("/api/v1/whoami", "get"), ("/api/v1/tenant", "get"), ("/api/v1/tenant", "patch"),
    ("/api/v1/keys", "get"), ("/api/v1/keys", "post"), ("/api/v1/keys/{key_id}", "get"),
    ("/api/v1/keys/{key_id}", "delete"), ("/api/v1/audit", "get"),
    ("/api/v1/agents", "get"), ("/api/v1/agents", "post"), ("/api/v1/agents/{agent}", "delete"),
    ("/api/v1/agents/{agent}/memory", "post"),
    ("/api/v1/agents/{agent}/namespaces", "get"), ("/api/v1/agents/{agent}/namespaces/{ns}", "delete"),
    ("/api/v1/agents/{agent}/namespaces/{ns}/keys", "get"),
    ("/api/v1/agents/{agent}/namespaces/{ns}/keys/{key}", "get"),
    ("/api/v1/agents/{agent}/namespaces/{ns}/keys/{key}", "put"),
    ("/api/v1/agents/{agent}/namespaces/{ns}/keys/{key}", "delete"),
    ("/api/v1/agents/{agent}/namespaces/{ns}/key", "get"),
    ("/api/v1/agents/{agent}/namespaces/{ns}/key", "put"),
    ("/api/v1/agents/{agent}/namespaces/{ns}/key", "delete"),
    ("/api/v1/agents/{agent}/namespaces/{ns}/export", "get"),
    ("/api/v1/agents/{agent}/runs", "get"), ("/api/v1/agents/{agent}/runs", "post"),
    ("/api/v1/agents/{agent}/runs/{run_id}", "get"), ("/api/v1/agents/{agent}/runs/{run_id}/close", "post"),
    ("/api/v1/agents/{agent}/runs/{run_id}/journal", "get"),
    ("/api/v1/memory", "get"), ("/api/v1/memory/{target}", "get"), ("/api/v1/memory/{target}", "post"),
    ("/api/v1/memory/{target}/history", "get"), ("/api/v1/memory/{target}/undo", "post"),
    ("/api/v1/sessions", "post"), ("/api/v1/sessions/{session_id}", "get"), ("/api/v1/pending", "get"),
    ("/api/v1/pending/approve-all", "post"), ("/api/v1/pending/{pending_id}", "get"),
    ("/api/v1/pending/{pending_id}/approve", "post"),
    ("/api/v1/pending/{pending_id}/reject", "post"), ("/api/v1/tools/memory", "post"),
    ("/api/v1/tools/memory/schema", "get"),
    ("/api/v1/atoms/write", "post"), ("/api/v1/atoms/inspect", "post"), ("/api/v1/atoms/purge", "post"),
    ("/api/v1/atoms/observe", "post"), ("/api/v1/atoms/manifest", "post"),
    ("/api/v1/atoms/uses", "post"), ("/api/v1/atoms/uses/reset", "post"),
    ("/api/v1/atoms/index/update", "post"), ("/api/v1/atoms/index/prioritize", "post"),
    ("/api/v1/atoms/index/status", "post"),
    ("/api/v1/atoms/search", "post"), ("/api/v1/atoms/read", "post"),
}


def _schema() -> dict:
    out = io.StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)
    return yaml.safe_load(out.getvalue())


def test_the_schema_validates_and_lists_every_endpoint(db):
    schema = _schema()
    operations = {(path, method) for path, item in schema["paths"].items() for method in item}
    assert operations == EXPECTED


def test_every_operation_has_an_example_and_bearer_auth(db):
    schema = _schema()
    assert schema["components"]["securitySchemes"]["ApiKey"]["scheme"] == "bearer"
    for path, item in schema["paths"].items():
        for method, op in item.items():
            # Success responses: every error response has the Error example (test_schema_errors.py).
            success = {status: r for status, r in op["responses"].items() if status.startswith("2")}
            contents = [c for r in success.values() for c in r.get("content", {}).values()]
            if not contents:  # 204-only operations have no body to exemplify
                assert set(success) == {"204"}, (path, method)
                continue
            assert any("examples" in c for c in contents), (path, method)
            assert {"ApiKey": []} in op["security"], (path, method)


def test_the_schema_and_docs_are_served_without_a_key(db, client):
    assert client.get("/api/v1/schema/").status_code == 200
    docs = client.get("/api/v1/docs/")
    assert docs.status_code == 200
    assert b"cdn" not in docs.content.lower()


# Strict input (docs/api.md "Conventions"): the schema states what the server enforces.

STRICT_BODIES = ["PatchedTenantSettingsRequest", "KeySpecRequest", "AgentInputRequest", "RunInputRequest",
                 "KvPutRequest", "MemoryWriteRequest", "MemoryWriteOperationRequest", "UndoInputRequest",
                 "SessionCreateRequest", "PendingEditRequest", "EditedOperationRequest", "PendingRejectRequest",
                 "ApproveAllRequest"]


def test_strict_request_bodies_refuse_unknown_fields_in_the_schema(db):
    components = _schema()["components"]["schemas"]
    assert {name: components[name].get("additionalProperties") for name in STRICT_BODIES} == dict.fromkeys(
        STRICT_BODIES, False)
    # The key-value RPC ignores unknown fields (docs/kv.md), and its schema does not claim otherwise.
    assert components["KvMemoryCallRequest"].get("additionalProperties") is not False


def test_path_and_query_parameters_state_their_forms(db):
    paths = _schema()["paths"]

    def parameter(path: str, method: str, name: str) -> dict:
        return next(p["schema"] for p in paths[path][method]["parameters"] if p["name"] == name)

    assert parameter("/api/v1/agents/{agent}/runs", "get", "agent")["pattern"] == "^[a-z0-9-]{1,64}$"
    assert parameter("/api/v1/agents/{agent}/namespaces/{ns}", "delete", "ns")["maxLength"] == 128
    assert parameter("/api/v1/agents/{agent}/runs/{run_id}", "get", "run_id")["format"] == "uuid"
    assert parameter("/api/v1/sessions/{session_id}", "get", "session_id")["format"] == "uuid"
    assert parameter("/api/v1/keys/{key_id}", "get", "key_id")["pattern"] == "^k_[a-z0-9]{10}$"
    assert parameter("/api/v1/pending/{pending_id}/approve", "post", "pending_id")["pattern"].startswith("^pw_")
    assert parameter("/api/v1/keys", "get", "cursor")["pattern"]
    assert parameter("/api/v1/audit", "get", "action")["pattern"]
    assert parameter("/api/v1/pending", "get", "target")["enum"] == ["memory", "user"]
    assert parameter("/api/v1/agents/{agent}/namespaces/{ns}/keys", "get", "limit") == {
        "type": "integer", "minimum": 1, "maximum": 1000}


# The Atom API's bodies (docs/atoms.md "Request schemas"): described field by field, as
# strictly as the services check them. index/status reads nothing from its body.
ATOM_BODIES_IGNORED = {"/api/v1/atoms/index/status"}


def _resolve(schema: dict, components: dict) -> dict:
    while "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _alternatives(schema: dict, components: dict) -> list[dict]:
    """The schemas a value may match: refs resolved, allOf of one and oneOf unfolded."""
    schema = _resolve(schema, components)
    if "oneOf" in schema:
        return [alt for option in schema["oneOf"] for alt in _alternatives(option, components)]
    if "allOf" in schema:
        assert len(schema["allOf"]) == 1, schema
        return _alternatives(schema["allOf"][0], components)
    return [schema]


def _undescribed(schema: dict, components: dict, path: str, seen: set[int]) -> list[str]:
    """Places under `schema` with no type, or objects of free form."""
    problems = []
    for alt in _alternatives(schema, components):
        if id(alt) in seen:
            continue
        seen.add(id(alt))
        if "type" not in alt and alt.get("enum") != [None]:
            problems.append(f"{path}: no type")
        if alt.get("type") == "object":
            extra = alt.get("additionalProperties", True)
            if not alt.get("properties") and not isinstance(extra, dict):
                problems.append(f"{path}: a free-form object")
            for name, prop in alt.get("properties", {}).items():
                problems += _undescribed(prop, components, f"{path}.{name}", seen)
            if isinstance(extra, dict):
                problems += _undescribed(extra, components, f"{path}.*", seen)
        if alt.get("type") == "array":
            problems += _undescribed(alt["items"], components, f"{path}[]", seen)
    return problems


def test_every_atom_request_body_is_described_field_by_field(db):
    schema = _schema()
    components = schema["components"]["schemas"]
    atom_paths = sorted(path for path in schema["paths"] if path.startswith("/api/v1/atoms/"))
    assert len(atom_paths) == 12
    for path in atom_paths:
        body = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
        if path in ATOM_BODIES_IGNORED:
            assert body["type"] == "object" and body["properties"] == {}, path
            continue
        assert _undescribed(body, components, path, set()) == [], path
        # Every Atom service refuses unknown body keys, so every top-level form says so.
        for form in _alternatives(body, components):
            assert form["additionalProperties"] is False, (path, form)
            assert form["properties"], path


def test_atom_request_bodies_state_the_services_rules(db):
    components = _schema()["components"]["schemas"]
    binding = components["AtomsBindingRequest"]
    assert binding["additionalProperties"] is False
    assert binding["properties"]["readPolicies"]["uniqueItems"] is True
    assert binding["properties"]["writePolicy"]["pattern"] == "^[A-Za-z0-9:._-]{1,128}$"
    assert components["AtomsUsesRequest"]["properties"]["refs"]["maxItems"] == 256
    assert components["AtomsUsesRequest"]["required"] == ["binding", "eventId", "refs"]
    assert components["AtomsReadOptionsRequest"]["properties"]["tokens"] == {
        "type": "integer", "minimum": 1, "maximum": 1_000_000, "description": "UTF-8 bytes of the render; default 4096."}
    assert components["AtomsObserveInputRequest"]["properties"]["payloadDigest"]["pattern"] == "^[0-9a-f]{64}$"
    assert components["AtomsStateRequest"]["additionalProperties"] is False
    # Exactly one of atomId and ref; exactly one of receipt and input; one of three change kinds.
    assert len(components["AtomsPurgeRequest"]["oneOf"]) == 2
    assert len(components["AtomsManifestLookupRequest"]["oneOf"]) == 2
    assert len(components["AtomsChangeRequest"]["oneOf"]) == 3
    assert components["AtomsRetireRequest"]["required"] == ["id", "op", "target"]
    # purge takes 1e6 as an integer and lowers a maxWork above its ceiling, as every budget.
    max_work = components["AtomsPurgeOptionsRequest"]["properties"]["maxWork"]
    assert (max_work["type"], max_work["minimum"], max_work["multipleOf"]) == ("number", 0, 1)
    assert "maximum" not in max_work
