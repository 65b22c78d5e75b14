"""Strict request fields: the server refuses exactly what the OpenAPI schema refuses.

DRF's stock fields coerce: `CharField` turns `0` into `"0"`, `IntegerField` turns `"12"`
(and `12.0`) into `12`, `BooleanField` turns `"true"`, `"yes"` and `1` into `True`, and a
`Serializer` silently drops fields it does not know. A client that sends the wrong type or
misspells a field then gets a 200 and a stored value it did not mean, while the schema
says the request is invalid. These classes keep JSON types as they are (docs/api.md
"Conventions"):

- `StrictCharField`, `StrictIntegerField`, `StrictBooleanField`, `StrictChoiceField`
  accept only a JSON string, integer (not a boolean, not `12.0`), boolean, and a string
  among the choices;
- `StrictSerializer` refuses unknown body fields (each named in the one 400
  `INVALID_REQUEST`), and its request component in the schema says
  `additionalProperties: false` (see `StrictSerializerExtension`);
- `QueryParams` validates a query string: only the declared parameters, each a string
  (query values are always strings; `QueryIntegerField` accepts plain decimal digits only).

`null` needs no class of its own: DRF refuses it unless a field says `allow_null=True`,
and then the schema says `nullable: true`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail, ValidationError
from rest_framework.request import Request

UNKNOWN_FIELD = "Unknown field."
UNKNOWN_PARAMETER = "Unknown query parameter."


class StrictCharField(serializers.CharField):
    """A JSON string; numbers and booleans are refused, not turned into text."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer; `"12"`, `12.0` and `true` are refused."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """`true` or `false`; `"true"`, `1` and `"yes"` are refused."""

    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid", input=data)
        return data


class StrictChoiceField(serializers.ChoiceField):
    """One of the string choices; DRF's own would match `1` against a choice `"1"`."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid_choice", input=data)
        return super().to_internal_value(data)


@extend_schema_field({"type": "object", "additionalProperties": True})
class JSONObjectField(serializers.JSONField):
    """A JSON object of free form (its own validator checks the inside); not `null`, not a list."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValidationError("Expected a JSON object.", code="invalid")
        return super().to_internal_value(data)


class QueryIntegerField(serializers.IntegerField):
    """An integer in a query string: decimal digits only (`int()` would also take `" 12"`,
    `"+12"` and `"1_000"`, and DRF's field `"12.0"`)."""

    _DIGITS = re.compile(r"-?[0-9]{1,18}")

    def to_internal_value(self, data: Any) -> int:
        if not isinstance(data, str) or not self._DIGITS.fullmatch(data):
            self.fail("invalid")
        return super().to_internal_value(data)


def distinct_names(values: list[Any]) -> None:
    """A list validator: no repeats. The schema says `uniqueItems: true` for its field."""
    if len(set(values)) != len(values):
        raise ValidationError("Names must not repeat.")


def _unknown_errors(data: Any, known: set[str], message: str) -> dict[str, list[ErrorDetail]]:
    if not isinstance(data, Mapping):
        return {}
    return {str(name): [ErrorDetail(message, code="unknown")] for name in data if name not in known}


class StrictSerializer(serializers.Serializer):
    # A request body whose unknown fields are refused together with any other problem.
    # (A comment, not a docstring: drf-spectacular would copy a docstring into the
    # description of every component built on this class.)

    unknown_message: str = UNKNOWN_FIELD

    def to_internal_value(self, data: Any) -> Any:
        known = {name for name, field in self.fields.items() if not field.read_only}
        unknown = _unknown_errors(data, known, self.unknown_message)
        try:
            value = super().to_internal_value(data)
        except ValidationError as exc:
            if unknown and isinstance(exc.detail, dict):
                raise ValidationError({**exc.detail, **unknown}) from exc
            raise
        if unknown:
            raise ValidationError(unknown)
        return value


_STRICT_FOR = {
    serializers.CharField: StrictCharField,
    serializers.IntegerField: StrictIntegerField,
    serializers.BooleanField: StrictBooleanField,
}


class StrictModelSerializer(serializers.ModelSerializer):
    # A ModelSerializer whose generated fields are the strict ones (model fields with
    # choices get `StrictChoiceField`). Fields declared by hand must be strict themselves.

    serializer_field_mapping = {
        model_field: _STRICT_FOR.get(field, field)
        for model_field, field in serializers.ModelSerializer.serializer_field_mapping.items()
    }
    serializer_choice_field = StrictChoiceField


COERCING_FIELDS: tuple[type[serializers.Field], ...] = (
    serializers.CharField, serializers.IntegerField, serializers.BooleanField, serializers.ChoiceField,
    serializers.FloatField, serializers.DecimalField,
)
STRICT_FIELDS: tuple[type[serializers.Field], ...] = (
    StrictCharField, StrictIntegerField, StrictBooleanField, StrictChoiceField, QueryIntegerField, JSONObjectField,
)


def coercing_fields(serializer: serializers.Serializer) -> list[str]:
    """Names of writable fields that would coerce their input (a stock DRF scalar field)."""
    return [
        name for name, field in serializer.fields.items()
        if not field.read_only and isinstance(field, COERCING_FIELDS) and not isinstance(field, STRICT_FIELDS)
    ]


class QueryParams(StrictSerializer):
    # The query string of one endpoint: unknown parameters are refused, and a parameter
    # given twice is refused rather than silently reduced to one value.

    unknown_message = UNKNOWN_PARAMETER

    @classmethod
    def parse(cls, request: Request) -> dict[str, Any]:
        params = request.query_params
        repeated = {name: [ErrorDetail("Give this parameter once.", code="invalid")]
                    for name in params if len(params.getlist(name)) > 1}
        if repeated:
            raise ValidationError(repeated)
        serializer = cls(data={name: params[name] for name in params})
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)


# What a page cursor looks like (the characters of base64 and of django.core.signing's
# tokens); anything else is refused before decoding. docs/api.md "Pagination".
CURSOR_RE = r"^[A-Za-z0-9+/=_.:-]{1,4096}$"


def cursor_field() -> StrictCharField:
    return StrictCharField(required=False, help_text="The cursor of the previous page's answer.",
                           validators=[RegexValidator(CURSOR_RE, "The cursor is not valid.")])


class PageQuery(QueryParams):
    cursor = cursor_field()


def refuse_unknown(data: Mapping[str, Any], known: set[str]) -> None:
    """For bodies a view checks by hand (its own codes for values): unknown fields are
    refused like StrictSerializer refuses them."""
    if unknown := _unknown_errors(data, known, UNKNOWN_FIELD):
        raise ValidationError(unknown)


class StrictSerializerExtension(OpenApiSerializerExtension):
    """Request components of strict serializers say `additionalProperties: false`, so
    the schema refuses unknown fields exactly as the server does. Responses stay open:
    clients should ignore fields they do not know, so new response fields are not a
    breaking change."""

    target_class = StrictSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        schema = auto_schema._map_basic_serializer(self.target, direction)
        if direction == "request":
            schema["additionalProperties"] = False
            fields = self.target.fields if hasattr(self.target, "fields") else self.target().fields
            for name, field in fields.items():
                prop = schema.get("properties", {}).get(name)
                if prop is None or not isinstance(field, (serializers.ListField, serializers.ListSerializer)):
                    continue
                # drf-spectacular states neither of these list rules, which the server enforces.
                if not field.allow_empty:
                    prop.setdefault("minItems", 1)
                max_length = getattr(field, "max_length", None)
                if max_length is not None:
                    prop.setdefault("maxItems", max_length)
                if distinct_names in field.validators:
                    prop["uniqueItems"] = True
        return schema
