"""Signal vectors, the semantic channel and cosines for read and search (docs/atoms.md "Candidates" as
amended, docs/atoms.md "Semantic index"; docs/atoms.md "Candidates" and "Match").

With a provider, each distinct non-blank signal text is encoded once per request (v_s),
before the read transaction. The semantic channel finds each channel text's nearest eligible
heads. A candidate whose entry is valid (config, text hash and policy match) gets a cosine
and is scored with the tenant's weights; any other is scored lexically, and then the request
reports `index: "pending"`, as it does when a signal fails to encode or the provider cannot
load. Without a provider everything is lexical and the index is "ready".
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from atoms.embedding import LoadedProvider, ProviderUnavailable, provider_spec, tenant_provider
from atoms.models import AtomStore, IndexEntry, Revision
from atoms.services.hits import Hits
from atoms.services.indexing import entry_valid_for, valid_vectors
from atoms.services.rows import build_revisions, revision_columns, visible_sql
from atoms.text_signals import signal_texts
from memoryhub.prepared import one_of, prepared_cursor
from tenants.models import Tenant

logger = logging.getLogger("atoms.semantic")


@dataclass
class Semantic:
    """The request's signal vectors, and whether anything made the index "pending"."""

    loaded: LoadedProvider | None
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    configured: bool = False
    pending: bool = False
    # Revision id → vectors of a valid entry, or None for none, for heads a channel read with
    # their entry in this request's snapshot: `cosines` needs no query for them.
    known: dict[str, np.ndarray | None] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return self.loaded is not None and bool(self.vectors)

    @property
    def index(self) -> str:
        return "pending" if self.configured and (self.pending or self.loaded is None) else "ready"


def prepare(tenant: Tenant, store: AtomStore, kinds: Mapping[str, Sequence[str]]) -> Semantic:
    """Load the tenant's provider and encode the signals (never raises: failures → pending)."""
    if provider_spec(store) is None:
        return Semantic(loaded=None)
    try:
        loaded = tenant_provider(tenant, store)
    except ProviderUnavailable as exc:
        logger.warning("tenant %s: embedding provider unavailable, recall is lexical: %s", tenant.pk, exc)
        return Semantic(loaded=None, configured=True, pending=True)
    texts = signal_texts(kinds)
    semantic = Semantic(loaded=loaded, configured=True)
    if not texts or loaded is None:
        return semantic
    try:
        matrix = loaded.encode_queries(texts)
    except Exception as exc:  # noqa: BLE001 - any failed encode (ModelSpaceMismatch included) is "pending"
        logger.warning("tenant %s: signal encoding failed, recall is lexical: %s", tenant.pk, exc)
        semantic.pending = True
        return semantic
    semantic.vectors = dict(zip(texts, matrix, strict=True))
    return semantic


# The nearest-neighbour search widens by this factor, at most WIDEN_ROUNDS times, while
# fewer than K eligible heads were found and the index may hold more (docs/atoms.md "Candidates").
WIDEN_FACTOR = 4
WIDEN_ROUNDS = 3
ELIGIBLE_CHUNK = 2_000


def _eligible_entries(tenant: Tenant, config: str, entry_ids: Sequence[int], read_policies: Sequence[str],
                      require_approval: bool) -> dict[int, tuple[Revision, np.ndarray]]:
    """entry id → (head revision, its vectors) for entries whose atom's head is eligible and
    whose entry is valid for that head (policy and text hash match): one query. The whole
    head row and the entry's vectors come with it, so the core's re-read of these candidates
    and their cosines cost no further query (docs/atoms.md "Read path costs")."""
    if len(entry_ids) > ELIGIBLE_CHUNK:  # keeps each statement below the parameter limits
        out: dict[int, tuple[Revision, np.ndarray]] = {}
        for start in range(0, len(entry_ids), ELIGIBLE_CHUNK):
            out.update(_eligible_entries(tenant, config, entry_ids[start:start + ELIGIBLE_CHUNK], read_policies,
                                         require_approval))
        return out
    if not entry_ids:
        return {}
    entry_is, entry_params = one_of(entry_ids)
    policy_is, policy_params = one_of(read_policies)
    visible = visible_sql(require_approval)
    # The head is found by its atom id (`visible` holds `r.is_head`), through the partial unique
    # index atoms_rev_one_head: one index look-up a hit, where going through the atom row took two.
    sql = (f"SELECT e.id, e.policy, e.text_hash, e.count, e.dimensions, e.vectors, {revision_columns('r')} "  # noqa: S608
           f"FROM {IndexEntry._meta.db_table} e JOIN {Revision._meta.db_table} r "
           f"ON r.atom_id = e.atom_id AND r.tenant_id = e.tenant_id "
           f"WHERE e.tenant_id = %s AND e.config = %s AND {entry_is('e.id')} AND {policy_is('e.policy')} "
           f"AND r.policy = e.policy AND {visible} AND {IndexEntry.INTACT_SQL.format(e='e.')}")
    with prepared_cursor(binary=True) as cursor:  # 1.5 KB of vectors a row
        cursor.execute(sql, [tenant.pk, config, *entry_params, *policy_params])
        rows = cursor.fetchall()
    heads = build_revisions(row[6:] for row in rows)
    out = {}
    for (entry_id, policy, text_hash, count, dimensions, vectors, *_), head in zip(rows, heads, strict=True):
        if entry_valid_for(head, policy, text_hash):
            out[entry_id] = (head, IndexEntry.unpack(vectors, count, dimensions))
    return out


def semantic_channel(*, tenant: Tenant, semantic: Semantic | None, texts: Sequence[str],
                     read_policies: Sequence[str], require_approval: bool, k: int) -> list[Hits]:
    """For each text, its `k` nearest eligible heads (best chunk), ties by atomId. Empty
    without a provider or a vector for the text. One vector search and one eligibility query
    per round for all texts together; rounds widen the search (module constants)."""
    from atoms.vector_index import nearest_each

    empty = [Hits(pairs=[], full=False) for _ in texts]
    if semantic is None or not semantic.active or not read_policies or k <= 0:
        return empty
    assert semantic.loaded is not None
    rows = [i for i, text in enumerate(texts) if text in semantic.vectors]
    if not rows:
        return empty
    queries = np.stack([semantic.vectors[texts[i]] for i in rows])
    want = k
    eligible: dict[int, tuple[Revision, np.ndarray]] = {}
    for round_ in range(WIDEN_ROUNDS + 1):
        found, used_file, reachable = nearest_each(tenant.pk, semantic.loaded.config, queries, want)
        fresh = sorted({entry_id for hits in found for entry_id in hits} - eligible.keys())
        eligible.update(_eligible_entries(tenant, semantic.loaded.config, fresh, read_policies, require_approval))
        short = [sum(1 for entry_id in hits if entry_id in eligible) < k for hits in found]
        exhausted = want >= reachable
        if not any(short) or exhausted or round_ == WIDEN_ROUNDS:
            break
        want *= WIDEN_FACTOR
    out = list(empty)
    for row, hits, is_short in zip(rows, found, short, strict=True):
        ranked = sorted(((score, eligible[entry_id]) for entry_id, score in hits.items() if entry_id in eligible),
                        key=lambda item: (-item[0], item[1][0].atom_id))[:k]
        for _, (head, matrix) in ranked:
            semantic.known[head.id] = matrix
        out[row] = Hits(pairs=[(head.atom_id, head.id) for _, (head, _) in ranked], full=len(ranked) >= k,
                        approximate=used_file or (is_short and not exhausted),
                        rows={head.id: head for _, (head, _) in ranked})
    return out


def cosines(tenant: Tenant, semantic: Semantic, revisions: Sequence[Revision]) -> Callable[[Revision], Callable[[str], float | None]]:
    """For each revision, `cosine(text)`: the best cosine between v_text and the revision's
    vectors, or None without a valid entry (then the match is lexical and the request's
    index is "pending"). Marks `semantic.pending` for every candidate without an entry."""
    if not semantic.active:
        return lambda revision: (lambda text: None)
    assert semantic.loaded is not None
    known = semantic.known
    entries = {r.atom_id: matrix for r in revisions if (matrix := known.get(r.id)) is not None}
    entries.update(valid_vectors(tenant, semantic.loaded.config, [r for r in revisions if r.id not in known]))
    # An entry with no vectors (an empty text) is valid but has nothing to compare.
    matrices = {atom_id: matrix for atom_id, matrix in entries.items() if len(matrix)}
    if any(r.atom_id not in entries for r in revisions):
        semantic.pending = True

    def for_revision(revision: Revision) -> Callable[[str], float | None]:
        matrix = matrices.get(revision.atom_id)
        if matrix is None:
            return lambda text: None

        def cosine(text: str) -> float | None:
            vector = semantic.vectors.get(text)
            # The array's own max: np.max adds a Python wrapper per call, hundreds a read.
            return None if vector is None else float((matrix @ vector).max())

        return cosine

    return for_revision
