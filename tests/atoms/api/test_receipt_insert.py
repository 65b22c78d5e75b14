"""create_receipt stores its row with one plain INSERT (atoms.services.receipts._insert): the
row reads back as the ORM would have stored it, on SQLite and PostgreSQL alike. The row holds
the erase set once, and the manifest endpoint answers it as issued (docs/atoms.md "Decisions")."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from atoms.models import Receipt, Revision
from atoms.principal import Principal, resolve_binding
from atoms.services.receipts import create_receipt, pinned
from tests.atoms.api.helpers import create
from tests.atoms.api.observing import manifest
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


def test_a_search_receipt_stores_its_erase_set_once_and_its_manifest_answers_it_whole(I, X) -> None:
    """The row keeps the erase set's pins beyond the acquisition reads only; the manifest
    endpoint answers `reads` as issued: the acquisition reads, then those pins
    (docs/atoms.md "Decisions")."""
    I.ok_write(create("a", "tea leaves"), create("b", "tea pot", links={"about": {"local": "a"}}), create("c", "coffee"))
    receipt_id = I.post("search", {"query": "tea"}).json()["receipt"]["id"]
    stored = Receipt.objects.get(id=receipt_id).manifest
    assert "reads" not in stored and stored["readsBeyondAcquisition"] == []
    reads = stored["acquisition"]["reads"]
    assert {pin["atomId"] for pin in reads} and len(reads) >= 2
    answered = manifest(X, I, receipt=receipt_id).json()
    assert answered["reads"] == reads and "readsBeyondAcquisition" not in answered
    assert {k: v for k, v in answered.items() if k != "reads"} == {
        k: v for k, v in stored.items() if k != "readsBeyondAcquisition"}


def test_presented_pins_beyond_the_reads_follow_them_in_the_answered_erase_set(I, X) -> None:
    """An erase set is the acquisition reads, then each presented revision not among them."""
    I.ok_write(create("a", "tea leaves"), create("b", "tea pot"))
    binding = resolve_binding(Principal.for_key(I.key), None)
    first, second = Revision.objects.filter(tenant=I.key.tenant, is_head=True).order_by("id")[:2]
    view = {"ref": "ref:00000000-0000-4000-8000-000000000001", "text": second.body}
    receipt = create_receipt(binding=binding, kind="search", signal="tea", reads=[first],
                             units=[{"revision": second, "view": view, "display": "body"},
                                    {"revision": first, "view": {**view, "text": first.body}, "display": "body"}],
                             observations=None, state_seq=1)
    stored = Receipt.objects.get(id=receipt.id).manifest
    assert stored["readsBeyondAcquisition"] == [pinned(second)] and stored["acquisition"]["reads"] == [pinned(first)]
    assert manifest(X, I, receipt=receipt.id).json()["reads"] == [pinned(first), pinned(second)]


def test_a_receipt_stored_with_its_reads_is_answered_as_it_was_stored(I, X) -> None:
    """Rows written before the compact form hold `reads` itself."""
    I.ok_write(create("a", "tea leaves"))
    receipt_id = I.post("search", {"query": "tea"}).json()["receipt"]["id"]
    row = Receipt.objects.get(id=receipt_id)
    old = {k: v for k, v in row.manifest.items() if k != "readsBeyondAcquisition"}
    old["reads"] = [*row.manifest["acquisition"]["reads"], {"kind": "pinned", "atomId": "atom:x", "revisionId": "r:x"}]
    Receipt.objects.filter(id=receipt_id).update(manifest=old)
    assert manifest(X, I, receipt=receipt_id).json() == old
