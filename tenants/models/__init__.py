from tenants.models.keys import ApiKey, KeyKind
from tenants.models.kv import Agent, KvConfig, KvEntry, KvJournalRecord, KvNamespace, KvRun, RunMode
from tenants.models.tenancy import Membership, Role, Tenant

__all__ = [
    "Agent", "ApiKey", "KeyKind", "KvConfig", "KvEntry", "KvJournalRecord", "KvNamespace", "KvRun",
    "Membership", "Role", "RunMode", "Tenant",
]
