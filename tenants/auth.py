"""API-key authentication for DRF."""

from __future__ import annotations

from dataclasses import dataclass

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from memoryhub.actors import Actor
from memoryhub.errors import DomainError
from tenants.models import ApiKey, Tenant
from tenants.services.suspension import SUSPENDED_MESSAGE


class TenantSuspended(DomainError):
    """The answer to every key of a suspended tenant: 403 (memoryhub/api/codes.py), the same
    code over REST and MCP (docs/operations.md "Suspending a tenant")."""

    code = "TENANT_SUSPENDED"

    def __init__(self) -> None:
        super().__init__(None, SUSPENDED_MESSAGE)


@dataclass
class KeyPrincipal:
    """`request.user` for API calls: the key, its tenant and how it appears in audit rows."""

    key: ApiKey
    is_authenticated = True
    is_anonymous = False

    @property
    def tenant(self) -> Tenant:
        return self.key.tenant

    @property
    def actor(self) -> Actor:
        return Actor.for_key(self.key)


def key_for_authorization(header: str) -> ApiKey | None:
    """The live key an `Authorization` header names: None without a header, else the key or
    AuthenticationFailed with the message of docs/api.md "Authentication". Shared by the
    REST API and the MCP server (mcp_server/gate.py), so both accept the same keys.

    A key of a suspended tenant is refused with TenantSuspended (403), after the key itself
    checked out: only its holder learns that the tenant is suspended. It is not marked used."""
    if not header:
        return None
    scheme, _, raw = header.partition(" ")
    raw = raw.strip()
    if scheme.lower() != "bearer" or not raw:
        raise AuthenticationFailed("Malformed Authorization header: expected 'Bearer <api key>'.")
    prefix = ApiKey.parse(raw)
    if prefix is None:
        raise AuthenticationFailed("Malformed API key: expected mh_<prefix>_<secret>.")
    key = ApiKey.objects.select_related("tenant").filter(prefix=prefix).first()
    if key is None or not key.matches(raw):
        raise AuthenticationFailed("Unknown API key.")
    if key.revoked_at is not None:
        raise AuthenticationFailed("This API key has been revoked.")
    if key.tenant.suspended_at is not None:
        raise TenantSuspended()
    key.touch()
    return key


class ApiKeyAuthentication(BaseAuthentication):
    """`Authorization: Bearer mh_<prefix>_<secret>`.

    No header → None, so the permission check answers 401 UNAUTHENTICATED; a malformed,
    unknown or revoked key fails here with the same code, and a key of a suspended tenant
    with 403 TENANT_SUSPENDED. The key row and its tenant are read on every request (by the
    key's unique prefix), so a revocation or a suspension takes effect at once.
    """

    def authenticate(self, request: Request) -> tuple[KeyPrincipal, ApiKey] | None:
        key = key_for_authorization(request.META.get("HTTP_AUTHORIZATION", ""))
        return None if key is None else (KeyPrincipal(key), key)

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="memoryhub"'


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "tenants.auth.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: object) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "mh_<prefix>_<secret>",
            "description": "A tenant API key, shown once when it is created.",
        }
