"""POST /api/v1/atoms/uses and /api/v1/atoms/uses/reset (host and admin keys): the bodies parsed into a
`UsesCommand` and a `UsesResetCommand`, the results rendered as JSON (docs/architecture.md "Typed services").

Both change the subject's use state, so read-only keys get ACCESS_DENIED (docs/atoms.md "Decisions").
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from atoms.api.base import HOSTS, AtomsAPIView
from atoms.api.schemas_host import AtomsUses, AtomsUsesReset
from atoms.core.errors import AtomsCoreError
from atoms.core.ids import check_id
from atoms.errors import AtomError, from_core, invalid
from atoms.models import InputToken
from atoms.principal import Principal, resolve_binding
from atoms.services.barrier import open_store
from atoms.services.refs import resolve_ref
from atoms.services.tokens import token_for_use
from atoms.services.uses import (
    UsesCommand,
    UsesResetCommand,
    UsesResetResult,
    UsesResult,
    atoms_uses,
    atoms_uses_reset,
)
from memoryhub.api.schema import errors

USES_KEYS = {"binding", "refs", "eventId", "input"}
RESET_KEYS = {"binding"}
MAX_REFS = 256


def _unknown_key(body: dict[str, Any], known: set[str]) -> None:
    unknown = set(body) - known
    if unknown:
        raise invalid(f"Unknown key {sorted(unknown)[0]!r}.", path=sorted(unknown)[0])


def _presented_revisions(token: InputToken) -> set[str]:
    """The revisions of the token's presented units after narrowing (docs/atoms.md "Decisions")."""
    generation = token.manifest.get("generation") or {}
    return {unit["revision"] for presentation in generation.get("presentations", [])
            for unit in presentation.get("units", [])}


def parse_uses(caller: Principal, body: dict[str, Any]) -> UsesCommand:
    """The command a uses body asks for (docs/atoms.md "Decisions" steps 1-3, in that order):
    INVALID_INPUT, LIMIT_EXCEEDED, ACCESS_DENIED, INVALID_REF or CURSOR_EXPIRED (the token)."""
    _unknown_key(body, USES_KEYS)
    for name in ("binding", "refs", "eventId"):
        if name not in body:
            raise invalid(f"uses needs {name}.", path=name)
    refs = body["refs"]
    if not isinstance(refs, list) or not all(isinstance(ref, str) for ref in refs):
        raise invalid("refs must be a list of refs.", path="refs")
    if not refs:
        raise invalid("refs must not be empty.", path="refs")
    if len(refs) > MAX_REFS:
        raise AtomError("LIMIT_EXCEEDED", f"At most {MAX_REFS} refs per call.",
                        {"path": "refs", "limit": MAX_REFS, "actual": len(refs)})
    try:
        event_id = check_id(body["eventId"], field="eventId")
    except AtomsCoreError as exc:
        raise from_core(exc) from exc
    binding = resolve_binding(caller, body["binding"], may_name_others=True)
    revisions = tuple(resolve_ref(binding.principal, ref, binding.read_policies, path=f"refs[{index}]")
                      for index, ref in enumerate(refs))
    token = None
    if "input" in body:
        token = token_for_use(binding, body["input"])
        presented = _presented_revisions(token)
        for index, revision in enumerate(revisions):
            if revision.id not in presented:
                raise invalid("The ref is not among the token's presented units.", path=f"refs[{index}]")
    return UsesCommand(caller=caller, binding=binding, revisions=revisions, event_id=event_id, token=token)


def parse_uses_reset(caller: Principal, body: dict[str, Any]) -> UsesResetCommand:
    """The command a uses/reset body asks for: INVALID_INPUT or ACCESS_DENIED (the binding)."""
    _unknown_key(body, RESET_KEYS)
    if "binding" not in body:
        raise invalid("uses/reset needs a binding.", path="binding")
    return UsesResetCommand(caller=caller, binding=resolve_binding(caller, body["binding"], may_name_others=True))


def uses_json(result: UsesResult) -> dict[str, Any]:
    """The uses answer of docs/atoms.md "Decisions"."""
    return {"acceptedAt": result.accepted_at, "recorded": result.recorded, "repeated": result.repeated}


def uses_reset_json(result: UsesResetResult) -> dict[str, Any]:
    return {"deleted": result.deleted}


UsesResultSchema = inline_serializer("AtomsUsesResult", {
    "acceptedAt": serializers.IntegerField(
        help_text="Epoch ms the uses count from: now, or the subject's latest use if the clock went back."),
    "recorded": serializers.IntegerField(help_text="Distinct revisions that got a use."),
    "repeated": serializers.IntegerField(
        help_text="Distinct revisions this eventId had already been recorded for (counted once, not again)."),
})
ResetResultSchema = inline_serializer("AtomsUsesResetResult", {
    "deleted": serializers.IntegerField(help_text="Use-state rows deleted, one per revision the subject had used."),
})


class UsesView(AtomsAPIView):
    allowed_kinds = HOSTS
    changes_memory = True

    @extend_schema(
        operation_id="atoms_uses", summary="Record that a model response using these refs succeeded",
        tags=["atoms"],
        description=(
            "Host and admin keys only, not read-only. Call it after the model response succeeded. The binding "
            "names the agent's key; refs are that key's refs. Each distinct revision gets one use, unless this "
            "eventId was already recorded for it (`repeated`). With `input`, every ref must be a unit the token "
            "presented, and the event is appended to the token's `acknowledgement`. A failing availability model "
            "stores nothing (INVALID_INPUT); state written by another model id gives STATE_INVALIDATED until "
            "uses/reset."
        ),
        request=AtomsUses,
        responses={200: UsesResultSchema, **errors({409: ["STATE_INVALIDATED"], 410: ["CURSOR_EXPIRED"]})},
        examples=[
            OpenApiExample("the refs an agent's answer used", request_only=True, value={
                "binding": {"key": "k_agent7"}, "refs": ["ref:2b0e…", "ref:91ad…"], "eventId": "response-1842",
                "input": "input:8c1d…"}),
            OpenApiExample("recorded", response_only=True, value={
                "acceptedAt": 1767225600000, "recorded": 2, "repeated": 0}),
        ],
    )
    def post(self, request: Request) -> Response:
        return Response(uses_json(atoms_uses(parse_uses(self.principal, self.body()))))


class UsesResetView(AtomsAPIView):
    allowed_kinds = HOSTS
    changes_memory = True

    @extend_schema(
        operation_id="atoms_uses_reset", summary="Delete a subject's use state", tags=["atoms"],
        description=(
            "Host and admin keys only, not read-only. Deletes the bound key's subject's use state in the "
            "binding's read policies, which clears STATE_INVALIDATED after a model change. Event markers stay, "
            "so an eventId recorded before still counts as repeated."
        ),
        request=AtomsUsesReset, responses={200: ResetResultSchema},
        examples=[
            OpenApiExample("reset an agent's use state", request_only=True,
                           value={"binding": {"key": "k_agent7", "readPolicies": ["default"]}}),
            OpenApiExample("deleted", response_only=True, value={"deleted": 12}),
        ],
    )
    def post(self, request: Request) -> Response:
        return Response(uses_reset_json(atoms_uses_reset(parse_uses_reset(self.principal, self.body()))))


def answer_uses(caller: Principal, body: dict[str, Any]) -> dict[str, Any]:
    """A uses body answered as POST /api/v1/atoms/uses answers it, without HTTP: the purge
    barrier, the parsing, the service, the JSON."""
    open_store(caller.tenant)
    return uses_json(atoms_uses(parse_uses(caller, body)))


def answer_uses_reset(caller: Principal, body: dict[str, Any]) -> dict[str, Any]:
    """A uses/reset body answered as POST /api/v1/atoms/uses/reset answers it, without HTTP."""
    open_store(caller.tenant)
    return uses_reset_json(atoms_uses_reset(parse_uses_reset(caller, body)))
