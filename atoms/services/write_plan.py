"""write, steps 2-10 of docs/atoms.md "Decisions": shape checks, refs, links, sources, fingerprint.

Everything here only reads; `plan_write` plans a body's batch, `plan_revise` and `plan_retire` a
one-change batch built in code from revisions instead of refs (the atom page's actions), with the
same checks and errors. The WritePlan becomes the `WriteCommand` the commit applies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from atoms.clock import now_ms
from atoms.core.canonical import digest
from atoms.core.errors import AtomsCoreError
from atoms.core.ids import check_id, check_role, new_atom_id, new_revision_id
from atoms.core.spans import quote_digest, validate_span
from atoms.errors import AtomError, denied, from_core, invalid
from atoms.models import Revision, RevisionState
from atoms.principal import Binding
from atoms.services.budget import Budget, check_deadline, parse_budget
from atoms.services.refs import resolve_ref

MAX_BATCH = 256
MAX_ATOM_BYTES = 65_536
MAX_SLOTS = 128
MAX_ORIGINS = 128
OP_KEYS = {
    "create": {"id", "op", "content", "sources"},
    "revise": {"id", "op", "target", "content", "sources"},
    "retire": {"id", "op", "target"},
}
SPEC_KEYS = {"ref", "local", "at", "required", "orderKey"}


@dataclass
class SlotPlan:
    role: str
    target_atom_id: str
    target_revision_id: str  # "" for logical
    required: bool
    order_key: str
    # For the fingerprint: a local target stays local (its ids are fresh each request).
    local: str | None = None


@dataclass
class OriginPlan:
    source: Revision
    start: int
    end: int
    quote_digest: str


@dataclass
class ChangePlan:
    change_id: str
    op: str
    atom_id: str
    revision_id: str
    target: Revision | None = None  # the expected head (revise, retire)
    text: str | None = None
    slots: list[SlotPlan] = field(default_factory=list)
    origins: list[OriginPlan] = field(default_factory=list)
    input: str | None = None
    raw_links: Any = None


@dataclass(frozen=True)
class LinkSpec:
    """A link of a change built in code: the target revision instead of a ref."""

    role: str
    target: Revision
    at: str = "logical"  # logical | observed
    required: bool = False
    order_key: str | None = None  # None: the link's position


@dataclass(frozen=True)
class SourceSpec:
    """A cited span of a change built in code; None bounds cite the whole text."""

    source: Revision
    start: int | None = None
    end: int | None = None


@dataclass
class WritePlan:
    binding: Binding
    changes: list[ChangePlan]
    idempotency_key: str | None
    budget: Budget
    fingerprint: str = ""


def _change_path(index: int, *rest: object) -> str:
    return f"changes[{index}]" + "".join(f".{r}" if isinstance(r, str) else f"[{r}]" for r in rest)


def parse_options(raw: Any) -> tuple[str | None, Budget]:
    """Step 3: options ⊆ {idempotencyKey, budget, deadline}."""
    if raw is None:
        return None, parse_budget(None, None)
    if not isinstance(raw, dict):
        raise invalid("options must be an object.", path="options")
    unknown = set(raw) - {"idempotencyKey", "budget", "deadline"}
    if unknown:
        raise invalid(f"Unknown option {sorted(unknown)[0]!r}.", path="options")
    key = raw.get("idempotencyKey")
    if key is not None:
        try:
            check_id(key)
        except AtomsCoreError as exc:
            raise from_core(exc, path="options.idempotencyKey") from exc
    return key, parse_budget(raw.get("budget"), raw.get("deadline"))


def _check_change_shape(index: int, change: Any, binding: Binding, seen: set[str]) -> None:
    """Step 5 for one change."""
    if not isinstance(change, dict):
        raise invalid("Each change must be an object.", path=_change_path(index))
    try:
        check_id(change.get("id"))
    except AtomsCoreError as exc:
        raise from_core(exc, path=_change_path(index, "id")) from exc
    if change["id"] in seen:
        raise invalid("Change ids must be unique in a batch.", path=_change_path(index, "id"))
    seen.add(change["id"])
    op = change.get("op")
    # A non-string op (an object or a list) cannot be looked up in OP_KEYS at all.
    if not isinstance(op, str) or op not in OP_KEYS or set(change) - {"input"} != OP_KEYS[op]:
        raise invalid("The change's op and keys do not match create, revise or retire.", path=_change_path(index),
                      changeId=change["id"])
    if "input" in change and not isinstance(change["input"], str):
        raise invalid("input must be a string.", path=_change_path(index, "input"), changeId=change["id"])
    if binding.principal.actor_type == "agent" and "input" not in change:
        raise invalid("An agent's change needs an input token.", path=_change_path(index, "input"),
                      changeId=change["id"])
    if op in ("revise", "retire") and not isinstance(change.get("target"), str):
        raise AtomError("INVALID_REF", "target must be a ref.", {"path": _change_path(index, "target"),
                                                                 "changeId": change["id"]})
    if op in ("create", "revise"):
        content = change["content"]
        if (not isinstance(content, dict) or set(content) != {"text", "links"} or not isinstance(content["text"], str)
                or not isinstance(content["links"], dict | list) or not isinstance(change["sources"], list)):
            raise invalid("content must be {text, links} and sources a list.", path=_change_path(index, "content"),
                          changeId=change["id"])
        _check_text(index, change["id"], content["text"])


def _check_text(index: int, change_id: str, text: str) -> None:
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise invalid("text must be valid Unicode (no lone surrogates).", path=_change_path(index, "content", "text"),
                      changeId=change_id) from exc
    if size > MAX_ATOM_BYTES:
        raise AtomError("LIMIT_EXCEEDED", "The text exceeds 65,536 bytes.",
                        {"path": _change_path(index, "content", "text"), "limit": MAX_ATOM_BYTES, "actual": size})


def _link_specs(links: Any, index: int) -> list[tuple[str, Any, str]]:
    """(role, spec, path) in appearance order, from either links form."""
    out: list[tuple[str, Any, str]] = []
    if isinstance(links, dict):
        for role, value in links.items():
            specs = value if isinstance(value, list) else [value]
            for position, spec in enumerate(specs):
                suffix = f"[{position}]" if isinstance(value, list) else ""
                out.append((role, spec, _change_path(index, "content", "links", role) + suffix))
        return out
    for position, item in enumerate(links):
        path = _change_path(index, "content", "links", position)
        if not isinstance(item, dict) or set(item) != {"role", "target"}:
            raise invalid("A link is {role, target}.", path=path)
        out.append((item["role"], item["target"], path))
    return out


def _check_count(count: int, limit: int, what: str, path: str) -> None:
    if count > limit:
        raise AtomError("LIMIT_EXCEEDED", f"At most {limit} {what} per atom.", {"path": path, "limit": limit, "actual": count})


def _check_link(role: Any, at: Any, required: Any, order_key: Any, path: str) -> None:
    if at not in ("logical", "observed") or not isinstance(required, bool):
        raise invalid("at is logical or observed; required is a boolean.", path=path)
    try:
        check_role(role)
        check_role(order_key, field="orderKey")
    except AtomsCoreError as exc:
        raise from_core(exc, path=path) from exc


def _resolve_links(plan: ChangePlan, index: int, by_local: dict[str, ChangePlan], binding: Binding) -> None:
    """Step 8."""
    specs = _link_specs(plan.raw_links, index)
    _check_count(len(specs), MAX_SLOTS, "links", _change_path(index, "content", "links"))
    for position, (role, spec, path) in enumerate(specs):
        if isinstance(spec, str):
            spec = {"ref": spec}
        if not isinstance(spec, dict) or set(spec) - SPEC_KEYS:
            raise invalid("A link spec is a ref or {ref|local, at?, required?, orderKey?}.", path=path)
        if ("ref" in spec) == ("local" in spec):
            raise invalid("A link names exactly one of ref and local.", path=path)
        at = spec.get("at", "logical")
        required = spec.get("required", False)
        order_key = spec.get("orderKey", str(position))
        _check_link(role, at, required, order_key, path)
        if "local" in spec:
            local = by_local.get(spec["local"]) if isinstance(spec["local"], str) else None
            if local is None:
                raise AtomError("INVALID_REF", "Unknown local change id.", {"path": path})
            plan.slots.append(SlotPlan(role, local.atom_id, local.revision_id if at == "observed" else "", required,
                                       order_key, local=local.change_id))
        else:
            target = resolve_ref(binding.principal, spec["ref"], binding.read_policies, path=path)
            plan.slots.append(SlotPlan(role, target.atom_id, target.id if at == "observed" else "", required,
                                       order_key))


def _resolve_sources(plan: ChangePlan, index: int, raw: list[Any], binding: Binding) -> None:
    """Step 9."""
    _check_count(len(raw), MAX_ORIGINS, "sources", _change_path(index, "sources"))
    for position, item in enumerate(raw):
        path = _change_path(index, "sources", position)
        if not isinstance(item, dict) or "ref" not in item or set(item) - {"ref", "start", "end"}:
            raise invalid("A source is {ref, start?, end?}.", path=path)
        source = resolve_ref(binding.principal, item["ref"], binding.read_policies, path=path)
        plan.origins.append(_origin(source, item.get("start"), item.get("end"), binding, path))


def _origin(source: Revision, start: Any, end: Any, binding: Binding, path: str) -> OriginPlan:
    if binding.write_policy is not None and source.policy != binding.write_policy:
        raise denied("A cited source belongs to another policy.", path=path)
    try:
        start, end = validate_span(source.body, start, end)
    except AtomsCoreError as exc:
        raise from_core(exc, path=path) from exc
    return OriginPlan(source, start, end, quote_digest(source.body, start, end))


def _fingerprint(changes: list[ChangePlan]) -> str:
    """Step 10: refs become the revisions they name, so re-issued refs keep the fingerprint."""
    items = []
    for change in changes:
        item: dict[str, Any] = {"id": change.change_id, "op": change.op}
        if change.target is not None:
            item["target"] = {"atomId": change.target.atom_id, "revisionId": change.target.id}
        if change.text is not None:
            item["text"] = change.text
            item["links"] = [
                {"role": s.role, "target": {"local": s.local} if s.local else
                 {"atomId": s.target_atom_id, "revisionId": s.target_revision_id},
                 "at": "observed" if s.target_revision_id else "logical", "required": s.required, "orderKey": s.order_key}
                for s in change.slots
            ]
            item["sources"] = [{"atomId": o.source.atom_id, "revisionId": o.source.id, "start": o.start, "end": o.end}
                               for o in change.origins]
        if change.input is not None:
            item["input"] = change.input
        items.append(item)
    return digest(items)


def plan_write(body: Any, binding: Binding) -> WritePlan:
    """Steps 3-10 (the caller did authentication, the barrier and the binding)."""
    idempotency_key, budget = parse_options(body.get("options"))
    check_deadline(budget, now_ms())
    changes = body.get("changes")
    if not isinstance(changes, list) or not changes:
        raise invalid("changes must be a non-empty list.", path="changes")
    if len(changes) > MAX_BATCH:
        raise AtomError("LIMIT_EXCEEDED", "At most 256 changes per batch.",
                        {"path": "changes", "limit": MAX_BATCH, "actual": len(changes)})
    seen: set[str] = set()
    for index, change in enumerate(changes):
        _check_change_shape(index, change, binding, seen)
    # Step 6: allocate every id first, so local links may point anywhere in the batch.
    plans = [ChangePlan(change_id=c["id"], op=c["op"], atom_id=new_atom_id() if c["op"] == "create" else "",
                        revision_id=new_revision_id(), text=c["content"]["text"] if "content" in c else None,
                        input=c.get("input"), raw_links=c["content"]["links"] if "content" in c else None)
             for c in changes]
    # Step 7: targets.
    targeted: set[str] = set()
    for index, (change, plan) in enumerate(zip(changes, plans, strict=True)):
        if plan.op == "create":
            continue
        target = resolve_ref(binding.principal, change["target"], binding.read_policies,
                             path=_change_path(index, "target"))
        if target.atom_id in targeted:
            raise invalid("A batch may change each atom once.", path=_change_path(index, "target"), changeId=plan.change_id)
        targeted.add(target.atom_id)
        _check_target(plan, target, index)
    by_local = {p.change_id: p for p in plans}
    for index, plan in enumerate(plans):
        if plan.raw_links is not None:
            _resolve_links(plan, index, by_local, binding)
    for index, (change, plan) in enumerate(zip(changes, plans, strict=True)):
        if "sources" in change:
            _resolve_sources(plan, index, change["sources"], binding)
    return _planned(binding, plans, idempotency_key, budget)


def _check_target(plan: ChangePlan, target: Revision, index: int) -> None:
    if plan.op == "retire" and target.atom.head_id == target.id and target.state == RevisionState.RETIRED:
        raise invalid("The atom is already retired.", path=_change_path(index, "target"), changeId=plan.change_id)
    plan.target, plan.atom_id = target, target.atom_id


def _planned(binding: Binding, plans: list[ChangePlan], idempotency_key: str | None = None,
             budget: Budget | None = None) -> WritePlan:
    write_plan = WritePlan(binding=binding, changes=plans, idempotency_key=idempotency_key,
                           budget=budget if budget is not None else parse_budget(None, None))
    write_plan.fingerprint = _fingerprint(plans)
    return write_plan


def plan_revise(binding: Binding, head: Revision, text: str, links: Sequence[LinkSpec] = (),
                sources: Sequence[SourceSpec] = (), *, change_id: str = "edit") -> WritePlan:
    """A one-change revise of `head` to `text`, checked as plan_write checks the same change sent
    with refs (steps 5, 7, 8 and 9, in that order; paths name `changes[0]`)."""
    _check_text(0, change_id, text)
    plan = ChangePlan(change_id=change_id, op="revise", atom_id="", revision_id=new_revision_id(), text=text)
    _check_target(plan, head, 0)
    _check_count(len(links), MAX_SLOTS, "links", _change_path(0, "content", "links"))
    for position, link in enumerate(links):
        order_key = link.order_key if link.order_key is not None else str(position)
        _check_link(link.role, link.at, link.required, order_key, _change_path(0, "content", "links", position))
        plan.slots.append(SlotPlan(link.role, link.target.atom_id, link.target.id if link.at == "observed" else "",
                                   link.required, order_key))
    _check_count(len(sources), MAX_ORIGINS, "sources", _change_path(0, "sources"))
    for position, cited in enumerate(sources):
        plan.origins.append(_origin(cited.source, cited.start, cited.end, binding,
                                    _change_path(0, "sources", position)))
    return _planned(binding, [plan])


def plan_retire(binding: Binding, head: Revision, *, change_id: str = "retire") -> WritePlan:
    """A one-change retire of `head`; an atom already retired is refused as plan_write refuses it."""
    plan = ChangePlan(change_id=change_id, op="retire", atom_id="", revision_id=new_revision_id())
    _check_target(plan, head, 0)
    return _planned(binding, [plan])
