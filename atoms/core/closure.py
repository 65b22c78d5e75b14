"""Required closures C(r) for read (docs/atoms.md "Read path costs").

read must show a required link's target whenever it shows the linking atom, so the unit of
selection is not an atom but its closure: the atom and everything reachable from it over
required links (legacy `include` slots count as required). This module computes closures
over plain data; the Django side loads the revisions and answers one question through a
resolver: "which revision does this link name, or why is there none?".

Contract of `closure(root, resolve)`:

- Breadth-first from `root`, following each member's slots in slot order, only those with
  `required` or `mode == "include"`.
- A logical slot (`target_revision_id is None`) names the target's current head; an observed
  slot names its pinned revision. Resolving is the resolver's job.
- Each revision is visited once, so a cycle of required links terminates and is no error.
- A member (the root included) that is retired, stale, missing, purged, unreadable or hidden
  by review blocks the root: the result says `blocked` with the reason and the blocking
  atom, and selection never shows that root (nor a ref-only mention of it).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

BlockReason = Literal["retired", "stale", "missing", "purged", "unreadable", "hidden"]
BLOCK_REASONS: Final[tuple[BlockReason, ...]] = ("retired", "stale", "missing", "purged", "unreadable", "hidden")


@dataclass(frozen=True, slots=True)
class Slot:
    """One stored link of a revision (docs/atoms.md "Layout" `slots`).

    `target_revision_id` is None for a logical link (follow the head) and the pinned revision
    for an observed one. Imported legacy `include` slots are pinned and count as required.
    """

    role: str
    target_atom_id: str
    target_revision_id: str | None = None
    required: bool = False
    order_key: str = "0"
    mode: Literal["refer", "include"] = "refer"

    @property
    def at(self) -> Literal["logical", "observed"]:
        return "logical" if self.target_revision_id is None else "observed"

    @property
    def in_closure(self) -> bool:
        return self.required or self.mode == "include"


@dataclass(frozen=True, slots=True)
class OriginSpan:
    """One stored citation (docs/atoms.md "Layout" `origins`): bytes `[start, end)` of a source revision.

    `ref` is the reader's ref for the source revision, or None when the reader cannot read it;
    such a citation is dropped from the AtomView's `sources` (docs/atoms.md "Try it") and cannot back a quote.
    `quote_digest` is the SHA-256 hex of the cited bytes, as stored at write time.
    """

    source_revision_id: str
    start: int
    end: int
    quote_digest: str
    ref: str | None = None


@dataclass(frozen=True, slots=True)
class AtomNode:
    """Everything read needs to know about one revision, filled in by the storage side.

    `links` are the AtomView link dicts exactly as the reader may see them (docs/atoms.md "Try it"), used
    verbatim in the rendered unit; `slots` are the stored links, used for closures and for
    the identity of verified quotes. `origin` is the provenance kind and `producer` the
    writer's subject. The availability flags say why the revision may not be shown:
    `state != "active"` (retired), `stale`, not `readable` by the caller's policies, or
    `hidden` by review (unreviewed under require-approval, quarantined).
    """

    revision_id: str
    atom_id: str
    ref: str
    text: str
    origin: str
    producer: str
    links: tuple[Mapping[str, Any], ...] = ()
    slots: tuple[Slot, ...] = ()
    origins: tuple[OriginSpan, ...] = ()
    state: str = "active"
    stale: bool = False
    readable: bool = True
    hidden: bool = False
    body: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Encoded once: render, cost and quote checks all work on the UTF-8 bytes.
        object.__setattr__(self, "body", self.text.encode("utf-8"))

    @property
    def body_bytes(self) -> int:
        return len(self.body)

    def unavailable(self) -> BlockReason | None:
        """Why this revision cannot be shown, or None. Unreadable is checked first so that a
        revision the caller may not see never reports anything more specific about itself."""
        if not self.readable:
            return "unreadable"
        if self.hidden:
            return "hidden"
        if self.state != "active":
            return "retired"
        if self.stale:
            return "stale"
        return None


# resolve(target_atom_id, target_revision_id) -> the revision the link names, or why there is
# none ("missing" or "purged"). A None revision id means logical: the current head.
LinkResolver = Callable[[str, str | None], AtomNode | BlockReason]


@dataclass(frozen=True, slots=True)
class Closure:
    """C(root): members in breadth-first order, the root first.

    When `blocked` is set, `members` holds only what was visited before the blocker was met
    and must not be shown; `blocker` is the atom id of the offending member (for logs and
    counts, never for the caller: it may name something the caller cannot read).
    """

    root: str
    members: tuple[AtomNode, ...]
    blocked: BlockReason | None = None
    blocker: str | None = None

    @property
    def is_blocked(self) -> bool:
        return self.blocked is not None

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(member.revision_id for member in self.members)

    def __len__(self) -> int:
        return len(self.members)


def closure(root: AtomNode, resolve: LinkResolver) -> Closure:
    """C(root) by breadth-first search over required and include slots (module docstring)."""
    reason = root.unavailable()
    if reason is not None:
        return Closure(root=root.revision_id, members=(root,), blocked=reason, blocker=root.atom_id)
    members: list[AtomNode] = [root]
    visited = {root.revision_id}
    queue: deque[AtomNode] = deque([root])
    while queue:
        node = queue.popleft()
        for slot in node.slots:
            if not slot.in_closure:
                continue
            target = resolve(slot.target_atom_id, slot.target_revision_id)
            if isinstance(target, str):
                return Closure(root=root.revision_id, members=tuple(members), blocked=target,
                               blocker=slot.target_atom_id)
            if target.revision_id in visited:
                continue  # a cycle or a shared member: each revision once
            reason = target.unavailable()
            if reason is not None:
                return Closure(root=root.revision_id, members=tuple(members), blocked=reason,
                               blocker=target.atom_id)
            visited.add(target.revision_id)
            members.append(target)
            queue.append(target)
    return Closure(root=root.revision_id, members=tuple(members))


def closures(roots: Iterable[AtomNode], resolve: LinkResolver) -> dict[str, Closure]:
    """C(r) for every root, keyed by revision id, resolving each link target only once.

    Closures of ranked roots overlap heavily (a shared condition, a cycle), so the resolver
    (a storage lookup on the Django side) is memoized for the duration of this call.
    """
    cache: dict[tuple[str, str | None], AtomNode | BlockReason] = {}

    def cached(atom_id: str, revision_id: str | None) -> AtomNode | BlockReason:
        key = (atom_id, revision_id)
        if key not in cache:
            cache[key] = resolve(atom_id, revision_id)
        return cache[key]

    return {root.revision_id: closure(root, cached) for root in roots}


@dataclass(frozen=True)
class StoreResolver:
    """A LinkResolver over plain mappings, for callers that load the revisions in bulk.

    `heads` maps atom id → head revision id, `nodes` revision id → node, and `purged` holds
    the purged atom ids. A target absent from these is "missing"; so is a pinned revision
    that belongs to another atom than the slot names.
    """

    heads: Mapping[str, str]
    nodes: Mapping[str, AtomNode]
    purged: frozenset[str] = frozenset()

    def __call__(self, atom_id: str, revision_id: str | None) -> AtomNode | BlockReason:
        if atom_id in self.purged:
            return "purged"
        wanted = self.heads.get(atom_id) if revision_id is None else revision_id
        node = self.nodes.get(wanted) if wanted is not None else None
        if node is None or node.atom_id != atom_id:
            return "missing"
        return node
