"""Who calls the Atom engine (docs/atoms.md "Decisions"-2.2): principals and per-request bindings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from atoms.core.canonical import digest
from atoms.core.ids import POLICY_NAME_RE
from atoms.errors import denied, invalid
from atoms.models import Atom, OriginKind
from tenants.models import ApiKey, KeyKind, Tenant

ACTOR_OF_KIND: dict[str, str] = {
    KeyKind.AGENT: "agent", KeyKind.INGEST: "input-adapter", KeyKind.HOST: "input-adapter",
    KeyKind.ADMIN: "input-adapter", KeyKind.REVIEWER: "human",
}
GENERATED_ORIGINS = tuple(kind for kind in OriginKind if kind != OriginKind.SOURCE)


@dataclass(frozen=True)
class Principal:
    """An API key, or a person in the UI (`key` None, subject `user:<name>`)."""

    tenant: Tenant
    principal_id: str  # the key's public id, or user:<name>; refs belong to it
    subject: str
    kind: str  # key kind, or "ui"
    actor_type: str  # human | input-adapter | agent
    read_policies: tuple[str, ...]
    write_policies: tuple[str, ...]
    generation: int
    read_only: bool = False
    key: ApiKey | None = None

    @property
    def can_ingest_source(self) -> bool:
        return self.actor_type != "agent"

    def require_writable(self) -> None:
        """Endpoints that change memory refuse read-only keys (REST views and MCP tools)."""
        if self.read_only:
            raise denied("This API key is read-only.")

    @classmethod
    def for_key(cls, key: ApiKey) -> Principal:
        return cls(
            tenant=key.tenant, principal_id=key.public_id, subject=key.effective_subject, kind=key.kind,
            actor_type=ACTOR_OF_KIND[key.kind], read_policies=tuple(key.effective_read_policies),
            write_policies=tuple(key.effective_write_policies), generation=key.generation,
            read_only=key.read_only, key=key,
        )

    @classmethod
    def for_user(cls, tenant: Tenant, username: str, policies: tuple[str, ...] = ("default",)) -> Principal:
        return cls(tenant=tenant, principal_id=f"user:{username}", subject=f"user:{username}", kind="ui",
                   actor_type="human", read_policies=policies, write_policies=policies, generation=1)

    @classmethod
    def for_person(cls, tenant: Tenant, username: str) -> Principal:
        """A member signed in to the review UI. People review the whole tenant, so they read
        and write every policy it holds atoms in (`default` always); their writes are human
        writes (origin `source`, contract `source-v2`, approved). The tenant role, checked by
        the views, decides what they may do."""
        held = set(Atom.objects.filter(tenant=tenant).values_list("policy", flat=True).distinct())
        policies = ("default", *sorted(held - {"default"}))
        return cls.for_user(tenant, username, policies)


@dataclass(frozen=True)
class Binding:
    """One request's principal, write policy, read policies and actor (docs/atoms.md "Decisions")."""

    principal: Principal
    write_policy: str | None
    read_policies: tuple[str, ...]
    actor: dict[str, str]

    @property
    def scope_digest(self) -> str:
        return digest({"actor": self.actor, "key": self.principal.principal_id,
                       "readPolicies": sorted(self.read_policies), "writePolicy": self.write_policy}, omit_none=True)


BINDING_KEYS = {"key", "writePolicy", "readPolicies", "generatedOrigin"}


def resolve_binding(caller: Principal, raw: Any, *, may_name_others: bool = False) -> Binding:
    """Validate an optional request binding. Data endpoints always act as the caller;
    host and admin keys may name another active key of the tenant where `may_name_others`."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise invalid("binding must be an object.", path="binding")
    unknown = set(raw) - BINDING_KEYS
    if unknown:
        raise invalid(f"Unknown binding key {sorted(unknown)[0]!r}.", path="binding")
    principal = caller
    named = raw.get("key")
    if named is not None:
        if not isinstance(named, str):
            raise invalid("binding.key must be a string.", path="binding.key")
        if named != caller.principal_id:
            if not (may_name_others and caller.kind in (KeyKind.HOST, KeyKind.ADMIN)):
                raise denied("This caller may bind only itself.")
            other = ApiKey.objects.filter(tenant=caller.tenant, prefix=named.removeprefix("k_"),
                                          revoked_at__isnull=True).select_related("tenant").first()
            if other is None:
                raise denied("No such active key in this tenant.")
            principal = Principal.for_key(other)
    write_policy = raw.get("writePolicy")
    if write_policy is None:
        write_policy = principal.write_policies[0] if principal.write_policies else None
    elif not isinstance(write_policy, str) or not POLICY_NAME_RE.fullmatch(write_policy):
        raise invalid("binding.writePolicy must be a policy name.", path="binding.writePolicy")
    elif write_policy not in principal.write_policies:
        raise denied("The write policy is not granted to this key.")
    reads = raw.get("readPolicies")
    if reads is None:
        read_policies = principal.read_policies
    else:
        if not isinstance(reads, list) or not reads or not all(isinstance(p, str) for p in reads) \
                or len(set(reads)) != len(reads):
            raise invalid("binding.readPolicies must be a non-empty list without duplicates.", path="binding.readPolicies")
        if not set(reads) <= set(principal.read_policies):
            raise denied("A read policy is not granted to this key.")
        read_policies = tuple(reads)
    actor: dict[str, str] = {"type": principal.actor_type}
    origin = raw.get("generatedOrigin")
    if origin is not None:
        if principal.actor_type != "agent":
            raise invalid("generatedOrigin is for agent keys only.", path="binding.generatedOrigin")
        if origin not in GENERATED_ORIGINS:
            raise invalid("generatedOrigin must be extraction, organization, derived or hypothesis.",
                          path="binding.generatedOrigin")
    if principal.actor_type == "agent":
        actor["generatedOrigin"] = origin or OriginKind.DERIVED
    return Binding(principal=principal, write_policy=write_policy, read_policies=tuple(read_policies), actor=actor)
