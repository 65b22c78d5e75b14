"""Resource endpoints over one agent's KV store, with ETag / If-Match (docs/kv.md "Endpoints")."""

from __future__ import annotations

import json
from typing import Any

from django.core.validators import RegexValidator
from django.http import HttpResponse
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    OpenApiTypes,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.request import Request

from memoryhub.api.schema import errors
from memoryhub.api.strict import QueryIntegerField, QueryParams, StrictCharField, StrictSerializer, refuse_unknown
from tenants.api.kv_base import KvAPIView, entry_text, raw_json, rfc3339
from tenants.kv.files import namespace_export
from tenants.kv.rules import KvError, json_str, resolve_namespace, utf8_len, validate_call
from tenants.kv.store import (
    Precondition,
    PreconditionMismatch,
    decode_cursor,
    encode_cursor,
    kv_clear,
    kv_delete,
    kv_get,
    kv_namespaces,
    kv_page,
    kv_set,
    limits_for,
)

ENTRY_EXAMPLE = {
    "namespace": "default", "key": "house-style", "value": "Lead with impact", "version": 3,
    "created_at": "2026-11-30T10:00:00Z", "updated_at": "2026-11-30T11:00:00Z",
    "created_by": "k_3f9a2c7d1e", "updated_by": "bob", "last_run_id": None,
}
Entry = inline_serializer("KvEntry", {
    "namespace": serializers.CharField(), "key": serializers.CharField(), "value": serializers.JSONField(),
    "version": serializers.IntegerField(), "created_at": serializers.DateTimeField(),
    "updated_at": serializers.DateTimeField(), "created_by": serializers.CharField(),
    "updated_by": serializers.CharField(), "last_run_id": serializers.CharField(allow_null=True),
})
# Key-value cursors are django.core.signing tokens (tenants/kv/store.py).
KV_CURSOR_RE = r"^[A-Za-z0-9_.:-]{1,200000}$"


class KeysQuery(QueryParams):
    prefix = StrictCharField(required=False, allow_blank=True, trim_whitespace=False,
                             help_text="Only keys starting with this (literal, case-sensitive).")
    cursor = StrictCharField(required=False, help_text="`next_cursor` of the previous page.",
                             validators=[RegexValidator(KV_CURSOR_RE, "The cursor is not valid.")])
    limit = QueryIntegerField(required=False, min_value=1, max_value=1000, help_text="1-1000, default 100")


class KeyQuery(QueryParams):
    key = StrictCharField(allow_blank=True, trim_whitespace=False,
                          help_text="Any key, including ones a path cannot carry ('', '.', '..').")


class KvPut(StrictSerializer):
    # The schema of a PUT body; the view checks it with the codes of docs/kv.md (a missing or
    # null value is VALUE_REQUIRED) and refuses unknown fields.
    value = serializers.JSONField(help_text="Any JSON value but null.")


def _ns(raw: str) -> str:
    return resolve_namespace(raw)


def _precondition(request: Request) -> Precondition | None:
    """If-Match ("N" tags or *) and If-None-Match: * as a store precondition."""
    if_none = request.headers.get("If-None-Match")
    if if_none is not None:
        if if_none.strip() != "*":
            raise KvError("INVALID_REQUEST", "Only If-None-Match: * is supported.")
        return Precondition(must_be_absent=True)
    if_match = request.headers.get("If-Match")
    if if_match is None:
        return None
    if if_match.strip() == "*":
        return Precondition(must_exist=True)
    versions: set[int] = set()
    for tag in if_match.split(","):
        tag = tag.strip()
        # Strong comparison only: weak tags (W/"1") never match.
        if len(tag) >= 2 and tag[0] == tag[-1] == '"' and tag[1:-1].isdigit():
            versions.add(int(tag[1:-1]))
    return Precondition(must_exist=True, versions=frozenset(versions))


def _failed(exc: PreconditionMismatch) -> KvError:
    return KvError("PRECONDITION_FAILED", "The key's current version does not satisfy the precondition.",
                   details={"current_version": exc.current_version})


class NamespacesView(KvAPIView):
    @extend_schema(
        operation_id="kv_namespaces", summary="Namespaces holding keys, by name", tags=["kv"],
        responses={200: inline_serializer("KvNamespaces", {"items": serializers.ListField(child=serializers.DictField())})},
        examples=[OpenApiExample("one", value={"items": [{"namespace": "default", "keys": 1, "bytes": 4,
                                                          "updated_at": "2026-11-30T10:00:00Z"}]}, response_only=True)],
    )
    def get(self, request: Request, agent: str) -> HttpResponse:
        items = [
            {"namespace": s.namespace, "keys": s.keys, "bytes": s.bytes, "updated_at": rfc3339(s.updated_at)}
            for s in kv_namespaces(agent=self.resolve_agent(agent))
        ]
        return raw_json(json.dumps({"items": items}))


class KeysView(KvAPIView):
    @extend_schema(
        operation_id="kv_keys", summary="A page of keys in code point order", tags=["kv"],
        parameters=[KeysQuery],
        responses={200: inline_serializer("KvKeyPage", {"namespace": serializers.CharField(),
                   "items": serializers.ListField(child=serializers.DictField()),
                   "next_cursor": serializers.CharField(allow_null=True)})},
        examples=[OpenApiExample("page", value={"namespace": "default", "items": [{"key": "a", "value": 1, "version": 1,
                  "updated_at": "2026-11-30T10:00:00Z"}], "next_cursor": None}, response_only=True)],
    )
    def get(self, request: Request, agent: str, ns: str) -> HttpResponse:
        # The agent first: a key limited to other agents gets its 404 whatever it sent, and
        # any call creates a writable key's agent (docs/kv.md "Implicit agents").
        agent_obj, namespace = self.resolve_agent(agent), _ns(ns)
        query = KeysQuery.parse(request)
        prefix, limit, cursor = query.get("prefix", ""), query.get("limit", 100), query.get("cursor")
        after = decode_cursor(cursor, agent=agent_obj, namespace=namespace, prefix=prefix) if cursor else None
        limits = limits_for(self.tenant)
        entries, last = kv_page(agent=agent_obj, namespace=namespace, prefix=prefix, after=after, limit=limit,
                                max_bytes=limits.response_bytes)
        items = ",".join(
            f'{{"key":{json_str(e.key)},"value":{e.value},"version":{e.version},"updated_at":"{rfc3339(e.updated_at)}"}}'
            for e in entries
        )
        next_cursor = encode_cursor(agent=agent_obj, namespace=namespace, prefix=prefix, after=last) if last is not None else None
        return raw_json(f'{{"namespace":{json_str(namespace)},"items":[{items}],"next_cursor":{json_str(next_cursor) if next_cursor else "null"}}}')


class _EntryBase(KvAPIView):
    body_nul_allowed = frozenset({"value"})  # values are stored as escaped JSON text

    def _get(self, request: Request, agent: str, ns: str, key: str) -> HttpResponse:
        namespace = _ns(ns)
        entry = kv_get(agent=self.resolve_agent(agent), namespace=namespace, key=key)
        if entry is None:
            raise KvError("KEY_NOT_FOUND", "No such key.")
        return raw_json(entry_text(entry, namespace), ETag=f'"{entry.version}"')

    def _put(self, request: Request, agent: str, ns: str, key: str) -> HttpResponse:
        body = self.body_object()
        agent_obj = self.resolve_agent(agent)
        refuse_unknown(body, {"value"})
        limits = limits_for(self.tenant)
        call = validate_call({"action": "set", "key": key, "namespace": ns, "value": body.get("value")}, limits)
        assert call.value is not None
        try:
            entry, created = kv_set(agent=agent_obj, limits=limits, namespace=call.namespace, key=key, value=call.value,
                                    actor=self.actor, precondition=_precondition(request))
        except PreconditionMismatch as exc:
            raise _failed(exc) from exc
        return raw_json(entry_text(entry, call.namespace), status=201 if created else 200, ETag=f'"{entry.version}"')

    def _delete(self, request: Request, agent: str, ns: str, key: str) -> HttpResponse:
        namespace = _ns(ns)
        try:
            existed = kv_delete(agent=self.resolve_agent(agent), namespace=namespace, key=key, actor=self.actor,
                                precondition=_precondition(request))
        except PreconditionMismatch as exc:
            raise _failed(exc) from exc
        if not existed:
            raise KvError("KEY_NOT_FOUND", "No such key.")
        return HttpResponse(status=204)


_entry_responses = {200: OpenApiResponse(Entry, examples=[OpenApiExample("entry", value=ENTRY_EXAMPLE)]),
                    **errors({404: ["KEY_NOT_FOUND", "AGENT_NOT_FOUND"]})}
_put_schema: dict[str, Any] = {
    "request": KvPut,
    "responses": {200: Entry, 201: Entry, **errors({412: ["PRECONDITION_FAILED"], 413: ["LIMIT_EXCEEDED"]})},
    "examples": [OpenApiExample("put", value={"value": {"tone": "plain"}}, request_only=True),
                 OpenApiExample("entry", value=ENTRY_EXAMPLE, response_only=True)],
}
_delete_schema: dict[str, Any] = {"responses": {204: OpenApiResponse(description="deleted"),
                                **errors({404: ["KEY_NOT_FOUND", "AGENT_NOT_FOUND"], 412: ["PRECONDITION_FAILED"]})},
                  "examples": [OpenApiExample("no body", value=None, response_only=True, status_codes=["204"])]}


class EntryView(_EntryBase):
    @extend_schema(operation_id="kv_entry_get", summary="One key (path-addressed)", tags=["kv"], responses=_entry_responses)
    def get(self, request: Request, agent: str, ns: str, key: str) -> HttpResponse:
        return self._get(request, agent, ns, key)

    @extend_schema(operation_id="kv_entry_put", summary="Create or replace (If-Match, If-None-Match: *)", tags=["kv"], **_put_schema)
    def put(self, request: Request, agent: str, ns: str, key: str) -> HttpResponse:
        return self._put(request, agent, ns, key)

    @extend_schema(operation_id="kv_entry_delete", summary="Delete a key (If-Match)", tags=["kv"], **_delete_schema)
    def delete(self, request: Request, agent: str, ns: str, key: str) -> HttpResponse:
        return self._delete(request, agent, ns, key)


class QueryEntryView(_EntryBase):
    def _key(self, request: Request) -> str:
        if "key" not in request.query_params:
            raise KvError("KEY_REQUIRED", "Name the key with ?key=.")
        return str(KeyQuery.parse(request)["key"])

    @extend_schema(operation_id="kv_key_get", summary="One key (?key= addressed)", tags=["kv"], parameters=[KeyQuery], responses=_entry_responses)
    def get(self, request: Request, agent: str, ns: str) -> HttpResponse:
        return self._get(request, agent, ns, self._key(request))

    @extend_schema(operation_id="kv_key_put", summary="Create or replace (?key= addressed)", tags=["kv"], parameters=[KeyQuery], **_put_schema)
    def put(self, request: Request, agent: str, ns: str) -> HttpResponse:
        return self._put(request, agent, ns, self._key(request))

    @extend_schema(operation_id="kv_key_delete", summary="Delete a key (?key= addressed)", tags=["kv"], parameters=[KeyQuery], **_delete_schema)
    def delete(self, request: Request, agent: str, ns: str) -> HttpResponse:
        return self._delete(request, agent, ns, self._key(request))


class NamespaceView(KvAPIView):
    @extend_schema(
        operation_id="kv_clear", summary="Clear a namespace", tags=["kv"],
        responses={200: inline_serializer("KvCleared", {"namespace": serializers.CharField(), "deleted": serializers.IntegerField()})},
        examples=[OpenApiExample("cleared", value={"namespace": "default", "deleted": 3}, response_only=True)],
    )
    def delete(self, request: Request, agent: str, ns: str) -> HttpResponse:
        namespace = _ns(ns)
        deleted = kv_clear(agent=self.resolve_agent(agent), namespace=namespace, actor=self.actor)
        return raw_json(json.dumps({"namespace": namespace, "deleted": deleted}))


class ExportView(KvAPIView):
    @extend_schema(
        operation_id="kv_export", summary="The namespace file (<ns>.json), as the original writes it", tags=["kv"],
        responses={(200, "application/json"): OpenApiResponse(OpenApiTypes.OBJECT, examples=[
            OpenApiExample("file", value={"a": {"x": 1, "y": 2}, "b": 1})]),
            **errors({413: ["LIMIT_EXCEEDED"]})},
    )
    def get(self, request: Request, agent: str, ns: str) -> HttpResponse:
        namespace = _ns(ns)
        limits = limits_for(self.tenant)
        text = namespace_export(agent=self.resolve_agent(agent), namespace=namespace)
        if (size := utf8_len(text)) > limits.response_bytes:
            raise KvError("LIMIT_EXCEEDED", "The export exceeds the response_bytes limit; use kv_export.",
                          details={"limit": "response_bytes", "max": limits.response_bytes, "actual": size})
        response = HttpResponse(text.encode("utf-8"), content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="{namespace}.json"'
        return response
