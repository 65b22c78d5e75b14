"""The KV limits as tenant settings: `kv_<limit>` fields of GET/PATCH /api/v1/tenant."""

from __future__ import annotations

from memoryhub.api.strict import StrictIntegerField, StrictModelSerializer
from tenants.models import KvConfig
from tenants.tenant_settings import SettingsSection, register_section

MAX_LIMIT = 2**31 - 1


class KvSettingsSerializer(StrictModelSerializer):
    kv_key_bytes = StrictIntegerField(source="key_bytes", min_value=1, max_value=65_536)
    kv_value_bytes = StrictIntegerField(source="value_bytes", min_value=1, max_value=64 * 1024 * 1024)
    kv_keys_per_namespace = StrictIntegerField(source="keys_per_namespace", min_value=1, max_value=MAX_LIMIT)
    kv_namespaces_per_agent = StrictIntegerField(source="namespaces_per_agent", min_value=1, max_value=MAX_LIMIT)
    kv_response_bytes = StrictIntegerField(source="response_bytes", min_value=1, max_value=1024**3)

    class Meta:
        model = KvConfig
        fields = ["kv_key_bytes", "kv_value_bytes", "kv_keys_per_namespace", "kv_namespaces_per_agent", "kv_response_bytes"]


def register() -> None:
    register_section(SettingsSection("kv", KvSettingsSerializer, KvConfig.get_or_create_for))
