"""manifest (docs/atoms.md "Decisions"): the host fetches what a receipt or an input token recorded.

The binding must match the scope the manifest was issued under: key, subject,
authorization generation, read policies, write policy and actor. A host therefore fetches
an agent's manifest by naming the agent's key in the binding, with the same policies.
"""

from __future__ import annotations

from typing import Any

from atoms.core.ids import is_id_of
from atoms.errors import denied, invalid
from atoms.models import AtomStore, InputToken, Receipt, Tombstone
from atoms.principal import Binding, Principal, resolve_binding
from atoms.services.barrier import check_barrier

BODY_KEYS = {"binding", "receipt", "input"}


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


def atoms_manifest(*, caller: Principal, body: Any) -> dict[str, Any]:
    """Exactly one of `receipt` and `input` (INVALID_INPUT); unknown → INVALID_INPUT;
    erased (tombstone) or another scope → ACCESS_DENIED."""
    store = AtomStore.for_tenant(caller.tenant)
    check_barrier(store)
    if not isinstance(body, dict) or set(body) - BODY_KEYS:
        raise invalid("The body keys are binding and one of receipt and input.")
    named = [k for k in ("receipt", "input") if k in body]
    if len(named) != 1:
        raise invalid("Give exactly one of receipt and input.")
    if "binding" not in body:
        raise invalid("manifest needs a binding.", path="binding")
    binding = resolve_binding(caller, body["binding"], may_name_others=True)
    field = named[0]
    wanted = body[field]
    if not isinstance(wanted, str):
        raise invalid(f"{field} must be a string.", path=field)
    tenant = caller.tenant
    if Tombstone.objects.filter(tenant=tenant, id=wanted).exists():
        raise denied("This manifest was erased by a purge.", path=field)
    manifest: dict[str, Any] | None = None
    if field == "receipt" and is_id_of(wanted, "receipt"):
        receipt = Receipt.objects.filter(tenant=tenant, id=wanted).first()
        manifest = receipt.manifest if receipt is not None else None
    elif field == "input" and is_id_of(wanted, "input"):
        token = InputToken.objects.filter(tenant=tenant, id=wanted).first()
        manifest = token_manifest(token) if token is not None else None
    if manifest is None:
        raise invalid(f"Unknown {field}.", path=field)
    if not _matches(binding, manifest):
        raise denied("The binding does not match the scope this manifest was issued under.", path="binding")
    return manifest
