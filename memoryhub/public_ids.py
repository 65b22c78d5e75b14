"""Opaque public ids for rows whose integer primary key would leak other tenants' activity.

Primary keys are global: a tenant that sees its own pending write 41 and then 57 learns
that others made 15 writes in between. Rows shown through the API or the UI (audit events,
pending memory writes, threat findings) therefore carry a random public id, and only that id appears in
answers and URLs (docs/api.md "Tenant isolation").
"""

from __future__ import annotations

import secrets

ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"  # RFC 4648 base32, lower case
LENGTH = 20  # 100 random bits: unguessable and, in practice, never repeated
MAX_LENGTH = 32


def new_public_id(prefix: str) -> str:
    return f"{prefix}_" + "".join(secrets.choice(ALPHABET) for _ in range(LENGTH))


def new_audit_id() -> str:
    return new_public_id("ev")


def new_pending_id() -> str:
    return new_public_id("pw")


def new_finding_id() -> str:
    return new_public_id("tf")
