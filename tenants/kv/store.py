"""KV store services: one transaction each, callers validate first (tenants.kv.rules).

Concurrency (docs/kv.md "How it is stored"): overwrites are a single UPDATE ... version = version + 1 on the
key's row. Anything that adds or removes keys first locks the (agent, namespace) counter
row, and the first key of a namespace also locks the agent row, so the key and namespace
limits hold exactly; lock order is always namespace → entry → agent, so writers never
deadlock. On SQLite every write transaction is IMMEDIATE, which serializes them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count, F, Max, Sum
from django.db.models.functions import Substr
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.audit import audit_record
from memoryhub.digests import sha256_hex
from memoryhub.keyset import BadCursor, open_cursor, sign_cursor
from tenants.kv.rules import KvError, Limits, json_str, limit_exceeded, utf8_len
from tenants.models import Agent, KvConfig, KvEntry, KvNamespace, Tenant


@dataclass(frozen=True)
class Precondition:
    """What must hold before a write. versions=None with must_exist means `If-Match: *`."""

    must_exist: bool = False
    must_be_absent: bool = False
    versions: frozenset[int] | None = None


class PreconditionMismatch(Exception):
    def __init__(self, current_version: int | None) -> None:
        super().__init__(current_version)
        self.current_version = current_version


def limits_for(tenant: Tenant) -> Limits:
    config = KvConfig.get_or_create_for(tenant)
    return Limits(
        key_bytes=config.key_bytes, value_bytes=config.value_bytes,
        keys_per_namespace=config.keys_per_namespace, namespaces_per_agent=config.namespaces_per_agent,
        response_bytes=config.response_bytes,
    )


def writer_label(actor: Actor) -> str:
    """created_by / updated_by: the key's id, the person's username (also for a reviewer
    key, which writes for its holder), or `import`."""
    if actor.on_behalf_of:
        return actor.on_behalf_of
    return actor.label.split(":", 1)[1] if actor.kind in {"key", "user"} else actor.label


def namespace_audit_id(agent: Agent, namespace: str) -> str:
    """How an audit row names a namespace: `agent/ns:<digest>`. Namespace and key names are
    chosen by agents and may say what the memory holds, so audit rows keep only digests
    (docs/operations.md "Audit log"); equal names still give equal ids."""
    return f"{agent.slug}/ns:{sha256_hex(namespace)[:12]}"


def entry_audit_id(agent: Agent, namespace: str, key: str) -> str:
    return f"{namespace_audit_id(agent, namespace)}#{sha256_hex(key)[:16]}"


def _audited(agent: Agent, entry: KvEntry, actor: Actor) -> KvEntry:
    entry.agent = agent
    audit_record(
        tenant=agent.tenant, actor=actor, action="kv.set", object_type="kv_entry",
        object_id=entry_audit_id(agent, entry.namespace, entry.key),
        after={"version": entry.version, "value": entry.value},
    )
    return entry


def _entries(agent: Agent, namespace: str) -> Any:
    return KvEntry.objects.filter(agent=agent, namespace=namespace)


def _check(precondition: Precondition | None, current: int | None) -> None:
    if precondition is None:
        return
    if precondition.must_be_absent and current is not None:
        raise PreconditionMismatch(current)
    if precondition.must_exist and current is None:
        raise PreconditionMismatch(None)
    if precondition.versions is not None and current not in precondition.versions:
        raise PreconditionMismatch(current)


def _lock_namespace(agent: Agent, namespace: str) -> KvNamespace:
    row = KvNamespace.objects.select_for_update().filter(agent=agent, name=namespace).first()
    if row is None:
        KvNamespace.objects.bulk_create([KvNamespace(agent=agent, name=namespace)], ignore_conflicts=True)
        row = KvNamespace.objects.select_for_update().get(agent=agent, name=namespace)
    return row


def kv_get(*, agent: Agent, namespace: str, key: str) -> KvEntry | None:
    return _entries(agent, namespace).filter(key=key).first()


def kv_set(
    *,
    agent: Agent,
    limits: Limits,
    namespace: str,
    key: str,
    value: str,
    actor: Actor,
    run_id: str | None = None,
    precondition: Precondition | None = None,
) -> tuple[KvEntry, bool]:
    """Create or replace; returns (entry, created). `value` is canonical JSON text."""
    now = timezone.now()
    label = writer_label(actor)
    changes = {
        "value": value, "value_bytes": utf8_len(value), "updated_at": now,
        "updated_by": label, "last_run_id": run_id,
    }
    rows = _entries(agent, namespace).filter(key=key)
    with transaction.atomic():
        wants_absent = precondition is not None and precondition.must_be_absent
        if not wants_absent:
            if precondition is not None and (precondition.versions is not None or precondition.must_exist):
                current = rows.select_for_update().values_list("version", flat=True).first()
                _check(precondition, current)
            if rows.update(version=F("version") + 1, **changes):
                return _audited(agent, rows.get(), actor), False
        # The key is absent (or must be): take the namespace lock, then look again.
        counter = _lock_namespace(agent, namespace)
        existing = rows.select_for_update().first()
        _check(precondition, existing.version if existing else None)
        if existing is not None:
            rows.update(version=F("version") + 1, **changes)
            return _audited(agent, rows.get(), actor), False
        if counter.key_count + 1 > limits.keys_per_namespace:
            raise limit_exceeded("keys_per_namespace", limits.keys_per_namespace, counter.key_count + 1)
        if counter.key_count == 0:
            Agent.objects.select_for_update().filter(pk=agent.pk).values_list("pk").first()
            in_use = KvNamespace.objects.filter(agent=agent, key_count__gt=0).count()
            if in_use + 1 > limits.namespaces_per_agent:
                raise limit_exceeded("namespaces_per_agent", limits.namespaces_per_agent, in_use + 1)
        entry = KvEntry.objects.create(
            agent=agent, namespace=namespace, key=key, key_bytes=utf8_len(key), version=1,
            created_at=now, created_by=label, **changes,
        )
        KvNamespace.objects.filter(pk=counter.pk).update(key_count=F("key_count") + 1)
        _audited(agent, entry, actor)
    return entry, True


def kv_delete(
    *, agent: Agent, namespace: str, key: str, actor: Actor, precondition: Precondition | None = None
) -> bool:
    """Remove the key if present; True if it existed."""
    with transaction.atomic():
        counter = KvNamespace.objects.select_for_update().filter(agent=agent, name=namespace).first()
        rows = _entries(agent, namespace).filter(key=key)
        current = rows.select_for_update().values_list("version", flat=True).first() if counter else None
        _check(precondition, current)
        if current is None or counter is None:
            return False
        rows.delete()
        KvNamespace.objects.filter(pk=counter.pk).update(key_count=F("key_count") - 1)
        audit_record(tenant=agent.tenant, actor=actor, action="kv.delete", object_type="kv_entry",
                     object_id=entry_audit_id(agent, namespace, key), before={"version": current})
    return True


def kv_clear(*, agent: Agent, namespace: str, actor: Actor) -> int:
    """Remove every key of the namespace atomically; returns how many."""
    with transaction.atomic():
        counter = KvNamespace.objects.select_for_update().filter(agent=agent, name=namespace).first()
        if counter is None:
            return 0
        deleted, _ = _entries(agent, namespace).delete()
        KvNamespace.objects.filter(pk=counter.pk).update(key_count=0)
        if deleted:
            audit_record(tenant=agent.tenant, actor=actor, action="kv.clear", object_type="kv_namespace",
                         object_id=namespace_audit_id(agent, namespace), before={"keys": deleted}, after={"keys": 0})
    return deleted


def _with_prefix(queryset: Any, prefix: str) -> Any:
    # A range start plus an exact substring test: LIKE would treat _ % \ specially and is
    # case-insensitive on SQLite; this is literal and case-sensitive everywhere.
    if not prefix:
        return queryset
    return queryset.filter(key__gte=prefix).annotate(_head=Substr("key", 1, len(prefix))).filter(_head=prefix)


def _item_text(key: str, value: str) -> str:
    return f'{{"key":{json_str(key)},"value":{value}}}'


def kv_list_text(*, agent: Agent, namespace: str, prefix: str, limits: Limits) -> str:
    """The RPC `list` result as JSON text, in code point order; LIMIT_EXCEEDED past response_bytes."""
    rows = _with_prefix(_entries(agent, namespace), prefix).order_by("key").values_list("key", "value")
    pieces: list[str] = []
    size, count = 2, 0  # "[]", then each item and the commas between items
    for key, value in rows.iterator(chunk_size=2000):
        piece = _item_text(key, value)
        size += utf8_len(piece) + (1 if count else 0)
        count += 1
        if size <= limits.response_bytes:
            pieces.append(piece)
    if size > limits.response_bytes:
        raise limit_exceeded("response_bytes", limits.response_bytes, size)
    return "[" + ",".join(pieces) + "]"


def kv_items(*, agent: Agent, namespace: str) -> Iterator[tuple[str, str]]:
    return _entries(agent, namespace).order_by("key").values_list("key", "value").iterator(chunk_size=2000)


# --- Pages and namespaces (resources) ----------------------------------------------------------

CURSOR_SALT = "memoryhub.kv.cursor"


def _listing(agent: Agent, namespace: str, prefix: str) -> dict[str, Any]:
    return {"a": agent.pk, "n": namespace, "p": prefix}


def encode_cursor(*, agent: Agent, namespace: str, prefix: str, after: str) -> str:
    return sign_cursor({"k": after}, salt=CURSOR_SALT, scope=_listing(agent, namespace, prefix))


def decode_cursor(cursor: str, *, agent: Agent, namespace: str, prefix: str) -> str:
    try:
        position = open_cursor(cursor, salt=CURSOR_SALT, scope=_listing(agent, namespace, prefix))
    except BadCursor as exc:
        if exc.reason == "scope":
            message = "The cursor belongs to another listing (agent, namespace or prefix)."
            raise KvError("INVALID_REQUEST", message) from exc
        raise KvError("INVALID_REQUEST", "The cursor is not valid.") from exc
    return str(position["k"])


def kv_page(
    *, agent: Agent, namespace: str, prefix: str, after: str | None, limit: int, max_bytes: int
) -> tuple[list[KvEntry], str | None]:
    """Up to `limit` entries after the key `after`; a page stops before exceeding
    `max_bytes` (but holds at least one). Returns (entries, last key if more remain)."""
    rows = _with_prefix(_entries(agent, namespace), prefix)
    if after is not None:
        rows = rows.filter(key__gt=after)
    fetched = list(rows.order_by("key")[: limit + 1])
    page: list[KvEntry] = []
    size = 0
    for entry in fetched[:limit]:
        # The item as sent: escaped key, value text, version, timestamp and punctuation.
        size += utf8_len(json_str(entry.key)) + entry.value_bytes + 80
        if page and size > max_bytes:
            break
        page.append(entry)
    more = len(page) < len(fetched)
    return page, (page[-1].key if more and page else None)


@dataclass(frozen=True)
class NamespaceSummary:
    namespace: str
    keys: int
    bytes: int
    updated_at: datetime


def kv_namespaces(*, agent: Agent) -> list[NamespaceSummary]:
    rows = (
        KvEntry.objects.filter(agent=agent).values("namespace")
        .annotate(keys=Count("id"), bytes=Sum(F("key_bytes") + F("value_bytes")), updated_at=Max("updated_at"))
    )
    # Sorted here, not in SQL: the namespace column has the database's default collation,
    # which on PostgreSQL may not be code point order.
    return sorted((NamespaceSummary(r["namespace"], r["keys"], r["bytes"], r["updated_at"]) for r in rows),
                  key=lambda summary: summary.namespace)


def agent_ensure(*, tenant: Tenant, slug: str, actor: Actor, name: str = "") -> tuple[Agent, bool]:
    """Get or create an agent, safe against a concurrent first call."""
    agent = Agent.objects.filter(tenant=tenant, slug=slug).first()
    if agent is not None:
        return agent, False
    try:
        with transaction.atomic():
            agent = Agent.objects.create(tenant=tenant, slug=slug, name=name)
            audit_record(tenant=tenant, actor=actor, action="kv.agent.create", object_type="agent",
                         object_id=slug, after={"slug": slug, "name": name})
            return agent, True
    except IntegrityError:  # a concurrent first call created it
        return Agent.objects.get(tenant=tenant, slug=slug), False


__all__ = [
    "KvError", "NamespaceSummary", "Precondition", "PreconditionMismatch", "agent_ensure", "decode_cursor",
    "encode_cursor", "kv_clear", "kv_delete", "kv_get", "kv_items", "kv_list_text", "kv_namespaces",
    "kv_page", "kv_set", "limits_for",
]
