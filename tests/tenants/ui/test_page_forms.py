"""The page forms' lenient fields (tenants/forms.py): a checkbox is ticked only by "on"."""

from __future__ import annotations

import pytest
from django import forms

from tenants.forms import Ticked


class Box(forms.Form):
    box = Ticked()


class Confirm(forms.Form):
    confirm = Ticked(required=True)


@pytest.mark.parametrize(("posted", "ticked"), [({"box": "on"}, True), ({}, False), ({"box": ""}, False),
                                                ({"box": "0"}, False), ({"box": "off"}, False),
                                                ({"box": "true"}, False)])
def test_a_box_is_ticked_only_by_on(posted, ticked):
    form = Box(posted)
    assert form.is_valid() and form.cleaned_data["box"] is ticked


@pytest.mark.parametrize("value", ["0", "off", "no", ""])
def test_a_required_box_refuses_anything_but_on(value):
    assert not Confirm({"confirm": value}).is_valid()
    assert Confirm({"confirm": "on"}).is_valid()
