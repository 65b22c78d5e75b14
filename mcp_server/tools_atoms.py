"""`atoms_read`, `atoms_search`, `atoms_inspect`, `atoms_write` over MCP (docs/atoms.md).

Each tool builds the REST body from its arguments and calls the same service as the
REST view (atoms/services/), with the caller's Principal, so bindings, policies, input
tokens, review and the Atom error codes (`INVALID_INPUT`, `ACCESS_DENIED`, ...) are the
REST API's. Body caps are the REST ones (2 MiB, 20 MiB for write).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from atoms.api.base import BODY_LIMIT, WRITE_BODY_LIMIT
from atoms.api.inspect import answer_inspect
from atoms.api.read import answer_read
from atoms.api.search import answer_search
from atoms.api.write import answer_write
from atoms.errors import denied, invalid
from atoms.principal import Principal
from mcp_server.registry import ATOMS_FAMILY, Call, ToolResult, ToolSpec
from tenants.models import ApiKey

STATE_KINDS = ("query", "context", "thought", "observations", "signal")
TEXT = {"type": "string"}
LIMIT = {"type": "integer", "minimum": 0, "description": "At most this many atoms."}
DEPTH = {"type": "integer", "minimum": 0, "description": "Link hops to spread over (default: the tenant's)."}
CURSOR = {"type": "string", "description": "The cursor of a previous answer, for the next page (same arguments)."}


def _anyone(key: ApiKey) -> Exception | None:
    return None


def _writer(key: ApiKey) -> Exception | None:
    return denied("This API key is read-only.") if key.read_only else None


def _split(arguments: dict[str, Any], top: tuple[str, ...], options: tuple[str, ...]) -> dict[str, Any]:
    """The REST body: `top` arguments as they are, `options` under `options`."""
    for name in sorted(arguments):
        if name not in top and name not in options:
            raise invalid(f"Unknown argument {name!r}.", path=name)
    body = {name: arguments[name] for name in top if name in arguments}
    picked = {name: arguments[name] for name in options if name in arguments}
    if picked:
        body["options"] = picked
    return body


def _result(body: dict[str, Any], shown: tuple[str, ...] | None = None) -> ToolResult:
    visible = body if shown is None else {name: body[name] for name in shown if name in body}
    return ToolResult(body, json.dumps(visible, ensure_ascii=False))


def _read(call: Call) -> ToolResult:
    arguments = dict(call.arguments)
    state = {kind: arguments.pop(kind) for kind in STATE_KINDS if kind in arguments}
    body = {"state": state, **_split(arguments, (), ("tokens", "limit", "depth", "cursor"))}
    result = answer_read(Principal.for_key(call.key), body)
    # The model gets the rendered memory and what it needs to cite or page; the full
    # RecallResult (items with scores, usage, diagnostics) is the structured content.
    return _result(result, ("text", "refs", "tokenCount", "stale", "cursor", "receipt"))


def _search(call: Call) -> ToolResult:
    body = _split(call.arguments, ("query",), ("limit", "depth", "cursor"))
    return _result(answer_search(Principal.for_key(call.key), body))


def _inspect(call: Call) -> ToolResult:
    body = _split(call.arguments, ("ref",), ("version", "direction", "roles", "limit", "cursor", "range"))
    return _result(answer_inspect(Principal.for_key(call.key), body))


def _write(call: Call) -> ToolResult:
    principal = Principal.for_key(call.key)
    principal.require_writable()
    body = _split(call.arguments, ("changes", "options"), ())
    return _result(answer_write(principal, body))


def _spec(name: str, title: str, description: str, properties: dict[str, Any], required: list[str],
          run: Callable[[Call], ToolResult], *, write: bool = False) -> ToolSpec:
    return ToolSpec(
        name=name, title=title, description=description,
        input_schema={"type": "object", "properties": properties, "required": required, "additionalProperties": False},
        refusal=_writer if write else _anyone, run=run, family=ATOMS_FAMILY, read_only_hint=not write,
        body_limit=WRITE_BODY_LIMIT if write else BODY_LIMIT,
    )


TOOLS = [
    _spec("atoms_read", "Recall memory for the current step",
          "Recall the notes (atoms) that matter for what you are doing now, within a size budget. Describe the "
          "step with query (what you need) and/or context (the conversation or task so far); tokens caps the "
          "rendered text in UTF-8 bytes (default 4096). Answers text (the rendered memory to put in your context), "
          "refs (ids of the atoms shown, for atoms_inspect), tokenCount and a cursor for more.",
          {"query": TEXT, "context": TEXT, "thought": TEXT,
           "observations": {"type": "array", "items": TEXT}, "signal": TEXT,
           "tokens": {"type": "integer", "minimum": 1, "maximum": 1_000_000, "default": 4096,
                      "description": "Budget of the rendered text, in UTF-8 bytes."},
           "limit": LIMIT, "depth": DEPTH, "cursor": CURSOR}, [], _read),
    _spec("atoms_search", "Search memory",
          "Find atoms about a query, best first (a page of limit, default 10). Unlike atoms_read, atoms are "
          "returned one by one with scores and links, without their required context.",
          {"query": TEXT, "limit": LIMIT, "depth": DEPTH, "cursor": CURSOR}, ["query"], _search),
    _spec("atoms_inspect", "Look at one atom",
          "One atom by its ref, with its links and sources and a page of neighbouring atoms.",
          {"ref": {"type": "string", "description": "A ref from atoms_read or atoms_search (ref:...)."},
           "version": {"description": "'latest' (default) or a pinned revision."},
           "direction": {"type": "string", "enum": ["outgoing", "incoming", "both"]},
           "roles": {"type": "array", "items": TEXT}, "limit": LIMIT, "cursor": CURSOR,
           "range": {"type": "object", "description": "{start, bytes}: a byte range of the atom's text."}},
          ["ref"], _inspect),
    _spec("atoms_write", "Write atoms",
          "Create, revise or retire atoms in one atomic batch, as POST /api/v1/atoms/write: changes is a list of "
          "{id, op: create|revise|retire, content: {text, links}, sources, ...}. An agent key's change needs the "
          "input token (input) the host issued for what it saw. Writes by agents wait for review.",
          {"changes": {"type": "array", "items": {"type": "object"}, "minItems": 1},
           "options": {"type": "object", "description": "e.g. {idempotencyKey}."}},
          ["changes"], _write, write=True),
]
