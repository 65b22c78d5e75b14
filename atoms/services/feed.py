"""Index counters (docs/atoms.md "Index counters"): per policy, how many feed events exist and
the latest position; per checkpoint, how many events it has consumed.

index/status answers from these rows alone, in a constant number of queries however many
policies and keys a tenant has. Every change to a feed updates them in its own transaction:

- a write adds its revisions (`feed_added`),
- an approval moves a revision to a later position (`feed_moved`),
- a purge removes revisions (`feed_removed`),
- an index step moves a checkpoint (`checkpoint_advanced`).

Locking: each of these first locks (or creates, under the store lock) the policy's
PolicyFeed row (`feed_moved` by its first statement, an UPDATE of that row), so on
PostgreSQL they serialize per policy. The decrements of moved and
removed revisions are then statements run after that lock, so they see the checkpoint a
concurrent index step committed, and the index step counts its range after the same lock,
so it sees a concurrent purge's deletions once that purge commits (or holds the lock
first). `feed_check` and `feed_rebuild` recompute everything from the revisions
(`manage.py atoms_feed`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from django.db import transaction
from django.db.models import Count, F, Max, Q

from atoms.models import AtomStore, IndexCheckpoint, PolicyFeed, Revision
from tenants.models import Tenant


def _at_or_after(seq: int, revision_id: str) -> Q:
    """Checkpoints whose position is at or after the feed event (seq, revision_id)."""
    return Q(seq__gt=seq) | Q(seq=seq, revision_id__gte=revision_id)


def _up_to(seq: int, revision_id: str) -> Q:
    """Revisions at or before the position (seq, revision_id)."""
    return Q(visible_seq__lt=seq) | Q(visible_seq=seq, id__lte=revision_id)


def lock_feed(tenant: Tenant, policy: str) -> None:
    """Take the policy's counter lock (a no-op on SQLite, whose transactions serialize)."""
    list(PolicyFeed.objects.select_for_update().filter(tenant=tenant, policy=policy).values_list("pk", flat=True))


def feed_added(tenant: Tenant, revisions: Iterable[Revision]) -> None:
    """A commit added these revisions (one event each). Call under the store lock, which
    makes the get_or_create safe: only commits and rebuilds create feed rows."""
    added = Counter(r.policy for r in revisions)
    top: dict[str, int] = {}
    for r in revisions:
        top[r.policy] = max(top.get(r.policy, 0), r.visible_seq)
    for policy in sorted(added):
        PolicyFeed.objects.get_or_create(tenant=tenant, policy=policy)
        PolicyFeed.objects.filter(tenant=tenant, policy=policy).update(
            events=F("events") + added[policy], head_seq=top[policy])


def feed_moved(tenant: Tenant, revision: Revision, old_seq: int) -> None:
    """An approval moved `revision` from `old_seq` to its new `visible_seq` (the newest
    position): checkpoints that had consumed it no longer have."""
    PolicyFeed.objects.filter(tenant=tenant, policy=revision.policy).update(head_seq=revision.visible_seq)
    IndexCheckpoint.objects.filter(_at_or_after(old_seq, revision.id), tenant=tenant, policy=revision.policy).update(
        consumed=F("consumed") - 1)


def feed_removed(tenant: Tenant, rows: Iterable[tuple[str, int, str]]) -> None:
    """A purge deleted revisions `(policy, visible_seq, id)`; call after the delete, in its
    transaction."""
    by_policy: dict[str, list[tuple[int, str]]] = {}
    for policy, seq, revision_id in rows:
        by_policy.setdefault(policy, []).append((seq, revision_id))
    for policy, events in sorted(by_policy.items()):
        lock_feed(tenant, policy)
        top = Revision.objects.filter(tenant=tenant, policy=policy).aggregate(top=Max("visible_seq"))["top"] or 0
        PolicyFeed.objects.filter(tenant=tenant, policy=policy).update(events=F("events") - len(events), head_seq=top)
        for seq, revision_id in events:
            IndexCheckpoint.objects.filter(_at_or_after(seq, revision_id), tenant=tenant, policy=policy).update(
                consumed=F("consumed") - 1)


def checkpoint_advanced(checkpoint: IndexCheckpoint, seq: int, revision_id: str) -> int:
    """Add to `consumed` the events between the checkpoint's old position and (seq,
    revision_id), counted now, inside the transaction whose compare-and-set moved it (and
    after `lock_feed`): the events read before may since have been purged or approved away."""
    between = Revision.objects.filter(Q(visible_seq__gt=checkpoint.seq) | Q(visible_seq=checkpoint.seq,
                                                                             id__gt=checkpoint.revision_id),
                                      _up_to(seq, revision_id), tenant=checkpoint.tenant_id,
                                      policy=checkpoint.policy).count()
    IndexCheckpoint.objects.filter(pk=checkpoint.pk).update(consumed=F("consumed") + between)
    return between


def feed_positions(tenant: Tenant, config: str | None,
                   policies: Iterable[str]) -> dict[str, tuple[PolicyFeed, IndexCheckpoint]]:
    """policy → (its feed counters, its checkpoint under `config`), unsaved zero rows where
    none exist yet; the backlog is `feed.events - checkpoint.consumed`. Two queries however
    many policies: both filter by tenant (and config) only, since an IN list of every
    served policy could pass SQLite's bound-parameter limit and unserved rows are few."""
    feeds = {f.policy: f for f in PolicyFeed.objects.filter(tenant=tenant)}
    checkpoints = ({c.policy: c for c in IndexCheckpoint.objects.filter(tenant=tenant, config=config)}
                   if config else {})
    return {policy: (feeds.get(policy) or PolicyFeed(tenant=tenant, policy=policy),
                     checkpoints.get(policy) or IndexCheckpoint(tenant=tenant, config=config or "", policy=policy))
            for policy in policies}


# --- check and rebuild ---------------------------------------------------------------------

def _expected(tenant: Tenant) -> tuple[dict[str, tuple[int, int]], dict[int, int]]:
    """What the counters should hold: policy → (events, head_seq); checkpoint pk → consumed."""
    feeds = {row["policy"]: (row["events"], row["top"] or 0)
             for row in Revision.objects.filter(tenant=tenant).values("policy")
             .annotate(events=Count("id"), top=Max("visible_seq"))}
    consumed = {cp.pk: Revision.objects.filter(_up_to(cp.seq, cp.revision_id), tenant=tenant,
                                               policy=cp.policy).count()
                for cp in IndexCheckpoint.objects.filter(tenant=tenant)}
    return feeds, consumed


def feed_check(tenant: Tenant) -> list[str]:
    """The differences between the counters and the revisions (empty when right)."""
    feeds, consumed = _expected(tenant)
    stored = {f.policy: (f.events, f.head_seq) for f in PolicyFeed.objects.filter(tenant=tenant)}
    problems = [f"policy {policy}: counters {stored.get(policy, (0, 0))}, revisions {want}"
                for policy, want in sorted(feeds.items()) if stored.get(policy, (0, 0)) != want]
    problems += [f"policy {policy}: counters {have} for no revision" for policy, have in sorted(stored.items())
                 if policy not in feeds and have != (0, 0)]
    for cp in IndexCheckpoint.objects.filter(tenant=tenant).order_by("config", "policy"):
        if cp.consumed != consumed[cp.pk]:
            problems.append(f"checkpoint {cp.policy}@{cp.config[:12]}: consumed {cp.consumed}, "
                            f"revisions {consumed[cp.pk]}")
    return problems


def feed_rebuild(tenant: Tenant) -> int:
    """Rewrite the tenant's counters from its revisions, holding the store lock (no commit,
    approval or purge meanwhile) and every feed lock (no index step). Returns the rows fixed."""
    with transaction.atomic():
        AtomStore.objects.select_for_update().filter(tenant=tenant).first()
        list(PolicyFeed.objects.select_for_update().filter(tenant=tenant).values_list("pk", flat=True))
        feeds, consumed = _expected(tenant)
        fixed = 0
        stored = {f.policy: f for f in PolicyFeed.objects.filter(tenant=tenant)}
        for policy in sorted(set(feeds) | set(stored)):
            events, head = feeds.get(policy, (0, 0))
            row = stored.get(policy) or PolicyFeed(tenant=tenant, policy=policy)
            if row.pk is None or (row.events, row.head_seq) != (events, head):
                row.events, row.head_seq = events, head
                row.save()
                fixed += 1
        for cp in IndexCheckpoint.objects.filter(tenant=tenant):
            if cp.consumed != consumed[cp.pk]:
                IndexCheckpoint.objects.filter(pk=cp.pk).update(consumed=consumed[cp.pk])
                fixed += 1
        return fixed
