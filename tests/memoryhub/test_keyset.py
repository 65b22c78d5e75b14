"""The signed keyset cursor (memoryhub/keyset.py): a cursor opens to the position it was
signed with, only under its own salt and scope, and is the same string the listings issued
before they shared the helper (a link already handed out keeps working)."""

from __future__ import annotations

import pytest
from django.core import signing

from memoryhub.keyset import BadCursor, open_cursor, sign_cursor

SALT = "tests.keyset"
SCOPE = {"t": 1, "f": {"state": "active"}}


def test_a_cursor_opens_to_its_position():
    assert open_cursor(sign_cursor(["2026-01-31T00:00:00", "ev_1"], salt=SALT), salt=SALT) == ["2026-01-31T00:00:00",
                                                                                              "ev_1"]


def test_a_scoped_cursor_opens_to_its_position_without_the_scope():
    cursor = sign_cursor({"s": 7, "a": "at_1"}, salt=SALT, scope=SCOPE)
    assert open_cursor(cursor, salt=SALT, scope=SCOPE) == {"s": 7, "a": "at_1"}


@pytest.mark.parametrize("other", [{"t": 2, "f": {"state": "active"}}, {"t": 1, "f": {}}])
def test_it_refuses_a_cursor_of_another_scope(other):
    cursor = sign_cursor({"s": 7, "a": "at_1"}, salt=SALT, scope=SCOPE)
    with pytest.raises(BadCursor) as refused:
        open_cursor(cursor, salt=SALT, scope=other)
    assert refused.value.reason == "scope"


def test_it_refuses_an_edited_a_forged_or_another_salts_cursor():
    cursor = sign_cursor({"s": 7}, salt=SALT, scope=SCOPE)
    forged = signing.dumps({**SCOPE, "s": 1}, salt=SALT, key="not the secret key")
    for bad, salt in [(cursor[:-1] + ("A" if cursor[-1] != "A" else "B"), SALT), (forged, SALT), ("garbage", SALT),
                      (cursor, "tests.other")]:
        with pytest.raises(BadCursor) as refused:
            open_cursor(bad, salt=salt, scope=SCOPE)
        assert refused.value.reason == "unsigned"


def test_a_scoped_cursor_must_be_a_dict_under_its_salt():
    with pytest.raises(BadCursor) as refused:
        open_cursor(sign_cursor(["a", "b"], salt=SALT), salt=SALT, scope=SCOPE)
    assert refused.value.reason == "unsigned"


def test_a_position_may_not_shadow_the_scope():
    with pytest.raises(TypeError):
        sign_cursor({"t": 9}, salt=SALT, scope=SCOPE)


def test_cursors_are_the_strings_the_listings_signed_before():
    # The KV listing (compressed, scope first) and the atom browser (not compressed).
    assert (sign_cursor({"k": "x"}, salt=SALT, scope={"a": 1, "n": "ns", "p": ""})
            == signing.dumps({"a": 1, "n": "ns", "p": "", "k": "x"}, salt=SALT, compress=True))
    assert (sign_cursor({"s": 5, "a": "at_1"}, salt=SALT, scope=SCOPE, compress=False)
            == signing.dumps({**SCOPE, "s": 5, "a": "at_1"}, salt=SALT))
