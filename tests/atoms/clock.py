"""A clock tests can move: settings.ATOMS_CLOCK = "tests.atoms.clock.now"."""

from __future__ import annotations

_now = 0


def now() -> int:
    return _now


def set_now(value: int) -> None:
    global _now
    _now = value


def advance(ms: int) -> None:
    set_now(_now + ms)
