"""Request-body schemas shared by the Atom endpoints: the binding, the budget, id shapes.

These serializers only describe the bodies in the OpenAPI schema; the parse functions of
atoms/api/<endpoint>.py validate every body into a typed command and stay the source of
truth (docs/atoms.md "Request schemas", docs/architecture.md "Typed services"). Each rule
stated here is one the parser enforces: a field it reads with `body.get(...)` and treats
`null` as absent is optional and nullable; an object whose unknown keys it refuses is a
`StrictSerializer` (`additionalProperties: false`).
Where the service checks bytes (UTF-8 lengths), the schema states the same number as a
length in characters, which is never stricter: a string of more characters also has more
bytes. Field names are the JSON names (camelCase).
"""

from __future__ import annotations

from typing import Any

from django.core.validators import RegexValidator
from rest_framework import serializers

from atoms.models import OriginKind
from memoryhub.api.strict import StrictSerializer, distinct_names

UUID4 = "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
# Issued ids are `<kind>:<uuid4>` (atoms/core/ids.py): anything else names nothing, and the
# services answer it like an unknown id (INVALID_REF or INVALID_INPUT).
REF_PATTERN = f"^ref:{UUID4}$"
RECEIPT_PATTERN = f"^receipt:{UUID4}$"
INPUT_PATTERN = f"^input:{UUID4}$"
POLICY_PATTERN = "^[A-Za-z0-9:._-]{1,128}$"
# A role or orderKey: no control character (Unicode category Cc).
LABEL_PATTERN = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$"
# Not blank: one character that is not whitespace (str.strip() would keep it).
NOT_BLANK_PATTERN = "\\S"
ID_MAX = 512  # the id rule: 1..512 UTF-8 bytes (docs/api.md "Conventions")
TEXT_MAX = 65_536  # an atom's text and each state text: at most 65,536 UTF-8 bytes
GENERATED_ORIGINS = [kind.value for kind in OriginKind if kind != OriginKind.SOURCE]


def pattern_field(pattern: str, **kwargs: Any) -> serializers.CharField:
    return serializers.CharField(validators=[RegexValidator(pattern)], trim_whitespace=False, **kwargs)


def ref_field(**kwargs: Any) -> serializers.CharField:
    return pattern_field(REF_PATTERN, help_text=kwargs.pop("help_text", "A ref issued to this key."), **kwargs)


def id_field(**kwargs: Any) -> serializers.CharField:
    """The id rule: a non-empty string of at most 512 UTF-8 bytes."""
    return serializers.CharField(min_length=1, max_length=ID_MAX, trim_whitespace=False, **kwargs)


def label_field(**kwargs: Any) -> serializers.CharField:
    return pattern_field(LABEL_PATTERN, max_length=ID_MAX, **kwargs)


def ref_list(**kwargs: Any) -> serializers.ListField:
    return serializers.ListField(child=ref_field(), **kwargs)


class AtomsBinding(StrictSerializer):
    # docs/atoms.md "Decisions". Every field may be null, which means absent.
    key = serializers.CharField(required=False, allow_null=True, allow_blank=True, trim_whitespace=False,
                                help_text="The key to act as: the caller itself, or (where the endpoint allows it, "
                                          "for host and admin keys) another active key of the tenant.")
    writePolicy = pattern_field(POLICY_PATTERN, required=False, allow_null=True)
    readPolicies = serializers.ListField(child=serializers.CharField(allow_blank=True, trim_whitespace=False),
                                         min_length=1,
                                         validators=[distinct_names], required=False, allow_null=True)
    generatedOrigin = serializers.ChoiceField(choices=GENERATED_ORIGINS, required=False, allow_null=True,
                                              help_text="Agent keys only; default derived.")


def binding_field(*, required: bool = False) -> AtomsBinding:
    return AtomsBinding(required=required, allow_null=True)


class AtomsBudget(StrictSerializer):
    # docs/atoms.md "Recall": a value above its ceiling is lowered to it, so there is no maximum.
    maxAtoms = serializers.IntegerField(required=False, min_value=0)
    maxCandidates = serializers.IntegerField(required=False, min_value=0)
    maxBytes = serializers.IntegerField(required=False, min_value=0)
    maxContextTokens = serializers.IntegerField(required=False, min_value=0)
    maxEvaluationWork = serializers.IntegerField(required=False, min_value=0)
    maxPackingWork = serializers.IntegerField(required=False, min_value=0)


class Budgeted(StrictSerializer):
    # The options every budgeted call shares; subclasses add their own.
    budget = AtomsBudget(required=False, allow_null=True)
    deadline = serializers.IntegerField(required=False, allow_null=True,
                                        help_text="Epoch milliseconds; a deadline already past is BUDGET_EXHAUSTED.")


class AtomsSpanSchema(StrictSerializer):
    # A cited byte span [start, end) of a source atom's text; defaults 0 and its length.
    ref = ref_field()
    start = serializers.IntegerField(required=False, allow_null=True, min_value=0)
    end = serializers.IntegerField(required=False, allow_null=True, min_value=0)
