"""Memory-file settings on GET/PATCH /api/v1/tenant: `memory_limit`, `user_limit`, `approval`."""

from __future__ import annotations

from memoryhub.api.strict import StrictChoiceField, StrictIntegerField, StrictModelSerializer
from tenants.models import Approval, MemoryVolume
from tenants.tenant_settings import SettingsSection, register_section


class MemorySettingsSerializer(StrictModelSerializer):
    memory_limit = StrictIntegerField(min_value=1, max_value=65_536)
    user_limit = StrictIntegerField(min_value=1, max_value=65_536)
    approval = StrictChoiceField(choices=Approval.choices)

    class Meta:
        model = MemoryVolume
        fields = ["memory_limit", "user_limit", "approval"]


def register() -> None:
    register_section(SettingsSection("memory", MemorySettingsSerializer, MemoryVolume.get_or_create_for))
