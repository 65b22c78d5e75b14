"""What a tool is here: a JSON schema for the model, who may use it and how it runs.

Tools are plain data (no SDK types), so the listing per key and the call path are
testable without a transport; mcp_server/server.py turns them into MCP tools.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memoryhub.actors import Actor
from tenants.memory.tool_call import WriteContext
from tenants.models import ApiKey


# The error codes each API family answers with (memoryhub/api/errors.py reads these
# attributes from the "view"): the Atom tools keep the Atom API's codes.
@dataclass(frozen=True)
class Family:
    validation_error_code: str
    permission_denied_code: str
    parse_error_code: str


REST_FAMILY = Family("INVALID_REQUEST", "PERMISSION_DENIED", "INVALID_JSON")
ATOMS_FAMILY = Family("INVALID_INPUT", "ACCESS_DENIED", "INVALID_INPUT")


@dataclass(frozen=True)
class Call:
    """One tool call: the key (authenticated for this request), its actor, the arguments
    and the write context of the memory files (headers over HTTP, none over stdio)."""

    key: ApiKey
    actor: Actor
    arguments: dict[str, Any]
    context: WriteContext = field(default_factory=WriteContext)


@dataclass(frozen=True)
class ToolResult:
    """`body` is the structured result; `text` the same as JSON text for the model (a stored
    KV value is spliced in byte-exact, as the REST API does); `is_error` marks a refusal."""

    body: dict[str, Any]
    text: str
    is_error: bool = False


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    # The exception the REST API would raise for this key before doing anything, or None:
    # a key that gets one is not shown the tool, and calling it anyway answers that error.
    refusal: Callable[[ApiKey], Exception | None]
    run: Callable[[Call], ToolResult]
    family: Family = REST_FAMILY
    read_only_hint: bool = True
    # Arguments larger than this (as JSON) are LIMIT_EXCEEDED, as the REST body caps are.
    body_limit: int | None = None
    # Top-level arguments whose strings may hold U+0000 (memoryhub/api/parsers.py).
    nul_allowed: frozenset[str] = frozenset()
    # The schema shown to this key, when it depends on the key (the KV tools name its agents).
    schema_for: Callable[[ApiKey], dict[str, Any]] | None = None

    def allowed(self, key: ApiKey) -> bool:
        return self.refusal(key) is None

    def schema(self, key: ApiKey) -> dict[str, Any]:
        return self.schema_for(key) if self.schema_for is not None else self.input_schema
