"""Identifier rules (docs/atoms.md "Decisions" and docs/api.md "Conventions" step 8, docs/atoms.md "Decisions") and the opaque ids we issue.

- The id rule: a non-empty str of at most 512 UTF-8 bytes (change ids, idempotency keys,
  event ids, model ids). A str with a lone surrogate has no UTF-8 form, so it fails too.
- Policy names: `[A-Za-z0-9:._-]{1,128}`.
- Roles and orderKeys: the id rule, and no control characters (Unicode category Cc).
- Issued ids are `<kind>:<uuid4>` in the canonical lowercase hyphenated form. Parsers accept
  exactly that shape, so anything else can be answered before touching storage.
"""

from __future__ import annotations

import re
import unicodedata
import uuid
from typing import Any, Final

from atoms.core.errors import IdError

ID_MAX_BYTES: Final = 512
POLICY_NAME_RE: Final = re.compile(r"[A-Za-z0-9:._-]{1,128}")
_UUID4_RE: Final = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")

# The kinds of opaque id we issue, and the code a malformed one gets where the caller
# passes it to us: a ref or atom/revision id that cannot exist is an unknown reference;
# a malformed token, operation, receipt or erasure id is a bad input.
ID_KINDS: Final[dict[str, str]] = {
    "atom": "INVALID_REF",
    "revision": "INVALID_REF",
    "ref": "INVALID_REF",
    "operation": "INVALID_INPUT",
    "input": "INVALID_INPUT",
    "receipt": "INVALID_INPUT",
    "erasure": "INVALID_INPUT",
}


def utf8_length(text: str) -> int | None:
    """Byte length of `text` in UTF-8, or None when it has no UTF-8 form (lone surrogate)."""
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        return None


def is_valid_id(value: Any) -> bool:
    """The id rule: a non-empty str of at most 512 UTF-8 bytes."""
    if not isinstance(value, str) or not value:
        return False
    size = utf8_length(value)
    return size is not None and size <= ID_MAX_BYTES


def check_id(value: Any, *, field: str = "id") -> str:
    """`value` if it follows the id rule; otherwise IdError (INVALID_SCHEMA) naming `field`."""
    if not is_valid_id(value):
        raise IdError(f"{field} must be a non-empty string of at most {ID_MAX_BYTES} UTF-8 bytes.",
                      details={"path": field})
    return value


def is_policy_name(value: Any) -> bool:
    return isinstance(value, str) and POLICY_NAME_RE.fullmatch(value) is not None


def check_policy_name(value: Any, *, field: str = "policy") -> str:
    """`value` if it is a policy name; otherwise IdError. The caller picks the final code:
    a malformed name in a binding is INVALID_INPUT, in tenant settings a validation error."""
    if not is_policy_name(value):
        raise IdError(f"{field} must match [A-Za-z0-9:._-]{{1,128}}.", code="INVALID_INPUT", details={"path": field})
    return value


def has_control_characters(text: str) -> bool:
    # Cc covers C0, DEL and C1: the characters that would garble logs and rendered units.
    return any(unicodedata.category(char) == "Cc" for char in text)


def is_label(value: Any) -> bool:
    """A valid role or orderKey: the id rule plus no control characters."""
    return is_valid_id(value) and not has_control_characters(value)


def check_role(value: Any, *, field: str = "role") -> str:
    if not is_label(value):
        raise IdError(f"{field} must be 1..{ID_MAX_BYTES} UTF-8 bytes without control characters.",
                      details={"path": field})
    return value


def check_order_key(value: Any, *, field: str = "orderKey") -> str:
    return check_role(value, field=field)


# --- Issued ids -----------------------------------------------------------------------------

def new_id(kind: str) -> str:
    """A fresh `<kind>:<uuid4>`; `kind` is one of ID_KINDS."""
    if kind not in ID_KINDS:
        raise ValueError(f"unknown id kind {kind!r}")
    return f"{kind}:{uuid.uuid4()}"


def new_atom_id() -> str:
    return new_id("atom")


def new_revision_id() -> str:
    return new_id("revision")


def new_ref() -> str:
    return new_id("ref")


def new_operation_id() -> str:
    return new_id("operation")


def new_input_token() -> str:
    return new_id("input")


def new_receipt_id() -> str:
    return new_id("receipt")


def new_erasure_id() -> str:
    return new_id("erasure")


def is_id_of(value: Any, kind: str) -> bool:
    """True when `value` is exactly `<kind>:<lowercase uuid4>`."""
    if kind not in ID_KINDS:
        raise ValueError(f"unknown id kind {kind!r}")
    if not isinstance(value, str):
        return False
    prefix, sep, rest = value.partition(":")
    return sep == ":" and prefix == kind and _UUID4_RE.fullmatch(rest) is not None


def parse_id(value: Any, kind: str, *, field: str | None = None) -> str:
    """`value` if it has the shape of a `kind` id; otherwise IdError with ID_KINDS[kind] as code."""
    if not is_id_of(value, kind):
        raise IdError(f"{field or kind} is not a {kind} id.", code=ID_KINDS[kind],
                      details={"path": field} if field else None)
    return value


def parse_atom_id(value: Any, *, field: str | None = None) -> str:
    return parse_id(value, "atom", field=field)


def parse_revision_id(value: Any, *, field: str | None = None) -> str:
    return parse_id(value, "revision", field=field)


def parse_ref(value: Any, *, field: str | None = None) -> str:
    return parse_id(value, "ref", field=field)


def parse_operation_id(value: Any, *, field: str | None = None) -> str:
    return parse_id(value, "operation", field=field)


def parse_input_token(value: Any, *, field: str | None = None) -> str:
    return parse_id(value, "input", field=field)
