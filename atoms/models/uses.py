"""Accepted-use state (docs/atoms.md "Decisions"): per (subject, policy, revision) model state, and
markers that make an eventId count once."""

from __future__ import annotations

from django.db import models

from tenants.models import Tenant


class UseState(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    subject = models.CharField(max_length=200)
    policy = models.CharField(max_length=128)
    revision_id = models.CharField(max_length=64)
    model_id = models.CharField(max_length=600)
    state = models.JSONField()
    updated_at = models.BigIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "subject", "policy", "revision_id"],
                                               name="atoms_usestate_unique")]

    def __str__(self) -> str:
        return f"use state of {self.subject} on {self.revision_id}"


class UseMarker(models.Model):
    """(subject, policy, revision, eventId) seen: a repeated event counts as `repeated`.
    Markers survive uses/reset."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    subject = models.CharField(max_length=200)
    policy = models.CharField(max_length=128)
    revision_id = models.CharField(max_length=64)
    event_id = models.CharField(max_length=600)
    accepted_at = models.BigIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "subject", "policy", "revision_id", "event_id"],
                                               name="atoms_usemarker_unique")]

    def __str__(self) -> str:
        return f"use {self.event_id} of {self.revision_id}"
