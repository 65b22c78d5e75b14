"""No Atom endpoint answers a malformed body with a 500: always the error shape, 4xx."""

from __future__ import annotations

import pytest

from tests.conftest import error_of

ENDPOINTS = ["write", "read", "search", "inspect", "observe", "manifest", "uses", "uses/reset", "purge"]
BODIES = [b"", b"[]", b"null", b'"x"', b"42", b"{", b'{"binding": 5}', b'{"options": []}',
          b'{"options": {"budget": {"maxAtoms": -1}}}', b'{"state": {"query": 5}}', b'{"ref": 7}',
          b'{"changes": [null]}', b'{"input": {"payloadDigest": 1}}', b'{"refs": "x"}', b'{"atomId": []}',
          # An op that is no string (an object or a list cannot even be looked up by name).
          b'{"changes": [{"id": "a", "op": {}}]}', b'{"changes": [{"id": "a", "op": []}]}']


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_malformed_bodies_get_a_client_error(acme, make_key, client_for, endpoint):
    client = client_for(make_key(acme, "admin")[1])
    for body in BODIES:
        response = client.generic("POST", f"/api/v1/atoms/{endpoint}", body, content_type="application/json")
        assert response.status_code < 500, (endpoint, body, response.content[:300])
        if response.status_code >= 400:
            error_of(response)
