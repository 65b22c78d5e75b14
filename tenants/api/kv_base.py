"""Shared parts of the KV API: strict JSON parsing, agent resolution, raw JSON responses."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from django.conf import settings
from django.http import HttpResponse

from memoryhub.api import strict_json
from memoryhub.api.parsers import StrictJSONParser
from tenants.api.base import TenantAPIView
from tenants.kv.calls import agent_for_key
from tenants.kv.rules import KvError, invalid_json, json_str, limit_exceeded
from tenants.models import Agent, KeyKind

KV_KINDS: frozenset[str] = frozenset({KeyKind.AGENT, KeyKind.HOST, KeyKind.REVIEWER, KeyKind.ADMIN})


class StrictJsonParser(StrictJSONParser):
    """The API's parser (memoryhub/api/parsers.py), size-capped before parsing and with the
    key-value codes: every refusal is INVALID_JSON except U+0000 outside the members a
    view allows it in, which is INVALID_CHARACTER as everywhere else."""

    def read(self, stream: Any, parser_context: Mapping[str, Any] | None) -> bytes:
        cap: int = settings.MEMORYHUB_KV_MAX_BODY_BYTES
        data: bytes = stream.read(cap + 1) if stream is not None else b""
        if len(data) > cap:
            raise KvError("LIMIT_EXCEEDED", f"The request body exceeds {cap} bytes.",
                          details={"limit": "body_bytes", "max": cap})
        return data

    def refuse(self, refused: strict_json.JsonRefused, parser_context: Mapping[str, Any] | None) -> Exception:
        if refused.problem == "nul":
            return super().refuse(refused, parser_context)
        return invalid_json(refused.message)


class KvAPIView(TenantAPIView):
    allowed_kinds: ClassVar[frozenset[str]] = KV_KINDS
    parser_classes = [StrictJsonParser]
    # Members whose strings may hold U+0000 (memoryhub/api/parsers.py); none by default.
    body_nul_allowed: ClassVar[frozenset[str]] = frozenset()

    def resolve_agent(self, slug: str) -> Agent:
        return agent_for_key(key=self.key, slug=slug, actor=self.actor)

    def body_object(self) -> dict[str, Any]:
        body = self.request.data
        if not isinstance(body, dict):
            raise KvError("INVALID_REQUEST", "The body must be a JSON object.")
        return body


def raw_json(text: str, status: int = 200, **headers: str) -> HttpResponse:
    """A response whose body is JSON text we already hold: stored values are returned
    byte-exact, never re-encoded."""
    response = HttpResponse(text.encode("utf-8"), status=status, content_type="application/json")
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


def entry_text(entry: Any, namespace: str) -> str:
    """The resource form of an entry; `value` spliced in as stored."""
    def iso(value: Any) -> str:
        return json.dumps(value.isoformat().replace("+00:00", "Z"))

    return (
        f'{{"namespace":{json_str(namespace)},"key":{json_str(entry.key)},"value":{entry.value},'
        f'"version":{entry.version},"created_at":{iso(entry.created_at)},"updated_at":{iso(entry.updated_at)},'
        f'"created_by":{json_str(entry.created_by)},"updated_by":{json_str(entry.updated_by)},'
        f'"last_run_id":{json_str(entry.last_run_id) if entry.last_run_id else "null"}}}'
    )


def rfc3339(value: Any) -> str:
    return value.isoformat().replace("+00:00", "Z")


__all__ = ["KV_KINDS", "KvAPIView", "StrictJsonParser", "entry_text", "limit_exceeded", "raw_json", "rfc3339"]
