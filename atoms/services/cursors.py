"""Paging cursors for inspect, search and read (docs/atoms.md "Recall" and "Decisions").

A cursor is signed with the project's SECRET_KEY (memoryhub/keyset.py), so the caller
cannot forge or edit one. It is base64, not encrypted: the payload therefore carries only
what the caller may know (its own key id and generation) and digests, never a revision id.

A cursor is bound to:

- the key that got it (another key → ACCESS_DENIED) and the key's authorization
  generation (changed grants → ACCESS_DENIED);
- a deadline of `ATOMS_CURSOR_TTL_MS` from issue (past it → CURSOR_EXPIRED);
- the tenant's index generation, which a completed purge bumps (changed → CURSOR_EXPIRED);
- the endpoint, the binding's scope and the request minus its cursor (any difference →
  CURSOR_EXPIRED, "reused elsewhere").

The endpoint's own position (`page`) is opaque to this module.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from atoms.clock import now_ms
from atoms.core.canonical import canonical, digest
from atoms.errors import AtomError, denied, invalid
from atoms.models import AtomStore
from atoms.principal import Binding
from memoryhub import keyset

SALT = "atoms.cursor"


def _bound(kind: str, binding: Binding, request: Any, generation: int | None) -> str:
    # read and search pass the generation of the store row they read in their snapshot: the
    # same value, without a query (docs/atoms.md "Read path costs").
    if generation is None:
        generation = AtomStore.get_or_create_for(binding.principal.tenant).index_generation
    return digest({"kind": kind, "scope": binding.scope_digest, "request": request, "indexGeneration": generation})


def issue_cursor(*, binding: Binding, kind: str, request: Any, page: dict[str, Any],
                 index_generation: int | None = None) -> str:
    """A cursor for the next page. `request` is what the cursor is bound to (for inspect,
    `{ref, options}` without the cursor); `page` is where the next page starts."""
    ttl = int(settings.ATOMS_CURSOR_TTL_MS)
    payload = {"k": binding.principal.principal_id, "g": binding.principal.generation,
               "b": _bound(kind, binding, request, index_generation), "x": now_ms() + ttl, "p": page}
    return keyset.sign_cursor(payload, salt=SALT)


def open_cursor(*, binding: Binding, kind: str, request: Any, cursor: str,
                path: str = "options.cursor", index_generation: int | None = None) -> dict[str, Any]:
    """The `page` of a cursor this binding may continue, after the checks above."""
    try:
        payload = keyset.open_cursor(cursor, salt=SALT)
    except keyset.BadCursor as exc:
        raise invalid("The cursor is not one this service issued.", path=path) from exc
    if not isinstance(payload, dict) or not isinstance(payload.get("p"), dict):
        raise invalid("The cursor is not one this service issued.", path=path)
    if payload.get("k") != binding.principal.principal_id:
        raise denied("This cursor was issued to another key.", path=path)
    if payload.get("g") != binding.principal.generation:
        raise denied("The key's grants changed since this cursor was issued.", path=path)
    if not isinstance(payload.get("x"), int) or now_ms() > payload["x"]:
        raise AtomError("CURSOR_EXPIRED", "The cursor has expired.", {"path": path})
    if payload.get("b") != _bound(kind, binding, request, index_generation):
        raise AtomError("CURSOR_EXPIRED", "The cursor was issued for another request.", {"path": path})
    return payload["p"]


def bound_request(signal: dict[str, Any], raw_options: Any, store: AtomStore) -> dict[str, Any]:
    """What a read or search cursor is bound to: the signal, every option but the cursor,
    and the tenant settings that change a ranking. INVALID_INPUT for an integer that no
    JSON number (a double) can carry, which canonical JSON refuses."""
    options = raw_options or {}
    request = {**signal, "options": {k: v for k, v in options.items() if k != "cursor"},
               "config": store.config, "requireApproval": store.require_approval}
    try:
        canonical(request)
    except ValueError as exc:
        raise invalid("An option holds a number outside the JSON range.", path="options") from exc
    return request
