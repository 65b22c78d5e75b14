"""Request-body schemas of search, read and inspect (docs/atoms.md "Recall" and "Decisions").

Only the OpenAPI description: the parse functions of atoms/api/search.py, read.py and
inspect.py validate the bodies, with the validators of atoms/services/read_options.py and
budget.py (see atoms/api/schemas_common.py).
"""

from __future__ import annotations

from rest_framework import serializers

from atoms.api.schemas_common import NOT_BLANK_PATTERN, TEXT_MAX, Budgeted, binding_field, pattern_field, ref_field
from memoryhub.api.strict import StrictSerializer

MAX_LIMIT = 10_000
MAX_DEPTH = 32
MAX_TOKENS = 1_000_000
MAX_OBSERVATIONS = 256


class AtomsSearchOptions(Budgeted):
    # search and read share these (atoms/services/budget.py parse_paging).
    limit = serializers.IntegerField(required=False, min_value=1, max_value=MAX_LIMIT, help_text="The page size.")
    depth = serializers.IntegerField(required=False, allow_null=True, min_value=0, max_value=MAX_DEPTH,
                                     help_text="Graph depth; default the tenant's retrieval.depth.")
    cursor = serializers.CharField(required=False, allow_null=True, allow_blank=True, trim_whitespace=False,
                                   help_text="The previous page's cursor.")


class AtomsSearch(StrictSerializer):
    binding = binding_field()
    query = pattern_field(NOT_BLANK_PATTERN, help_text="A non-blank text.")
    options = AtomsSearchOptions(required=False, allow_null=True)


def _state_text() -> serializers.CharField:
    return serializers.CharField(required=False, max_length=TEXT_MAX, allow_blank=True, trim_whitespace=False)


class AtomsState(StrictSerializer):
    # docs/atoms.md "Recall": at least one text must be non-blank (the service checks that).
    query = _state_text()
    context = _state_text()  # type: ignore[assignment]  # a declared field: DRF's metaclass takes it off the class
    thought = _state_text()
    observations = serializers.ListField(child=serializers.CharField(max_length=TEXT_MAX, allow_blank=True,
                                                                     trim_whitespace=False),
                                         required=False, allow_empty=True, max_length=MAX_OBSERVATIONS)
    signal = _state_text()


class AtomsReadOptions(AtomsSearchOptions):
    tokens = serializers.IntegerField(required=False, min_value=1, max_value=MAX_TOKENS,
                                      help_text="UTF-8 bytes of the render; default 4096.")


class AtomsRead(StrictSerializer):
    binding = binding_field()
    state = AtomsState()
    options = AtomsReadOptions(required=False, allow_null=True)


class AtomsInspectRange(StrictSerializer):
    start = serializers.IntegerField()
    bytes = serializers.IntegerField(min_value=0)


class AtomsInspectOptions(Budgeted):
    version = serializers.ChoiceField(choices=["observed", "latest"], required=False)
    direction = serializers.ChoiceField(choices=["both", "outgoing", "incoming"], required=False)
    roles = serializers.ListField(child=serializers.CharField(allow_blank=True, trim_whitespace=False),
                                  required=False, allow_null=True, allow_empty=True)
    limit = serializers.IntegerField(required=False, min_value=0, max_value=MAX_LIMIT,
                                     help_text="Neighbours per page; default 20.")
    cursor = serializers.CharField(required=False, allow_null=True, allow_blank=True, trim_whitespace=False)
    range = AtomsInspectRange(required=False, allow_null=True)


class AtomsInspect(StrictSerializer):
    binding = binding_field()
    ref = ref_field()
    options = AtomsInspectOptions(required=False, allow_null=True)
