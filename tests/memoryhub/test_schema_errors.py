"""The schema documents the one error shape on every operation (memoryhub/api/schema.py)."""

from __future__ import annotations

import io

import yaml
from django.core.management import call_command

ERROR_REF = "#/components/schemas/Error"


def _schema() -> dict:
    out = io.StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)
    return yaml.safe_load(out.getvalue())


def _operations(schema: dict):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            yield path, method, operation


def test_every_operation_documents_the_shared_errors(db):
    schema = _schema()
    for path, method, operation in _operations(schema):
        responses = operation["responses"]
        assert {"401", "403", "429"} <= set(responses), (path, method)
        assert "WWW-Authenticate" in responses["401"]["headers"]
        if any(p["in"] == "path" for p in operation.get("parameters", [])):
            assert {"400", "404"} <= set(responses), (path, method)
        if "requestBody" in operation:
            assert {"400", "413", "415"} <= set(responses), (path, method)


def test_every_error_response_is_the_error_shape_with_an_example(db):
    schema = _schema()
    component = schema["components"]["schemas"]["Error"]
    assert component["required"] == ["error"] and component["additionalProperties"] is False
    assert component["properties"]["error"]["required"] == ["code", "message", "details"]
    for path, method, operation in _operations(schema):
        for status, response in operation["responses"].items():
            if status[0] not in "45":
                continue
            content = response["content"]["application/json"]
            assert content["schema"] == {"$ref": ERROR_REF}, (path, method, status)
            (example,) = content["examples"].values()
            assert set(example["value"]) == {"error"}
            assert set(example["value"]["error"]) == {"code", "message", "details"}


def test_endpoint_specific_errors_name_their_codes(db):
    responses = _schema()["paths"]["/api/v1/memory/{target}"]["post"]["responses"]
    assert "`NO_MATCH`" in responses["409"]["description"]
    assert "`OVER_LIMIT`" in responses["422"]["description"]
    assert "RETRY_LIMIT" in responses["429"]["content"]["application/json"]["examples"]
    atoms = _schema()["paths"]["/api/v1/atoms/write"]["post"]["responses"]
    assert "INVALID_INPUT" in atoms["400"]["content"]["application/json"]["examples"]
    assert "ACCESS_DENIED" in atoms["403"]["content"]["application/json"]["examples"]
