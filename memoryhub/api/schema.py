"""OpenAPI for the one error shape: the `Error` component and the error responses.

drf-spectacular documents only what a view declares, but most errors come from shared
plumbing (authentication, permissions, throttling, parsing; memoryhub/api/errors.py), so
`document_errors`, a postprocessing hook, adds them to every operation under /api/v1/:

- 401, 403 and 429 to every key-authenticated operation;
- 400 to every operation that takes any input (parameters or a body);
- 404 to every operation with path parameters;
- 413 and 415 to every operation with a request body.

Errors that only some endpoints answer (409, 412, 422, a deliberate 503, ...) are
declared on the view with `errors({status: codes})`; the hook fills in their schema and
example. Every error response of the schema then points at the same `Error` component,
so a client (and the schemathesis run in tests/security/) can rely on the shape.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from drf_spectacular.utils import OpenApiResponse

from memoryhub import public_ids

ERROR_REF = {"$ref": "#/components/schemas/Error"}
ERROR_COMPONENT: dict[str, Any] = {
    "type": "object",
    "description": "The one error shape of the API. `code` is stable; `message` is for people.",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "pattern": "^[A-Z][A-Z0-9_]*$", "example": "INVALID_REQUEST"},
                "message": {"type": "string", "minLength": 1},
                "details": {"type": "object", "additionalProperties": True},
            },
            "required": ["code", "message", "details"],
            "additionalProperties": False,
        },
    },
    "required": ["error"],
    "additionalProperties": False,
}

# status: (description, code of the example, code of the example in the Atom API)
SHARED: dict[int, tuple[str, str, str]] = {
    400: ("The request is not valid: `INVALID_REQUEST`, `INVALID_JSON`, `INVALID_CHARACTER` (U+0000 or a lone "
          "surrogate) or a more specific code of the endpoint (the Atom API answers `INVALID_INPUT`).",
          "INVALID_REQUEST", "INVALID_INPUT"),
    401: ("Missing, malformed, unknown or revoked API key: `UNAUTHENTICATED`.", "UNAUTHENTICATED", "UNAUTHENTICATED"),
    403: ("The key's kind may not do this, or the key is read-only: `PERMISSION_DENIED` (the Atom API answers "
          "`ACCESS_DENIED`); the key's tenant is suspended: `TENANT_SUSPENDED`.", "PERMISSION_DENIED",
          "ACCESS_DENIED"),
    404: ("No such object in the key's tenant: `NOT_FOUND` or a more specific code of the endpoint.",
          "NOT_FOUND", "REFERENCE_UNAVAILABLE"),
    413: ("The body is too large: `LIMIT_EXCEEDED`.", "LIMIT_EXCEEDED", "LIMIT_EXCEEDED"),
    415: ("The body is not JSON: `UNSUPPORTED_MEDIA_TYPE`.", "UNSUPPORTED_MEDIA_TYPE", "UNSUPPORTED_MEDIA_TYPE"),
    429: ("Too many requests: `THROTTLED` (the key's rate; sent with `Retry-After`).", "THROTTLED", "THROTTLED"),
}
EXAMPLE_MESSAGES = {
    "INVALID_REQUEST": "Request not understood: the body must be a JSON object.",
    "INVALID_INPUT": "The body must be a JSON object.",
    "UNAUTHENTICATED": "Authentication required: send Authorization: Bearer <api key>.",
    "PERMISSION_DENIED": "This API key is read-only.",
    "ACCESS_DENIED": "This API key is read-only.",
    "NOT_FOUND": "Not found.",
    "LIMIT_EXCEEDED": "The request body is too large.",
    "UNSUPPORTED_MEDIA_TYPE": 'Unsupported media type "text/plain" in request.',
    "THROTTLED": "Too many requests for this key.",
}
AUTH_HEADER = {
    "WWW-Authenticate": {"schema": {"type": "string"}, "required": True,
                         "description": 'Always `Bearer realm="memoryhub"`.'},
}


def errors(codes_by_status: Mapping[int, Iterable[str]]) -> dict[int, OpenApiResponse]:
    """Endpoint-specific error responses for `extend_schema(responses=...)`, e.g.
    `errors({409: ["NO_MATCH", "AMBIGUOUS_MATCH"]})`. The first code is the example's."""
    return {
        status: OpenApiResponse(description=", ".join(f"`{code}`" for code in codes))
        for status, codes in codes_by_status.items()
    }


def _example(code: str) -> dict[str, Any]:
    return {"value": {"error": {"code": code, "message": EXAMPLE_MESSAGES.get(code, "A message for people."),
                                "details": {}}}}


def _error_content(code: str) -> dict[str, Any]:
    return {"application/json": {"schema": ERROR_REF, "examples": {code: _example(code)}}}


def _first_code(description: str) -> str | None:
    if "`" not in description:
        return None
    return description.split("`")[1]


def _shared_statuses(operation: dict[str, Any]) -> list[int]:
    statuses: list[int] = []
    if any("ApiKey" in requirement for requirement in operation.get("security", [])):
        statuses += [401, 403, 429]
    if operation.get("parameters") or operation.get("requestBody"):
        statuses.append(400)
    if any(p.get("in") == "path" for p in operation.get("parameters", [])):
        statuses.append(404)
    if operation.get("requestBody"):
        statuses += [413, 415]
    return sorted(statuses)


def document_errors(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook (SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"])."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_COMPONENT
    for path, item in result.get("paths", {}).items():
        atoms = path.startswith("/api/v1/atoms/")
        for operation in item.values():
            responses = operation.setdefault("responses", {})
            for status in _shared_statuses(operation):
                if str(status) in responses:
                    continue
                description, code, atoms_code = SHARED[status]
                responses[str(status)] = {"description": description}
                if status == 401:
                    responses["401"]["headers"] = AUTH_HEADER
                responses[str(status)]["content"] = _error_content(atoms_code if atoms else code)
            for status, response in responses.items():
                # Declared by a view through errors(): give it the shape and an example.
                if status[0] in "45" and "content" not in response:
                    code = _first_code(response.get("description", "")) or SHARED.get(int(status), ("", "ERROR", ""))[1]
                    response["content"] = _error_content(code)
    return result


# Path parameters shared by many operations, by name: the forms docs/kv.md and
# docs/memory-files.md define, which the views enforce (a slug outside the pattern is 400
# INVALID_AGENT; a namespace longer than 128 code points resolves too long and is 400
# INVALID_NAMESPACE; a run, session or pending id of another form names nothing and is 404).
# Declared here once rather than on every view, so a new view taking `{agent}` gets it too.
PATH_PARAMETERS: dict[str, dict[str, Any]] = {
    "agent": {"type": "string", "pattern": r"^[a-z0-9-]{1,64}$"},
    "ns": {"type": "string", "minLength": 1, "maxLength": 128},
    "run_id": {"type": "string", "format": "uuid"},
    "session_id": {"type": "string", "format": "uuid"},
    "pending_id": {"type": "string", "pattern": rf"^pw_[{public_ids.ALPHABET}]{{{public_ids.LENGTH}}}$"},
}


def document_path_parameters(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: the schemas of PATH_PARAMETERS."""
    for item in result.get("paths", {}).values():
        for operation in item.values():
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "path" and parameter.get("name") in PATH_PARAMETERS:
                    parameter["schema"] = dict(PATH_PARAMETERS[parameter["name"]])
    return result
