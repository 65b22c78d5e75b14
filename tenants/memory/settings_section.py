"""Memory-file settings on GET/PATCH /api/v1/tenant: `memory_limit`, `user_limit`, `approval`."""

from __future__ import annotations

from rest_framework import serializers

from tenants.models import Approval, MemoryVolume
from tenants.tenant_settings import SettingsSection, register_section


class MemorySettingsSerializer(serializers.ModelSerializer):
    memory_limit = serializers.IntegerField(min_value=1, max_value=65_536)
    user_limit = serializers.IntegerField(min_value=1, max_value=65_536)
    approval = serializers.ChoiceField(choices=Approval.choices)

    class Meta:
        model = MemoryVolume
        fields = ["memory_limit", "user_limit", "approval"]


def register() -> None:
    register_section(SettingsSection("memory", MemorySettingsSerializer, MemoryVolume.for_tenant))
