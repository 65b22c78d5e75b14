"""Resource endpoints (docs/kv.md "Endpoints"): addressing awkward keys, ETags and conditional requests, cursors,
summaries and export."""

from __future__ import annotations

from tests.conftest import error_of


def test_awkward_keys_round_trip_through_paths_and_query(kv):
    """Keys with `/`, `%`, spaces or nothing at all round-trip through the path or `…/key?key=`."""
    for key in ["", " ", "a/b", "50%"]:
        kv.set(key, key)
    assert kv.client.get(kv.url("namespaces/default/keys/a%2Fb")).json()["value"] == "a/b"
    assert kv.client.get(kv.url("namespaces/default/keys/a/b")).json()["key"] == "a/b"
    assert kv.client.get(kv.url("namespaces/default/keys/50%25")).json()["value"] == "50%"
    assert kv.client.get(kv.url("namespaces/default/key"), {"key": ""}).json()["value"] == ""
    assert kv.client.get(kv.url("namespaces/default/key"), {"key": " "}).json()["value"] == " "


def test_an_absent_key_is_not_found(kv):
    """GET of an absent key is 404 KEY_NOT_FOUND."""
    response = kv.client.get(kv.url("namespaces/default/keys/nope"))
    assert response.status_code == 404
    assert error_of(response)["code"] == "KEY_NOT_FOUND"


def test_it_puts_with_etags_and_honours_if_match_and_if_none_match(kv):
    """PUT answers 201 then 200 with the version as ETag; a stale If-Match or If-None-Match: * on an existing key
    is 412."""
    url = kv.url("namespaces/default/keys/k")
    first = kv.client.put(url, {"value": 1}, format="json")
    assert (first.status_code, first["ETag"]) == (201, '"1"')
    second = kv.client.put(url, {"value": 2}, format="json")
    assert (second.status_code, second["ETag"]) == (200, '"2"')
    stale = kv.client.put(url, {"value": 3}, format="json", headers={"If-Match": '"1"'})
    assert stale.status_code == 412
    assert error_of(stale) == {"code": "PRECONDITION_FAILED", "message": error_of(stale)["message"],
                               "details": {"current_version": 2}}
    create_only = kv.client.put(url, {"value": 3}, format="json", headers={"If-None-Match": "*"})
    assert create_only.status_code == 412
    good = kv.client.put(url, {"value": 3}, format="json", headers={"If-Match": '"7", "2"'})
    assert good.status_code == 200 and good.json()["value"] == 3 and good.json()["version"] == 3
    assert kv.client.put(kv.url("namespaces/default/keys/new"), {"value": 1}, format="json",
                         headers={"If-Match": "*"}).status_code == 412


def test_a_stale_delete_keeps_the_key(kv):
    """A DELETE with a stale If-Match is 412 and keeps the key; a matching one deletes it."""
    kv.set("k", 1)
    kv.set("k", 2)
    response = kv.client.delete(kv.url("namespaces/default/keys/k"), headers={"If-Match": '"1"'})
    assert response.status_code == 412
    assert kv.get("k") == 2
    assert kv.client.delete(kv.url("namespaces/default/keys/k"), headers={"If-Match": '"2"'}).status_code == 204
    assert kv.client.delete(kv.url("namespaces/default/keys/k")).status_code == 404


def test_a_listing_pages_in_order_without_duplicates(kv):
    """Key pages come in key order, without duplicates, until next_cursor is null."""
    for key in "edcba":
        kv.set(key, key)
    seen, pages, cursor = [], 0, None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        body = kv.client.get(kv.url("namespaces/default/keys"), params).json()
        pages += 1
        seen += [i["key"] for i in body["items"]]
        cursor = body["next_cursor"]
        if cursor is None:
            break
    assert pages == 3 and seen == ["a", "b", "c", "d", "e"]


def test_cursors_are_bound_to_their_listing(kv):
    for key in ["ua", "ub", "uc"]:
        kv.set(key, 1)
    body = kv.client.get(kv.url("namespaces/default/keys"), {"limit": 1, "prefix": "u"}).json()
    other = kv.client.get(kv.url("namespaces/default/keys"), {"cursor": body["next_cursor"], "prefix": "x"})
    assert error_of(other)["code"] == "INVALID_REQUEST"
    garbage = kv.client.get(kv.url("namespaces/default/keys"), {"cursor": "nonsense"})
    assert error_of(garbage)["code"] == "INVALID_REQUEST"
    assert error_of(kv.client.get(kv.url("namespaces/default/keys"), {"limit": 0}))["code"] == "INVALID_REQUEST"


def test_namespace_summaries_count_bytes(kv):
    """Namespace summaries count keys and bytes."""
    kv.set("k", "v")
    assert kv.client.get(kv.url("namespaces")).json()["items"][0] | {"updated_at": None} == {
        "namespace": "default", "keys": 1, "bytes": 4, "updated_at": None}


def test_export_matches_the_original_file_format(kv):
    """export writes the original's file format: sorted keys, two-space indent, raw non-ASCII."""
    kv.set("b", 1)
    kv.set("a", {"y": 2, "x": 1})
    response = kv.client.get(kv.url("namespaces/default/export"))
    assert response.content == b'{\n  "a": {\n    "x": 1,\n    "y": 2\n  },\n  "b": 1\n}'
    assert response["Content-Disposition"] == 'attachment; filename="default.json"'
    kv.ok({"action": "clear"})
    assert kv.client.get(kv.url("namespaces/default/export")).content == b"{}"
    kv.set("é", "日本")
    assert kv.client.get(kv.url("namespaces/default/export")).content.decode() == '{\n  "é": "日本"\n}'


def test_entries_carry_their_writer_and_times(kv):
    response = kv.client.put(kv.url("namespaces/a.b/keys/k"), {"value": [1]}, format="json")
    body = response.json()
    assert body["namespace"] == "a_b" and body["key"] == "k" and body["value"] == [1]
    assert body["created_by"].startswith("k_") and body["last_run_id"] is None
    assert body["created_at"].endswith("Z")


def test_clear_reports_the_count(kv):
    kv.set("a", 1)
    kv.set("b", 1)
    response = kv.client.delete(kv.url("namespaces/default"))
    assert response.json() == {"namespace": "default", "deleted": 2}
    assert kv.client.delete(kv.url("namespaces/default")).json()["deleted"] == 0


def test_put_validates_like_set(kv):
    assert error_of(kv.client.put(kv.url("namespaces/default/keys/k"), {"value": None}, format="json"))["code"] == "VALUE_REQUIRED"
    assert error_of(kv.client.put(kv.url("namespaces/default/keys/k"), [1], format="json"))["code"] == "INVALID_REQUEST"


# Strictness (docs/api.md "Conventions"): unknown fields and filters refused, no coercion.

def test_a_put_refuses_unknown_fields(kv):
    from tenants.models import KvEntry

    response = kv.client.put(kv.url("namespaces/default/keys/k"), {"value": 1, "namespace": "other"}, format="json")
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "INVALID_REQUEST"
    assert [e["path"] for e in error["details"]["errors"]] == ["namespace"]
    assert not KvEntry.objects.exists()


def test_the_key_page_refuses_unknown_filters(kv):
    kv.set("a", 1)
    response = kv.client.get(kv.url("namespaces/default/keys") + "?startswith=a")
    assert response.status_code == 400
    assert [e["path"] for e in error_of(response)["details"]["errors"]] == ["startswith"]


def test_the_key_page_limit_is_plain_digits(kv):
    kv.set("a", 1)
    for bad in ("%2B5", "5.0", "1_0", "%205", "0", "1001", "ten"):
        response = kv.client.get(kv.url("namespaces/default/keys") + f"?limit={bad}")
        assert response.status_code == 400, bad
        assert [e["path"] for e in error_of(response)["details"]["errors"]] == ["limit"], bad
    assert kv.client.get(kv.url("namespaces/default/keys") + "?limit=5").status_code == 200


def test_the_query_addressed_key_refuses_other_parameters(kv):
    kv.set("a", 1)
    response = kv.client.get(kv.url("namespaces/default/key") + "?key=a&version=1")
    assert response.status_code == 400
    assert [e["path"] for e in error_of(response)["details"]["errors"]] == ["version"]
    assert kv.client.get(kv.url("namespaces/default/key") + "?key=a").status_code == 200
    assert kv.client.get(kv.url("namespaces/default/key") + "?key=%20a%20").status_code == 404  # never trimmed
