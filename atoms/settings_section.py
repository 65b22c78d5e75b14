"""Atom settings on GET/PATCH /api/v1/tenant: `atoms_config`, `atoms_require_approval`."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from atoms.config import ConfigError, validate_config
from atoms.models import AtomStore
from tenants.tenant_settings import SettingsSection, register_section


class AtomsSettingsSerializer(serializers.ModelSerializer):
    atoms_config = serializers.JSONField(source="config")
    atoms_require_approval = serializers.BooleanField(source="require_approval")

    class Meta:
        model = AtomStore
        fields = ["atoms_config", "atoms_require_approval"]

    def validate_atoms_config(self, value: Any) -> dict[str, Any]:
        try:
            return validate_config(value)
        except ConfigError as exc:
            raise serializers.ValidationError(str(exc)) from exc


def register() -> None:
    register_section(SettingsSection("atoms", AtomsSettingsSerializer, AtomStore.for_tenant))
