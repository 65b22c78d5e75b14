"""The base every tenant-scoped API view builds on."""

from __future__ import annotations

from typing import ClassVar, TypeVar

from django.db import models
from rest_framework.views import APIView

from memoryhub.actors import Actor
from memoryhub.api.errors import NotFound, PermissionDenied
from tenants.models import ApiKey, KeyKind, Tenant

M = TypeVar("M", bound=models.Model)

ALL_KINDS: frozenset[str] = frozenset(KeyKind.values)


class TenantAPIView(APIView):
    # Key-authenticated, throttled, scoped to the key's tenant. Subclasses set
    # `allowed_kinds`; every object lookup goes through `tenant_object_or_404` (or a
    # queryset that starts from `self.tenant`), so another tenant's object is a 404.
    # (A comment, not a docstring: drf-spectacular would copy a docstring into every
    # endpoint's description.)

    allowed_kinds: ClassVar[frozenset[str]] = ALL_KINDS
    # Views whose writes depend on the action in the body (RPC) check read-only themselves.
    read_only_checked_by_view: ClassVar[bool] = False

    @property
    def key(self) -> ApiKey:
        key = self.request.auth
        assert isinstance(key, ApiKey)  # guaranteed by HasApiKey
        return key

    @property
    def tenant(self) -> Tenant:
        return self.key.tenant

    @property
    def actor(self) -> Actor:
        return Actor.for_key(self.key)

    def tenant_object_or_404(self, queryset: models.QuerySet[M], message: str = "Not found.", code: str = "NOT_FOUND", **lookup: object) -> M:
        obj = queryset.filter(tenant=self.tenant, **lookup).first()
        if obj is None:
            raise NotFound(message, code=code)
        return obj

    def require_writable(self) -> None:
        if self.key.read_only:
            raise PermissionDenied("This API key is read-only.")
