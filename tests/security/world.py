"""Tenant A's world for the isolation tests: one object of every kind, made through the
real API with A's own keys, each carrying a canary string that must never reach tenant B.

`World.leaks(text, request)` names the canaries and A-only ids found in a response that the
request did not itself contain; `state_of(tenant)` serializes every row a tenant owns, so a
test can prove that B's request changed nothing of A's (and copied nothing into B).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.apps import apps
from django.db import models
from rest_framework.test import APIClient

from tenants.models import ApiKey, MemoryVolume, PendingWrite, Tenant, ThreatFinding
from tenants.services.keys import apikey_create
from tests.conftest import TEST_ACTOR

# Content canaries: never part of any request the matrix sends.
CANARY = {
    "kv_value": "zq-canary-kv-value",
    "kv_run": "zq-canary-kv-run",
    "memory": "zq-canary-memory-entry",
    "user": "zq-canary-user-entry",
    "pending": "zq-canary-pending-write",
    "finding": "zq-canary-finding",
    "atom": "zq-canary-atom-text",
    "atom_source": "zq-canary-atom-source",
    "tenant_name": "zq-canary-tenant-name",
    "key_name": "zq-canary-key-name",
}
AGENT = "alpha-agent"
NAMESPACE = "secretns"
ENTRY_KEY = "secret-key"


@dataclass
class World:
    """Tenant A and the ids of its objects (the values the matrix fills URLs and bodies with)."""

    tenant: Tenant
    keys: dict[str, ApiKey] = field(default_factory=dict)
    raw: dict[str, str] = field(default_factory=dict)
    run_id: str = ""
    session_id: str = ""
    pending_id: str = ""  # the opaque pw_… id (docs/api.md "Tenant isolation")
    audit_id: str = ""  # the newest audit row's opaque ev_… id
    finding_id: str = ""
    memory_version: int = 0
    atom_id: str = ""
    atom_ref: str = ""  # issued to A's ingest key
    admin_ref: str = ""  # issued to A's admin key
    receipt_id: str = ""
    input_token: str = ""

    @property
    def slug(self) -> str:
        return self.tenant.slug

    @property
    def key_id(self) -> str:
        return self.keys["agent"].public_id

    def client(self, kind: str) -> APIClient:
        return self.client_for_raw(self.raw[kind])

    @staticmethod
    def client_for_raw(raw: str) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        return client

    def secrets(self) -> dict[str, str]:
        """Every string that identifies A's data: content canaries and A-only ids."""
        found = {f"canary:{name}": value for name, value in CANARY.items()}
        found |= {f"key:{kind}": key.public_id for kind, key in self.keys.items()}
        found |= {f"raw:{kind}": raw for kind, raw in self.raw.items()}
        found |= {"run": self.run_id, "session": self.session_id, "atom": self.atom_id,
                  "ref": self.atom_ref, "admin_ref": self.admin_ref, "receipt": self.receipt_id,
                  "input": self.input_token, "pending": self.pending_id, "audit": self.audit_id}
        return {name: value for name, value in found.items() if value}

    def leaks(self, text: str, request_text: str) -> list[str]:
        """Secrets present in `text` that the request did not carry itself (an echo is no leak)."""
        return sorted(name for name, value in self.secrets().items() if value in text and value not in request_text)


def _ok(response: Any, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.content
    return response.json()


def build_world(tenant: Tenant) -> World:
    """Fill `tenant` with one object of every kind, through its own keys."""
    tenant.name = CANARY["tenant_name"]
    tenant.save()
    world = World(tenant=tenant)
    for kind in ("agent", "ingest", "host", "reviewer", "admin"):
        key, raw = apikey_create(tenant=tenant, kind=kind, actor=TEST_ACTOR, name=f"{CANARY['key_name']}-{kind}")
        world.keys[kind], world.raw[kind] = key, raw
    admin, agent, host, ingest = (world.client(k) for k in ("admin", "agent", "host", "ingest"))

    # Key-value memory: an agent, a namespace with an entry, a run with a journal.
    kv = f"/api/v1/agents/{AGENT}"
    _ok(agent.post(f"{kv}/memory", {"action": "set", "namespace": NAMESPACE, "key": ENTRY_KEY,
                                    "value": {"secret": CANARY["kv_value"]}}, format="json"))
    world.run_id = _ok(agent.post(f"{kv}/runs", {"mode": "record"}, format="json"), 201)["run_id"]
    _ok(agent.post(f"{kv}/memory", {"action": "set", "namespace": NAMESPACE, "key": "in-run",
                                    "value": CANARY["kv_run"], "run_id": world.run_id, "seq": 1}, format="json"))

    # Memory files: both stores, history, a session, a pending write and a finding.
    human = world.client("reviewer")
    _ok(human.post("/api/v1/memory/memory", {"action": "add", "content": CANARY["memory"]}, format="json"))
    _ok(human.post("/api/v1/memory/user", {"action": "add", "content": CANARY["user"]}, format="json"))
    world.memory_version = MemoryVolume.get_or_create_for(tenant).memory_version
    world.session_id = _ok(agent.post("/api/v1/sessions", {}, format="json"), 201)["id"]
    _ok(admin.patch("/api/v1/tenant", {"approval": "all"}, format="json"))
    world.pending_id = _ok(agent.post("/api/v1/memory/memory", {"action": "add", "content": CANARY["pending"]},
                                      format="json"), 202)["pending_id"]
    assert PendingWrite.objects.filter(public_id=world.pending_id, volume__tenant=tenant).exists()
    volume = MemoryVolume.get_or_create_for(tenant)
    world.finding_id = ThreatFinding.objects.create(volume=volume, target="memory", entry=CANARY["finding"],
                                                    patterns=["exfil_curl"], patterns_version=1).public_id

    # Atoms: a source and an atom citing it (refs issued to the ingest and admin keys),
    # an inspect receipt and an input token observed by the host for the agent.
    source = {"id": "src", "op": "create", "content": {"text": CANARY["atom_source"], "links": []}, "sources": []}
    written = _ok(ingest.post("/api/v1/atoms/write", {"changes": [source]}, format="json"))
    source_ref = written["changes"]["src"]["ref"]
    note = {"id": "note", "op": "create", "content": {"text": CANARY["atom"], "links": []},
            "sources": [{"ref": source_ref, "start": 0, "end": 4}]}
    written = _ok(ingest.post("/api/v1/atoms/write", {"changes": [note]}, format="json"))
    world.atom_ref = written["changes"]["note"]["ref"]
    from atoms.models import Ref

    world.atom_id = Ref.objects.get(id=world.atom_ref).atom_id
    found = _ok(admin.post("/api/v1/atoms/search", {"query": CANARY["atom"]}, format="json"))
    world.admin_ref = found["items"][0]["ref"]
    searched = _ok(agent.post("/api/v1/atoms/search", {"query": CANARY["atom"]}, format="json"))
    world.receipt_id = searched["receipt"]["id"]
    observed = _ok(host.post("/api/v1/atoms/observe", {
        "binding": {"key": world.keys["agent"].public_id},
        "input": {"presentations": [{"receipt": world.receipt_id}], "payloadDigest": "0" * 64}}, format="json"))
    world.input_token = observed["input"]
    from memoryhub.models import AuditEvent

    world.audit_id = AuditEvent.objects.for_tenant(tenant).first().public_id
    return world


# --- Everything a tenant owns --------------------------------------------------------------

def _tenant_path(model: type[models.Model], depth: int = 3) -> str | None:
    """The ORM lookup from `model` to its Tenant (`tenant`, `volume__tenant`, ...), if any."""
    if model is Tenant:
        return "pk"
    if depth == 0:
        return None
    for f in model._meta.get_fields():
        if not (f.is_relation and (f.many_to_one or f.one_to_one) and f.concrete):
            continue
        target = f.related_model
        if target is Tenant:
            return f.name
    for f in model._meta.get_fields():
        if f.is_relation and (f.many_to_one or f.one_to_one) and f.concrete and f.related_model is not model:
            inner = _tenant_path(f.related_model, depth - 1)  # type: ignore[arg-type]
            if inner is not None and f.related_model is not Tenant:
                return f"{f.name}__{inner}"
    return None


def tenant_models() -> list[tuple[type[models.Model], str]]:
    """Every model with a path to Tenant; new stores are covered without listing them."""
    found = []
    for model in apps.get_models():
        path = _tenant_path(model)
        if path is not None:
            found.append((model, "pk" if model is Tenant else path))
    return found


def state_of(tenant: Tenant) -> str:
    """A canonical dump of every row `tenant` owns (for before/after comparisons)."""
    dump: dict[str, list[Any]] = {}
    for model, path in tenant_models():
        rows = model._default_manager.filter(**{path: tenant.pk}).order_by("pk").values()
        dump[model._meta.label] = [sorted(row.items()) for row in rows]
    return json.dumps(dump, default=str, sort_keys=True)
