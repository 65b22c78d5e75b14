"""DRF permissions for key-authenticated views."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from tenants.models import ApiKey

if TYPE_CHECKING:
    from rest_framework.views import APIView


class HasApiKey(BasePermission):
    """Any valid key; its kind must be one the view allows, and read-only keys may not
    use unsafe methods unless the view decides per action (`read_only_checked_by_view`)."""

    message = "This API key may not use this endpoint."

    def has_permission(self, request: Request, view: APIView) -> bool:
        key = request.auth
        if not isinstance(key, ApiKey):
            return False
        allowed = getattr(view, "allowed_kinds", None)
        if allowed is not None and key.kind not in allowed:
            self.message = f"A {key.kind} key may not use this endpoint."
            return False
        if (
            key.read_only
            and request.method not in SAFE_METHODS
            and not getattr(view, "read_only_checked_by_view", False)
        ):
            self.message = "This API key is read-only."
            return False
        return True
