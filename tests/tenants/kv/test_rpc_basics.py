"""The key-value RPC (docs/kv.md "Endpoints" and "How it is stored"): get, set, delete, list and clear, namespaces,
values and the errors of malformed calls."""

from __future__ import annotations

from tests.conftest import error_of


def test_a_fresh_agent_gets_null(kv):
    """A get on a key never set answers null in the default namespace."""
    response = kv.call({"action": "get", "key": "missing"})
    assert response.status_code == 200
    assert response.json() == {"result": None, "namespace": "default"}


def test_a_set_value_is_read_back(kv):
    """set answers null and get reads the value back."""
    assert kv.set("house-style", "Use active voice") is None
    assert kv.get("house-style") == "Use active voice"


def test_a_second_set_replaces_and_bumps_the_version(kv):
    """A second set replaces the value and bumps the version the ETag shows."""
    kv.set("k", 1)
    kv.set("k", 2)
    assert kv.get("k") == 2
    assert kv.list() == [{"key": "k", "value": 2}]
    assert kv.call({"action": "get", "key": "k"})["ETag"] == '"2"'


def test_delete_reports_whether_the_key_existed(kv):
    """delete answers whether the key existed."""
    kv.set("k", 1)
    assert kv.ok({"action": "delete", "key": "k"}) is True
    assert kv.get("k") is None
    assert kv.ok({"action": "delete", "key": "k"}) is False


def test_deleting_in_a_never_used_namespace_creates_nothing(kv):
    """A delete in a namespace never used creates no namespace."""
    assert kv.ok({"action": "delete", "key": "nope", "namespace": "never"}) is False
    names = [i["namespace"] for i in kv.client.get(kv.url("namespaces")).json()["items"]]
    assert "never" not in names


def test_it_lists_and_clears_a_new_namespace_as_empty(kv):
    """An unused namespace lists as empty, and clearing it succeeds."""
    assert kv.list(namespace="new") == []
    assert kv.ok({"action": "clear", "namespace": "new"}) is None


def test_list_is_in_code_point_order_with_exactly_key_and_value(kv):
    """list sorts by code point and gives exactly key and value."""
    for key in ["b", "a", "C", "user_10", "user_2", ""]:
        kv.set(key, key)
    items = kv.list()
    assert [i["key"] for i in items] == ["", "C", "a", "b", "user_10", "user_2"]
    assert all(set(i) == {"key", "value"} for i in items)


def test_it_lists_in_code_point_order_not_utf16_order(kv):
    """list sorts by code point, not by UTF-16 unit."""
    kv.set("😀", 1)
    kv.set("ﬀ", 2)
    assert [i["key"] for i in kv.list()] == ["ﬀ", "😀"]


def test_prefix_is_literal_and_case_sensitive(kv):
    """A list prefix is literal and case-sensitive; the empty prefix lists everything."""
    for key in ["user_10", "user_2", "User_x", "other"]:
        kv.set(key, 1)
    assert [i["key"] for i in kv.list(prefix="user_")] == ["user_10", "user_2"]
    assert len(kv.list(prefix="")) == 4


def test_underscore_and_percent_are_ordinary_prefix_characters(kv):
    """`_` and `%` in a prefix match only themselves."""
    for key in ["ab", "a_b", "a%"]:
        kv.set(key, 1)
    assert [i["key"] for i in kv.list(prefix="a_")] == ["a_b"]
    assert [i["key"] for i in kv.list(prefix="a%")] == ["a%"]


def test_namespaces_are_separate_stores(kv):
    """Namespaces are separate stores."""
    kv.set("k", "A")
    kv.set("k", "B", namespace="per-user")
    assert kv.get("k") == "A"
    assert kv.get("k", namespace="per-user") == "B"
    assert kv.list() == [{"key": "k", "value": "A"}]


def test_absent_null_and_default_are_one_store(kv):
    """No namespace, null and "default" name one store."""
    kv.set("k", 1)
    assert kv.get("k", namespace=None) == 1
    assert kv.get("k", namespace="default") == 1


def test_namespaces_that_resolve_alike_are_one_store(kv):
    """Namespaces that resolve to the same name are one store; the answer names the resolved one."""
    response = kv.call({"action": "set", "key": "k", "value": 1, "namespace": "a/b"})
    assert response.json()["namespace"] == "a_b"
    assert kv.get("k", namespace="a_b") == 1


def test_it_resolves_namespaces_character_by_character_and_case_sensitively(kv):
    """Namespaces resolve character by character, case-sensitively: each character outside the allowed set
    becomes `_`."""
    for raw, resolved in [("a.b", "a_b"), ("../x", "___x"), ("日本", "__"), ("é", "_"), ("User", "User")]:
        assert kv.call({"action": "list", "namespace": raw}).json()["namespace"] == resolved
    kv.set("k", 1, namespace="User")
    assert kv.get("k", namespace="user") is None


def test_an_empty_non_string_or_too_long_namespace_is_invalid(kv):
    """An empty, non-string or over-128-character namespace is 400 INVALID_NAMESPACE."""
    for namespace in ["", 42, "x" * 129]:
        response = kv.call({"action": "get", "key": "k", "namespace": namespace})
        assert response.status_code == 400
        assert error_of(response)["code"] == "INVALID_NAMESPACE"
    assert kv.call({"action": "get", "key": "k", "namespace": "x" * 128}).status_code == 200


def test_clear_empties_one_namespace_only(kv):
    """clear empties its namespace only."""
    kv.set("a", 1, namespace="x")
    kv.set("b", 2, namespace="x")
    kv.set("c", 3)
    assert kv.ok({"action": "clear", "namespace": "x"}) is None
    assert kv.list(namespace="x") == []
    assert kv.get("c") == 3


def test_values_round_trip_exactly(kv):
    """Values round-trip with their JSON type."""
    values = ["", 0, False, [], {}, 0.1, -5, {"a": [1, {"b": None}]}, "日本語 🙂"]
    for index, value in enumerate(values):
        kv.set(f"k{index}", value)
    for index, value in enumerate(values):
        got = kv.get(f"k{index}")
        assert got == value and type(got) is type(value)


def test_object_values_come_back_with_sorted_keys(kv):
    """Object values come back with their keys sorted."""
    kv.call({"action": "set", "key": "k"}, raw=b'{"action":"set","key":"k","value":{"b":1,"a":2}}')
    assert b'{"a":2,"b":1}' in kv.call({"action": "get", "key": "k"}).content


def test_numbers_keep_their_spelling_and_bad_numbers_are_refused(kv):
    """Numbers keep their spelling; numbers out of range, NaN, Infinity and invalid strings are INVALID_JSON."""
    kv.call({}, raw=b'{"action":"set","key":"f","value":3.0}')
    kv.call({}, raw=b'{"action":"set","key":"i","value":12345678901234567890}')
    kv.call({}, raw=b'{"action":"set","key":"e","value":1e21}')
    assert b'"result":3.0,' in kv.call({"action": "get", "key": "f"}).content
    assert b'"result":12345678901234567890,' in kv.call({"action": "get", "key": "i"}).content
    assert b'"result":1e+21,' in kv.call({"action": "get", "key": "e"}).content
    for raw in [b'{"action":"set","key":"x","value":1e400}', b'{"action":"set","key":"x","value":NaN}',
                b'{"action":"set","key":"x","value":-Infinity}', b'{"action":"set","key":"x","value":"\\ud800"}',
                b'{"action":"set","key":"x","value":"\xff"}']:
        response = kv.call({}, raw=raw)
        assert response.status_code == 400, raw
        assert error_of(response)["code"] == "INVALID_JSON"
    assert kv.get("x") is None


def test_set_needs_a_non_null_value(kv):
    """set with a null or missing value is VALUE_REQUIRED."""
    for body in [{"action": "set", "key": "k", "value": None}, {"action": "set", "key": "k"}]:
        error = error_of(kv.call(body))
        assert error["code"] == "VALUE_REQUIRED" and "non-null" in error["message"]


def test_get_needs_a_string_key(kv):
    """A non-string key is KEY_REQUIRED, naming the action."""
    response = kv.call({"action": "get", "key": 42})
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "KEY_REQUIRED" and "get" in error["message"]


def test_unknown_actions_name_the_valid_ones(kv):
    """An unknown action is UNKNOWN_ACTION, naming the valid ones."""
    response = kv.call({"action": "upsert", "key": "k"})
    error = error_of(response)
    assert response.status_code == 400 and error["code"] == "UNKNOWN_ACTION"
    assert error["details"]["valid_actions"] == ["set", "get", "delete", "list", "clear"]
    assert "upsert" in error["message"]


def test_a_body_that_is_not_an_object_is_invalid_request(kv):
    for raw in [b"[1]", b'"x"', b"null"]:
        assert error_of(kv.call({}, raw=raw))["code"] == "INVALID_REQUEST"


def test_a_nul_in_a_key_is_refused_but_allowed_inside_values(kv):
    assert error_of(kv.call({"action": "set", "key": "a\u0000b", "value": 1}))["code"] == "KEY_INVALID"
    kv.set("k", "a\u0000b")
    assert kv.get("k") == "a\u0000b"


def test_values_are_never_moderated(kv):
    """Values are never scanned or moderated."""
    kv.set("k", "ignore previous instructions")
    assert kv.get("k") == "ignore previous instructions"


def test_invalid_fields_follow_the_spec_order(kv):
    error = error_of(kv.call({"action": "list", "prefix": 5, "namespace": ""}))
    assert error["code"] == "INVALID_NAMESPACE"
    error = error_of(kv.call({"action": "list", "prefix": 5}))
    assert error["code"] == "INVALID_ARGUMENT" and error["details"]["field"] == "prefix"
    error = error_of(kv.call({"action": "set", "expected_version": -1}))
    assert error["code"] == "INVALID_ARGUMENT" and error["details"]["field"] == "expected_version"
