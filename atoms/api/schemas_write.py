"""Request-body schemas of write and purge (docs/atoms.md "Decisions", purge).

Only the OpenAPI description: the parse functions of atoms/api/write.py (with
atoms/services/write_plan.py) and atoms/api/purge.py validate the bodies (see
atoms/api/schemas_common.py). A change is one of create, revise and retire,
told apart by `op`, each with exactly its own keys (and an optional input token).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from atoms.api.schemas_common import (
    ID_MAX,
    INPUT_PATTERN,
    LABEL_PATTERN,
    REF_PATTERN,
    TEXT_MAX,
    UUID4,
    AtomsSpanSchema,
    Budgeted,
    binding_field,
    id_field,
    pattern_field,
    ref_field,
)
from memoryhub.api.strict import StrictSerializer

MAX_BATCH = 256
MAX_LINKS = 128
MAX_SOURCES = 128


def _link_object(name: str, description: str) -> dict[str, Any]:
    # A link spec naming its target by `ref` or by `local` (a change id of this batch).
    target = ({"type": "string", "pattern": REF_PATTERN} if name == "ref"
              else {"type": "string", "description": "The id of a change in this batch."})
    return {
        "type": "object", "description": description,
        "properties": {
            name: target,
            "at": {"type": "string", "enum": ["logical", "observed"], "description": "Default logical."},
            "required": {"type": "boolean", "description": "Default false."},
            "orderKey": {"type": "string", "minLength": 1, "maxLength": ID_MAX, "pattern": LABEL_PATTERN,
                         "description": "Default the link's position."},
        },
        "required": [name], "additionalProperties": False,
    }


LINK_SPEC: dict[str, Any] = {"oneOf": [
    {"type": "string", "pattern": REF_PATTERN, "description": "A ref: a logical, optional link to it."},
    _link_object("ref", "A link to a ref."),
    _link_object("local", "A link to an atom this batch creates or revises."),
]}
ROLE: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": ID_MAX, "pattern": LABEL_PATTERN}
# Two forms (docs/atoms.md "Decisions"): {role: spec or [spec, ...]}, or [{role, target}, ...].
# At most 128 links in all; in the object form the keys are the roles.
LINKS: dict[str, Any] = {
    "description": "The atom's links: an object from role to one link spec or a list of them, or a list of "
                   "{role, target}. At most 128 links.",
    "oneOf": [
        {"type": "object", "additionalProperties": {"oneOf": [LINK_SPEC, {"type": "array", "items": LINK_SPEC}]}},
        {"type": "array", "maxItems": MAX_LINKS, "items": {
            "type": "object", "properties": {"role": ROLE, "target": LINK_SPEC},
            "required": ["role", "target"], "additionalProperties": False}},
    ],
}


@extend_schema_field(LINKS)
class LinksField(serializers.JSONField):
    """The links of an atom's content (described by LINKS)."""


class AtomsContent(StrictSerializer):
    text = serializers.CharField(max_length=TEXT_MAX, allow_blank=True, trim_whitespace=False,
                                 help_text="At most 65,536 UTF-8 bytes.")
    links = LinksField()


def _sources() -> serializers.ListField:
    return serializers.ListField(child=AtomsSpanSchema(), allow_empty=True, max_length=MAX_SOURCES,
                                 help_text="Cited source atoms (same write policy), each with an optional span.")


def _input() -> serializers.CharField:
    return pattern_field(INPUT_PATTERN, required=False, help_text="An input token from observe; agent keys must give one.")


class AtomsCreate(StrictSerializer):
    id = id_field(help_text="The change's id, unique in the batch.")
    op = serializers.ChoiceField(choices=["create"])
    content = AtomsContent()
    sources = _sources()
    input = _input()


class AtomsRevise(StrictSerializer):
    id = id_field(help_text="The change's id, unique in the batch.")
    op = serializers.ChoiceField(choices=["revise"])
    target = ref_field(help_text="The ref of the atom's current head.")
    content = AtomsContent()
    sources = _sources()
    input = _input()


class AtomsRetire(StrictSerializer):
    id = id_field(help_text="The change's id, unique in the batch.")
    op = serializers.ChoiceField(choices=["retire"])
    target = ref_field(help_text="The ref of the atom's current head.")
    input = _input()


CHANGE = PolymorphicProxySerializer(
    component_name="AtomsChange", serializers=[AtomsCreate, AtomsRevise, AtomsRetire], resource_type_field_name=None,
    many=True, allow_empty=False, max_length=MAX_BATCH,
)


class AtomsWriteOptions(Budgeted):
    idempotencyKey = id_field(required=False, allow_null=True,
                              help_text="Repeat a write with the same key to get the first outcome back.")


class AtomsWrite(StrictSerializer):
    binding = binding_field()
    changes = CHANGE
    options = AtomsWriteOptions(required=False, allow_null=True)


@extend_schema_field({"type": "number", "minimum": 0, "multipleOf": 1,
                      "description": "A non-negative integer (1e6 too); above 16,000,000 it is lowered to that."})
class MaxWorkField(serializers.JSONField):
    """purge's maxWork: JSON has one number type, and the service takes 1e6 as 1000000."""


class AtomsPurgeOptions(StrictSerializer):
    dryRun = serializers.BooleanField(required=False, help_text="Default false.")
    maxWork = MaxWorkField(required=False)


class AtomsPurgeByAtom(StrictSerializer):
    atomId = pattern_field(f"^atom:{UUID4}$", help_text="The atom to erase.")
    options = AtomsPurgeOptions(required=False)


class AtomsPurgeByRef(StrictSerializer):
    ref = ref_field(help_text="A ref of this key naming the atom to erase.")
    options = AtomsPurgeOptions(required=False)


PURGE = PolymorphicProxySerializer(component_name="AtomsPurge", serializers=[AtomsPurgeByAtom, AtomsPurgeByRef],
                                   resource_type_field_name=None)
