"""The semantic index: per-atom vector entries, feed checkpoints and the worker-built
vector index (docs/atoms.md "Semantic index").

Everything here is a disposable projection of the revisions: deleting it all loses no
memory, the workers rebuild it from the feed.
"""

from __future__ import annotations

import numpy as np
from django.db import models
from django.db.models import BooleanField
from django.db.models.expressions import RawSQL

from tenants.models import Tenant


class IndexEntryQuerySet(models.QuerySet["IndexEntry"]):
    def _intact(self) -> RawSQL:
        return RawSQL(IndexEntry.INTACT_SQL.format(e=""), [], output_field=BooleanField())  # noqa: S611 - a constant

    def intact(self) -> IndexEntryQuerySet:
        """Entries whose blob holds exactly count x dimensions float32 values (`IndexEntry.INTACT_SQL`)."""
        return self.filter(self._intact())

    def damaged(self) -> IndexEntryQuerySet:
        """Entries whose blob does not (`manage.py atoms_index --repair` encodes their atoms again)."""
        return self.exclude(self._intact())


class IndexEntry(models.Model):
    """An atom's vectors under one embedding config.

    Valid for the atom's head only while `config`, `text_hash` (sha256 of the head's text)
    and `policy` all match (docs/atoms.md "Semantic index"). Rows are never updated: a re-encode deletes the old row and
    inserts a new one, so ids grow with time and the vector index catches up by id.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    atom_id = models.CharField(max_length=64)
    config = models.CharField(max_length=64)
    policy = models.CharField(max_length=128)
    text_hash = models.CharField(max_length=64)
    revision_id = models.CharField(max_length=64)  # the head that was encoded (for people)
    dimensions = models.PositiveIntegerField()
    count = models.PositiveIntegerField()  # vectors in `vectors`
    vectors = models.BinaryField()  # count x dimensions little-endian float32, L2-normalized
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    objects = IndexEntryQuerySet.as_manager()

    # Only `pack` writes a blob, so one of another length than count x dimensions x 4 bytes
    # was damaged outside the service. Every reader of vectors leaves such an entry out, as if
    # the atom had none (docs/atoms.md "Semantic index"): it is never unpacked, so a read
    # never fails on it, and the indexer takes the atom for unencoded. `{e}` is the table's
    # alias and a dot, or nothing; the queryset's `intact` / `damaged` use it as it stands
    # (their queries read this table alone, so bare column names are unambiguous). The product is a double: a hand-edited count or dimensions
    # must not overflow the check itself (two integers' product times 4 can pass 64 bits), and
    # it is exact wherever it could equal a blob's length.
    INTACT_SQL = "LENGTH({e}vectors) = CAST({e}count AS DOUBLE PRECISION) * {e}dimensions * 4"

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "atom_id", "config"], name="atoms_entry_unique")]
        indexes = [models.Index(fields=["tenant", "config", "id"], name="atoms_entry_feed")]

    def __str__(self) -> str:
        return f"entry of {self.atom_id} ({self.count} vectors)"

    # The one place that knows how `vectors` is stored: every reader of the blob (scoring,
    # the semantic channel, the vector index file) and the writer go through these.
    @staticmethod
    def pack(matrix: np.ndarray) -> bytes:
        return matrix.astype("<f4").tobytes()

    @staticmethod
    def unpack(vectors: bytes | memoryview, count: int, dimensions: int) -> np.ndarray:
        """The (count x dimensions) matrix of a stored blob (bytes on SQLite, a memoryview
        on PostgreSQL), without copying it again."""
        return np.frombuffer(bytes(vectors), dtype="<f4").reshape(count, dimensions)

    def matrix(self) -> np.ndarray:
        return self.unpack(self.vectors, self.count, self.dimensions)


class IndexCheckpoint(models.Model):
    """How far a (tenant, config, policy) feed has been consumed: the last event
    `(visible_seq, revisionId)` processed. Moved only by compare-and-set."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    config = models.CharField(max_length=64)
    policy = models.CharField(max_length=128)
    seq = models.PositiveBigIntegerField(default=0)
    revision_id = models.CharField(max_length=64, blank=True)
    # Feed events at or before (seq, revision_id): the backlog is the policy's PolicyFeed.events
    # minus this (atoms/services/feed.py), so index/status counts no revisions.
    consumed = models.PositiveBigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "config", "policy"], name="atoms_checkpoint_unique")]

    def __str__(self) -> str:
        return f"{self.policy}@{self.seq}"


class PolicyFeed(models.Model):
    """Counters of a policy's feed (docs/atoms.md "Index counters"): how many events it holds
    (revisions, each at its `visible_seq`) and the latest position. Kept in the transaction
    of every change to the feed (write, approval, purge), so index/status reads them instead
    of counting revisions per policy."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    policy = models.CharField(max_length=128)
    events = models.PositiveBigIntegerField(default=0)
    head_seq = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "policy"], name="atoms_policy_feed_unique")]

    def __str__(self) -> str:
        return f"{self.policy}: {self.events} events to {self.head_seq}"


class VectorIndexSnapshot(models.Model):
    """The worker-built approximate-nearest-neighbour file of a (tenant, config).

    It holds the vectors of entries with id <= `built_through`; newer entries are searched
    exactly until the next refresh. `version` changes with every rewrite so that web
    processes know to reopen the file.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    config = models.CharField(max_length=64)
    path = models.CharField(max_length=500)
    dimensions = models.PositiveIntegerField()
    built_through = models.BigIntegerField(default=0)
    vectors = models.PositiveIntegerField(default=0)
    version = models.PositiveIntegerField(default=0)
    built_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "config"], name="atoms_snapshot_unique")]

    def __str__(self) -> str:
        return f"vector index of tenant {self.tenant_id} v{self.version}"


class VectorTombstone(models.Model):
    """An entry deleted since the snapshot was built: its vectors leave the file at the
    next refresh (searches already skip it, since they join with live entries)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    config = models.CharField(max_length=64)
    entry_id = models.BigIntegerField()
    count = models.PositiveIntegerField()

    class Meta:
        indexes = [models.Index(fields=["tenant", "config"], name="atoms_tombstone_lookup")]

    def __str__(self) -> str:
        return f"removed entry {self.entry_id}"
