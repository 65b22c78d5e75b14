"""Tenants and who belongs to them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator, RegexValidator
from django.db import models

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser
    from django.contrib.auth.models import AnonymousUser

SLUG_RE = r"^[a-z0-9](?:[a-z0-9-]{0,48}[a-z0-9])?$"
slug_validator = RegexValidator(SLUG_RE, "Use 1-50 lowercase letters, digits and inner hyphens.")

DEFAULT_MAX_API_KEYS = 100
MAX_API_KEYS_CEILING = 10_000
DEFAULT_MAX_READ_POLICIES = 100
MAX_READ_POLICIES_CEILING = 1_000


class Tenant(models.Model):
    """The storage boundary: nothing a tenant owns is visible from another tenant.

    Store-specific limits live beside their store (they register themselves with the
    tenant settings API); the fields here are the ones every store shares.
    """

    slug = models.CharField(max_length=50, unique=True, validators=[slug_validator])
    name = models.CharField(max_length=200)
    # Per-key request rate; the cache-backed throttle reads it on every API call.
    api_rate_per_minute = models.PositiveIntegerField(
        null=True, blank=True, validators=[MinValueValidator(1)],
        help_text="Requests per minute per API key; empty means the server default.",
    )
    # Caps on what a tenant admin can make the service do per call: every active key's read
    # policies are "served" and reported by atoms index/status (docs/api.md "Tenant settings").
    max_api_keys = models.PositiveIntegerField(
        default=DEFAULT_MAX_API_KEYS, validators=[MinValueValidator(1), MaxValueValidator(MAX_API_KEYS_CEILING)],
        help_text="Most active (unrevoked) API keys the tenant may hold.",
    )
    max_read_policies = models.PositiveIntegerField(
        default=DEFAULT_MAX_READ_POLICIES,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_READ_POLICIES_CEILING)],
        help_text="Most distinct Atom read policies its active keys may name together.",
    )
    # Set by staff in the Django admin (docs/operations.md "Suspending a tenant"): while set,
    # every API key of the tenant is refused and its web UI is read-only; nothing is deleted.
    suspended_at = models.DateTimeField(null=True, blank=True, editable=False)
    # A note for staff: never shown to members or API clients, never written to the audit log.
    suspended_reason = models.CharField(max_length=200, blank=True, default="", db_default="",
                                        help_text="Why the tenant is suspended; only staff see it.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug

    @property
    def is_suspended(self) -> bool:
        return self.suspended_at is not None

    @property
    def effective_api_rate_per_minute(self) -> int:
        return self.api_rate_per_minute or settings.MEMORYHUB_DEFAULT_API_RATE_PER_MINUTE

    def role_of(self, user: AbstractBaseUser | AnonymousUser) -> str | None:
        if user.pk is None:  # an anonymous user belongs nowhere
            return None
        membership = self.memberships.filter(user_id=user.pk).only("role").first()
        return membership.role if membership else None


class Role(models.TextChoices):
    ADMIN = "admin", "Admin"
    REVIEWER = "reviewer", "Reviewer"
    VIEWER = "viewer", "Viewer"


# Higher rank includes the rights of lower ranks.
ROLE_RANK: dict[str, int] = {Role.VIEWER: 1, Role.REVIEWER: 2, Role.ADMIN: 3}


class MembershipQuerySet(models.QuerySet["Membership"]):
    def for_user(self, user: AbstractBaseUser | AnonymousUser) -> MembershipQuerySet:
        if user.pk is None:  # an anonymous user belongs nowhere
            return self.none()
        return self.filter(user_id=user.pk).select_related("tenant").order_by("tenant__slug")


class Membership(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = MembershipQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "user"], name="membership_unique")]
        ordering = ["tenant__slug", "user__username"]

    def __str__(self) -> str:
        return f"{self.user} @ {self.tenant} ({self.role})"

    def has_role(self, needed: str) -> bool:
        return ROLE_RANK[self.role] >= ROLE_RANK[needed]
