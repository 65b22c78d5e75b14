"""Review notes: the reason a person gave when retiring or rejecting an atom.

The audit log keeps every reason as a digest only (docs/atoms.md "Review UI"), so a purge
leaves no text behind there. The readable reason lives here instead, tied to the revision
the retire or reject produced: erasing that revision (a purge) erases the note with it.
"""

from __future__ import annotations

from django.db import models

from atoms.models.storage import ReviewStatus, Revision
from tenants.models import Tenant


class NoteKind(models.TextChoices):
    RETIRE = "retire", "retire"
    REJECT = "reject", "reject"


class ReviewNote(models.Model):
    revision = models.OneToOneField(Revision, primary_key=True, on_delete=models.CASCADE, related_name="review_note")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=8, choices=NoteKind.choices)
    reason = models.CharField(max_length=500)
    author = models.CharField(max_length=200)  # the person's subject, `user:<username>`
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.kind} note on {self.revision_id}"


# Review statuses that hide a revision from every API caller: quarantined text waits for a
# reviewer, rejected text is what a reviewer refused (docs/atoms.md "Review UI").
HIDDEN_REVIEW = (ReviewStatus.QUARANTINED, ReviewStatus.REJECTED)
