"""The Settings page's form, built from the tenant settings registry (tenants.tenant_settings).

Every registered section becomes a group and every serializer field an input, so a store's
settings appear here as soon as it registers them (docs/api.md "Tenant settings"). This
module only turns form text into the JSON values `PATCH /api/v1/tenant` would receive and
the API's errors back into per-field messages: the rules themselves stay in the section
serializers, which `settings_validate` runs exactly as the API does.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rest_framework import serializers

from memoryhub.api.errors import _flatten_validation
from tenants.tenant_settings import sections

Kind = Literal["integer", "boolean", "choice", "json", "text"]

# Shown instead of DRF's labels made from the field names ("Kv key bytes"); a field not named
# here keeps that label, so a new section still shows up in full.
LABELS: dict[str, str] = {
    "slug": "Slug",
    "name": "Display name",
    "api_rate_per_minute": "Rate limit (requests per minute per key)",
    "max_api_keys": "Most active API keys",
    "max_read_policies": "Most distinct read policies",
    "kv_key_bytes": "Key size (bytes)",
    "kv_value_bytes": "Value size (bytes)",
    "kv_keys_per_namespace": "Keys per namespace",
    "kv_namespaces_per_agent": "Namespaces per agent",
    "kv_response_bytes": "Response size (bytes)",
    "memory_limit": "MEMORY.md limit (characters)",
    "user_limit": "USER.md limit (characters)",
    "approval": "Approval policy",
    "atoms_config": "Atom config (JSON object)",
    "atoms_require_approval": "New atoms wait for approval",
}
TITLES: dict[str, str] = {"core": "Tenant and API keys", "kv": "Key-value memory", "memory": "Memory files",
                          "atoms": "Atoms"}
# The hidden input carrying a field's value as the page showed it: only fields whose value
# differs from it are sent, so a field nobody touched never overwrites a concurrent change.
WAS = "was:"
INTEGER_TEXT = re.compile(r"[+-]?[0-9]{1,30}")
JSON_ERROR = "Enter a JSON object: {error}."


@dataclass(frozen=True)
class SettingField:
    name: str
    label: str
    help: str
    kind: Kind
    read_only: bool = False
    nullable: bool = False
    min_value: int | None = None
    max_value: int | None = None
    max_length: int | None = None
    choices: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class SettingsGroup:
    name: str
    title: str
    fields: tuple[SettingField, ...]


def _kind(field: serializers.Field) -> Kind:
    if isinstance(field, serializers.BooleanField):
        return "boolean"
    if isinstance(field, serializers.ChoiceField):
        return "choice"
    if isinstance(field, serializers.IntegerField):
        return "integer"
    if isinstance(field, serializers.JSONField):
        return "json"
    return "text"


def _describe(name: str, field: serializers.Field) -> SettingField:
    choices = tuple((str(k), str(v)) for k, v in getattr(field, "choices", {}).items())
    return SettingField(
        name=name, label=LABELS.get(name, str(field.label or name)), help=str(field.help_text or ""),
        kind=_kind(field), read_only=field.read_only, nullable=bool(getattr(field, "allow_null", False)),
        min_value=getattr(field, "min_value", None), max_value=getattr(field, "max_value", None),
        max_length=getattr(field, "max_length", None), choices=choices,
    )


def groups() -> list[SettingsGroup]:
    return [
        SettingsGroup(section.name, TITLES.get(section.name, section.name.capitalize()),
                      tuple(_describe(name, field) for name, field in section.serializer_class().fields.items()))
        for section in sections()
    ]


def as_text(field: SettingField, value: Any) -> str:
    """A stored value as its input shows it."""
    if field.kind == "boolean":
        return "true" if value else "false"
    if field.kind == "json":
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    return "" if value is None else str(value)


def texts(values: Mapping[str, Any]) -> dict[str, str]:
    fields = {field.name: field for group in groups() for field in group.fields}
    return {name: as_text(fields[name], value) for name, value in values.items() if name in fields}


def submitted_text(field: SettingField, post: Mapping[str, Any]) -> str | None:
    """The field's text as posted, or None when the form did not carry the field at all.
    An unticked checkbox sends nothing; its hidden `was:` input says it was on the form."""
    if field.kind == "boolean":
        if field.name in post:
            return "true" if post[field.name] not in ("", "false", "off") else "false"
        return "false" if WAS + field.name in post else None
    text = post.get(field.name)
    # Browsers send a textarea's line breaks as CRLF, whatever the page held.
    return None if text is None else text.replace("\r\n", "\n")


def _value(field: SettingField, text: str) -> Any:
    """Form text as the JSON value a client would send. Text that is no integer is sent as
    it is, so that the serializer's own message explains the refusal."""
    if field.kind == "boolean":
        return text == "true"
    if field.kind == "integer":
        stripped = text.strip()
        if stripped == "" and field.nullable:
            return None
        return int(stripped) if INTEGER_TEXT.fullmatch(stripped) else text
    if field.kind == "json":
        return json.loads(text)
    return text


@dataclass
class Submission:
    payload: dict[str, Any]  # what PATCH /api/v1/tenant would receive
    texts: dict[str, str]  # every posted field's text, to show again after an error
    was: dict[str, str]  # the values the page was loaded with
    errors: dict[str, str]  # fields the form could not even turn into JSON


def read_post(post: Mapping[str, Any]) -> Submission:
    submission = Submission({}, {}, {}, {})
    for group in groups():
        for field in group.fields:
            if field.read_only:
                continue
            text = submitted_text(field, post)
            if text is None:
                continue
            submission.texts[field.name] = text
            was = post.get(WAS + field.name)
            if was is not None:
                was = was.replace("\r\n", "\n")
                submission.was[field.name] = was
                if was == text:
                    continue
            try:
                submission.payload[field.name] = _value(field, text)
            except json.JSONDecodeError as exc:
                submission.errors[field.name] = JSON_ERROR.format(error=exc.msg)
    return submission


def field_errors(detail: Any) -> dict[str, str]:
    """The API's validation errors, one line per top-level field ("" for the whole form);
    a nested path stays in front of its message."""
    out: dict[str, list[str]] = {}
    for error in _flatten_validation(detail):
        path = error["path"]
        top = re.split(r"[.\[]", path, maxsplit=1)[0]
        rest = path[len(top):].lstrip(".")
        out.setdefault(top, []).append(f"{rest}: {error['message']}" if rest else error["message"])
    return {name: " ".join(messages) for name, messages in out.items()}
