"""Observations, token currency and staleness (atoms.md §5.4).

An Observation is what a search or read recorded about its ranking, so that a later
change to that ranking can be noticed:

    {"kind": "search" | "read", "signals": {kind: text | [text]}, "readPolicies": [policy],
     "seq": n, "revisions": [PinnedRef], "full": bool, "mFloor": float}

`signals` maps a signal kind (query, context, thought, observations, signal) to its texts;
`revisions` is R, the returned revisions. search and read will produce these; until they
exist, receipts carry them only when built directly with `create_receipt`.

A token is *current* while its watched heads are still heads and its watched queries are
unchanged. A generated revision is *stale* when the token it was written with stopped
being current, apart from what the revision's own operation did, or when an inherited
output or a generated current read is stale.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from atoms.core.canonical import digest
from atoms.core.text import seed_match
from atoms.models import Atom, AtomStore, InputToken, Revision, Tombstone
from tenants.models import Tenant

Json = dict[str, Any]


def _texts(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _signals(observation: Mapping[str, Any]) -> dict[str, list[str]]:
    raw = observation.get("signals")
    if not isinstance(raw, dict):
        return {}
    return {kind: _texts(value) for kind, value in raw.items()}


def _revision_ids(pins: Any) -> list[str]:
    """Revision ids of a list of PinnedRefs (bare revision ids are accepted too)."""
    out = []
    for pin in pins if isinstance(pins, list) else []:
        if isinstance(pin, dict) and isinstance(pin.get("revisionId"), str):
            out.append(pin["revisionId"])
        elif isinstance(pin, str):
            out.append(pin)
    return out


def generation_current_reads(manifest: Mapping[str, Any]) -> list[str]:
    """The revision ids a token read on a current basis: its presented units after
    narrowing and its sources. A historical token has none of its own."""
    generation = manifest.get("generation") or {}
    if generation.get("basis") != "current":
        return []
    ids = [unit["revision"] for item in generation.get("presentations", []) for unit in item.get("units", [])]
    return ids + _revision_ids(generation.get("sources", []))


class Staleness:
    """Answers currency and staleness questions for one request, caching what it reads.

    Tokens, heads and observation results are looked up once per request; staleness is
    memoized per revision, and a revision met again while it is being judged counts as not
    stale (a cycle adds no new evidence)."""

    def __init__(self, tenant: Tenant) -> None:
        self.tenant = tenant
        self._heads: dict[str, Revision | None] = {}
        self._tokens: dict[str, InputToken | None] = {}
        self._queries: dict[tuple[str, str | None], bool] = {}
        self._stale: dict[str, bool] = {}
        self._visiting: set[str] = set()
        self._require_approval: bool | None = None

    # --- lookups -------------------------------------------------------------------------

    def heads(self, atom_ids: Iterable[str]) -> dict[str, Revision | None]:
        """Each atom's current head (None for a purged or unknown atom)."""
        wanted = [a for a in set(atom_ids) if a not in self._heads]
        if wanted:
            found = {a.id: a.head for a in Atom.objects.filter(tenant=self.tenant, id__in=wanted).select_related("head")}
            for atom_id in wanted:
                self._heads[atom_id] = found.get(atom_id)
        return {a: self._heads[a] for a in atom_ids}

    def token(self, token_id: str) -> InputToken | None:
        if token_id not in self._tokens:
            self._tokens[token_id] = InputToken.objects.filter(tenant=self.tenant, id=token_id).first()
        return self._tokens[token_id]

    def _revisions(self, ids: Iterable[str]) -> list[Revision]:
        ids = list(dict.fromkeys(ids))
        found = {r.id: r for r in Revision.objects.filter(tenant=self.tenant, id__in=ids)}
        return [found[i] for i in ids if i in found]

    @property
    def require_approval(self) -> bool:
        if self._require_approval is None:
            self._require_approval = bool(AtomStore.objects.filter(tenant=self.tenant)
                                          .values_list("require_approval", flat=True).first())
        return self._require_approval

    # --- watched heads and queries --------------------------------------------------------

    def _head_moved(self, pin: Mapping[str, Any], *, own_operation: str | None = None,
                    expected: frozenset[str] = frozenset()) -> bool:
        """The pinned revision is no longer its atom's head. A head that the operation
        `own_operation` wrote, or a pin that is one of `expected` (the batch's own
        expected heads), does not count as moved."""
        revision_id = pin.get("revisionId")
        if revision_id in expected:
            return False
        head = self.heads([pin.get("atomId", "")])[pin.get("atomId", "")]
        if head is not None and head.id == revision_id:
            return False
        return not (own_operation is not None and head is not None and head.operation_id == own_operation)

    def observation_changed(self, observation: Mapping[str, Any], *, own_operation: str | None = None) -> bool:
        """§5.4: a member of R stopped being its atom's head, or a head that became visible
        after the observation's seq now matches lexically well enough to have been listed.
        Heads written by `own_operation` are the output's own doing and are ignored."""
        key = (digest(observation), own_operation)
        if key not in self._queries:
            self._queries[key] = self._changed(observation, own_operation)
        return self._queries[key]

    def _changed(self, observation: Mapping[str, Any], own_operation: str | None) -> bool:
        members = [p for p in observation.get("revisions", []) if isinstance(p, dict)]
        if any(self._head_moved(p, own_operation=own_operation) for p in members):
            return True
        signals = _signals(observation)
        policies = observation.get("readPolicies") or []
        seq = observation.get("seq", 0)
        if not signals or not isinstance(seq, int) or not isinstance(policies, list):
            return False
        full = bool(observation.get("full", False))
        m_floor = observation.get("mFloor", 0) or 0
        heads = (Revision.objects.filter(tenant=self.tenant, is_head=True, state="active", visible_seq__gt=seq,
                                         policy__in=policies)
                 .exclude(review_status="quarantined").exclude(id__in=_revision_ids(members)))
        if self.require_approval:
            heads = heads.filter(review_status="approved")
        if own_operation is not None:
            heads = heads.exclude(operation_id=own_operation)
        # Only lexical matches are watched: semantic ones depend on the index state.
        for body in heads.values_list("body", flat=True).iterator():
            m = seed_match(signals, body)
            if m > 0 and (not full or m >= m_floor):
                return True
        return False

    def token_current(self, manifest: Mapping[str, Any], *, expected: frozenset[str] = frozenset()) -> bool:
        """§4.4 check 8: every watched head is still a head (the batch's own expected heads
        count as current) and no watched query changed."""
        watches = manifest.get("watches") or {}
        if any(self._head_moved(p, expected=expected) for p in watches.get("heads", [])):
            return False
        return not any(self.observation_changed(o) for o in watches.get("queries", []))

    # --- staleness -----------------------------------------------------------------------

    def is_stale(self, revision: Revision) -> bool:
        """§5.4 for one revision. Only generated revisions (`observed-v2`, origin not
        `source`) can be stale; historical reads never make them so."""
        if revision.dependency_contract != "observed-v2" or revision.origin == "source" or not revision.input_token:
            return False
        if revision.id in self._stale:
            return self._stale[revision.id]
        if revision.id in self._visiting:
            return False
        self._visiting.add(revision.id)
        try:
            token = self.token(revision.input_token)
            if token is None:
                # A purge erased the token while the output survived: the token named an
                # erased atom it did not read (a watched one), so a watched input changed.
                stale = Tombstone.objects.filter(tenant=self.tenant, id=revision.input_token).exists()
            else:
                stale = self._token_stale(token, revision.operation_id)
        finally:
            self._visiting.discard(revision.id)
        self._stale[revision.id] = stale
        return stale

    def _token_stale(self, token: InputToken, own_operation: str) -> bool:
        manifest = token.manifest
        watches = manifest.get("watches") or {}
        if any(self._head_moved(p, own_operation=own_operation) for p in watches.get("heads", [])):
            return True
        if any(self.observation_changed(o, own_operation=own_operation) for o in watches.get("queries", [])):
            return True
        generation = manifest.get("generation") or {}
        upstream = _revision_ids(generation.get("inheritedOutputs", [])) + self._current_reads(token, set())
        return any(self.is_stale(r) for r in self._revisions(upstream))

    def _current_reads(self, token: InputToken, seen: set[str]) -> list[str]:
        """The token's current reads and, since inheritance never drops them, those of the
        tokens it inherited (as far as they still exist)."""
        if token.id in seen:
            return []
        seen.add(token.id)
        ids = generation_current_reads(token.manifest)
        for parent_id in (token.manifest.get("generation") or {}).get("inherit", []):
            parent = self.token(parent_id)
            if parent is not None:
                ids += self._current_reads(parent, seen)
        return ids


def stale_revision_ids(tenant: Tenant, revisions: Iterable[Revision]) -> set[str]:
    """The ids of the given revisions that are stale."""
    checker = Staleness(tenant)
    return {r.id for r in revisions if checker.is_stale(r)}


def is_stale(revision: Revision) -> bool:
    return Staleness(revision.tenant).is_stale(revision)
