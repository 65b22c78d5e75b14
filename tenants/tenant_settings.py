"""The tenant's limits and policies as one flat object (GET / PATCH /api/v1/tenant).

Each store keeps its settings on its own model and registers a section here: a DRF
serializer for its fields and a function that finds the instance holding them for a
tenant. The API merges all sections into one flat object, validates a PATCH against all
of them before saving anything, and saves them in one transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from django.db import models, transaction
from rest_framework import serializers

from memoryhub.actors import Actor
from memoryhub.api.strict import StrictModelSerializer, StrictSerializer, coercing_fields
from memoryhub.audit import audit_record
from tenants.models import Tenant
from tenants.models.tenancy import MAX_API_KEYS_CEILING, MAX_READ_POLICIES_CEILING


@dataclass(frozen=True)
class SettingsSection:
    name: str
    serializer_class: type[serializers.ModelSerializer]
    instance_for: Callable[[Tenant], models.Model]

    def field_names(self) -> list[str]:
        return list(self.serializer_class().fields)

    def writable_field_names(self) -> list[str]:
        return [n for n, f in self.serializer_class().fields.items() if not f.read_only]


_sections: dict[str, SettingsSection] = {}


def register_section(section: SettingsSection) -> None:
    """Called from an AppConfig.ready(); a field name may belong to one section only."""
    # A PATCH must not coerce ("12" into 12, 0 into "0"): docs/api.md "Conventions".
    if loose := coercing_fields(section.serializer_class()):
        raise ValueError(f"tenant settings {loose} must use the strict fields of memoryhub/api/strict.py")
    taken = {name for s in _sections.values() if s.name != section.name for name in s.field_names()}
    clash = taken & set(section.field_names())
    if clash:
        raise ValueError(f"tenant setting names registered twice: {sorted(clash)}")
    _sections[section.name] = section
    combined_serializer.cache_clear()


def sections() -> list[SettingsSection]:
    return list(_sections.values())


def settings_read(tenant: Tenant) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for section in sections():
        data.update(section.serializer_class(section.instance_for(tenant)).data)
    return data


def settings_validate(tenant: Tenant, payload: object) -> list[serializers.ModelSerializer]:
    """Validate a PATCH body against every section; raise one ValidationError naming every
    bad field, or return the bound serializers ready to save."""
    if not isinstance(payload, dict):
        raise serializers.ValidationError({"non_field_errors": ["Expected a JSON object."]})
    errors: dict[str, Any] = {}
    known: set[str] = set()
    bound: list[serializers.ModelSerializer] = []
    for section in sections():
        writable = set(section.writable_field_names())
        known |= set(section.field_names())
        for name in set(payload) & (set(section.field_names()) - writable):
            errors[name] = ["This field is read-only."]
        subset = {k: v for k, v in payload.items() if k in writable}
        if not subset:
            continue
        serializer = section.serializer_class(section.instance_for(tenant), data=subset, partial=True)
        if serializer.is_valid():
            bound.append(serializer)
        else:
            errors.update(serializer.errors)
    for name in set(payload) - known:
        errors[name] = ["Unknown setting."]
    if errors:
        raise serializers.ValidationError(errors)
    return bound


def settings_update(*, tenant: Tenant, bound: list[serializers.ModelSerializer], actor: Actor) -> dict[str, Any]:
    """Save validated sections in one transaction with one audit row."""
    with transaction.atomic():
        before = settings_read(tenant)
        for serializer in bound:
            # Lock the row and save only the validated fields: a whole-row save from the
            # instance read during validation could undo a concurrent write to other fields.
            instance = serializer.instance
            assert instance is not None  # every section's serializer is bound to its row
            locked = type(instance).objects.select_for_update().get(pk=instance.pk)
            before_fields = {attribute: getattr(locked, attribute) for attribute in serializer.validated_data}
            for attribute, value in serializer.validated_data.items():
                setattr(locked, attribute, value)
            fields = list(serializer.validated_data)
            # A section may derive more fields from the change (e.g. the Atom index generation).
            derive = getattr(serializer, "derived_changes", None)
            if derive is not None:
                fields += derive(locked, before_fields)
            locked.save(update_fields=fields)
        tenant.refresh_from_db()
        after = settings_read(tenant)
        if before != after:
            audit_record(
                tenant=tenant, actor=actor, action="tenant.settings", object_type="tenant",
                object_id=tenant.slug, before=before, after=after,
            )
    return after


@cache
def combined_serializer() -> type[serializers.Serializer]:
    """One serializer class with every section's fields, for the OpenAPI schema."""
    fields: dict[str, serializers.Field] = {}
    for section in sections():
        fields.update(section.serializer_class().get_fields())
    return type("TenantSettings", (StrictSerializer,), fields)


class CoreSettingsSerializer(StrictModelSerializer):
    class Meta:
        model = Tenant
        fields = ["slug", "name", "api_rate_per_minute", "max_api_keys", "max_read_policies"]
        read_only_fields = ["slug"]
        extra_kwargs = {"api_rate_per_minute": {"min_value": 1, "max_value": 1_000_000},
                        "max_api_keys": {"min_value": 1, "max_value": MAX_API_KEYS_CEILING},
                        "max_read_policies": {"min_value": 1, "max_value": MAX_READ_POLICIES_CEILING}}


register_section(SettingsSection("core", CoreSettingsSerializer, lambda tenant: tenant))
