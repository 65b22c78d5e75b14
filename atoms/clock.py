"""The Atom engine's clock: integer epoch milliseconds, injectable through ATOMS_CLOCK
(a dotted path to a zero-argument callable) so tests can move time."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.utils.module_loading import import_string


def system_now_ms() -> int:
    return int(time.time() * 1000)


def now_ms() -> int:
    path: str | None = getattr(settings, "ATOMS_CLOCK", None)
    clock: Callable[[], int] = import_string(path) if path else system_now_ms
    return int(clock())
