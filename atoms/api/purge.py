"""POST /api/v1/atoms/purge: the body parsed into a `PurgeCommand`, the `PurgeResult` rendered
as JSON (docs/architecture.md "Typed services"). There is no barrier check before parsing: a
purge resumes its own erasure behind the barrier, and `atoms_purge` decides what it allows."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from atoms.api.base import ADMINS, AtomsAPIView
from atoms.api.schemas_write import PURGE
from atoms.errors import AtomError, invalid
from atoms.principal import Principal
from atoms.services.purge import MAX_WORK, PurgeCommand, PurgeResult, atoms_purge, check_purger
from memoryhub.api.schema import errors

BODY_KEYS = {"atomId", "ref", "options"}
OPTION_KEYS = {"dryRun", "maxWork"}


def parse_purge(caller: Principal, body: dict[str, Any]) -> PurgeCommand:
    """The command a purge body asks for: ACCESS_DENIED for a caller that may not purge, then
    INVALID_INPUT or INVALID_SCHEMA in the order of the body's parts."""
    check_purger(caller)
    if set(body) - BODY_KEYS:
        raise invalid("The body keys are atomId or ref, and options.")
    named = [k for k in ("atomId", "ref") if k in body]
    if len(named) != 1:
        raise invalid("Give exactly one of atomId and ref.")
    value = body[named[0]]
    if not isinstance(value, str):
        raise invalid(f"{named[0]} must be a string.", path=named[0])
    options = body.get("options", {})
    if not isinstance(options, dict):
        raise invalid("options must be an object.", path="options")
    unknown = set(options) - OPTION_KEYS
    if unknown:
        raise invalid(f"Unknown option {sorted(unknown)[0]!r}.", path=f"options.{sorted(unknown)[0]}")
    dry_run = options.get("dryRun", False)
    if not isinstance(dry_run, bool):
        raise invalid("dryRun must be a boolean.", path="options.dryRun")
    max_work = options.get("maxWork", MAX_WORK)
    if isinstance(max_work, bool) or not isinstance(max_work, int | float):
        raise invalid("maxWork must be a number.", path="options.maxWork")
    if isinstance(max_work, float) and max_work.is_integer():
        max_work = int(max_work)  # JSON has one number type: 1e6 is an integer too
    if not isinstance(max_work, int) or max_work < 0:
        raise AtomError("INVALID_SCHEMA", "maxWork must be a non-negative integer.", {"path": "options.maxWork"})
    # Like every budget, a value above the ceiling is lowered to it.
    target = {"atom_id": value} if named[0] == "atomId" else {"ref": value}
    return PurgeCommand(caller=caller, dry_run=dry_run, max_work=min(max_work, MAX_WORK), **target)


def purge_json(result: PurgeResult) -> dict[str, Any]:
    """The PurgeResult of docs/atoms.md "In the web UI: read playground and purge"; the optional
    keys appear only when set, in this order."""
    body: dict[str, Any] = {
        "complete": result.complete, "dryRun": result.dry_run, "affectedAtomIds": result.affected_atom_ids,
        "erasedAtomIds": result.erased_atom_ids, "legacyDependencies": result.legacy_dependencies,
        "work": result.work,
    }
    if result.minimum_work is not None:
        body["minimumWork"] = result.minimum_work
    if result.reason is not None:
        body["reason"] = result.reason
    body["physicalStorageReclaimed"] = False  # a purge deletes rows; it never compacts storage
    if result.erasure_receipt is not None:
        body["erasureReceipt"] = result.erasure_receipt
    return body


def answer_purge(caller: Principal, body: dict[str, Any]) -> dict[str, Any]:
    """A purge body answered as POST /api/v1/atoms/purge answers it, without HTTP: the parsing,
    the service (which checks the barrier itself), the JSON."""
    return purge_json(atoms_purge(parse_purge(caller, body)))


class AtomsErasureReceipt(serializers.Serializer):
    id = serializers.CharField(help_text="`erasure:<uuid>`.")
    atomIds = serializers.ListField(child=serializers.CharField(), help_text="The erased atoms, in erasure order.")
    requestedBy = serializers.CharField(help_text="Who started the purge: `key:<id>` or `user:<name>`.")
    startedAt = serializers.IntegerField(help_text="When the barrier went up (ms since the epoch).")
    completedAt = serializers.IntegerField(help_text="When the purge completed (ms since the epoch).")
    counts = serializers.DictField(child=serializers.IntegerField(),
                                   help_text="Rows erased or redacted, by kind (atoms, revisions, receipts, ...).")
    digest = serializers.CharField(help_text="SHA-256 of the canonical receipt without this field.")


PurgeResultSchema = inline_serializer("AtomsPurgeResult", {
    "complete": serializers.BooleanField(help_text="Whether the purge (or the dry run) went to the end."),
    "dryRun": serializers.BooleanField(help_text="Whether this was a dry run, which changes nothing."),
    "affectedAtomIds": serializers.ListField(child=serializers.CharField(),
                                             help_text="The atom and everything that depends on it for erasure."),
    "erasedAtomIds": serializers.ListField(child=serializers.CharField(),
                                           help_text="The atoms erased so far, in order; empty on a dry run."),
    "legacyDependencies": serializers.BooleanField(help_text="Whether affected revisions use legacy include links."),
    "work": serializers.IntegerField(help_text="Work units this call spent."),
    "minimumWork": serializers.IntegerField(required=False,
                                            help_text="When out of work: the maxWork the next step needs."),
    "reason": serializers.ChoiceField(choices=["budget", "storage-error"], required=False,
                                      help_text="Why the call stopped before completing."),
    "physicalStorageReclaimed": serializers.BooleanField(help_text="Always false: rows are deleted, storage is not compacted."),
    "erasureReceipt": AtomsErasureReceipt(required=False, help_text="The erasure receipt, once complete."),
})

COUNTS = {"atoms": 2, "revisions": 3, "slots": 1, "origins": 1, "indexEntries": 0, "vectors": 0, "useStates": 0,
          "useEvents": 0, "receipts": 1, "inputTokens": 0, "cursors": 0, "replayRecords": 0, "refsReduced": 4,
          "reviewRecords": 0, "auditEntriesRedacted": 3}


class PurgeView(AtomsAPIView):
    allowed_kinds = ADMINS
    changes_memory = True
    checks_barrier = False  # a purge resumes its own erasure behind the barrier

    @extend_schema(
        operation_id="atoms_purge", summary="Erase an atom and everything that depends on it for erasure",
        description=(
            "Admin keys only. The first call that is not a dry run closes the tenant's Atom API "
            "(ACCESS_DENIED, reason erasure-incomplete) until the purge completes; repeat the call "
            "for the same atom to resume after `complete: false`."
        ),
        tags=["atoms"], request=PURGE, responses={200: PurgeResultSchema, **errors({409: ["REVISION_CONFLICT"]})},
        examples=[
            OpenApiExample("dry run", request_only=True,
                           value={"atomId": "atom:0b6c…", "options": {"dryRun": True}}),
            OpenApiExample("purge by ref", request_only=True, value={"ref": "ref:7d41…"}),
            OpenApiExample("preview", response_only=True, value={
                "complete": True, "dryRun": True, "affectedAtomIds": ["atom:0b6c…", "atom:5e2a…"],
                "erasedAtomIds": [], "legacyDependencies": False, "work": 4, "physicalStorageReclaimed": False}),
            OpenApiExample("out of work", response_only=True, value={
                "complete": False, "dryRun": False, "affectedAtomIds": ["atom:0b6c…"], "erasedAtomIds": [],
                "legacyDependencies": False, "work": 0, "minimumWork": 1, "reason": "budget",
                "physicalStorageReclaimed": False}),
            OpenApiExample("erased", response_only=True, value={
                "complete": True, "dryRun": False, "affectedAtomIds": ["atom:0b6c…", "atom:5e2a…"],
                "erasedAtomIds": ["atom:0b6c…", "atom:5e2a…"], "legacyDependencies": False, "work": 19,
                "physicalStorageReclaimed": False,
                "erasureReceipt": {"id": "erasure:91f0…", "atomIds": ["atom:0b6c…", "atom:5e2a…"],
                                   "requestedBy": "key:k_…", "startedAt": 1767225600000,
                                   "completedAt": 1767225600042, "counts": COUNTS, "digest": "3f5a…"}}),
        ],
    )
    def post(self, request: Request) -> Response:
        return Response(purge_json(atoms_purge(parse_purge(self.principal, self.body()))))
