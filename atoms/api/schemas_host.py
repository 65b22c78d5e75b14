"""Request-body schemas of the host endpoints: observe, manifest, uses, uses/reset and the
index calls (docs/atoms.md "Decisions" and "Semantic index").

Only the OpenAPI description: the parse functions of atoms/api/observe.py, uses.py and
index.py validate the bodies (see atoms/api/schemas_common.py).
"""

from __future__ import annotations

from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from atoms.api.schemas_common import (
    INPUT_PATTERN,
    RECEIPT_PATTERN,
    AtomsSpanSchema,
    binding_field,
    id_field,
    pattern_field,
    ref_list,
)
from memoryhub.api.strict import StrictSerializer

MAX_LIST = 10_000  # maxReadCandidates (docs/atoms.md "Decisions")
MAX_USES = 256
UPDATE_MAX = 1024
PRIORITIZE_MAX = 256


def receipt_field(**kwargs: object) -> serializers.CharField:
    return pattern_field(RECEIPT_PATTERN, **kwargs)


def input_field(**kwargs: object) -> serializers.CharField:
    return pattern_field(INPUT_PATTERN, **kwargs)


class AtomsPresentation(StrictSerializer):
    receipt = receipt_field(help_text="A read, search or inspect receipt of the bound key.")
    refs = ref_list(required=False, allow_null=True, allow_empty=True, max_length=MAX_LIST,
                    help_text="The units of that receipt the agent was shown; default all of them.")


class AtomsObserveInput(StrictSerializer):
    presentations = serializers.ListField(child=AtomsPresentation(), required=False, allow_empty=True,
                                          max_length=MAX_LIST)
    sources = serializers.ListField(child=AtomsSpanSchema(), required=False, allow_empty=True, max_length=MAX_LIST)
    inherit = serializers.ListField(child=input_field(), required=False, allow_empty=True, max_length=MAX_LIST,
                                    help_text="Earlier input tokens of the same subject.")
    watches = serializers.ListField(child=receipt_field(), required=False, allow_empty=True, max_length=MAX_LIST,
                                    help_text="Receipts whose heads and queries the token watches.")
    basis = serializers.ChoiceField(choices=["current", "historical"], required=False, help_text="Default current.")
    payloadDigest = pattern_field("^[0-9a-f]{64}$", help_text="SHA-256 of what the agent was given, lowercase hex.")


class AtomsObserve(StrictSerializer):
    binding = binding_field(required=True)
    input = AtomsObserveInput()


class AtomsManifestOfReceipt(StrictSerializer):
    binding = binding_field(required=True)
    receipt = receipt_field()


class AtomsManifestOfInput(StrictSerializer):
    binding = binding_field(required=True)
    input = input_field()


MANIFEST = PolymorphicProxySerializer(component_name="AtomsManifestLookup",
                                      serializers=[AtomsManifestOfReceipt, AtomsManifestOfInput],
                                      resource_type_field_name=None)


class AtomsUses(StrictSerializer):
    binding = binding_field(required=True)
    refs = ref_list(allow_empty=False, max_length=MAX_USES)
    eventId = id_field(help_text="The model response's id; a repeat of it is counted once.")
    input = input_field(required=False, help_text="The input token the response was given.")


class AtomsUsesReset(StrictSerializer):
    binding = binding_field(required=True)


class AtomsIndexUpdateOptions(StrictSerializer):
    limit = serializers.IntegerField(required=False, min_value=1, max_value=UPDATE_MAX,
                                     help_text="Feed events to process; default 32.")


class AtomsIndexUpdate(StrictSerializer):
    binding = binding_field()
    options = AtomsIndexUpdateOptions(required=False, allow_null=True)


class AtomsIndexPrioritizeOptions(StrictSerializer):
    limit = serializers.IntegerField(required=False, min_value=1, max_value=PRIORITIZE_MAX,
                                     help_text="The most refs this call may take; default 256.")


class AtomsIndexPrioritize(StrictSerializer):
    binding = binding_field()
    refs = ref_list(allow_empty=True, max_length=PRIORITIZE_MAX)
    options = AtomsIndexPrioritizeOptions(required=False, allow_null=True)


# index/status reads nothing from its body but that it is a JSON object (or no body at all),
# so the schema does not refuse unknown fields either (docs/atoms.md "Request schemas").
INDEX_STATUS = {"application/json": {
    "type": "object", "properties": {}, "additionalProperties": True,
    "description": "Optional; any JSON object, whose fields are ignored.",
}}
