"""create_receipt stores its row with one plain INSERT (atoms.services.receipts._insert): the
row reads back as the ORM would have stored it, on SQLite and PostgreSQL alike."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from atoms.models import Receipt
from atoms.principal import Principal, resolve_binding
from atoms.services.receipts import create_receipt
from tests.atoms.api.helpers import create
from tests.atoms.api.test_read import ok_read


def _column(receipt_id: str) -> object:
    with connection.cursor() as cursor:
        cursor.execute('SELECT "manifest" FROM "atoms_receipt" WHERE "id" = %s', [receipt_id])
        return cursor.fetchone()[0]


def test_a_read_receipt_row_equals_what_the_orm_stores(I) -> None:
    I.ok_write(create("a", "grüner Tee \u2028 \"quoted\" tea"), create("b", "tea pot", links={"about": {"local": "a"}}))
    result = ok_read(I, {"query": "tea"})
    stored = Receipt.objects.get(id=result["receipt"]["id"])
    assert (stored.kind, stored.principal, stored.key_id, stored.tenant_id) == (
        "read", I.key.public_id, I.key.pk, I.key.tenant_id)
    assert result["receipt"] == {"id": stored.id, "state": f"seq:{stored.state_seq}",
                                 "signalDigest": stored.signal_digest}
    assert stored.manifest["presentation"]["units"] and stored.manifest["id"] == stored.id
    twin = Receipt.objects.create(id="receipt:twin", tenant=stored.tenant, principal=stored.principal, key=stored.key,
                                  kind=stored.kind, state_seq=stored.state_seq, signal_digest=stored.signal_digest,
                                  manifest=stored.manifest, created_at=stored.created_at)
    assert _column(stored.id) == _column(twin.id)  # the same stored text (SQLite) or jsonb value


def test_create_receipt_is_one_statement_and_returns_a_saved_row(I) -> None:
    binding = resolve_binding(Principal.for_key(I.key), None)
    with CaptureQueriesContext(connection) as captured:
        receipt = create_receipt(binding=binding, kind="search", signal={"q": "é"}, reads=[], units=[],
                                 observations=None, state_seq=3, index_generation=0)
    assert len(captured.captured_queries) == 1
    assert not receipt._state.adding and receipt._state.db == "default"
    assert Receipt.objects.get(id=receipt.id).manifest == receipt.manifest
