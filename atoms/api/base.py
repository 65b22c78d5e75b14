"""The base of every Atom endpoint: POST, JSON object bodies, the library's error codes."""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings

from atoms.errors import AtomError, invalid
from atoms.models import AtomStore
from atoms.principal import Principal
from atoms.services.barrier import open_store
from tenants.api.base import TenantAPIView
from tenants.models import KeyKind

ALL = frozenset(KeyKind.values)
HOSTS = frozenset({KeyKind.HOST, KeyKind.ADMIN})
ADMINS = frozenset({KeyKind.ADMIN})
BODY_LIMIT = 2 * 1024 * 1024


class AtomsAPIView(TenantAPIView):
    allowed_kinds: ClassVar[frozenset[str]] = ALL
    read_only_checked_by_view = True
    validation_error_code = "INVALID_INPUT"
    permission_denied_code = "ACCESS_DENIED"
    parse_error_code = "INVALID_INPUT"
    body_limit: ClassVar[int] = BODY_LIMIT
    # Endpoints that change memory refuse read-only keys.
    changes_memory: ClassVar[bool] = False
    # Every endpoint but purge (which resumes its own erasure) is closed while a purge is
    # pending (docs/atoms.md "In the web UI: read playground and purge").
    checks_barrier: ClassVar[bool] = True
    store: AtomStore | None = None  # the store row body() loaded to check the barrier

    def initial(self, request: Any, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        length = int(request.META.get("CONTENT_LENGTH") or 0)
        if length > self.body_limit:
            raise AtomError("LIMIT_EXCEEDED", f"The body exceeds {self.body_limit} bytes.",
                            {"limit": self.body_limit, "actual": length})
        if self.changes_memory:
            self.principal.require_writable()

    @property
    def principal(self) -> Principal:
        return Principal.for_key(self.key)

    def body(self) -> dict[str, Any]:
        """The JSON object the request carries, once the purge barrier allows the call. The
        order of these checks is the order of the errors a client sees: malformed JSON, then
        a body that is no object, then the barrier, then the endpoint's own parsing."""
        data = self.request.data
        if not isinstance(data, dict):
            raise invalid("The body must be a JSON object.")
        if self.checks_barrier:
            # Kept for the service, which would otherwise load the same row again (read and
            # search take it: one statement less on the hot path).
            self.store = open_store(self.key.tenant)
        return data


WRITE_BODY_LIMIT = getattr(settings, "ATOMS_WRITE_BODY_BYTES", 20 * 1024 * 1024)
