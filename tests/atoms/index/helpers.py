"""Steps the index tests share."""

from __future__ import annotations

from typing import Any


def drain(client: Any, limit: int = 32) -> dict[str, int]:
    """Call index/update until nothing is pending; totals of indexed and processed events."""
    total = {"indexed": 0, "processed": 0}
    for _ in range(1000):
        body = client.post("index/update", {"options": {"limit": limit}}).json()
        total["indexed"] += body["indexed"]
        total["processed"] += body["processed"]
        if not body["pending"]:
            return total
    raise AssertionError("the feed never drained")
