"""POST /api/v1/atoms/index/update, index/prioritize and index/status (host and admin keys). The update and
prioritize bodies are parsed into commands and their results rendered as JSON (docs/architecture.md
"Typed services")."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from atoms.api.base import HOSTS, AtomsAPIView
from atoms.api.schemas_host import INDEX_STATUS, AtomsIndexPrioritize, AtomsIndexUpdate
from atoms.errors import AtomError, invalid
from atoms.principal import Principal, resolve_binding
from atoms.services.barrier import open_store
from atoms.services.budget import is_int
from atoms.services.index_api import (
    IndexPrioritizeCommand,
    IndexPrioritizeResult,
    IndexUpdateCommand,
    IndexUpdateResult,
    atoms_index_prioritize,
    atoms_index_update,
)
from atoms.services.index_status import status_response
from atoms.services.indexing import DEFAULT_LIMIT
from atoms.services.refs import resolve_ref
from memoryhub.api.schema import errors

UPDATE_MAX = 1024
PRIORITIZE_LIMIT = 256


def _limit(raw: Any, default: int, maximum: int) -> int:
    options = {} if raw is None else raw
    if not isinstance(options, dict):
        raise invalid("options must be an object.", path="options")
    if "cursor" in options:
        raise invalid("Index calls take no cursor.", path="options.cursor")
    unknown = sorted(set(options) - {"limit"})
    if unknown:
        raise invalid(f"Unknown option {unknown[0]!r}.", path=f"options.{unknown[0]}")
    limit = options.get("limit", default)
    if not is_int(limit) or not 1 <= limit <= maximum:
        raise AtomError("INVALID_SCHEMA", f"limit must be an integer from 1 to {maximum}.", {"path": "options.limit"})
    return limit


def parse_index_update(caller: Principal, body: dict[str, Any]) -> IndexUpdateCommand:
    """The command an index/update body asks for: INVALID_INPUT, INVALID_SCHEMA (the limit) or
    ACCESS_DENIED (the binding), in that order."""
    if set(body) - {"binding", "options"}:
        raise invalid("The body keys are binding and options.")
    limit = _limit(body.get("options"), DEFAULT_LIMIT, UPDATE_MAX)
    return IndexUpdateCommand(binding=resolve_binding(caller, body.get("binding")), limit=limit)


def parse_index_prioritize(caller: Principal, body: dict[str, Any]) -> IndexPrioritizeCommand:
    """The command an index/prioritize body asks for: INVALID_INPUT, INVALID_SCHEMA, LIMIT_EXCEEDED,
    ACCESS_DENIED or INVALID_REF, in the order of the body's parts."""
    if set(body) - {"binding", "refs", "options"}:
        raise invalid("The body keys are binding, refs and options.")
    limit = _limit(body.get("options"), PRIORITIZE_LIMIT, PRIORITIZE_LIMIT)
    refs = body.get("refs")
    if not isinstance(refs, list):
        raise invalid("refs must be a list of refs.", path="refs")
    if len(refs) > limit:
        raise AtomError("LIMIT_EXCEEDED", f"At most {limit} refs per call.",
                        {"path": "refs", "limit": limit, "actual": len(refs)})
    binding = resolve_binding(caller, body.get("binding"))
    revisions = tuple(resolve_ref(binding.principal, ref, binding.read_policies, path=f"refs[{i}]")
                      for i, ref in enumerate(refs))
    return IndexPrioritizeCommand(binding=binding, revisions=revisions)


def index_update_json(result: IndexUpdateResult) -> dict[str, Any]:
    return {"indexed": result.indexed, "processed": result.processed, "pending": result.pending}


def index_prioritize_json(result: IndexPrioritizeResult) -> dict[str, Any]:
    return {"indexed": result.indexed}


UpdateResult = inline_serializer("AtomsIndexUpdateResult", {
    "indexed": serializers.IntegerField(help_text="Heads encoded by this call."),
    "processed": serializers.IntegerField(help_text="Feed events consumed, at most `limit`."),
    "pending": serializers.BooleanField(
        help_text="More events wait in these feeds; false does not mean the index is ready (see index/status)."),
})
PrioritizeResult = inline_serializer("AtomsIndexPrioritizeResult", {
    "indexed": serializers.IntegerField(
        help_text="Refs encoded now; the others were no active head or already had a valid entry."),
})
StatusResult = inline_serializer("AtomsIndexStatusResult", {
    "ready": serializers.BooleanField(help_text="A provider loads and every served policy is drained."),
    "encoder": inline_serializer("AtomsIndexEncoder", {"id": serializers.CharField(),
                                                       "dimensions": serializers.IntegerField()}, required=False,
                                 help_text="The provider's model and vector size; absent when none loads."),
    "config": serializers.CharField(allow_null=True, help_text="The index configuration (encoder, chunking) entries are valid for; null without an encoder."),
    "indexGeneration": serializers.IntegerField(help_text="Bumped by an embedding change or a purge; older cursors expire."),
    "policies": serializers.ListField(child=inline_serializer("AtomsIndexPolicy", {
        "policy": serializers.CharField(),
        "checkpoint": inline_serializer("AtomsIndexCheckpoint", {"seq": serializers.IntegerField(),
                                                                 "revisionId": serializers.CharField(allow_blank=True)}),
        "headSeq": serializers.IntegerField(), "backlog": serializers.IntegerField(),
        "drained": serializers.BooleanField(),
    }), help_text="Each served policy's feed: checkpoint, latest seq, backlog, drained."),
})
NOT_READY = {503: ["INDEX_NOT_READY"], 409: ["MODEL_SPACE_MISMATCH", "REVISION_CONFLICT"]}


class IndexUpdateView(AtomsAPIView):
    allowed_kinds = HOSTS
    changes_memory = True

    @extend_schema(
        operation_id="atoms_index_update", summary="Consume the index feed now", tags=["atoms"],
        description=(
            "Host and admin keys, not read-only. Processes up to `limit` (default 32) revision events of the "
            "binding's read policies in name order: each changed atom's head is encoded from its own text if it "
            "is active, not quarantined and has no valid entry. The checkpoint moves by compare-and-set; a "
            "concurrent indexer gives REVISION_CONFLICT. `pending` says more events wait, never that the whole "
            "index is ready: use index/status for that. Workers do this on their own after every commit."
        ),
        request=AtomsIndexUpdate, responses={200: UpdateResult, **errors(NOT_READY)},
        examples=[
            OpenApiExample("drain 64 events", request_only=True, value={"options": {"limit": 64}}),
            OpenApiExample("progress", response_only=True, value={"indexed": 60, "processed": 64, "pending": True}),
        ],
    )
    def post(self, request: Request) -> Response:
        return Response(index_update_json(atoms_index_update(parse_index_update(self.principal, self.body()))))


class IndexPrioritizeView(AtomsAPIView):
    allowed_kinds = HOSTS
    changes_memory = True

    @extend_schema(
        operation_id="atoms_index_prioritize", summary="Encode these atoms now", tags=["atoms"],
        description=(
            "Host and admin keys, not read-only. Encodes the given refs at once if they are active heads without "
            "a valid entry (at most 256); checkpoints do not move. Use it for atoms an agent needs semantically "
            "right away."
        ),
        request=AtomsIndexPrioritize,
        responses={200: PrioritizeResult, **errors({**NOT_READY, 413: ["LIMIT_EXCEEDED"]})},
        examples=[
            OpenApiExample("two refs", request_only=True, value={"refs": ["ref:2b0e…", "ref:91ad…"]}),
            OpenApiExample("encoded", response_only=True, value={"indexed": 2}),
        ],
    )
    def post(self, request: Request) -> Response:
        return Response(index_prioritize_json(atoms_index_prioritize(
            parse_index_prioritize(self.principal, self.body()))))


class IndexStatusView(AtomsAPIView):
    allowed_kinds = HOSTS
    # It answers during a pending purge (as its description says), in the five queries of
    # docs/atoms.md "Index counters".
    checks_barrier = False

    @extend_schema(
        operation_id="atoms_index_status", summary="Whether the semantic index covers every served policy",
        tags=["atoms"],
        description=(
            "Host and admin keys (read-only too). `ready` is true only when a provider exists and every policy "
            "some active key reads is drained (its checkpoint reached the policy's latest seq). Each policy "
            "reports its checkpoint, latest seq and backlog. Answers during a pending purge."
        ),
        request=INDEX_STATUS, responses={200: StatusResult},
        examples=[OpenApiExample("ready", response_only=True, value={
            "ready": True, "encoder": {"id": "sentence-transformers/all-MiniLM-L6-v2", "dimensions": 384},
            "config": "5f1c…", "indexGeneration": 0,
            "policies": [{"policy": "default", "checkpoint": {"seq": 42, "revisionId": "revision:0f3a…"},
                          "headSeq": 42, "backlog": 0, "drained": True}]})],
    )
    def post(self, request: Request) -> Response:
        self.body()
        return Response(status_response(self.key.tenant))


def answer_index_update(caller: Principal, body: dict[str, Any]) -> dict[str, Any]:
    """An index/update body answered as POST /api/v1/atoms/index/update answers it, without HTTP:
    the purge barrier, the parsing, the service, the JSON."""
    open_store(caller.tenant)
    return index_update_json(atoms_index_update(parse_index_update(caller, body)))


def answer_index_prioritize(caller: Principal, body: dict[str, Any]) -> dict[str, Any]:
    """An index/prioritize body answered as POST /api/v1/atoms/index/prioritize answers it, without HTTP."""
    open_store(caller.tenant)
    return index_prioritize_json(atoms_index_prioritize(parse_index_prioritize(caller, body)))
