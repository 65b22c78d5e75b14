"""Pure rules of the KV store: strict JSON, canonical form, namespaces, call validation.

No Django models here, so every rule is unit-testable on its own.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from memoryhub.api import strict_json
from memoryhub.errors import DomainError

VALID_ACTIONS: tuple[str, ...] = ("set", "get", "delete", "list", "clear")
WRITE_ACTIONS = frozenset({"set", "delete", "clear"})
KEY_ACTIONS = frozenset({"get", "set", "delete"})
NAMESPACE_MAX = 128
_NOT_NAMESPACE_CHAR = re.compile(r"[^A-Za-z0-9_-]")
AGENT_SLUG_RE = re.compile(r"^[a-z0-9-]{1,64}$")


class KvError(DomainError):
    """A KV error. `journaled` errors consume a run's seq and are recorded (docs/kv.md "Endpoints")
    with the status the API answers for their code (memoryhub/api/codes.py)."""

    journaled: bool = False

    def __init__(self, code: str, message: str, *, details: dict[str, Any] | None = None,
                 journaled: bool = False) -> None:
        super().__init__(code, message, details)
        self.journaled = journaled


def invalid_json(message: str) -> KvError:
    return KvError("INVALID_JSON", message)


# --- JSON ---------------------------------------------------------------------------------

def has_lone_surrogate(text: str) -> bool:
    return strict_json.bad_text(text, nul_ok=True) is not None


def loads_strict(data: bytes) -> Any:
    """Parse a JSON text under the API's input boundary (memoryhub/api/strict_json.py):
    NaN, ±Infinity, doubles beyond range, invalid UTF-8, repeated object keys, nesting past
    the API's depth and lone surrogates are INVALID_JSON (docs/kv.md "Limits"). U+0000 is
    allowed: values are stored as escaped JSON text, and keys are checked
    by `validate_call` (KEY_INVALID)."""
    try:
        return strict_json.loads(data, nul_allowed_in=True)
    except strict_json.JsonRefused as exc:
        raise invalid_json(exc.message) from exc


def canonical(value: Any) -> str:
    """Sorted keys at every level, no spaces, non-ASCII raw; floats in shortest form."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def json_str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def export_text(items: list[tuple[str, str]]) -> str:
    """A namespace file: Python's json.dumps(indent=2, sort_keys=True, ensure_ascii=False)."""
    return json.dumps({key: json.loads(value) for key, value in items}, indent=2, sort_keys=True, ensure_ascii=False)


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


# --- Namespaces and calls --------------------------------------------------------------------

def resolve_namespace(raw: Any) -> str:
    """Absent/None → "default"; each code point outside [A-Za-z0-9_-] → "_" (faithful)."""
    if raw is None:
        return "default"
    if not isinstance(raw, str):
        raise KvError("INVALID_NAMESPACE", "namespace must be a string or null.", journaled=True)
    if raw == "":
        raise KvError("INVALID_NAMESPACE", "namespace must not be empty.", journaled=True)
    resolved = _NOT_NAMESPACE_CHAR.sub("_", raw)
    if len(resolved) > NAMESPACE_MAX:
        raise KvError(
            "INVALID_NAMESPACE", f"namespace resolves to {len(resolved)} characters; the maximum is {NAMESPACE_MAX}.",
            journaled=True, details={"max": NAMESPACE_MAX, "actual": len(resolved)},
        )
    return resolved


@dataclass(frozen=True)
class Limits:
    key_bytes: int
    value_bytes: int
    keys_per_namespace: int
    namespaces_per_agent: int
    response_bytes: int


def limit_exceeded(limit: str, maximum: int, actual: int) -> KvError:
    return KvError(
        "LIMIT_EXCEEDED", f"The {limit} limit is {maximum}; this call needs {actual}.",
        journaled=True, details={"limit": limit, "max": maximum, "actual": actual},
    )


@dataclass(frozen=True)
class KvCall:
    """A validated RPC call. `value` is canonical JSON text for set."""

    action: str
    namespace: str
    key: str | None = None
    value: str | None = None
    prefix: str = ""
    expected_version: int | None = None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate_call(body: dict[str, Any], limits: Limits) -> KvCall:
    """Spec docs/kv.md "Endpoints" validation, in order; the first failure wins. Unused fields are ignored."""
    action = body.get("action")
    if action not in VALID_ACTIONS:
        shown = json_str(action) if isinstance(action, str) else ("missing" if action is None else "not a string")
        raise KvError(
            "UNKNOWN_ACTION", f"Unknown action {shown}; valid actions are {', '.join(VALID_ACTIONS)}.",
            journaled=True, details={"valid_actions": list(VALID_ACTIONS)},
        )
    namespace = resolve_namespace(body.get("namespace"))
    prefix = ""
    expected: int | None = None
    if action == "list":
        raw_prefix = body.get("prefix")
        if raw_prefix is not None and not isinstance(raw_prefix, str):
            raise KvError("INVALID_ARGUMENT", "prefix must be a string or null.", journaled=True, details={"field": "prefix"})
        prefix = raw_prefix or ""
    if action in {"set", "delete"} and "expected_version" in body:
        expected = body["expected_version"]
        if not _is_int(expected) or expected < 0:
            raise KvError("INVALID_ARGUMENT", "expected_version must be an integer >= 0.", journaled=True,
                          details={"field": "expected_version"})
    key: str | None = None
    if action in KEY_ACTIONS:
        key = body.get("key")
        if not isinstance(key, str):
            raise KvError("KEY_REQUIRED", f"{action} needs a string key.", journaled=True)
        if "\x00" in key:
            raise KvError("KEY_INVALID", "A key must not contain U+0000.", journaled=True)
    value: str | None = None
    if action == "set":
        if body.get("value") is None:
            raise KvError("VALUE_REQUIRED", "set needs a non-null value; null means absent.", journaled=True)
        assert key is not None
        if (size := utf8_len(key)) > limits.key_bytes:
            raise limit_exceeded("key_bytes", limits.key_bytes, size)
        value = canonical(body["value"])
        if (size := utf8_len(value)) > limits.value_bytes:
            raise limit_exceeded("value_bytes", limits.value_bytes, size)
    return KvCall(action=action, namespace=namespace, key=key, value=value, prefix=prefix, expected_version=expected)


def journal_args(body: dict[str, Any]) -> dict[str, Any]:
    """The call's args as recorded: as sent, normalized only as the original does."""
    namespace = body.get("namespace")
    prefix = body.get("prefix")
    args: dict[str, Any] = {
        "action": body.get("action"),
        "key": body.get("key"),
        "namespace": "default" if namespace is None else namespace,
        "prefix": "" if prefix is None else prefix,
        "value": body.get("value"),
    }
    if "expected_version" in body:
        args["expected_version"] = body["expected_version"]
    return args


def args_for_comparison(args: dict[str, Any]) -> str:
    return canonical({k: v for k, v in args.items() if k != "expected_version"})
