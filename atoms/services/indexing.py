"""Indexing (docs/atoms.md "Semantic index"): the per-policy revision feed, checkpoints, encoding, entries.

The feed of a policy is its revisions in (`visible_seq`, id) order: a revision enters at its
commit, and again at the seq of a later approval, so an atom approved out of quarantine is
indexed then. For each event the changed atom's *head* is encoded, from its own text only,
if it is active, not quarantined and has no valid entry; a changed link target therefore
never re-encodes the atoms linking to it, and a revise that keeps the text keeps the entry.

Encoding (the slow part) runs outside any transaction. The entries and the checkpoint are
then written in one transaction whose checkpoint update is a compare-and-set: if another
worker moved the checkpoint meanwhile, nothing is written and REVISION_CONFLICT is raised.
A redelivered task thus either finds the work done (valid entries: nothing to encode) or
redoes it; an entry is one row per (atom, config), so nothing is ever written twice.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import connection, transaction
from django.db.models import Q

from atoms.core.canonical import sha256_hex
from atoms.core.embedding import chunk_text
from atoms.embedding import LoadedProvider, has_provider
from atoms.errors import AtomError
from atoms.models import (
    AtomStore,
    IndexCheckpoint,
    IndexEntry,
    Revision,
    VectorIndexSnapshot,
    VectorTombstone,
)
from atoms.services.feed import checkpoint_advanced, lock_feed
from memoryhub.prepared import one_of, prepared_cursor
from tenants.models import ApiKey, Tenant

DEFAULT_LIMIT = 32
TASK_SECONDS = 30.0


@dataclass(frozen=True)
class StepResult:
    indexed: int
    processed: int
    pending: bool


def served_policies(tenant: Tenant) -> list[str]:
    """Policies some active key may read: the ones readiness is about (docs/atoms.md "Semantic index")."""
    policies: set[str] = set()
    for read_policies in ApiKey.objects.filter(tenant=tenant, revoked_at__isnull=True).values_list(
            "read_policies", flat=True):
        policies.update(read_policies or ["default"])  # ApiKey.effective_read_policies
    return sorted(policies)


def _checkpoint(tenant: Tenant, config: str, policy: str) -> IndexCheckpoint:
    checkpoint, _ = IndexCheckpoint.objects.get_or_create(tenant=tenant, config=config, policy=policy)
    return checkpoint


def _after(checkpoint: IndexCheckpoint) -> Q:
    return Q(visible_seq__gt=checkpoint.seq) | Q(visible_seq=checkpoint.seq, id__gt=checkpoint.revision_id)


def backlog(tenant: Tenant, checkpoint: IndexCheckpoint) -> int:
    return Revision.objects.filter(_after(checkpoint), tenant=tenant, policy=checkpoint.policy).count()


_ENTRY_COLUMNS = {f.attname: f.column for f in IndexEntry._meta.concrete_fields}


def entry_valid_for(head: Revision, policy: str, text_hash: str) -> bool:
    """Whether an entry (under the config asked for) with this policy and text hash is valid
    for `head`: the one rule of every reader of entries (docs/atoms.md "Semantic index")."""
    return policy == head.policy and text_hash == sha256_hex(head.body)


def _valid_rows(tenant: Tenant, config: str, heads: Sequence[Revision], *fields: str) -> Iterator[tuple[Any, ...]]:
    """(atom_id, *fields) of the entries valid for these heads: config, text hash and policy
    all match (docs/atoms.md "Semantic index"). Read as plain values, 500 atoms per query,
    in plain SQL: every hybrid read asks for a few hundred candidates, and compiling the
    ORM's IN list cost about as much CPU as running it (docs/atoms.md "Read path costs")."""
    by_atom = {h.atom_id: h for h in heads}
    quote = connection.ops.quote_name
    columns = ", ".join(quote(_ENTRY_COLUMNS[name]) for name in ("atom_id", "policy", "text_hash", *fields))
    table = quote(IndexEntry._meta.db_table)
    # The scoring path (reading vectors) prepares its statement and takes PostgreSQL's binary
    # rows (memoryhub/prepared.py). The indexing path does not prepare: it runs while a drain
    # grows the entry table, where a plan kept from a small table could turn slow
    # (docs/operations.md "PostgreSQL").
    scoring = "vectors" in fields
    with (prepared_cursor(binary=True) if scoring else connection.cursor()) as cursor:
        for start in range(0, len(heads), 500):
            atom_is, atom_params = one_of([h.atom_id for h in heads[start:start + 500]])
            cursor.execute(f"SELECT {columns} FROM {table} "  # noqa: S608 - names from the model, values bound
                           f"WHERE tenant_id = %s AND config = %s AND {atom_is('atom_id')} "
                           f"AND {IndexEntry.INTACT_SQL.format(e='')}", [tenant.pk, config, *atom_params])
            for atom_id, policy, text_hash, *rest in cursor.fetchall():
                if entry_valid_for(by_atom[atom_id], policy, text_hash):
                    yield (atom_id, *rest)


def valid_atoms(tenant: Tenant, config: str, heads: Sequence[Revision]) -> set[str]:
    """Atom ids among `heads` whose entry is valid (the indexing path: nothing to encode)."""
    return {atom_id for (atom_id,) in _valid_rows(tenant, config, heads)}


def valid_vectors(tenant: Tenant, config: str, heads: Sequence[Revision]) -> dict[str, np.ndarray]:
    """atom id → its (count x dimensions) vectors, for heads with a valid entry (the
    scoring path: every candidate of a read needs it)."""
    return {atom_id: IndexEntry.unpack(vectors, count, dimensions)
            for atom_id, count, dimensions, vectors in _valid_rows(tenant, config, heads, "count", "dimensions",
                                                                    "vectors")}


def encode_entries(tenant: Tenant, loaded: LoadedProvider, heads: Sequence[Revision]) -> list[IndexEntry]:
    """New (unsaved) entries for `heads`, encoded in one batch: every chunk of every head
    goes to the provider in a single call. Raises ModelSpaceMismatch on a bad shape."""
    chunks = [chunk_text(head.body) for head in heads]
    vectors = loaded.encode([chunk for group in chunks for chunk in group])
    entries: list[IndexEntry] = []
    position = 0
    for head, group in zip(heads, chunks, strict=True):
        block = vectors[position:position + len(group)]
        position += len(group)
        entries.append(IndexEntry(
            tenant=tenant, atom_id=head.atom_id, config=loaded.config, policy=head.policy,
            text_hash=sha256_hex(head.body), revision_id=head.id, dimensions=loaded.provider.dimensions,
            count=len(group), vectors=IndexEntry.pack(block),
        ))
    return entries


def _drop(tenant: Tenant, config: str, atom_ids: Iterable[str]) -> None:
    """Delete the entries of these atoms, leaving tombstones for the vector index file."""
    old = list(IndexEntry.objects.filter(tenant=tenant, config=config, atom_id__in=list(atom_ids))
               .values_list("id", "count"))
    if old:
        VectorTombstone.objects.bulk_create([VectorTombstone(tenant=tenant, config=config, entry_id=i, count=c)
                                             for i, c in old])
        IndexEntry.objects.filter(id__in=[i for i, _ in old]).delete()


def save_entries(tenant: Tenant, config: str, entries: Sequence[IndexEntry], dropped: Iterable[str] = ()) -> None:
    """Replace the entries of the atoms in `entries`; delete those of `dropped`. Call inside
    a transaction."""
    _drop(tenant, config, [e.atom_id for e in entries] + list(dropped))
    IndexEntry.objects.bulk_create(entries)


def _heads(tenant: Tenant, atom_ids: Iterable[str]) -> list[Revision]:
    return list(Revision.objects.filter(tenant=tenant, atom_id__in=list(atom_ids), is_head=True).order_by("atom_id"))


def index_step(*, tenant: Tenant, loaded: LoadedProvider, policy: str, limit: int = DEFAULT_LIMIT) -> StepResult:
    """Consume up to `limit` events of one policy's feed."""
    checkpoint = _checkpoint(tenant, loaded.config, policy)
    events = list(Revision.objects.filter(_after(checkpoint), tenant=tenant, policy=policy)
                  .order_by("visible_seq", "id").values_list("visible_seq", "id", "atom_id")[:limit + 1])
    pending = len(events) > limit
    events = events[:limit]
    if not events:
        return StepResult(indexed=0, processed=0, pending=False)
    heads = _heads(tenant, {atom_id for _, _, atom_id in events})
    valid = valid_atoms(tenant, loaded.config, heads)
    todo = [h for h in heads if h.is_unquarantined_active_head and h.atom_id not in valid]
    dropped = [h.atom_id for h in heads if not h.is_unquarantined_active_head]
    entries = encode_entries(tenant, loaded, todo)
    last_seq, last_id, _ = events[-1]
    with transaction.atomic():
        lock_feed(tenant, policy)  # before the counts below (atoms/services/feed.py)
        moved = IndexCheckpoint.objects.filter(pk=checkpoint.pk, seq=checkpoint.seq,
                                               revision_id=checkpoint.revision_id).update(seq=last_seq,
                                                                                          revision_id=last_id)
        if not moved:
            raise AtomError("REVISION_CONFLICT", "Another indexer moved this checkpoint.", {"policy": policy})
        checkpoint_advanced(checkpoint, last_seq, last_id)
        save_entries(tenant, loaded.config, entries, dropped)
    return StepResult(indexed=len(entries), processed=len(events), pending=pending)


def index_run(*, tenant: Tenant, loaded: LoadedProvider, policies: Sequence[str], limit: int) -> StepResult:
    """Up to `limit` events over `policies` in name order (index/update)."""
    indexed = processed = 0
    pending = False
    for policy in sorted(policies):
        remaining = limit - processed
        if remaining <= 0:
            checkpoint = _checkpoint(tenant, loaded.config, policy)
            pending = pending or backlog(tenant, checkpoint) > 0
            continue
        step = index_step(tenant=tenant, loaded=loaded, policy=policy, limit=remaining)
        indexed += step.indexed
        processed += step.processed
        pending = pending or step.pending
    return StepResult(indexed=indexed, processed=processed, pending=pending)


def index_drain(*, tenant: Tenant, loaded: LoadedProvider, policy: str, seconds: float = TASK_SECONDS,
                step: int = DEFAULT_LIMIT) -> StepResult:
    """Steps of `step` events for up to `seconds` (the Celery task's body)."""
    started = time.monotonic()
    indexed = processed = 0
    while True:
        result = index_step(tenant=tenant, loaded=loaded, policy=policy, limit=step)
        indexed += result.indexed
        processed += result.processed
        if not result.pending or time.monotonic() - started >= seconds:
            return StepResult(indexed=indexed, processed=processed, pending=result.pending)


def index_prioritize(*, tenant: Tenant, loaded: LoadedProvider, revisions: Sequence[Revision]) -> int:
    """Encode these revisions now if they are active heads without a valid entry; no
    checkpoint moves. Returns how many were encoded."""
    heads = [r for r in {r.id: r for r in revisions}.values() if r.is_unquarantined_active_head]
    valid = valid_atoms(tenant, loaded.config, heads)
    todo = [h for h in heads if h.atom_id not in valid]
    entries = encode_entries(tenant, loaded, todo)
    with transaction.atomic():
        # Only heads still current and unchanged are stored: a revise since the read wins.
        current = {r.id for r in Revision.objects.filter(id__in=[h.id for h in todo], is_head=True)}
        kept = [e for e in entries if e.revision_id in current]
        save_entries(tenant, loaded.config, kept)
    return len(kept)


def damaged_atoms(tenant: Tenant, config: str) -> list[str]:
    """Ids of the atoms whose entry under this config has a damaged blob (IndexEntry.INTACT_SQL)."""
    return sorted(set(IndexEntry.objects.damaged().filter(tenant=tenant, config=config)
                      .values_list("atom_id", flat=True)))


def repair_damaged(*, tenant: Tenant, loaded: LoadedProvider, atom_ids: Sequence[str]) -> int:
    """Encode again these atoms of `damaged_atoms` (a page of them: one encode call), or drop
    their entries where the head is no longer an unquarantined active head, as the feed would.
    Reads leave a damaged entry out and the feed has passed its atom, so nothing else would
    replace it. Returns how many were encoded."""
    heads = [h for h in _heads(tenant, atom_ids) if h.is_unquarantined_active_head]
    unserved = set(atom_ids) - {h.atom_id for h in heads}
    if unserved:
        with transaction.atomic():
            _drop(tenant, loaded.config, unserved)
    return index_prioritize(tenant=tenant, loaded=loaded, revisions=heads) if heads else 0


def queue_indexing(store: AtomStore, policies: Iterable[str]) -> None:
    """After the current transaction commits, queue `atoms.index_update` for each policy.

    Only with a real broker: in the embedded eager mode the task would run inside the web
    request that wrote, which is exactly what must not happen (encoding is slow). There the
    index catches up through index/update or `manage.py atoms_index`, and searches answer
    lexically with diagnostics index "pending" meanwhile."""
    from memoryhub.celery import app

    if not has_provider(store) or app.conf.task_always_eager:
        return
    from memoryhub.enqueue import enqueue_on_commit

    for policy in sorted(set(policies)):
        enqueue_on_commit("atoms.index_update", store.tenant_id, policy)


def rebuild_vectors_on_commit(tenant: Tenant) -> None:
    """After a purge: rebuild every vector file of the tenant from the entries left, so the
    erased vectors do not survive in them."""
    from memoryhub.enqueue import enqueue_on_commit

    for config in sorted(set(VectorIndexSnapshot.objects.filter(tenant=tenant).values_list("config", flat=True))):
        enqueue_on_commit("atoms.refresh_vectors", tenant.pk, config, True)
