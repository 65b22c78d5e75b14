"""inspect (docs/atoms.md "Decisions"): one atom with its neighbours, a page at a time, with a receipt.

The root is the ref's exact revision (`version: observed`) or its atom's head (`latest`).
Neighbours are the targets of the root's slots (outgoing) and the active heads whose slots
point at the root (incoming); each appears once with every link that reaches it. What the
caller may not read (purged, outside its read policies, quarantined) is left out without
trace: no entry, no count, no hint in diagnostics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from django.db import transaction
from django.db.models import Q

from atoms.clock import now_ms
from atoms.core.canonical import canonical, digest
from atoms.core.errors import AtomsCoreError
from atoms.core.spans import ByteRange, byte_range
from atoms.errors import AtomError, denied, from_core, invalid
from atoms.models import Atom, PurgedAtom, Receipt, Revision, Slot
from atoms.models.review import HIDDEN_REVIEW
from atoms.models.storage import RevisionState
from atoms.principal import Binding, Principal
from atoms.services.barrier import open_store
from atoms.services.budget import Budget, budget_as_sent, check_deadline, parse_budget
from atoms.services.cursors import issue_cursor, open_cursor
from atoms.services.receipts import PresentedUnit, create_receipt
from atoms.services.refs import resolve_ref
from atoms.services.staleness import stale_revision_ids
from atoms.services.views import AT, render_views

OPTION_KEYS = {"version", "direction", "roles", "limit", "cursor", "range", "budget", "deadline"}
VERSIONS = ("observed", "latest")
DIRECTIONS = ("both", "outgoing", "incoming")
DEFAULT_LIMIT = 20
MAX_LIMIT = 10_000
MEDIA_TYPE = "text/plain; charset=utf-8"  # of a range's text (docs/atoms.md "Decisions")


@dataclass(frozen=True)
class InspectOptions:
    version: str = "observed"
    direction: str = "both"
    roles: frozenset[str] | None = None  # None: every role
    limit: int = DEFAULT_LIMIT
    cursor: str | None = None
    range: tuple[int, int] | None = None  # (start, bytes)
    budget: Budget = field(default_factory=Budget)


@dataclass
class Neighbour:
    revision: Revision
    key: list[Any]  # the paging position of the first link that reached it
    via: list[dict[str, Any]] = field(default_factory=list)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_options(raw: Any) -> InspectOptions:
    """Option keys ⊆ OPTION_KEYS; `depth` is a read/search option and is refused here."""
    if raw is None:
        return InspectOptions()
    if not isinstance(raw, dict):
        raise invalid("options must be an object.", path="options")
    unknown = set(raw) - OPTION_KEYS
    if unknown:
        raise invalid(f"Unknown option {sorted(unknown)[0]!r}.", path=f"options.{sorted(unknown)[0]}")
    version = raw.get("version", "observed")
    if version not in VERSIONS:
        raise invalid("version is observed or latest.", path="options.version")
    direction = raw.get("direction", "both")
    if direction not in DIRECTIONS:
        raise invalid("direction is both, outgoing or incoming.", path="options.direction")
    roles = raw.get("roles")
    if roles is not None and (not isinstance(roles, list) or not all(isinstance(r, str) for r in roles)):
        raise invalid("roles must be a list of strings.", path="options.roles")
    limit = raw.get("limit", DEFAULT_LIMIT)
    if not _is_int(limit) or not 0 <= limit <= MAX_LIMIT:
        raise invalid(f"limit must be an integer from 0 to {MAX_LIMIT}.", path="options.limit")
    cursor = raw.get("cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise invalid("cursor must be a string.", path="options.cursor")
    window = raw.get("range")
    if window is not None:
        if not isinstance(window, dict) or set(window) != {"start", "bytes"} \
                or not _is_int(window["start"]) or not _is_int(window["bytes"]):
            raise invalid("range is {start, bytes} with integer values.", path="options.range")
        if window["bytes"] < 0:
            raise invalid("range.bytes must not be negative.", path="options.range.bytes")
    return InspectOptions(
        version=version, direction=direction, roles=frozenset(roles) if roles is not None else None, limit=limit,
        cursor=cursor, range=(window["start"], window["bytes"]) if window is not None else None,
        budget=parse_budget(raw.get("budget"), raw.get("deadline")),
    )


def options_as_sent(options: InspectOptions) -> dict[str, Any] | None:
    """The options object a form would send: what differs from the defaults, or None (no
    options object) when nothing does."""
    sent: dict[str, Any] = {}
    if options.version != "observed":
        sent["version"] = options.version
    if options.direction != "both":
        sent["direction"] = options.direction
    if options.roles is not None:
        sent["roles"] = sorted(options.roles)
    if options.limit != DEFAULT_LIMIT:
        sent["limit"] = options.limit
    if options.range is not None:
        sent["range"] = {"start": options.range[0], "bytes": options.range[1]}
    sent.update(budget_as_sent(options.budget))
    if options.cursor is not None:
        sent["cursor"] = options.cursor
    return sent or None


@dataclass(frozen=True)
class InspectCommand:
    """One inspect, validated and authorized (docs/architecture.md "Typed services"): the API
    parses a body into it (atoms/api/inspect.py). The ref is resolved by the service, in its
    transaction (a ref's revision can be purged or hidden in between)."""

    binding: Binding
    ref: str
    options: InspectOptions = field(default_factory=InspectOptions)
    # The options object as the caller sent it, None when the body had none: the receipt's
    # signalDigest hashes the ref with it, and a cursor is bound to it less the cursor
    # (docs/atoms.md "Try it"). A command built in code leaves `from_body` False; its options
    # as sent are then those that differ from the defaults, as a form would send them.
    sent_options: dict[str, Any] | None = None
    from_body: bool = False

    def options_as_sent(self) -> dict[str, Any] | None:
        return self.sent_options if self.from_body else options_as_sent(self.options)


@dataclass(frozen=True)
class ShownNeighbour:
    revision: Revision
    view: dict[str, Any]  # its AtomView (docs/atoms.md "Recall")
    via: list[dict[str, Any]]  # every link that reaches it (docs/atoms.md "Decisions")


@dataclass(frozen=True)
class InspectResult:
    """What one inspect page answers; atoms/api/inspect.py renders it as the InspectResult JSON."""

    root: Revision
    atom: dict[str, Any]  # the root's AtomView, without `text` when a range is shown
    neighbours: list[ShownNeighbour]
    read_eligibility: Literal["blocked", "unchecked"]
    stale: list[str]  # refs of the shown revisions that are stale
    receipt: Receipt
    stop: str  # completed, page-limit or budget
    usage: dict[str, int]
    cursor: str | None
    range: ByteRange | None

    @property
    def review(self) -> str:
        return self.root.review_status


def _readable(revision: Revision | None, read_policies: set[str]) -> bool:
    return revision is not None and revision.policy in read_policies and revision.review_status not in HIDDEN_REVIEW


def _via(slot: Slot, direction: str) -> dict[str, Any]:
    return {"direction": direction, "role": slot.role, "at": AT[bool(slot.target_revision_id)],
            "required": slot.required, "orderKey": slot.order_key}


def _outgoing_targets(principal: Principal, slots: list[Slot]) -> dict[int, Revision | None]:
    """Each slot's target: the pinned revision, or the head for a logical link."""
    tenant = principal.tenant
    atom_ids = {s.target_atom_id for s in slots}
    purged = set(PurgedAtom.objects.filter(tenant=tenant, atom_id__in=atom_ids).values_list("atom_id", flat=True))
    heads = {a.id: a.head for a in Atom.objects.filter(tenant=tenant, id__in=atom_ids).select_related("head")}
    pinned = {r.id: r for r in Revision.objects.filter(
        tenant=tenant, id__in={s.target_revision_id for s in slots if s.target_revision_id})}
    out: dict[int, Revision | None] = {}
    for slot in slots:
        target = pinned.get(slot.target_revision_id) if slot.target_revision_id else heads.get(slot.target_atom_id)
        out[slot.pk] = None if slot.target_atom_id in purged else target
    return out


def collect_neighbours(principal: Principal, root: Revision, read_policies: set[str],
                       options: InspectOptions) -> list[Neighbour]:
    """Every neighbour the caller may see, in page order: outgoing slots, then incoming
    links by (seq, revisionId, slot order). Keyed by revision: a logical and an observed
    link to the same revision make one neighbour with two `via`."""
    found: dict[str, Neighbour] = {}

    def reach(revision: Revision, key: list[Any], via: dict[str, Any]) -> None:
        neighbour = found.setdefault(revision.id, Neighbour(revision=revision, key=key))
        neighbour.via.append(via)

    if options.direction in ("both", "outgoing"):
        slots = [s for s in root.slots.order_by("position") if options.roles is None or s.role in options.roles]
        targets = _outgoing_targets(principal, slots)
        for slot in slots:
            target = targets[slot.pk]
            if _readable(target, read_policies):
                assert target is not None
                reach(target, [0, slot.position], _via(slot, "outgoing"))
    if options.direction in ("both", "incoming"):
        # Exact versions: a pinned link names this revision; a logical one follows the head.
        match = Q(target_revision_id=root.id)
        if root.is_head:
            match |= Q(target_revision_id="")
        incoming = (Slot.objects.filter(tenant=principal.tenant, target_atom_id=root.atom_id)
                    .filter(match, revision__is_head=True, revision__state=RevisionState.ACTIVE)
                    .select_related("revision").order_by("revision__seq", "revision_id", "position"))
        if options.roles is not None:
            incoming = incoming.filter(role__in=options.roles)
        for slot in incoming:
            if _readable(slot.revision, read_policies):
                reach(slot.revision, [1, slot.revision.seq, slot.revision_id, slot.position], _via(slot, "incoming"))
    return list(found.values())


def stale_refs(*, binding: Binding, revisions: list[Revision], views: list[dict[str, Any]]) -> list[str]:
    """Refs of the shown revisions that are stale (docs/atoms.md "Match"), once each, in shown order."""
    stale = stale_revision_ids(binding.principal.tenant, revisions)
    return list(dict.fromkeys(view["ref"] for revision, view in zip(revisions, views, strict=True)
                              if revision.id in stale))


def _page_state(root: Revision, shown: list[Neighbour]) -> str:
    """What the next page continues from, as a digest (a cursor never carries revision ids)."""
    return digest({"root": root.id, "shown": [n.key for n in shown]})


def _resume(binding: Binding, request: Any, options: InspectOptions, root: Revision,
            neighbours: list[Neighbour]) -> int:
    """The offset the cursor continues at; CURSOR_EXPIRED if the root or the neighbours
    already shown changed since it was issued."""
    if options.cursor is None:
        return 0
    page = open_cursor(binding=binding, kind="inspect", request=request, cursor=options.cursor)
    offset = page.get("offset")
    if not isinstance(offset, int) or not _is_int(offset) or not 0 <= offset <= len(neighbours) \
            or page.get("state") != _page_state(root, neighbours[:offset]):
        raise AtomError("CURSOR_EXPIRED", "The atom's neighbours changed since the cursor was issued.",
                        {"path": "options.cursor"})
    return offset


def _root(principal: Principal, ref: Any, read_policies: tuple[str, ...], version: str) -> Revision:
    revision = resolve_ref(principal, ref, read_policies)
    if version == "latest" and revision.atom.head_id != revision.id:
        revision = Revision.objects.select_related("atom").get(id=revision.atom.head_id)
    if revision.review_status in HIDDEN_REVIEW:
        raise denied(f"This atom is {revision.review_status}.", reason=revision.review_status, path="ref")
    return revision


def atoms_inspect(command: InspectCommand) -> InspectResult:
    """docs/atoms.md "Decisions". Refs and the receipt are created in one transaction with the reads."""
    binding, ref, options = command.binding, command.ref, command.options
    store = open_store(binding.principal.tenant)
    check_deadline(options.budget, now_ms())
    sent = command.options_as_sent()
    # The receipt's signalDigest hashes the ref and the options as sent (docs/atoms.md "Try it"); the cursor
    # is bound to the same minus the cursor itself.
    request = {"ref": ref, "options": {k: v for k, v in (sent or {}).items() if k != "cursor"}}
    signal = {"ref": ref, "options": sent} if sent is not None else {"ref": ref}
    try:
        canonical(signal)
    except ValueError as exc:  # an integer beyond what a JSON number (a double) can carry
        raise invalid("An option holds a number outside the JSON range.", path="options") from exc
    with transaction.atomic():
        return _inspect(binding, store.seq, ref, options, request, signal)


def _inspect(binding: Binding, state_seq: int, ref: str, options: InspectOptions, request: dict[str, Any],
             signal: dict[str, Any]) -> InspectResult:
    principal = binding.principal
    read_policies = set(binding.read_policies)
    root = _root(principal, ref, binding.read_policies, options.version)
    window: ByteRange | None = None
    if options.range is not None:
        try:
            window = byte_range(root.body, *options.range)
        except AtomsCoreError as exc:
            raise from_core(exc, path="options.range") from exc
    neighbours = collect_neighbours(principal, root, read_policies, options) if options.limit else []
    offset = _resume(binding, request, options, root, neighbours)
    limits = options.budget.limits
    used_bytes = len(window.text.encode()) if window is not None else root.body_bytes
    if limits["maxAtoms"] < 1 or used_bytes > limits["maxBytes"]:
        raise AtomError("BUDGET_EXHAUSTED", "The budget does not cover the root atom.",
                        {"maxAtoms": limits["maxAtoms"], "maxBytes": limits["maxBytes"]})
    remaining = neighbours[offset:]
    page: list[Neighbour] = []
    stop = "completed"
    for neighbour in remaining:
        if len(page) >= options.limit:
            stop = "page-limit"
            break
        if 1 + len(page) >= limits["maxAtoms"] or used_bytes + neighbour.revision.body_bytes > limits["maxBytes"]:
            stop = "budget"
            break
        page.append(neighbour)
        used_bytes += neighbour.revision.body_bytes
    if options.limit and remaining and not page:
        # The same options would give the same empty page forever.
        raise AtomError("BUDGET_EXHAUSTED", "The budget does not cover one neighbour.",
                        {"maxAtoms": limits["maxAtoms"], "maxBytes": limits["maxBytes"]})
    shown = [root] + [n.revision for n in page]
    views = render_views(principal, shown, binding.read_policies)
    root_view = views[0]
    if window is not None:
        root_view = {k: v for k, v in root_view.items() if k != "text"}
    root_unit: PresentedUnit = {"revision": root, "view": root_view, "display": "body"}
    if window is not None:
        root_unit = {**root_unit, "display": "range", "range": {"start": window.start, "end": window.end}}
    units = [root_unit] + [PresentedUnit(revision=n.revision, view=v, display="body")
                           for n, v in zip(page, views[1:], strict=True)]
    receipt = create_receipt(binding=binding, kind="inspect", signal=signal, reads=shown, units=units,
                             observations=None, state_seq=state_seq)
    blocked = any(link["required"] and link.get("unavailable") for link in root_view["links"])
    stale = stale_refs(binding=binding, revisions=shown, views=views)
    cursor: str | None = None
    if options.limit and offset + len(page) < len(neighbours):
        shown_so_far = neighbours[:offset + len(page)]
        cursor = issue_cursor(binding=binding, kind="inspect", request=request,
                              page={"offset": len(shown_so_far), "state": _page_state(root, shown_so_far)})
    return InspectResult(
        root=root, atom=root_view,
        neighbours=[ShownNeighbour(revision=n.revision, view=view, via=n.via)
                    for n, view in zip(page, views[1:], strict=True)],
        read_eligibility="blocked" if blocked else "unchecked",
        stale=stale, receipt=receipt, stop=stop,
        usage={"maxAtoms": len(shown), "maxCandidates": len(neighbours), "maxBytes": used_bytes,
               "maxContextTokens": 0, "maxEvaluationWork": 0, "maxPackingWork": 0},
        cursor=cursor, range=window,
    )
