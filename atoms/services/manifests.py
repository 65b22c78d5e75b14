"""manifest (docs/atoms.md "Decisions"): the host fetches what a receipt or an input token recorded.

The binding must match the scope the manifest was issued under: key, subject,
authorization generation, read policies, write policy and actor. A host therefore fetches
an agent's manifest by naming the agent's key in the binding, with the same policies.
The API parses the body into a `ManifestCommand` (atoms/api/observe.py; docs/architecture.md
"Typed services").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from atoms.core.ids import is_id_of
from atoms.errors import denied, invalid
from atoms.models import InputToken, Receipt, Tombstone
from atoms.principal import Binding
from atoms.services.barrier import open_store
from atoms.services.receipts import issued_manifest


@dataclass(frozen=True)
class ManifestCommand:
    """One manifest fetch, validated and authorized: which receipt or input token, under
    which binding (the scope the manifest must have been issued under)."""

    binding: Binding
    kind: Literal["receipt", "input"]  # the body key that named it
    id: str  # `receipt:<uuid>` or `input:<uuid>`, as sent (not checked to be one)


@dataclass(frozen=True)
class ManifestResult:
    """The manifest found; atoms/api/observe.py renders it as is."""

    kind: Literal["receipt", "input"]
    id: str
    manifest: dict[str, Any]  # the manifest document of docs/atoms.md "Decisions", as stored


def _matches(binding: Binding, manifest: dict[str, Any]) -> bool:
    principal = binding.principal
    return (manifest.get("key") == principal.principal_id and manifest.get("subject") == principal.subject
            and manifest.get("authGeneration") == principal.generation
            and manifest.get("readPolicies") == sorted(binding.read_policies)
            and manifest.get("writePolicy") == binding.write_policy and manifest.get("actor") == binding.actor)


def token_manifest(token: InputToken) -> dict[str, Any]:
    """A token's manifest with its outputs as recorded by the commits that used it."""
    manifest = dict(token.manifest)
    if isinstance(manifest.get("generation"), dict):
        manifest["generation"] = {**manifest["generation"], "outputs": list(token.outputs)}
    return manifest


def atoms_manifest(command: ManifestCommand) -> ManifestResult:
    """Unknown → INVALID_INPUT; erased (tombstone) or another scope → ACCESS_DENIED."""
    binding, field, wanted = command.binding, command.kind, command.id
    tenant = binding.principal.tenant
    open_store(tenant)
    if Tombstone.objects.filter(tenant=tenant, id=wanted).exists():
        raise denied("This manifest was erased by a purge.", path=field)
    manifest: dict[str, Any] | None = None
    if field == "receipt" and is_id_of(wanted, "receipt"):
        receipt = Receipt.objects.filter(tenant=tenant, id=wanted).first()
        manifest = issued_manifest(receipt.manifest) if receipt is not None else None
    elif field == "input" and is_id_of(wanted, "input"):
        token = InputToken.objects.filter(tenant=tenant, id=wanted).first()
        manifest = token_manifest(token) if token is not None else None
    if manifest is None:
        raise invalid(f"Unknown {field}.", path=field)
    if not _matches(binding, manifest):
        raise denied("The binding does not match the scope this manifest was issued under.", path="binding")
    return ManifestResult(kind=field, id=wanted, manifest=manifest)
