"""Fields and forms the tenant pages share (docs/architecture.md "How a request flows": pages
validate with Django forms).

Page forms only read what the page posted; the rules about the values (a known user, a
value's size, a memory entry's text) stay in the services, which judge them exactly as for
the API. So most fields here are lenient: a missing or tampered value cleans to its empty
value and the page answers as if it had not been sent, as `int_or_none` does for a query
parameter (tenants/ui_request.py).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import ProhibitNullCharactersValidator
from django.http import QueryDict

from tenants.ui_request import int_or_none


class PostedText(forms.CharField):
    """Text as it was posted, "" when absent. Not stripped unless asked (`strip=True`), and
    U+0000 is not refused here: what a text may hold is the service's rule."""

    def __init__(self, *, strip: bool = False, **kwargs: Any) -> None:
        super().__init__(required=False, strip=strip, **kwargs)
        self.validators = [v for v in self.validators if not isinstance(v, ProhibitNullCharactersValidator)]


class OptionalInteger(forms.IntegerField):
    """An integer, or None when absent, empty, not a number or out of range (a stale or
    tampered form: the page says what it says for a missing value)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, **kwargs)

    def to_python(self, value: Any) -> int | None:
        # int_or_none, not IntegerField's parsing (which also takes "5.0"): the pages always read it so.
        return int_or_none(value if isinstance(value, str) else None)

    def clean(self, value: Any) -> int | None:
        try:
            return super().clean(value)
        except ValidationError:
            return None


class PostedList(forms.Field):
    """Every value of a repeated field (checkboxes of one name), in the order sent."""

    widget = forms.MultipleHiddenInput

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, **kwargs)

    def to_python(self, value: Any) -> list[str]:
        return [str(item) for item in value or ()]


def first_error(form: forms.Form) -> str:
    """The first refusal of an invalid form, in field order: a page shows one notice."""
    return next(str(message) for name in (*form.fields, "__all__") for message in form.errors.get(name, []))


class LenientForm(forms.Form):
    """A form none of whose fields refuses a value (PostedText, OptionalInteger, PostedList,
    BooleanField(required=False)): reading it always succeeds."""

    @classmethod
    def read(cls, data: QueryDict, **kwargs: Any) -> dict[str, Any]:
        form = cls(data, **kwargs)
        if not form.is_valid():  # a field that can refuse was added to a lenient form
            raise ValueError(f"{cls.__name__} refused a value: {form.errors.as_text()}")
        return form.cleaned_data


class ReasonForm(LenientForm):
    """A decision's optional reason (rejecting or restoring), trimmed."""

    reason = PostedText(strip=True)
