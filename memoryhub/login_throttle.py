"""Login throttling for the web UI and the Django admin: failed passwords counted in the cache.

Two fixed-window counters, like the API's per-key throttle (tenants/throttling.py), in the
Django cache (Redis in production, so every web process shares them):

- per (username, client address): MEMORYHUB_LOGIN_FAILURES_PER_CLIENT failures
  (default 5) per MEMORYHUB_LOGIN_WINDOW_SECONDS (default 900) stop one guesser;
- per username from any address: MEMORYHUB_LOGIN_FAILURES_PER_USERNAME (default 50)
  slows a guesser spread over many addresses, while one address's failures never lock
  the account for everybody else.

The check sits in the authentication backend, so every password form (our login page and
the admin's) is covered; the login page also names the lockout (429 with Retry-After).
A successful login clears the client counter. If the cache is down, logins are allowed
and a warning is logged, as the API throttle does.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest

from memoryhub.windows import fixed_window

logger = logging.getLogger("memoryhub.throttling")


def client_address(request: HttpRequest) -> str:
    """REMOTE_ADDR, or the last entry of MEMORYHUB_CLIENT_IP_HEADER when a proxy sets it
    (the last entry is the one our own proxy appended; earlier ones are the client's word)."""
    header = settings.MEMORYHUB_CLIENT_IP_HEADER
    if header:
        raw = request.headers.get(header, "")
        parts = [part.strip() for part in raw.split(",") if part.strip()]
        if parts:
            return parts[-1]
    return str(request.META.get("REMOTE_ADDR", ""))


def _window() -> tuple[int, float]:
    return fixed_window(settings.MEMORYHUB_LOGIN_WINDOW_SECONDS)


def _counters(request: HttpRequest, username: str) -> list[tuple[str, int]]:
    window, _ = _window()
    name = username.strip().lower()
    # Hashed: usernames and addresses are personal data and need not sit in Redis as such.
    per_client = hashlib.sha256(f"{name}\0{client_address(request)}".encode()).hexdigest()[:32]
    per_name = hashlib.sha256(name.encode()).hexdigest()[:32]
    return [
        (f"login-fail:c:{per_client}:{window}", settings.MEMORYHUB_LOGIN_FAILURES_PER_CLIENT),
        (f"login-fail:u:{per_name}:{window}", settings.MEMORYHUB_LOGIN_FAILURES_PER_USERNAME),
    ]


def locked_for(request: HttpRequest, username: str) -> int | None:
    """Seconds until this username may try again from this client, or None if it may now."""
    try:
        counts = cache.get_many([key for key, _ in _counters(request, username)])
    except Exception:  # a cache outage must not lock everybody out
        logger.warning("login throttle cache unavailable; login allowed", exc_info=True)
        return None
    for key, limit in _counters(request, username):
        if counts.get(key, 0) >= limit:
            return max(int(_window()[1]) + 1, 1)
    return None


def record_failure(request: HttpRequest, username: str) -> None:
    timeout = settings.MEMORYHUB_LOGIN_WINDOW_SECONDS * 2
    try:
        for key, _ in _counters(request, username):
            cache.add(key, 0, timeout=timeout)
            cache.incr(key)
    except Exception:
        logger.warning("login throttle cache unavailable; failure not counted", exc_info=True)


def record_success(request: HttpRequest, username: str) -> None:
    try:
        cache.delete(_counters(request, username)[0][0])
    except Exception:
        logger.warning("login throttle cache unavailable", exc_info=True)


class ThrottledModelBackend(ModelBackend):
    """Django's ModelBackend behind the login throttle. Without a request (management
    commands, the test client's login()) there is no client to count, so no throttle."""

    def authenticate(self, request: HttpRequest | None, username: str | None = None, password: str | None = None,
                     **kwargs: Any) -> User | None:
        if request is None or not username:
            return super().authenticate(request, username=username, password=password, **kwargs)
        if locked_for(request, username) is not None:
            # Stops the authentication chain; Django answers as for a wrong password.
            raise PermissionDenied("Too many failed logins.")
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            record_failure(request, username)
        else:
            record_success(request, username)
        return user
