"""Input tokens at use (docs/atoms.md "Decisions"). Tokens are issued by observe (observe.py); the
commit-time checks of docs/atoms.md "Decisions" (4-8) are in token_commit.py."""

from __future__ import annotations

from atoms.clock import now_ms
from atoms.core.ids import is_id_of
from atoms.errors import AtomError, denied, invalid
from atoms.models import InputToken, Tombstone
from atoms.principal import Binding


def token_for_use(binding: Binding, token_id: object, *, path: str = "input") -> InputToken:
    """docs/atoms.md "Decisions": unknown or forged → INVALID_INPUT; expired → CURSOR_EXPIRED; another scope or
    a purged read → ACCESS_DENIED."""
    if not isinstance(token_id, str) or not is_id_of(token_id, "input"):
        raise invalid("input must be an input token issued by observe.", path=path)
    if Tombstone.objects.filter(tenant=binding.principal.tenant, id=token_id).exists():
        raise denied("The token read an atom that was purged.", path=path)
    token = InputToken.objects.filter(tenant=binding.principal.tenant, id=token_id).first()
    if token is None:
        raise invalid("Unknown input token.", path=path)
    manifest = token.manifest
    if token.expires_at < now_ms():
        raise AtomError("CURSOR_EXPIRED", "The input token has expired.", {"path": path})
    principal = binding.principal
    same_scope = (
        manifest.get("key") == principal.principal_id and manifest.get("subject") == principal.subject
        and manifest.get("authGeneration") == principal.generation
        and manifest.get("readPolicies") == sorted(binding.read_policies)
        and manifest.get("writePolicy") == binding.write_policy and manifest.get("actor") == binding.actor
    )
    if not same_scope:
        raise denied("The token was issued for another key, policy or actor.", path=path)
    return token
