"""Observations, token currency and staleness (docs/atoms.md "Match").

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

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from atoms.core.canonical import digest
from atoms.core.text import seed_match
from atoms.models import Atom, AtomStore, InputToken, OriginKind, ReviewStatus, Revision, RevisionState, Tombstone
from atoms.services.rows import heads_and_revisions
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


def _judged(revision: Revision) -> bool:
    """Only generated revisions (`observed-v2`, origin not `source`) with a token can be stale."""
    return revision.dependency_contract == "observed-v2" and revision.origin != OriginKind.SOURCE and bool(revision.input_token)


class _HeadRow(NamedTuple):
    id: str
    policy: str
    visible_seq: int
    operation_id: str
    body: str


@dataclass(frozen=True)
class _Watch:
    """One watched query of docs/atoms.md "Match", ready to test heads that became visible after it."""

    signals: dict[str, list[str]]
    policies: frozenset[str]
    seq: int
    members: frozenset[str]
    full: bool
    m_floor: float
    own_operation: str | None

    @classmethod
    def of(cls, observation: Mapping[str, Any], own_operation: str | None) -> _Watch | None:
        """None when the observation watches nothing (no signals, or a malformed seq or
        policy list)."""
        signals = _signals(observation)
        policies = observation.get("readPolicies") or []
        seq = observation.get("seq", 0)
        if not signals or not isinstance(seq, int) or not isinstance(policies, list):
            return None
        policies = [p for p in policies if isinstance(p, str)]
        members = [p for p in observation.get("revisions", []) if isinstance(p, dict)]
        return cls(signals=signals, policies=frozenset(policies), seq=seq, members=frozenset(_revision_ids(members)),
                   full=bool(observation.get("full", False)), m_floor=observation.get("mFloor", 0) or 0,
                   own_operation=own_operation)

    def matches(self, row: _HeadRow) -> bool:
        """The head would have been listed: newer than the observation, inside its policies,
        not a member, not the output's own doing, and matching lexically well enough. Only
        lexical matches are watched: semantic ones depend on the index state."""
        if row.visible_seq <= self.seq or row.policy not in self.policies or row.id in self.members:
            return False
        if self.own_operation is not None and row.operation_id == self.own_operation:
            return False
        m = seed_match(self.signals, row.body)
        return m > 0 and (not self.full or m >= self.m_floor)


class Staleness:
    """Answers currency and staleness questions for one request, caching what it reads.

    Tokens, heads and observation results are looked up once per request; staleness is
    memoized per revision, and a revision met again while it is being judged counts as not
    stale (a cycle adds no new evidence)."""

    def __init__(self, tenant: Tenant, *, require_approval: bool | None = None) -> None:
        self.tenant = tenant
        self._heads: dict[str, Revision | None] = {}
        self._tokens: dict[str, InputToken | None] = {}
        self._tombstones: dict[str, bool] = {}
        self._rows: dict[str, Revision | None] = {}
        self._queries: dict[tuple[str, str | None], bool] = {}
        self._stale: dict[str, bool] = {}
        self._visiting: set[str] = set()
        self._require_approval = require_approval

    # --- lookups -------------------------------------------------------------------------

    def heads(self, atom_ids: Iterable[str]) -> dict[str, Revision | None]:
        """Each atom's current head (None for a purged or unknown atom)."""
        atom_ids = list(atom_ids)
        wanted = [a for a in set(atom_ids) if a not in self._heads]
        if wanted:
            found = {a.id: a.head for a in Atom.objects.filter(tenant=self.tenant, id__in=wanted).select_related("head")}
            for atom_id in wanted:
                self._heads[atom_id] = found.get(atom_id)
        return {a: self._heads[a] for a in atom_ids}

    def token(self, token_id: str) -> InputToken | None:
        self._load_tokens([token_id])
        return self._tokens[token_id]

    def _load_tokens(self, token_ids: Iterable[str]) -> None:
        wanted = [t for t in dict.fromkeys(token_ids) if t not in self._tokens]
        if wanted:
            found = {t.id: t for t in InputToken.objects.filter(tenant=self.tenant, id__in=wanted)}
            for token_id in wanted:
                self._tokens[token_id] = found.get(token_id)

    def _tombstoned(self, token_id: str) -> bool:
        if token_id not in self._tombstones:
            self._tombstones[token_id] = Tombstone.objects.filter(tenant=self.tenant, id=token_id).exists()
        return self._tombstones[token_id]

    def _revisions(self, ids: Iterable[str]) -> list[Revision]:
        ids = list(dict.fromkeys(ids))
        wanted = [i for i in ids if i not in self._rows]
        if wanted:
            found = {r.id: r for r in Revision.objects.filter(tenant=self.tenant, id__in=wanted)}
            for revision_id in wanted:
                self._rows[revision_id] = found.get(revision_id)
        return [row for row in (self._rows[i] for i in ids) if row is not None]

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
        """docs/atoms.md "Match": a member of R stopped being its atom's head, or a head that became visible
        after the observation's seq now matches lexically well enough to have been listed.
        Heads written by `own_operation` are the output's own doing and are ignored."""
        key = (digest(observation), own_operation)
        if key not in self._queries:
            self._queries[key] = self._changed(observation, own_operation)
        return self._queries[key]

    def _changed(self, observation: Mapping[str, Any], own_operation: str | None) -> bool:
        members = [p for p in observation.get("revisions", []) if isinstance(p, dict)]
        self.heads(p.get("atomId", "") for p in members)  # one query for every member
        if any(self._head_moved(p, own_operation=own_operation) for p in members):
            return True
        watch = _Watch.of(observation, own_operation)
        if watch is None:
            return False
        for row in self._newer_heads([watch]):
            if watch.matches(row):
                return True
        return False

    def _newer_heads(self, watches: list[_Watch]) -> Iterator[_HeadRow]:
        """Visible active heads that became visible after the oldest watch's seq, inside any
        watch's policies: one query for all the watches (each filters its own rows)."""
        heads = (Revision.objects.filter(tenant=self.tenant, is_head=True, state=RevisionState.ACTIVE,
                                         visible_seq__gt=min(w.seq for w in watches),
                                         policy__in=sorted({p for w in watches for p in w.policies}))
                 .exclude(review_status=ReviewStatus.QUARANTINED))
        if self.require_approval:
            heads = heads.filter(review_status=ReviewStatus.APPROVED)
        for row in heads.values_list("id", "policy", "visible_seq", "operation_id", "body").iterator():
            yield _HeadRow(*row)

    def token_current(self, manifest: Mapping[str, Any], *, expected: frozenset[str] = frozenset()) -> bool:
        """docs/atoms.md "Decisions" check 8: every watched head is still a head (the batch's own expected heads
        count as current) and no watched query changed."""
        watches = manifest.get("watches") or {}
        self.heads(p.get("atomId", "") for p in watches.get("heads", []) if isinstance(p, dict))
        if any(self._head_moved(p, expected=expected) for p in watches.get("heads", [])):
            return False
        return not any(self.observation_changed(o) for o in watches.get("queries", []))

    # --- bulk warm-up ----------------------------------------------------------------------

    def prefetch(self, revisions: Iterable[Revision]) -> None:
        """Load, in a few bulk queries per level, everything `is_stale` will ask about these
        revisions, so that judging any number of them costs no query per revision.

        A level is the generated revisions still to judge. For a level: their tokens (and
        the tokens those inherit, one query per inheritance level), the tombstones of tokens
        that are gone, the heads of every watched or observed atom, one scan for all watched
        queries, and the upstream revisions, which form the next level."""
        level = [r for r in revisions if _judged(r) and r.id not in self._stale]
        seen: set[str] = set()
        while level:
            seen.update(r.id for r in level)
            token_ids = {r.input_token for r in level}
            self._load_token_tree(token_ids)
            gone = [t for t in token_ids if self._tokens[t] is None and t not in self._tombstones]
            if gone:
                found = set(Tombstone.objects.filter(tenant=self.tenant, id__in=gone).values_list("id", flat=True))
                self._tombstones.update({t: t in found for t in gone})
            judged = [(r, token) for r in level if (token := self._tokens[r.input_token]) is not None]
            pairs: dict[tuple[str, str | None], Mapping[str, Any]] = {}
            atom_ids: set[str] = set()
            upstream: list[str] = []
            for revision, token in judged:
                watches = token.manifest.get("watches") or {}
                atom_ids.update(p.get("atomId", "") for p in watches.get("heads", []) if isinstance(p, dict))
                for observation in watches.get("queries", []):
                    if isinstance(observation, Mapping):
                        pairs.setdefault((digest(observation), revision.operation_id), observation)
                        atom_ids.update(p.get("atomId", "") for p in observation.get("revisions", [])
                                        if isinstance(p, dict))
                generation = token.manifest.get("generation") or {}
                upstream += _revision_ids(generation.get("inheritedOutputs", [])) + self._current_reads(token, set())
            self._warm(atom_ids, upstream)
            self._prefetch_queries({key: observation for key, observation in pairs.items()
                                    if key not in self._queries})
            level = [r for r in self._revisions(upstream) if _judged(r) and r.id not in self._stale and r.id not in seen]

    def _warm(self, atom_ids: Iterable[str], revision_ids: Iterable[str]) -> None:
        """`heads` and `_revisions` of one prefetch level, what is not cached yet, in one
        statement instead of two (each is a PostgreSQL round trip)."""
        atoms = [a for a in set(atom_ids) if a not in self._heads]
        ids = [i for i in dict.fromkeys(revision_ids) if i not in self._rows]
        heads, rows = heads_and_revisions(self.tenant.pk, atoms, ids)
        self._heads.update(heads)
        self._rows.update({i: rows.get(i) for i in ids})

    def _load_token_tree(self, token_ids: Iterable[str]) -> None:
        """These tokens and, level by level, the tokens they inherit."""
        wanted = set(token_ids)
        while wanted:
            self._load_tokens(wanted)
            parents = {parent for t in wanted if (token := self._tokens[t]) is not None
                       for parent in (token.manifest.get("generation") or {}).get("inherit", [])
                       if isinstance(parent, str)}
            wanted = parents - self._tokens.keys()

    def _prefetch_queries(self, pairs: Mapping[tuple[str, str | None], Mapping[str, Any]]) -> None:
        """observation_changed for many (observation, own operation) pairs: the moved
        members from the heads already loaded, then one scan of newer heads for the rest."""
        open_watches: dict[tuple[str, str | None], _Watch] = {}
        for key, observation in pairs.items():
            _, own_operation = key
            members = [p for p in observation.get("revisions", []) if isinstance(p, dict)]
            if any(self._head_moved(p, own_operation=own_operation) for p in members):
                self._queries[key] = True
                continue
            watch = _Watch.of(observation, own_operation)
            if watch is None:
                self._queries[key] = False
            else:
                open_watches[key] = watch
        if open_watches:
            for row in self._newer_heads(list(open_watches.values())):
                for key in [k for k, watch in open_watches.items() if watch.matches(row)]:
                    self._queries[key] = True
                    del open_watches[key]
                if not open_watches:
                    break
        for key in open_watches:
            self._queries[key] = False

    # --- staleness -----------------------------------------------------------------------

    def is_stale(self, revision: Revision) -> bool:
        """docs/atoms.md "Match" for one revision. Only generated revisions (`observed-v2`, origin not
        `source`) can be stale; historical reads never make them so."""
        if not _judged(revision):
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
                stale = self._tombstoned(revision.input_token)
            else:
                stale = self._token_stale(token, revision.operation_id)
        finally:
            self._visiting.discard(revision.id)
        self._stale[revision.id] = stale
        return stale

    def _token_stale(self, token: InputToken, own_operation: str) -> bool:
        manifest = token.manifest
        watches = manifest.get("watches") or {}
        self.heads(p.get("atomId", "") for p in watches.get("heads", []) if isinstance(p, dict))
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
    revisions = list(revisions)
    checker = Staleness(tenant)
    checker.prefetch(revisions)
    return {r.id for r in revisions if checker.is_stale(r)}


def is_stale(revision: Revision) -> bool:
    return Staleness(revision.tenant).is_stale(revision)
