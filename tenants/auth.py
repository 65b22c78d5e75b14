"""API-key authentication for DRF."""

from __future__ import annotations

from dataclasses import dataclass

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from memoryhub.actors import Actor
from tenants.models import ApiKey, Tenant


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
    REST API and the MCP server (mcp_server/gate.py), so both accept the same keys."""
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
    key.touch()
    return key


class ApiKeyAuthentication(BaseAuthentication):
    """`Authorization: Bearer mh_<prefix>_<secret>`.

    No header → None, so the permission check answers 401 UNAUTHENTICATED; a malformed,
    unknown or revoked key fails here with the same code. The key row is read on every
    request (by its unique prefix), so a revocation takes effect at once.
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
