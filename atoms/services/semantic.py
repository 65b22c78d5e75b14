"""Semantic scoring and the hybrid candidate provider for read and search (atoms.md §6.3, §10).

With a provider, each distinct non-blank signal text is encoded once per request (v_s).
Candidates are the lexical ones plus the nearest index entries of the signals; a candidate
whose entry is valid (config, text hash and policy match) is scored
`0.8·semantic + 0.2·lexical`, any other lexically, and then the request reports
`index: "pending"`, as it does when a signal fails to encode or the provider cannot load.
Without a provider everything is lexical and the index is "ready".
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings

from atoms.embedding import LoadedProvider, ProviderUnavailable, provider_spec, tenant_provider
from atoms.models import AtomStore, IndexEntry, Revision
from atoms.services.candidates import Candidates, lexical_candidates
from atoms.services.indexing import valid_vectors
from atoms.text_signals import signal_texts
from tenants.models import Tenant

logger = logging.getLogger("atoms.semantic")


@dataclass
class Semantic:
    """The request's signal vectors, and whether anything made the index "pending"."""

    loaded: LoadedProvider | None
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    configured: bool = False
    pending: bool = False

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
    if not texts:
        return semantic
    try:
        matrix = loaded.encode(texts)
    except Exception as exc:  # noqa: BLE001 - any failed encode (ModelSpaceMismatch included) is "pending"
        logger.warning("tenant %s: signal encoding failed, recall is lexical: %s", tenant.pk, exc)
        semantic.pending = True
        return semantic
    semantic.vectors = dict(zip(texts, matrix, strict=True))
    return semantic


def _nearest_heads(tenant: Tenant, semantic: Semantic, read_policies: Sequence[str], require_approval: bool,
                   limit: int) -> list[dict[str, str]]:
    from atoms.vector_index import nearest

    assert semantic.loaded is not None
    queries = np.stack(list(semantic.vectors.values()))
    k = max(1, min(limit, settings.ATOMS_VECTOR_CANDIDATES))
    hits = nearest(tenant.pk, semantic.loaded.config, queries, k)
    if not hits:
        return []
    atoms = dict(IndexEntry.objects.filter(tenant=tenant, id__in=list(hits)).values_list("atom_id", "id"))
    heads = Revision.objects.filter(tenant=tenant, atom_id__in=list(atoms), is_head=True, state="active",
                                    policy__in=list(read_policies)).exclude(review_status="quarantined")
    if require_approval:
        heads = heads.filter(review_status="approved")
    found = list(heads.values_list("atom_id", "id"))
    # Nearest first, so that a limit keeps the best neighbours.
    found.sort(key=lambda pair: (-hits[atoms[pair[0]]], pair[0]))
    return [{"kind": "pinned", "atomId": atom_id, "revisionId": revision_id} for atom_id, revision_id in found[:limit]]


def hybrid_candidates(*, tenant: Tenant, kinds: Mapping[str, Sequence[str]], read_policies: Sequence[str],
                      require_approval: bool, limit: int, semantic: Semantic | None = None) -> Candidates:
    """Lexical candidates plus the signals' nearest indexed heads (approximate). Semantic
    neighbours come first and are never truncated away by lexical matches; the core
    re-reads and re-scores every one."""
    lexical = lexical_candidates(tenant=tenant, kinds=kinds, read_policies=read_policies,
                                 require_approval=require_approval, limit=limit)
    if semantic is None or not semantic.active or not read_policies:
        return lexical
    near = _nearest_heads(tenant, semantic, read_policies, require_approval, limit)
    seen = {ref["atomId"] for ref in near}
    refs = list(near)
    dropped = False
    for ref in lexical.refs:
        if ref["atomId"] in seen:
            continue
        if len(refs) >= limit:
            dropped = True
            break
        refs.append(ref)
    return Candidates(refs=refs, complete=lexical.complete and not dropped, scanned=lexical.scanned + len(near),
                      approximate=True, rows=lexical.rows)


def cosines(tenant: Tenant, semantic: Semantic, revisions: Sequence[Revision]) -> Callable[[Revision], Callable[[str], float | None]]:
    """For each revision, `cosine(text)`: the best cosine between v_text and the revision's
    vectors, or None without a valid entry (then the match is lexical and the request's
    index is "pending"). Marks `semantic.pending` for every candidate without an entry."""
    if not semantic.active:
        return lambda revision: (lambda text: None)
    assert semantic.loaded is not None
    entries = valid_vectors(tenant, semantic.loaded.config, list(revisions))
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
            return None if vector is None else float(np.max(matrix @ vector))

        return cosine

    return for_revision
