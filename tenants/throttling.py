"""Per-key request throttling backed by the cache (Redis when configured).

A fixed one-minute window counted with cache.incr: one round trip per request. DRF's
SimpleRateThrottle keeps a list of every request time per key and rewrites it on each
call, which at thousands of requests per minute costs more than the request itself.
If the cache is down the request is let through (logged): losing throttling for a moment
is better than refusing every agent.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from django.core.cache import cache
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from memoryhub.windows import fixed_window
from tenants.models import ApiKey

if TYPE_CHECKING:
    from rest_framework.views import APIView

logger = logging.getLogger("memoryhub.throttling")
WINDOW_SECONDS = 60


def throttle_wait(key: ApiKey) -> float | None:
    """Count one request for `key`; None if it is allowed, else the seconds until the
    window ends. Shared by the REST API and the MCP server (one counter per key)."""
    limit = key.tenant.effective_api_rate_per_minute
    window, left = fixed_window(WINDOW_SECONDS)
    cache_key = f"throttle:{key.prefix}:{window}"
    try:
        cache.add(cache_key, 0, timeout=WINDOW_SECONDS * 2)
        count = cache.incr(cache_key)
    except Exception:  # any cache failure means "do not throttle"
        logger.warning("throttle cache unavailable; request allowed", exc_info=True)
        return None
    if count <= limit:
        return None
    return left


class ApiKeyRateThrottle(BaseThrottle):
    def __init__(self) -> None:
        self._wait: float | None = None

    def allow_request(self, request: Request, view: APIView) -> bool:
        key = request.auth
        if not isinstance(key, ApiKey):
            return True
        self._wait = throttle_wait(key)
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait
