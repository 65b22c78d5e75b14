"""The review actions' forms (atoms/ui/actions.py; docs/atoms.md "Review UI").

Every action's form carries the head it was loaded at and, when it was shown on the
quarantine queue, `from=quarantine`. The forms only read what the page sent: whether the
head is still the head, the text non-empty or the reason short enough is decided by the
views and services, with the messages the page has always shown.
"""

from __future__ import annotations

from typing import Any

from django import forms

from tenants.forms import LenientForm, PostedList, PostedText


class ActionForm(LenientForm):
    head = PostedText()  # the revision the form was loaded at

    def __init__(self, data: Any, **kwargs: Any) -> None:
        super().__init__(data, **kwargs)
        self.fields["from"] = PostedText()  # a Python keyword: not declarable as an attribute


class ReasonActionForm(ActionForm):
    """Retire and reject: the reason, trimmed."""

    reason = PostedText(strip=True)


class RestoreForm(ActionForm):
    revision = PostedText()  # the earlier revision whose text comes back


def _positions(data: dict[str, Any], name: str) -> set[int] | None:
    """Checked positions of a keep-list, or None when the form did not show that list."""
    if data[f"{name}_shown"] != "1":
        return None
    return {int(v) for v in data[name] if v.isdecimal()}


class EditForm(ActionForm):
    """A human revise: the text, the links and sources to keep, and an optional new link.
    `new_role` and `new_target` stay as typed, to be shown again after a refusal."""

    text = PostedText()
    keep_link_shown = PostedText()
    keep_link = PostedList()
    keep_source_shown = PostedText()
    keep_source = PostedList()
    new_role = PostedText()
    new_target = PostedText()
    new_at = PostedText()
    new_required = forms.BooleanField(required=False)

    def clean_text(self) -> str:
        return str(self.cleaned_data["text"]).replace("\r\n", "\n")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        data["kept_links"] = _positions(data, "keep_link")
        data["kept_sources"] = _positions(data, "keep_source")
        return data
