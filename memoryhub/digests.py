"""Canonical JSON and digests shared by the audit log and the stores."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, non-ASCII kept as UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_hex(data: str | bytes) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def digest_of(value: Any) -> str:
    """Digest of a JSON-able value; the audit log keeps these instead of the content."""
    return sha256_hex(canonical_json(value))
