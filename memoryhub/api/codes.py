"""The one table from error codes to HTTP statuses (docs/api.md "Errors").

Every code any part of the API answers is a row here, whichever store raises it: the
exception handler (memoryhub/api/errors.py) looks a `DomainError`'s status up by its code,
and so do the answers it builds itself (authentication, throttling, database failures).
A code keeps one status everywhere. The one answer with another status says so explicitly
with `ApiError(status=...)`: a key-value replay answers the status recorded with the call
(tenants/kv/runs.py `ReplayedError`). The memory tool's refusals are no exception: they are
part of its 200 result, not errors (docs/memory-files.md "Using it from an agent").
"""

from __future__ import annotations

from memoryhub.errors import DomainError

STATUS: dict[str, int] = {
    # --- the whole API (docs/api.md "Errors")
    "INVALID_REQUEST": 400,
    "INVALID_JSON": 400,
    "INVALID_CHARACTER": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "METHOD_NOT_ALLOWED": 405,
    "NOT_ACCEPTABLE": 406,
    "LIMIT_EXCEEDED": 413,
    "UNSUPPORTED_MEDIA_TYPE": 415,
    "THROTTLED": 429,
    "INTERNAL": 500,
    "SERVICE_UNAVAILABLE": 503,
    # --- keys and tenant settings (docs/api.md "Endpoints", "Tenant settings")
    "KEY_NOT_FOUND": 404,
    "TENANT_SUSPENDED": 403,  # every key of a suspended tenant (docs/operations.md "Suspending a tenant")
    "TENANT_LIMIT_REACHED": 409,
    # --- Atoms: the library's codes (docs/atoms.md)
    "INVALID_INPUT": 400,
    "INVALID_SCHEMA": 400,
    "INVALID_REF": 400,
    "INVALID_SOURCE_SPAN": 400,
    "PINNED_INCLUDE_REQUIRED": 400,
    "INCLUDE_CYCLE": 400,
    "ACCESS_DENIED": 403,
    "REFERENCE_UNAVAILABLE": 404,
    "REVISION_CONFLICT": 409,
    "IDEMPOTENCY_CONFLICT": 409,
    "STATE_INVALIDATED": 409,
    "MODEL_SPACE_MISMATCH": 409,
    "CURSOR_EXPIRED": 410,
    "BUDGET_EXHAUSTED": 422,
    "INDEX_NOT_READY": 503,
    "ATOMICITY_UNAVAILABLE": 503,
    "CONSISTENCY_UNAVAILABLE": 503,
    "GUARD_VALIDATION_UNAVAILABLE": 503,
    "ABORTED": 503,
    # --- key-value memory (docs/kv.md "Endpoints")
    "UNKNOWN_ACTION": 400,
    "INVALID_NAMESPACE": 400,
    "INVALID_ARGUMENT": 400,
    "INVALID_AGENT": 400,
    "KEY_REQUIRED": 400,
    "KEY_INVALID": 400,
    "VALUE_REQUIRED": 400,
    "AGENT_NOT_FOUND": 404,
    "RUN_NOT_FOUND": 404,
    "VERSION_CONFLICT": 409,
    "REPLAY_DIVERGED": 409,
    "VERIFY_LIVE_CALL": 409,
    "RUN_CLOSED": 409,
    "SEQ_GAP": 409,
    "PRECONDITION_FAILED": 412,
    # --- memory files (docs/memory-files.md "Using it from an agent")
    "INVALID_TARGET": 400,
    "BATCH_EMPTY": 400,
    "OLD_TEXT_EMPTY": 400,
    "CONTENT_EMPTY": 400,
    "SEPARATOR_IN_CONTENT": 400,
    "VERSION_NOT_FOUND": 404,
    "PENDING_NOT_FOUND": 404,
    "SESSION_NOT_FOUND": 404,
    "NO_MATCH": 409,
    "AMBIGUOUS_MATCH": 409,
    "TARGET_CHANGED": 409,
    "NOT_PENDING": 409,
    "THREAT_BLOCKED": 422,
    "OVER_LIMIT": 422,
    "ENTRY_TOO_LONG": 422,
    "RETRY_LIMIT": 429,
    # memory files on the volume: drift resolution (a page of the review UI, no API) and
    # `manage.py memory_import` refuse with these; kept here so a code has one status.
    "NOT_DRIFTED": 409,
    "DISK_MISSING": 409,
    "DISK_CHANGED": 409,
    "DISK_UNREADABLE": 422,
    "DISK_UNAVAILABLE": 503,
    "DISK_ERROR": 503,
    "STORE_NOT_EMPTY": 409,
    "NOT_UTF8": 422,
    "UNREADABLE": 422,
}

# A code missing from the table is a bug the table test catches; at run time it is still a
# refusal of the request, not a crash of the handler.
FALLBACK_STATUS = 400


def status_for(error: DomainError | str) -> int:
    """The HTTP status of a code, or of an error (its explicit `status` if it has one)."""
    if isinstance(error, str):
        return STATUS.get(error, FALLBACK_STATUS)
    explicit = getattr(error, "status", None)
    return explicit if isinstance(explicit, int) else STATUS.get(error.code, FALLBACK_STATUS)
