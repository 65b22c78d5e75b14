"""Atom settings on GET/PATCH /api/v1/tenant: `atoms_config`, `atoms_require_approval`."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from atoms.config import ConfigError, validate_config
from atoms.models import AtomStore
from memoryhub.api.strict import JSONObjectField, StrictBooleanField, StrictModelSerializer
from tenants.tenant_settings import SettingsSection, register_section


class AtomsSettingsSerializer(StrictModelSerializer):
    atoms_config = JSONObjectField(source="config")
    atoms_require_approval = StrictBooleanField(source="require_approval")

    class Meta:
        model = AtomStore
        fields = ["atoms_config", "atoms_require_approval"]

    def validate_atoms_config(self, value: Any) -> dict[str, Any]:
        try:
            return validate_config(value)
        except ConfigError as exc:
            raise serializers.ValidationError(str(exc)) from exc


    def derived_changes(self, store: AtomStore, before: dict[str, Any]) -> list[str]:
        """A changed embedding config makes every entry invalid and every cursor stale:
        the index generation goes up (docs/atoms.md "Semantic index")."""
        if "config" not in before:
            return []
        unset = object()
        old = (before["config"] or {}).get("embedding", unset)
        new = (store.config or {}).get("embedding", unset)
        if old is new or old == new:
            return []
        store.index_generation += 1
        return ["index_generation"]


def register() -> None:
    register_section(SettingsSection("atoms", AtomsSettingsSerializer, AtomStore.get_or_create_for))
