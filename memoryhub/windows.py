"""Fixed windows of the wall clock, shared by the API's per-key throttle
(tenants/throttling.py) and the login throttle (memoryhub/login_throttle.py).

A counter keyed by its window number costs one cache round trip per request, where a
sliding log would rewrite a list of times on every call (tenants/throttling.py says more).
Both throttles read the clock here only, so a test can stop it in one place
(`throttle_clock` in tests/conftest.py).
"""

from __future__ import annotations

import time


def fixed_window(size_s: int) -> tuple[int, float]:
    """(the number of the current window of `size_s` seconds, seconds until it ends)."""
    now = time.time()
    window = int(now // size_s)
    return window, (window + 1) * size_s - now
