from tenants.models.keys import ApiKey, KeyKind
from tenants.models.kv import Agent, KvConfig, KvEntry, KvJournalRecord, KvNamespace, KvRun, RunMode
from tenants.models.memory_files import (
    Approval,
    MemorySession,
    MemoryVersion,
    MemoryVolume,
    Origin,
    PendingStatus,
    PendingWrite,
    ThreatFinding,
)
from tenants.models.tenancy import Membership, Role, Tenant

__all__ = [
    "Agent",
    "ApiKey",
    "Approval",
    "KeyKind",
    "KvConfig",
    "KvEntry",
    "KvJournalRecord",
    "KvNamespace",
    "KvRun",
    "Membership",
    "MemorySession",
    "MemoryVersion",
    "MemoryVolume",
    "Origin",
    "PendingStatus",
    "PendingWrite",
    "Role",
    "RunMode",
    "Tenant",
    "ThreatFinding",
]
