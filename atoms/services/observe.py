"""observe (docs/atoms.md "Decisions"): the host attests what an agent's next output is made from.

The host names the agent's key in the binding and lists what the model was given: receipts
of the agent's read, search and inspect calls (narrowed to the units actually sent), source
spans, earlier tokens to inherit and receipts whose inputs must stay watched. observe
stores an input token whose manifest (docs/atoms.md "Decisions") records:

- `reads`, the erase set: acquisition reads of presented receipts, presented units,
  sources, inherited reads and inherited outputs;
- `watches.heads`: the current reads (presented units and sources, basis current), the
  units of `watches` receipts, and inherited watched heads;
- `watches.queries`: observations of presented receipts (basis current), of `watches`
  receipts, and inherited watched queries;
- `generation.historicalReads`: presented units and sources on a historical basis, frozen.

It also creates an observe receipt (no presentation) and changes no memory.

The API parses the body into an `ObserveCommand` (atoms/api/observe.py); the entries of the
input lists stay as sent, because each is checked against the database in list order
(docs/architecture.md "Typed services").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from django.conf import settings
from django.db import transaction

from atoms.clock import now_ms
from atoms.core.canonical import digest
from atoms.core.errors import AtomsCoreError
from atoms.core.ids import is_id_of, new_input_token
from atoms.core.spans import validate_span
from atoms.errors import AtomError, denied, from_core, invalid
from atoms.models import InputToken, Receipt, Revision, Tombstone
from atoms.models.storage import Schema
from atoms.principal import Binding
from atoms.services.barrier import open_store
from atoms.services.receipts import CONTRACT_VERSION, create_receipt, pinned
from atoms.services.refs import resolve_ref

INPUT_KEYS = {"presentations", "sources", "inherit", "watches", "basis", "payloadDigest"}
LIST_KEYS = ("presentations", "sources", "inherit", "watches")
MAX_LIST = 10_000  # maxReadCandidates (docs/atoms.md "Decisions")
DIGEST_RE = re.compile(r"[0-9a-f]{64}")
Pin = dict[str, str]


class PinSet:
    """PinnedRefs kept once each, in first-added order."""

    def __init__(self) -> None:
        self._pins: dict[str, Pin] = {}

    def add(self, pin: Any) -> None:
        if isinstance(pin, dict) and isinstance(pin.get("revisionId"), str) and isinstance(pin.get("atomId"), str):
            self._pins.setdefault(pin["revisionId"], {"kind": "pinned", "atomId": pin["atomId"],
                                                      "revisionId": pin["revisionId"]})

    def extend(self, pins: Any) -> None:
        for pin in pins if isinstance(pins, list) else []:
            self.add(pin)

    def ids(self) -> list[str]:
        return list(self._pins)

    def list(self) -> list[Pin]:
        return list(self._pins.values())


def _unique_queries(queries: list[Any]) -> list[Any]:
    seen: set[str] = set()
    out = []
    for query in queries:
        key = digest(query)
        if key not in seen:
            seen.add(key)
            out.append(query)
    return out


@dataclass
class Collected:
    """What the input lists contribute, before the manifest is assembled."""

    basis: str
    payload_digest: str
    acquisition: PinSet = field(default_factory=PinSet)
    ranges: list[dict[str, Any]] = field(default_factory=list)
    presentations: list[dict[str, Any]] = field(default_factory=list)
    presented: PinSet = field(default_factory=PinSet)  # units after narrowing
    presented_queries: list[Any] = field(default_factory=list)
    sources: list[dict[str, Any]] = field(default_factory=list)
    source_pins: PinSet = field(default_factory=PinSet)
    inherit: list[str] = field(default_factory=list)
    inherited_reads: PinSet = field(default_factory=PinSet)
    inherited_outputs: PinSet = field(default_factory=PinSet)
    inherited_heads: PinSet = field(default_factory=PinSet)
    inherited_queries: list[Any] = field(default_factory=list)
    watched_heads: PinSet = field(default_factory=PinSet)  # from `watches` receipts
    watched_queries: list[Any] = field(default_factory=list)


Basis = Literal["current", "historical"]


@dataclass(frozen=True)
class ObserveCommand:
    """One observe, validated and authorized (docs/architecture.md "Typed services"): the
    binding names the agent; the lists' entries are as sent (`atoms_observe` checks each
    against the receipts, tokens and refs it names, in list order)."""

    binding: Binding
    payload_digest: str  # 64 lowercase hex digits
    basis: Basis = "current"
    presentations: tuple[Any, ...] = ()  # {receipt, refs?}
    sources: tuple[Any, ...] = ()  # {ref, start?, end?}
    inherit: tuple[Any, ...] = ()  # input token ids
    watches: tuple[Any, ...] = ()  # receipt ids
    # The input as the caller sent it: the observe receipt's signal (docs/atoms.md "Decisions").
    # None when the command was built in code; then it is `input_as_sent()`'s object.
    sent_input: dict[str, Any] | None = None

    def input_as_sent(self) -> dict[str, Any]:
        """The input object: as sent, or the one a caller would send for these fields (the
        lists that are not empty, the basis when historical, the payload digest)."""
        if self.sent_input is not None:
            return self.sent_input
        sent: dict[str, Any] = {name: list(getattr(self, name)) for name in LIST_KEYS if getattr(self, name)}
        if self.basis != "current":
            sent["basis"] = self.basis
        sent["payloadDigest"] = self.payload_digest
        return sent


@dataclass(frozen=True)
class ObserveResult:
    """What one observe issued; atoms/api/observe.py renders it as the ObserveResult JSON."""

    token: InputToken  # its manifest is docs/atoms.md "Decisions"
    receipt: Receipt


def parse_input(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise invalid("input must be an object.", path="input")
    unknown = set(raw) - INPUT_KEYS
    if unknown:
        raise invalid(f"Unknown input key {sorted(unknown)[0]!r}.", path=f"input.{sorted(unknown)[0]}")
    payload = raw.get("payloadDigest")
    if not isinstance(payload, str) or not DIGEST_RE.fullmatch(payload):
        raise invalid("payloadDigest must be 64 lowercase hex digits.", path="input.payloadDigest")
    if raw.get("basis", "current") not in ("current", "historical"):
        raise invalid("basis is current or historical.", path="input.basis")
    for name in LIST_KEYS:
        value = raw.get(name, [])
        if not isinstance(value, list):
            raise invalid(f"{name} must be a list.", path=f"input.{name}")
        if len(value) > MAX_LIST:
            raise AtomError("LIMIT_EXCEEDED", f"At most {MAX_LIST} entries in {name}.",
                            {"path": f"input.{name}", "limit": MAX_LIST, "actual": len(value)})
    return raw


def _own_receipt(binding: Binding, receipt_id: Any, path: str) -> Receipt:
    """A receipt of the bound key, issued under its current grants and within the
    binding's read policies (a receipt must not carry reads into a narrower scope)."""
    principal = binding.principal
    if not isinstance(receipt_id, str):
        raise invalid("A receipt is a receipt id.", path=path)
    if Tombstone.objects.filter(tenant=principal.tenant, id=receipt_id).exists():
        raise denied("The receipt read an atom that was purged.", path=path)
    receipt = Receipt.objects.filter(tenant=principal.tenant, id=receipt_id).first() \
        if is_id_of(receipt_id, "receipt") else None
    if receipt is None:
        raise invalid("Unknown receipt.", path=path)
    manifest = receipt.manifest
    if receipt.principal != principal.principal_id:
        raise denied("The receipt was issued to another key.", path=path)
    if manifest.get("authGeneration") != principal.generation:
        raise denied("The key's grants changed since the receipt was issued.", path=path)
    if not set(manifest.get("readPolicies", [])) <= set(binding.read_policies):
        raise denied("The receipt read policies outside the binding's.", path=path)
    return receipt


def _presentation(binding: Binding, item: Any, index: int, out: Collected) -> None:
    path = f"input.presentations[{index}]"
    if not isinstance(item, dict) or "receipt" not in item or set(item) - {"receipt", "refs"}:
        raise invalid("A presentation is {receipt, refs?}.", path=path)
    receipt = _own_receipt(binding, item["receipt"], f"{path}.receipt")
    manifest = receipt.manifest
    presentation = manifest.get("presentation")
    if not isinstance(presentation, dict):
        raise invalid("The receipt presented nothing (observe receipts have no presentation).",
                      path=f"{path}.receipt")
    units = list(presentation.get("units", []))
    refs = item.get("refs")
    if refs is not None:
        if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
            raise invalid("refs must be a list of refs.", path=f"{path}.refs")
        if len(refs) > MAX_LIST:
            raise AtomError("LIMIT_EXCEEDED", f"At most {MAX_LIST} refs.",
                            {"path": f"{path}.refs", "limit": MAX_LIST, "actual": len(refs)})
        shown = {unit["ref"] for unit in units}
        for position, ref in enumerate(refs):
            if ref not in shown:
                raise AtomError("INVALID_REF", "The ref is not a unit of this receipt's presentation.",
                                {"path": f"{path}.refs[{position}]"})
        sent = set(refs)
        units = [unit for unit in units if unit["ref"] in sent]
    acquisition = manifest.get("acquisition") or {}
    out.acquisition.extend(acquisition.get("reads", []))
    out.ranges += [r for r in acquisition.get("ranges", []) if any(u["revision"] == r.get("revision") for u in units)]
    out.presented_queries += list(acquisition.get("queries", []))
    out.presentations.append({"receipt": receipt.id, "units": units})
    atoms = _atoms_of([unit["revision"] for unit in units], f"{path}.receipt", binding)
    for unit in units:
        out.presented.add({"atomId": atoms[unit["revision"]], "revisionId": unit["revision"]})


def _atoms_of(revision_ids: list[str], path: str, binding: Binding) -> dict[str, str]:
    """{revision id: atom id}; a revision that no longer exists was purged."""
    found = dict(Revision.objects.filter(tenant=binding.principal.tenant, id__in=revision_ids)
                 .values_list("id", "atom_id"))
    if len(found) != len(set(revision_ids)):
        raise denied("A presented atom was purged.", path=path)
    return found


def _source(binding: Binding, item: Any, index: int, out: Collected) -> None:
    path = f"input.sources[{index}]"
    if not isinstance(item, dict) or "ref" not in item or set(item) - {"ref", "start", "end"}:
        raise invalid("A source is {ref, start?, end?}.", path=path)
    source = resolve_ref(binding.principal, item["ref"], binding.read_policies, path=f"{path}.ref")
    if source.schema != Schema.SOURCE:
        raise denied("Only source atoms can be given as sources.", path=f"{path}.ref")
    try:
        start, end = validate_span(source.body, item.get("start"), item.get("end"))
    except AtomsCoreError as exc:
        raise from_core(exc, path=path) from exc
    out.sources.append({**pinned(source), "start": start, "end": end})
    out.source_pins.add(pinned(source))


def _inherit(binding: Binding, token_id: Any, index: int, out: Collected) -> None:
    """An earlier token: its reads, watched heads, watched queries and outputs carry over.
    Expiry is not checked; the subject must match; a purged read denies it."""
    path = f"input.inherit[{index}]"
    tenant = binding.principal.tenant
    if not isinstance(token_id, str):
        raise invalid("inherit lists input tokens.", path=path)
    if Tombstone.objects.filter(tenant=tenant, id=token_id).exists():
        raise denied("The token read an atom that was purged.", path=path)
    token = InputToken.objects.filter(tenant=tenant, id=token_id).first() if is_id_of(token_id, "input") else None
    if token is None:
        raise invalid("Unknown input token.", path=path)
    manifest = token.manifest
    if manifest.get("subject") != binding.principal.subject:
        raise denied("The token belongs to another subject.", path=path)
    generation = manifest.get("generation") or {}
    out.inherit.append(token.id)
    out.inherited_reads.extend(manifest.get("reads", []))
    out.inherited_outputs.extend(generation.get("inheritedOutputs", []))
    out.inherited_outputs.extend(token.outputs)
    watches = manifest.get("watches") or {}
    out.inherited_heads.extend(watches.get("heads", []))
    out.inherited_queries += list(watches.get("queries", []))


def _watch(binding: Binding, receipt_id: Any, index: int, out: Collected) -> None:
    receipt = _own_receipt(binding, receipt_id, f"input.watches[{index}]")
    watches = receipt.manifest.get("watches") or {}
    out.watched_heads.extend(watches.get("heads", []))
    out.watched_queries += list(watches.get("queries", []))


def collect(command: ObserveCommand) -> Collected:
    binding = command.binding
    out = Collected(basis=command.basis, payload_digest=command.payload_digest)
    for index, item in enumerate(command.presentations):
        _presentation(binding, item, index, out)
    for index, item in enumerate(command.sources):
        _source(binding, item, index, out)
    for index, item in enumerate(command.inherit):
        _inherit(binding, item, index, out)
    for index, item in enumerate(command.watches):
        _watch(binding, item, index, out)
    return out


def build_manifest(binding: Binding, token_id: str, c: Collected, *, created_at: int, expires_at: int,
                   index_generation: int) -> dict[str, Any]:
    """The token's manifest (docs/atoms.md "Decisions"), with the sets of the docs/atoms.md "Decisions" table."""
    principal = binding.principal
    current = c.basis == "current"
    own_reads = PinSet()
    own_reads.extend(c.presented.list() + c.source_pins.list())
    reads = PinSet()
    reads.extend(c.acquisition.list() + own_reads.list() + c.inherited_reads.list() + c.inherited_outputs.list())
    heads = PinSet()
    heads.extend((own_reads.list() if current else []) + c.watched_heads.list() + c.inherited_heads.list())
    queries = _unique_queries((c.presented_queries if current else []) + c.watched_queries + c.inherited_queries)
    manifest: dict[str, Any] = {
        "id": token_id, "contractVersion": CONTRACT_VERSION, "kind": "input",
        "key": principal.principal_id, "subject": principal.subject, "authGeneration": principal.generation,
        "readPolicies": sorted(binding.read_policies), "actor": binding.actor, "scopeDigest": binding.scope_digest,
        "createdAt": created_at, "expiresAt": expires_at,
        "acquisition": {"reads": c.acquisition.list(), "ranges": c.ranges,
                        "queries": _unique_queries(c.presented_queries), "indexGeneration": index_generation},
        "generation": {
            "basis": c.basis, "presentations": c.presentations, "sources": c.sources, "inherit": c.inherit,
            "inheritedOutputs": c.inherited_outputs.list(),
            "historicalReads": [] if current else own_reads.list(),
            "payloadDigest": c.payload_digest, "outputs": [],
        },
        "watches": {"heads": heads.list(), "queries": queries},
        "acknowledgement": [],
        "reads": reads.list(), "currentReads": heads.list(), "observations": queries,
    }
    if binding.write_policy is not None:
        manifest["writePolicy"] = binding.write_policy
    return manifest


def atoms_observe(command: ObserveCommand) -> ObserveResult:
    """docs/atoms.md "Decisions". The API view admits host and admin keys only (read-only ones
    included). The token, its manifest and the observe receipt are made in one transaction."""
    binding = command.binding
    principal = binding.principal
    store = open_store(principal.tenant)
    with transaction.atomic():
        collected = collect(command)
        created_at = now_ms()
        expires_at = created_at + int(settings.ATOMS_CURSOR_TTL_MS)
        token_id = new_input_token()
        manifest = build_manifest(binding, token_id, collected, created_at=created_at, expires_at=expires_at,
                                  index_generation=store.index_generation)
        token = InputToken.objects.create(id=token_id, tenant=principal.tenant, principal=principal.principal_id,
                                          key=principal.key, manifest=manifest, outputs=[],
                                          created_at=created_at, expires_at=expires_at)
        # The observe receipt lists the same erase set, so a purge takes it with the token.
        read_ids = [pin["revisionId"] for pin in manifest["reads"]]
        found = {r.id: r for r in Revision.objects.filter(tenant=principal.tenant, id__in=read_ids)}
        receipt = create_receipt(binding=binding, kind="observe", signal=command.input_as_sent(), units=[],
                                 observations=None, reads=[found[i] for i in read_ids if i in found],
                                 state_seq=store.seq)
    return ObserveResult(token=token, receipt=receipt)
