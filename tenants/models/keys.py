"""API keys: one model for all three stores.

A key reads `mh_<prefix>_<secret>`. The prefix is public (it is the key's id, shown in
lists and audit rows); only a SHA-256 of the whole key is stored. A slow password hash
buys nothing here: the secret is about 238 random bits, so the hash cannot be brute-forced,
and every API request has to verify one.
"""

from __future__ import annotations

import hmac
import re
import secrets
import string
from datetime import timedelta

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.utils import timezone

from memoryhub.digests import sha256_hex
from tenants.models.tenancy import Tenant

PREFIX_ALPHABET = string.ascii_lowercase + string.digits
SECRET_ALPHABET = string.ascii_letters + string.digits
PREFIX_LENGTH = 10
SECRET_LENGTH = 40
KEY_RE = re.compile(rf"^mh_([a-z0-9]{{{PREFIX_LENGTH}}})_([A-Za-z0-9]{{{SECRET_LENGTH}}})$")
POLICY_RE = r"^[A-Za-z0-9:._-]{1,128}$"
AGENT_SLUG_RE = r"^[a-z0-9-]{1,64}$"
policy_validator = RegexValidator(POLICY_RE, "Policy names match [A-Za-z0-9:._-]{1,128}.")
agent_slug_validator = RegexValidator(AGENT_SLUG_RE, "Agent slugs are 1-64 characters of [a-z0-9-].")

# last_used_at is refreshed at most this often, so hot keys do not write on every call.
LAST_USED_RESOLUTION = timedelta(seconds=60)


class KeyKind(models.TextChoices):
    AGENT = "agent", "Agent (a model's tools)"
    INGEST = "ingest", "Ingest (an input adapter)"
    HOST = "host", "Host (the trusted runtime)"
    REVIEWER = "reviewer", "Reviewer (a person's scripts)"
    ADMIN = "admin", "Admin (everything in the tenant)"


def hash_key(raw_key: str) -> str:
    return sha256_hex(raw_key)


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def for_tenant(self, tenant: Tenant) -> ApiKeyQuerySet:
        return self.filter(tenant=tenant)

    def active(self) -> ApiKeyQuerySet:
        return self.filter(revoked_at__isnull=True)


class ApiKey(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="api_keys")
    prefix = models.CharField(max_length=PREFIX_LENGTH, unique=True, editable=False)
    key_hash = models.CharField(max_length=64, editable=False)
    name = models.CharField(max_length=200, blank=True)
    kind = models.CharField(max_length=16, choices=KeyKind.choices)
    subject = models.CharField(max_length=200, blank=True, help_text="Defaults to key:<id>.")
    read_only = models.BooleanField(default=False)
    # None = every agent of the tenant; otherwise the agent slugs this key may use.
    agents = models.JSONField(null=True, blank=True)
    read_policies = models.JSONField(default=list, blank=True)
    write_policies = models.JSONField(default=list, blank=True)
    # Bumped on any change to kind, subject, policies or revocation (Atom authorization).
    generation = models.PositiveIntegerField(default=1, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.public_id} ({self.kind}) @ {self.tenant.slug}"

    @property
    def public_id(self) -> str:
        return f"k_{self.prefix}"

    @property
    def effective_subject(self) -> str:
        return self.subject or f"key:{self.public_id}"

    @property
    def effective_read_policies(self) -> list[str]:
        return list(self.read_policies) or ["default"]

    @property
    def effective_write_policies(self) -> list[str]:
        return list(self.write_policies) or ["default"]

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def allows_agent(self, slug: str) -> bool:
        return self.agents is None or slug in self.agents

    def matches(self, raw_key: str) -> bool:
        return hmac.compare_digest(self.key_hash, hash_key(raw_key))

    def touch(self) -> None:
        """Record use, at most once per LAST_USED_RESOLUTION, with one conditional UPDATE."""
        now = timezone.now()
        if self.last_used_at and now - self.last_used_at < LAST_USED_RESOLUTION:
            return
        ApiKey.objects.filter(pk=self.pk).filter(
            models.Q(last_used_at__isnull=True) | models.Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
        ).update(last_used_at=now)
        self.last_used_at = now

    @staticmethod
    def new_raw_key() -> tuple[str, str]:
        """A fresh (prefix, raw key). The raw key is shown once and never stored."""
        prefix = "".join(secrets.choice(PREFIX_ALPHABET) for _ in range(PREFIX_LENGTH))
        secret = "".join(secrets.choice(SECRET_ALPHABET) for _ in range(SECRET_LENGTH))
        return prefix, f"mh_{prefix}_{secret}"

    @staticmethod
    def parse(raw_key: str) -> str | None:
        """The prefix of a well-formed key, or None."""
        match = KEY_RE.match(raw_key)
        return match.group(1) if match else None
