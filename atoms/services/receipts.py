"""Receipts and their manifests for read, search, inspect and observe (docs/atoms.md "Decisions" and "Try it").

A receipt is what the caller gets back: `{"id": "receipt:…", "state": "seq:<n>",
"signalDigest"}`. Its manifest stays on the host side (the Receipt row) and records what
the request touched, what it showed and what must stay current:

- `id`, `contractVersion` (2), `kind` (read | search | inspect | observe).
- Scope: `key` (the principal's public id), `subject`, `authGeneration`, `readPolicies`
  (sorted), `writePolicy` (omitted when the binding has none), `actor`, `scopeDigest`,
  `createdAt` (epoch ms). Receipts have no `expiresAt`: they are kept for a retention
  period instead; only tokens expire.
- `acquisition`:
  - `reads`: every revision the request re-read, once each, as PinnedRefs in first-read
    order (candidates, graph nodes, closure members; for inspect the root and its
    neighbours). These are erase dependencies of whatever is generated from the receipt.
  - `ranges`: `{revision, start, end}` for units shown as a byte range (inspect `range`).
  - `queries`: the Observations of a search or read (docs/atoms.md "Match"); empty for inspect.
  - `indexGeneration`: the tenant's index generation when the request ran.
- `presentation`: `{formatVersion: 2, digest, units}`. `digest` hashes the render (read)
  or, by default, the canonical list of presented views (search, inspect). Each unit is
  `{ref, revision, digest, metadata, display, quote?, range?}`: `digest` is the SHA-256 of
  the revision's body, `metadata` the digest of its view without `text`, `display` says
  how it was shown (`body`, `quote` or `range`), and `range` is `{start, end}`.
- `watches`: `{heads, queries}`. A receipt named in observe's `watches` keeps its
  presented revisions (`heads`) and its Observations (`queries`) watched.
- `acknowledgement`: always empty here; accepted uses are acknowledged on input tokens.
- Compatibility projections: `reads` is the erase set (acquisition reads plus presented
  units), `currentReads` equals `watches.heads`, `observations` equals `watches.queries`.

The row stores `reads` compactly: a search or read re-reads hundreds of revisions, and the
erase set repeated them all, half of a manifest of about 120 KB. The row holds
`readsBeyondAcquisition` instead (the presented pins not among the acquisition reads, most
often none) and `issued_manifest` puts `reads` back for whoever reads a receipt's manifest
(docs/atoms.md "Decisions"). Rows written before hold `reads` itself and are answered as
they are.

observe receipts present nothing: their manifest has no `presentation` at all, which is
how observe tells them from read, search and inspect receipts (those always have one,
possibly with zero units).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from django.db import connection

from atoms.clock import now_ms
from atoms.core.canonical import canonical, canonical_record, digest, sha256_hex
from atoms.core.ids import new_receipt_id
from atoms.models import AtomStore, Receipt, Revision
from atoms.principal import Binding
from memoryhub.prepared import prepared_cursor

CONTRACT_VERSION = 2
FORMAT_VERSION = 2
# The stored manifest's key for the erase set's pins beyond the acquisition reads.
STORED_READS = "readsBeyondAcquisition"
ReceiptKind = Literal["read", "search", "inspect", "observe"]


class PresentedUnit(TypedDict):
    """One presented revision, as a caller of `create_receipt` passes it."""

    revision: Revision
    view: dict[str, Any]  # the AtomView exactly as sent (the root of a range has no text)
    display: Literal["body", "quote", "range"]
    range: NotRequired[dict[str, int]]  # {start, end} when display is "range"
    quote: NotRequired[dict[str, Any]]  # the unit's quote when display is "quote" (read, docs/atoms.md "Read path costs")


def pinned(revision: Revision) -> dict[str, str]:
    return {"kind": "pinned", "atomId": revision.atom_id, "revisionId": revision.id}


def _unique_pins(revisions: list[Revision]) -> list[dict[str, str]]:
    seen: set[str] = set()
    out = []
    for revision in revisions:
        if revision.id not in seen:
            seen.add(revision.id)
            out.append(pinned(revision))
    return out


def _unit(unit: PresentedUnit) -> dict[str, Any]:
    revision = unit["revision"]
    out: dict[str, Any] = {
        "ref": unit["view"]["ref"], "revision": revision.id, "digest": sha256_hex(revision.body),
        "metadata": sha256_hex(canonical_record({k: v for k, v in unit["view"].items() if k != "text"})),
        "display": unit["display"],
    }
    if "range" in unit:
        out["range"] = {"start": unit["range"]["start"], "end": unit["range"]["end"]}
    if "quote" in unit:
        out["quote"] = unit["quote"]
    return out


def _unique_units(units: list[PresentedUnit]) -> list[dict[str, Any]]:
    """Manifest units, once per distinct presentation (a self-linked root shown twice in
    the same way is one unit; shown as a range and as a body it is two)."""
    seen: set[tuple[str | None, ...]] = set()
    out = []
    for unit in units:
        entry = _unit(unit)
        # Revision and display are strings; range and quote are told apart by their canonical
        # forms (None when absent, as omit_none leaves them out): the same equality as the
        # canonical form of the four together, without printing the strings.
        identity = (entry["revision"], entry["display"],
                    *(None if entry.get(k) is None else canonical(entry[k], omit_none=True) for k in ("range", "quote")))
        if identity not in seen:
            seen.add(identity)
            out.append(entry)
    return out


def create_receipt(*, binding: Binding, kind: ReceiptKind, signal: Any, reads: list[Revision],
                   units: list[PresentedUnit], observations: list[dict[str, Any]] | None, state_seq: int,
                   presentation_digest: str | None = None, index_generation: int | None = None) -> Receipt:
    """Store the receipt and its manifest. `signal` is what `signalDigest` hashes (the state
    for read, the query for search, `{ref, options?}` for inspect, the input for observe).
    `reads` are the acquisition reads in first-read order; `presentation_digest` defaults
    to the digest of the canonical presented views. `index_generation` is the tenant's, when
    the caller read its store in this transaction already (one query less)."""
    principal = binding.principal
    receipt_id = new_receipt_id()
    created_at = now_ms()
    queries = list(observations or [])
    unit_entries = _unique_units(units)
    presented = [u["revision"] for u in units]
    acquisition_reads = _unique_pins(reads)
    presented_pins = _unique_pins(presented)
    # The erase set is the acquisition reads, then the presented units not among them (the
    # same list as _unique_pins(reads + presented)); the row keeps only the second part.
    read_ids = {pin["revisionId"] for pin in acquisition_reads}
    if index_generation is None:
        index_generation = (AtomStore.objects.filter(tenant=principal.tenant)
                            .values_list("index_generation", flat=True).first() or 0)
    manifest: dict[str, Any] = {
        "id": receipt_id, "contractVersion": CONTRACT_VERSION, "kind": kind,
        "key": principal.principal_id, "subject": principal.subject, "authGeneration": principal.generation,
        "readPolicies": sorted(binding.read_policies), "actor": binding.actor, "scopeDigest": binding.scope_digest,
        "createdAt": created_at,
        "acquisition": {
            "reads": acquisition_reads,
            "ranges": [{"revision": u["revision"], **u["range"]} for u in unit_entries if "range" in u],
            "queries": queries, "indexGeneration": index_generation,
        },
        "watches": {"heads": presented_pins, "queries": queries},
        "acknowledgement": [],
        STORED_READS: [pin for pin in presented_pins if pin["revisionId"] not in read_ids],
        "currentReads": list(presented_pins),
        "observations": queries,
    }
    if kind != "observe":
        manifest["presentation"] = {
            "formatVersion": FORMAT_VERSION,
            "digest": presentation_digest or digest([u["view"] for u in units]),
            "units": unit_entries,
        }
    if binding.write_policy is not None:
        manifest["writePolicy"] = binding.write_policy
    receipt = Receipt(
        id=receipt_id, tenant=principal.tenant, principal=principal.principal_id, key=principal.key, kind=kind,
        state_seq=state_seq, signal_digest=digest(signal), manifest=manifest, created_at=created_at,
    )
    _insert(receipt)
    return receipt


def issued_manifest(stored: dict[str, Any]) -> dict[str, Any]:
    """The manifest as issued (module docstring), from a receipt row's."""
    if STORED_READS not in stored:
        return stored  # written before the compact form, or another kind of manifest
    issued: dict[str, Any] = {}
    for key, value in stored.items():
        if key == STORED_READS:
            issued["reads"] = [*stored["acquisition"]["reads"], *value]
        else:
            issued[key] = value
    return issued


# Every column of atoms.models.Receipt, none with a database default.
INSERT_RECEIPT = ('INSERT INTO "atoms_receipt" ("id", "tenant_id", "principal", "key_id", "kind", "state_seq", '
                  '"signal_digest", "manifest", "created_at") VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)')


def _insert(receipt: Receipt) -> None:
    """What `Receipt.objects.create` stores, without compiling an insert per call (every read
    and search makes one; docs/atoms.md "Read path costs"): the manifest is adapted by its own
    field, as the ORM does (JSON text on SQLite, jsonb on PostgreSQL). No signal listens to
    receipts being saved."""
    manifest = Receipt._meta.get_field("manifest").get_db_prep_save(receipt.manifest, connection)
    # Prepared on PostgreSQL (memoryhub/prepared.py): the manifest, tens of KB of JSON, then
    # travels as a parameter instead of a literal the server parses out of the statement.
    with prepared_cursor() as cursor:
        cursor.execute(INSERT_RECEIPT, [receipt.id, receipt.tenant_id, receipt.principal, receipt.key_id, receipt.kind,
                                        receipt.state_seq, receipt.signal_digest, manifest, receipt.created_at])
    receipt._state.adding = False
    receipt._state.db = connection.alias


def receipt_response(receipt: Receipt) -> dict[str, str]:
    """The caller's view of a receipt (docs/atoms.md "Try it")."""
    return {"id": receipt.id, "state": f"seq:{receipt.state_seq}", "signalDigest": receipt.signal_digest}
