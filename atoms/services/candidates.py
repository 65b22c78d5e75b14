"""The candidate provider of read and search (docs/atoms.md "Candidates" as amended; docs/atoms.md
"Candidates").

Two ranked channels run for each of the first CHANNEL_TEXTS distinct non-blank signal
texts: the lexical channel (BM25 over the lexical index, this module) and the semantic
channel (nearest vectors, atoms.services.semantic). Both return eligible heads only: active,
inside the read policies, not quarantined, approved when the tenant requires approval.
Eligibility applies before each channel's limit: the semantic channel's query checks it, the
lexical channel checks it on the rows it joins and looks a text up again when hidden heads
crowd its best ones (`lexical_channels`).

The union takes, text by text, the lexical hits then the semantic hits, skipping atoms
already in, and is cut at `limit` = min(maxScan, maxCandidates). The provider hands back
pinned refs, the statistics it loaded and the whole rows both channels read with their hits
(the same snapshot, so the core's re-read of them costs no query); the core scores every
candidate itself (atoms.services.scoring), so a channel's own scores never reach a ranking.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db import connection

from atoms.core.bm25 import K1, B, Statistics, query_terms
from atoms.core.text import is_blank
from atoms.models import IndexEntry, LexicalPosting, Revision
from atoms.services.hits import Hits
from atoms.services.indexing import entry_valid_for
from atoms.services.lexical_statistics import load_statistics
from atoms.services.rows import ATTNAMES, build_revisions, revision_columns, visible_sql
from memoryhub.prepared import one_of, prepared_cursor
from tenants.models import Tenant

# Signal texts that query the channels (every text still counts in m).
CHANNEL_TEXTS = 8
# The lexical channel leaves out terms held by more heads than this (summed over the read
# policies): their postings would cost the lookup most and rank least. An absolute number, so
# the work per lookup stays bounded as the corpus grows (docs/atoms.md "Candidates").
SKIP_DOCS = 2_000
# At most this many terms of one text are looked up (its rarest); the rest count as skipped.
MAX_LOOKUP_TERMS = 256
# A term above SKIP_DOCS that must still be looked up ranks only this many times k of its
# best postings (docs/atoms.md "Candidates").
COMMON_SCAN = 4
# The BM25 lookup ranks the postings alone and joins the revision rows of its best k +
# LATE_MARGIN groups only, checking visibility on them; when hidden heads take too many of
# those places, the text is looked up again with visibility joined before the limit
# (docs/atoms.md "Candidates").
LATE_MARGIN = 16
DEFAULT_LEXICAL_CANDIDATES = 200
DEFAULT_SEMANTIC_CANDIDATES = 200


@dataclass(frozen=True)
class Candidates:
    """`refs` are PinnedRefs `{"kind": "pinned", "atomId", "revisionId"}` in union order;
    `complete` is False when the provider is incomplete (a channel returned its full K, a
    term was skipped, the union was cut); `scanned` counts the distinct heads in the union;
    `approximate` is True when a channel's search was approximate or incomplete."""

    refs: list[dict[str, str]]
    complete: bool
    scanned: int
    approximate: bool = False
    # The statistics of every term of every signal text, when the provider loaded them.
    statistics: Statistics | None = None
    rows: dict[str, Revision] = field(default_factory=dict)


def channel_texts(kinds: Mapping[str, Sequence[str]]) -> list[str]:
    """The first CHANNEL_TEXTS distinct non-blank texts, in kind order."""
    seen: dict[str, None] = {}
    for texts in kinds.values():
        for text in texts:
            if isinstance(text, str) and not is_blank(text):
                seen.setdefault(text, None)
    return list(seen)[:CHANNEL_TEXTS]


def signal_terms(kinds: Mapping[str, Sequence[str]]) -> list[str]:
    """Distinct term keys over every non-blank text, first seen first."""
    seen: dict[str, None] = {}
    for texts in kinds.values():
        for text in texts:
            if isinstance(text, str) and not is_blank(text):
                for term in query_terms(text):
                    seen.setdefault(term, None)
    return list(seen)


# A float parameter of the lexical lookups. The driver binds parameters on the client, so a
# bare Python float reaches PostgreSQL as a decimal literal, of type numeric, and the whole BM25
# sum would run in numeric arithmetic (slower); cast, it runs in float8 on PostgreSQL as in
# doubles on SQLite (docs/atoms.md "Candidates"). SQLite reads the type name as REAL.
_FLOAT = "CAST(%s AS DOUBLE PRECISION)"


def _weights(terms: Sequence[str], weights: Sequence[float]) -> tuple[str, list[Any]]:
    """The weight of the posting `p`'s term, one of `terms` (in the same order as
    `weights`), and its parameters. PostgreSQL: an element of an array parameter, so the text
    does not change with the number of terms (memoryhub/prepared.py); SQLite: a CASE.
    (k1 + 1) is folded into the weight: it orders nothing."""
    if connection.vendor == "postgresql":
        return ("(CAST(%s AS DOUBLE PRECISION[]))[array_position(CAST(%s AS TEXT[]), CAST(p.term AS TEXT))]",
                [list(weights), list(terms)])
    return case_weights(terms, weights)


def case_weights(terms: Sequence[str], weights: Sequence[float]) -> tuple[str, list[Any]]:
    """`_weights` as a CASE over the terms, on either database (SQLite's form)."""
    params: list[Any] = []
    for term, weight in zip(terms, weights, strict=True):
        params += [term, weight]
    return f"(CASE p.term {' '.join([f'WHEN %s THEN {_FLOAT}'] * len(terms))} END)", params


@dataclass(frozen=True)
class _Lookup:
    """One text's lexical lookup, to run with the others in one statement: `sql` selects the
    order value `o` then `revision_columns('r')` of its best heads by (`o` descending, atomId):
    the top `k` eligible ones, or, when `late`, the top `limit` whatever their visibility."""

    sql: str
    params: list[Any]
    k: int
    skipped: bool
    approximate: bool
    # Late: the statement returns the best `limit` groups joined to their rows, visible or
    # not; visibility is checked in Python
    # (`Revision.is_unquarantined_active_head`).
    late: bool = False
    limit: int = 0


def lexical_channel(*, tenant_id: int, text: str, stats: Statistics, read_policies: Sequence[str],
                    require_approval: bool, k: int) -> Hits:
    """The top `k` eligible heads of one text by BM25, ties by atomId: one query, or two when
    hidden heads crowd its best k + LATE_MARGIN (`lexical_channels`)."""
    return lexical_channels(tenant_id=tenant_id, texts=[text], stats=stats, read_policies=read_policies,
                            require_approval=require_approval, k=k)[0]


def lexical_channels(*, tenant_id: int, texts: Sequence[str], stats: Statistics, read_policies: Sequence[str],
                     require_approval: bool, k: int, vectors: str | None = None) -> list[Hits]:
    """The lexical channel of each text (`lexical_channel`), every lookup in one statement: a
    UNION ALL of one ranked, limited lookup per text (each statement is a PostgreSQL round
    trip; docs/atoms.md "Read path costs"). Each lookup keeps its own ORDER BY and LIMIT, and
    its rows come back in that order, so a text's hits are those of its own statement. A late
    lookup whose best groups held too many hidden heads is made again, visibility first, in
    one more statement for all such texts.

    `vectors`: an embedding config whose index entries come with the rows (`Hits.vectors`),
    so that scoring these hits reads no entry again (docs/atoms.md "Read path costs")."""
    def lookup_of(text: str, late: bool) -> Hits | _Lookup:
        return _lookup(tenant_id=tenant_id, text=text, stats=stats, read_policies=read_policies,
                       require_approval=require_approval, k=k, late=late)

    planned = [lookup_of(text, not require_approval) for text in texts]
    lookups = [(i, one) for i, one in enumerate(planned) if isinstance(one, _Lookup)]
    if not lookups:
        return [one for one in planned if isinstance(one, Hits)]
    per_text, entries = _run(lookups, vectors)
    again: list[tuple[int, _Lookup]] = []
    for i, lookup in lookups:
        if lookup.late:
            joined = per_text[i]
            visible = [row for row in joined if row.is_unquarantined_active_head]
            per_text[i] = visible[:lookup.k]
            # Too few visible while the lookup returned its full limit: more heads may rank
            # next. (A posting whose revision row were missing would make `joined` short and
            # skip this; the index is kept in the write transaction, docs/atoms.md "Lexical
            # index", so none is.)
            if len(visible) < lookup.k and len(joined) >= lookup.limit:
                exact = lookup_of(texts[i], False)
                assert isinstance(exact, _Lookup)  # the same terms: a lookup again
                again.append((i, exact))
    if again:
        more, more_entries = _run(again, vectors)
        per_text.update(more)
        entries.update(more_entries)
    matrices: dict[str, np.ndarray | None] = {}  # checked once per kept row, whichever texts found it
    out: list[Hits] = []
    for i, planned_one in enumerate(planned):
        if isinstance(planned_one, Hits):
            out.append(planned_one)
            continue
        rows = per_text[i]
        if vectors is not None:
            for r in rows:
                if r.id not in matrices:
                    matrices[r.id] = _valid_matrix(r, entries[r.id])
        out.append(Hits(pairs=[(r.atom_id, r.id) for r in rows], full=len(rows) >= planned_one.k,
                        skipped=planned_one.skipped, approximate=planned_one.approximate, rows={r.id: r for r in rows},
                        vectors={r.id: matrices[r.id] for r in rows} if vectors is not None else {}))
    return out


# The entry columns `_run` reads beside a row: policy, text hash, count, dimensions, vectors
# (all None without an intact entry under the config).
_Entry = tuple[Any, ...]


def _valid_matrix(head: Revision, entry: _Entry) -> np.ndarray | None:
    """The vectors of `entry` when it is valid for `head` (`entry_valid_for`), else None."""
    policy, text_hash, count, dimensions, blob = entry
    if blob is None or not entry_valid_for(head, policy, text_hash):
        return None
    return IndexEntry.unpack(blob, count, dimensions)


def _run(lookups: Sequence[tuple[int, _Lookup]], vectors: str | None = None
         ) -> tuple[dict[int, list[Revision]], dict[str, _Entry]]:
    """Run these lookups as one UNION ALL statement: each text's rows, best first; with
    `vectors` (a config), also revision id → the columns of the row's intact entry under it,
    checked by the caller only for the rows it keeps (`_valid_matrix`)."""
    parts: list[str] = []
    params: list[Any] = []
    entry = IndexEntry._meta.db_table
    for i, lookup in lookups:
        # The rank is numbered over the lookup's own rows, by its own order.
        select = (f"SELECT {i} AS c, ROW_NUMBER() OVER (ORDER BY l{i}.o DESC, l{i}.atom_id) AS n, "
                  f"{revision_columns(f'l{i}')}")
        if vectors is None:
            parts.append(f"{select} FROM ({lookup.sql}) l{i}")
            params += lookup.params
            continue
        # An atom has at most one entry per config (atoms_entry_unique): the join adds no row.
        e = f"e{i}."
        parts.append(f"{select}, {e}policy, {e}text_hash, {e}count, {e}dimensions, {e}vectors "
                     f"FROM ({lookup.sql}) l{i} LEFT JOIN {entry} e{i} ON {e}tenant_id = l{i}.tenant_id "
                     f"AND {e}atom_id = l{i}.atom_id AND {e}config = %s AND {IndexEntry.INTACT_SQL.format(e=e)}")
        params += [*lookup.params, vectors]
    with prepared_cursor(binary=vectors is not None) as cursor:  # 1.5 KB of vectors a row
        cursor.execute(" UNION ALL ".join(parts), params)
        found = cursor.fetchall()
    found.sort(key=lambda row: (row[0], row[1]))  # by text, then rank: no server sort of whole rows
    width = len(ATTNAMES)
    revisions = build_revisions(row[2:2 + width] for row in found)
    per_text: dict[int, list[Revision]] = {i: [] for i, _ in lookups}
    entries: dict[str, _Entry] = {}
    for row, revision in zip(found, revisions, strict=True):
        per_text[row[0]].append(revision)
        if vectors is not None:
            entries[revision.id] = row[2 + width:]
    return per_text, entries


def _lookup(*, tenant_id: int, text: str, stats: Statistics, read_policies: Sequence[str],
            require_approval: bool, k: int, late: bool = False) -> Hits | _Lookup:
    """The lookup of one text, or its Hits when it needs none (no term known, no policy).

    `late`: rank the postings alone and join only the best k + LATE_MARGIN groups to their
    revision rows, visible or not (the caller checks). Postings exist for active heads only
    (docs/atoms.md "Lexical index"), so only a review status can hide one of them; joining
    every posting group before the limit (the other form) costs a row fetch per group, up to
    SKIP_DOCS per term, where the late form fetches k + LATE_MARGIN rows."""
    present = [t for t in query_terms(text) if stats.df.get(t, 0) > 0]
    if k <= 0 or not present or not read_policies:
        return Hits(pairs=[], full=False)
    kept = [t for t in present if stats.df[t] <= SKIP_DOCS]
    if len(kept) > MAX_LOOKUP_TERMS:  # a very long text: its rarest terms rank, the rest are skipped
        rarest = set(sorted(kept, key=lambda t: (stats.df[t], t))[:MAX_LOOKUP_TERMS])
        kept = [t for t in kept if t in rarest]
    if not kept:  # every term is common: the rarest one still ranks (first seen on ties)
        return _common_term(tenant_id=tenant_id, term=min(present, key=lambda t: stats.df[t]), skipped=len(present) > 1,
                            avgdl=stats.avgdl or 1.0, read_policies=read_policies, require_approval=require_approval,
                            k=k, late=late)
    skipped = len(kept) < len(present)
    avgdl = stats.avgdl or 1.0
    weight, weight_params = _weights(kept, [stats.idf(term) for term in kept])
    term_is, term_params = one_of(kept)
    policy_is, policy_params = one_of(read_policies)
    posting = LexicalPosting._meta.db_table
    score = f"SUM({weight} * p.tf / (p.tf + {_FLOAT} + {_FLOAT} * p.length))"
    # The whole revision row comes with each hit: the core re-reads candidates, and these are
    # rows of the same snapshot (docs/atoms.md "Read path costs").
    groups = (f"SELECT p.atom_id, p.revision_id, {score} AS score FROM {posting} p "  # noqa: S608
              f"WHERE p.tenant_id = %s AND {term_is('p.term')} AND {policy_is('p.policy')} "
              f"GROUP BY p.atom_id, p.revision_id")
    params = [*weight_params, K1 * (1.0 - B), K1 * B / avgdl, tenant_id, *term_params, *policy_params]
    if late:
        limit = k + LATE_MARGIN
        sql = (f"SELECT h.score AS o, {revision_columns('r')} FROM ({groups} "  # noqa: S608
               f"ORDER BY score DESC, p.atom_id LIMIT %s) h JOIN atoms_revision r ON r.id = h.revision_id")
        return _Lookup(sql=sql, params=[*params, limit], k=k, skipped=skipped, approximate=False, late=True,
                       limit=limit)
    sql = (f"SELECT h.score AS o, {revision_columns('r')} FROM ({groups}) h "  # noqa: S608
           f"JOIN atoms_revision r ON r.id = h.revision_id WHERE {visible_sql(require_approval)} "
           f"ORDER BY h.score DESC, h.atom_id LIMIT %s")
    return _Lookup(sql=sql, params=[*params, k], k=k, skipped=skipped, approximate=False)


def _common_term(*, tenant_id: int, term: str, skipped: bool, avgdl: float, read_policies: Sequence[str],
                 require_approval: bool, k: int, late: bool = False) -> _Lookup:
    """The lookup of one term held by more than SKIP_DOCS heads. Its BM25 weight rises with tf
    and falls with length, so the best heads are among the first postings in (tf descending,
    length ascending) order, which the lookup index gives directly: the COMMON_SCAN * k first
    of them (per policy) are ranked, never the whole list. Approximate by construction: a long
    head with a high tf can come before a short one that scores more.

    Eligibility applies inside each policy's scan, before its limit (docs/atoms.md
    "Candidates"). Without `late` the scan joins each posting's revision row for it. `late`
    (as for `_lookup`, never with approval required): postings exist for active heads only,
    so only a quarantine can hide one, and the scan skips a quarantined head's posting by
    probing the small partial index atoms_rev_quarantined instead of reading its row; the
    best k are then joined to their rows, and checked again like any late lookup's
    (`lexical_channels`), which finds them all visible."""
    posting = LexicalPosting._meta.db_table
    scan = COMMON_SCAN * k
    if late:
        # SQLite plans without statistics and would probe the primary key, reading each row;
        # INDEXED BY names the partial index, and SQLite refuses the statement rather than
        # run it without that index. PostgreSQL picks the small index itself.
        indexed = " INDEXED BY atoms_rev_quarantined" if connection.vendor == "sqlite" else ""
        joined = ""
        hidden = (f"AND NOT EXISTS (SELECT 1 FROM atoms_revision q{indexed} WHERE q.id = p.revision_id "  # noqa: S608
                  "AND q.review_status = 'quarantined') ")
    else:
        joined, hidden = f"JOIN atoms_revision r ON r.id = p.revision_id AND {visible_sql(require_approval)} ", ""
    parts = " UNION ALL ".join(
        [f"SELECT * FROM (SELECT p.atom_id, p.revision_id, p.tf, p.length FROM {posting} p {joined}"  # noqa: S608
         f"WHERE p.tenant_id = %s AND p.term = %s AND p.policy = %s {hidden}"
         f"ORDER BY p.tf DESC, p.length ASC LIMIT %s) AS best"] * len(read_policies))
    # The best ones are chosen before the whole rows are joined: k row look-ups, not
    # COMMON_SCAN * k per policy (`_run` orders the rows again by o and atomId). Every posting
    # of the window is eligible in both forms, so no margin is needed.
    limit = k
    best = (f"SELECT b.atom_id, b.revision_id, "  # noqa: S608
            f"CAST(b.tf AS DOUBLE PRECISION) / (b.tf + {_FLOAT} + {_FLOAT} * b.length) AS o "
            f"FROM ({parts}) b ORDER BY o DESC, b.atom_id LIMIT %s")
    sql = f"SELECT h.o, {revision_columns('r')} FROM ({best}) h JOIN atoms_revision r ON r.id = h.revision_id"  # noqa: S608
    # One term: the score's order is that of tf / (tf + k1(1-b) + k1·b·length/avgdl).
    params: list[Any] = [K1 * (1.0 - B), K1 * B / avgdl]
    for policy in read_policies:
        params += [tenant_id, term, policy, scan]
    params.append(limit)
    return _Lookup(sql=sql, params=params, k=k, skipped=skipped, approximate=True, late=late, limit=limit)


def union(per_text: Sequence[tuple[Hits, Hits]], limit: int) -> tuple[list[dict[str, str]], bool]:
    """Text by text: lexical hits, then semantic hits; an atom already in is skipped. Cut at
    `limit`; returns (refs, cut)."""
    refs: list[dict[str, str]] = []
    seen: set[str] = set()
    for lexical, semantic in per_text:
        for atom_id, revision_id in (*lexical.pairs, *semantic.pairs):
            if atom_id in seen:
                continue
            if len(refs) >= limit:
                return refs, True
            seen.add(atom_id)
            refs.append({"kind": "pinned", "atomId": atom_id, "revisionId": revision_id})
    return refs, False


def two_channel_candidates(*, tenant: Tenant, kinds: Mapping[str, Sequence[str]], read_policies: Sequence[str],
                           require_approval: bool, limit: int, lexical_k: int, semantic_k: int,
                           semantic: Any = None) -> Candidates:
    """The provider (module docstring). `semantic` is the request's atoms.services.semantic.
    Semantic (or None for lexical only)."""
    from atoms.services.semantic import semantic_channel

    stats = load_statistics(tenant.pk, read_policies, signal_terms(kinds))
    texts = channel_texts(kinds)
    # With signal vectors, the lexical hits' entries come with their rows (`Semantic.known`).
    config = semantic.loaded.config if semantic is not None and semantic.active else None
    lexical = lexical_channels(tenant_id=tenant.pk, texts=texts, stats=stats, read_policies=read_policies,
                               require_approval=require_approval, k=lexical_k, vectors=config)
    if config is not None:
        for hits in lexical:
            semantic.known.update(hits.vectors)
    near = semantic_channel(tenant=tenant, semantic=semantic, texts=texts, read_policies=read_policies,
                            require_approval=require_approval, k=semantic_k)
    refs, cut = union(list(zip(lexical, near, strict=True)), limit)
    incomplete = cut or any(h.full or h.skipped or h.approximate for h in (*lexical, *near))
    rows = {revision_id: row for hits in (*lexical, *near) for revision_id, row in hits.rows.items()}
    return Candidates(refs=refs, complete=not incomplete, scanned=len(refs), approximate=incomplete,
                      statistics=stats, rows=rows)
