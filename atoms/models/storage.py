"""Atom storage: immutable revisions with heads, slots (links) and origins (citations).

Ids are the contract's own strings (`atom:<uuid>`, `revision:<uuid>`), used as primary
keys so that no internal id ever leaks or needs translating. Link and citation targets
are stored as plain ids, not foreign keys: a target may be purged while the linker lives
on with an `unavailable` link (docs/atoms.md "In the web UI: read playground and purge").
"""

from __future__ import annotations

from django.db import models

from tenants.models import Tenant


class AtomStore(models.Model):
    """One per tenant: the commit sequence, the purge barrier and the Atom settings.
    Commits, approvals and purges lock this row, so `seq` is gap-free and ordered."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="atom_store")
    seq = models.PositiveBigIntegerField(default=0)
    index_generation = models.PositiveIntegerField(default=0)
    # {"atomId", "startedAt", "requestedBy", "phase", "checkpoint"} while a purge is pending.
    purge_barrier = models.JSONField(null=True, blank=True)
    config = models.JSONField(default=dict, blank=True)
    require_approval = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"atom store of {self.tenant.slug}"

    @classmethod
    def get_or_create_for(cls, tenant: Tenant) -> AtomStore:
        store, _ = cls.objects.get_or_create(tenant=tenant)
        return store


class ReviewStatus(models.TextChoices):
    """Where a revision stands in review (docs/atoms.md "Review UI"). Quarantined and rejected
    revisions are hidden from every API caller (`atoms.models.review.HIDDEN_REVIEW`)."""

    UNREVIEWED = "unreviewed", "Unreviewed"
    APPROVED = "approved", "Approved"
    QUARANTINED = "quarantined", "Quarantined"
    REJECTED = "rejected", "Rejected"


class RevisionState(models.TextChoices):
    ACTIVE = "active", "Active"
    RETIRED = "retired", "Retired"


class Schema(models.TextChoices):
    """Source text is what a person or key wrote itself; everything else is an atom."""

    SOURCE = "source", "Source"
    ATOM = "atom", "Atom"


class OriginKind(models.TextChoices):
    """The provenance kind of a revision: `source`, or the `generatedOrigin` an agent declared."""

    SOURCE = "source", "Source"
    EXTRACTION = "extraction", "Extraction"
    ORGANIZATION = "organization", "Organization"
    DERIVED = "derived", "Derived"
    HYPOTHESIS = "hypothesis", "Hypothesis"


class SlotMode(models.TextChoices):
    """An `include` link is read with its linker; a `refer` link only names its target."""

    REFER = "refer", "Refer"
    INCLUDE = "include", "Include"


class DependencyKind(models.TextChoices):
    ORIGIN = "origin", "Origin"
    TOKEN_READ = "token-read", "Token read"
    LEGACY_SLOT = "legacy-slot", "Legacy slot"


class Atom(models.Model):
    id = models.CharField(max_length=64, primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="atoms")
    policy = models.CharField(max_length=128)
    head = models.ForeignKey("atoms.Revision", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        # Bulk loads by id inside a tenant: see Revision's index of the same shape.
        indexes = [models.Index(fields=["tenant", "id"], name="atoms_atom_tenant_id")]

    def __str__(self) -> str:
        return self.id


class Revision(models.Model):
    """An immutable snapshot. Only `review_status` and `is_head` (side data) ever change."""

    id = models.CharField(max_length=64, primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    atom = models.ForeignKey(Atom, on_delete=models.CASCADE, related_name="revisions")
    policy = models.CharField(max_length=128)
    seq = models.PositiveBigIntegerField()
    previous = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    recorded_at = models.BigIntegerField()
    operation_id = models.CharField(max_length=64)
    schema = models.CharField(max_length=8, choices=Schema.choices)
    state = models.CharField(max_length=8, choices=RevisionState.choices)
    body = models.TextField()
    body_bytes = models.PositiveIntegerField()
    origin = models.CharField(max_length=16, choices=OriginKind.choices)
    producer = models.CharField(max_length=200)
    input_token = models.CharField(max_length=64, blank=True)
    dependency_contract = models.CharField(max_length=16, blank=True)
    valid_time = models.JSONField(null=True, blank=True)
    review_status = models.CharField(max_length=12, choices=ReviewStatus.choices)
    # The seq at which the revision became visible: its commit, or a later approval (docs/atoms.md "Match").
    visible_seq = models.PositiveBigIntegerField(default=0)
    is_head = models.BooleanField(default=True)

    class Meta:
        indexes = [
            models.Index(fields=["tenant", "policy", "is_head", "state"], name="atoms_rev_heads"),
            models.Index(fields=["tenant", "seq"], name="atoms_rev_seq"),
            # The index feed: a policy's revisions in (visible_seq, id) order (docs/atoms.md "Semantic index").
            models.Index(fields=["tenant", "policy", "visible_seq", "id"], name="atoms_rev_feed"),
            # Bulk loads by id inside a tenant (`tenant = ? AND id IN (...)`): without it SQLite's
            # planner walks the tenant's whole index, a cost that grows with the corpus.
            models.Index(fields=["tenant", "id"], name="atoms_rev_tenant_id"),
            # The quarantined revisions alone: a common term's scan of the posting index skips
            # a quarantined head's posting by probing this small index, once per posting,
            # instead of reading the posting's revision row (docs/atoms.md "Candidates").
            models.Index(fields=["id"], condition=models.Q(review_status="quarantined"), name="atoms_rev_quarantined"),
        ]
        constraints = [
            # One head per atom, held by the database: a write clears the old head's flag
            # before it inserts the new head. Its partial index, one entry per atom however
            # many revisions it has, is how the semantic channel's eligibility statement finds
            # its hits' heads (docs/atoms.md "Read path costs").
            models.UniqueConstraint(fields=["atom"], condition=models.Q(is_head=True), name="atoms_rev_one_head"),
        ]

    def __str__(self) -> str:
        return self.id

    @property
    def is_unquarantined_active_head(self) -> bool:
        """An active head that a quarantine does not hide: what the index holds vectors for and
        what a recall channel may return without approval required. Its SQL form is
        atoms.services.rows.visible_sql(False) (docs/atoms.md "Candidates")."""
        return self.is_head and self.state == RevisionState.ACTIVE and self.review_status != ReviewStatus.QUARANTINED


class Slot(models.Model):
    revision = models.ForeignKey(Revision, on_delete=models.CASCADE, related_name="slots")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveIntegerField()
    role = models.CharField(max_length=600)
    mode = models.CharField(max_length=8, choices=SlotMode.choices, default=SlotMode.REFER)
    target_atom_id = models.CharField(max_length=64)
    target_revision_id = models.CharField(max_length=64, blank=True)  # blank: logical link
    required = models.BooleanField(default=False)
    order_key = models.CharField(max_length=600)

    class Meta:
        ordering = ["position"]
        indexes = [models.Index(fields=["tenant", "target_atom_id"], name="atoms_slot_target")]

    def __str__(self) -> str:
        return f"{self.revision_id} -{self.role}-> {self.target_atom_id}"


class Origin(models.Model):
    revision = models.ForeignKey(Revision, on_delete=models.CASCADE, related_name="origins")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveIntegerField()
    source_atom_id = models.CharField(max_length=64)
    source_revision_id = models.CharField(max_length=64)
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    quote_digest = models.CharField(max_length=64)

    class Meta:
        ordering = ["position"]
        indexes = [models.Index(fields=["tenant", "source_atom_id"], name="atoms_origin_source")]

    def __str__(self) -> str:
        return f"{self.revision_id} cites {self.source_revision_id}[{self.start}:{self.end}]"


class EraseDependency(models.Model):
    """`dependent` must be erased when `dependency` is purged (reverse edges, docs/atoms.md "In the web UI: read playground and purge")."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    dependent_atom_id = models.CharField(max_length=64)
    dependency_atom_id = models.CharField(max_length=64)
    kind = models.CharField(max_length=16, choices=DependencyKind.choices)
    legacy = models.BooleanField(default=False)

    class Meta:
        indexes = [models.Index(fields=["tenant", "dependency_atom_id"], name="atoms_dep_lookup")]
        constraints = [models.UniqueConstraint(fields=["tenant", "dependent_atom_id", "dependency_atom_id", "kind"],
                                               name="atoms_dep_unique")]

    def __str__(self) -> str:
        return f"{self.dependent_atom_id} depends on {self.dependency_atom_id}"


class PurgedAtom(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    atom_id = models.CharField(max_length=64)
    erasure_id = models.CharField(max_length=64)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "atom_id"], name="atoms_purged_unique")]

    def __str__(self) -> str:
        return f"purged {self.atom_id}"


class ErasureReceipt(models.Model):
    """Kept forever: what a purge erased, with per-table counts and a digest."""

    id = models.CharField(max_length=64, primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    receipt = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.id
