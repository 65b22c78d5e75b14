"""Keeping the lexical index (docs/atoms.md "Lexical index"): postings and statistics of
active heads, changed in the caller's transaction.

`lexicon_add` indexes revisions that became active heads, `lexicon_remove` takes out
revisions that stopped being active heads (revised, retired, purged). Both work from the
revisions' own bodies with the term rules of atoms.core.text, so removing needs no read of
the postings. Statistics move by `ON CONFLICT ... DO UPDATE SET docs = docs + delta` (SQLite
3.24+ and PostgreSQL alike): concurrent writers of one tenant add up instead of overwriting,
and writers of a tenant are serialized on its AtomStore row anyway.

Every active head counts, whatever its review status: the statistics are aggregate counts
inside the reader's own policies (docs/atoms.md "Lexical index"), and an approval therefore
changes nothing here.
"""

from __future__ import annotations

import unicodedata
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from django.db import connection

from atoms.core.bm25 import keyed_counts
from atoms.models import AtomStore, LexicalCorpus, LexicalPosting, LexicalTerm, Revision, RevisionState

UNICODE_VERSION = unicodedata.unidata_version
REBUILD_PAGE = 2_000
BATCH = 250  # rows per statement: 4-7 parameters each stays far below SQLite's variable limit


@dataclass(frozen=True)
class Document:
    """A head as the index sees it."""

    tenant_id: int
    policy: str
    revision_id: str
    atom_id: str
    counts: dict[str, int]  # term key → tf
    length: int


def document(revision: Revision) -> Document:
    counts, length = keyed_counts(revision.body)
    return Document(tenant_id=revision.tenant_id, policy=revision.policy, revision_id=revision.id,
                    atom_id=revision.atom_id, counts=counts, length=length)


def indexed(revision: Revision) -> bool:
    """Whether the revision belongs in the index: an active head."""
    return revision.is_head and revision.state == RevisionState.ACTIVE


def _bump_terms(deltas: dict[tuple[int, str, str], int]) -> None:
    rows = [(tenant_id, policy, term, delta) for (tenant_id, policy, term), delta in deltas.items() if delta]
    table = LexicalTerm._meta.db_table
    with connection.cursor() as cursor:
        for start in range(0, len(rows), BATCH):
            chunk = rows[start:start + BATCH]
            values = ", ".join(["(%s, %s, %s, %s)"] * len(chunk))
            cursor.execute(
                f"INSERT INTO {table} (tenant_id, policy, term, docs) VALUES {values} "  # noqa: S608 - constants only
                f"ON CONFLICT (tenant_id, policy, term) DO UPDATE SET docs = {table}.docs + excluded.docs",
                [value for row in chunk for value in row])
        # Terms no head holds any more go, so the table stays the size of the vocabulary.
        gone: dict[tuple[int, str], list[str]] = defaultdict(list)
        for tenant_id, policy, term, delta in rows:
            if delta < 0:
                gone[(tenant_id, policy)].append(term)
        for (tenant_id, policy), terms in gone.items():
            for start in range(0, len(terms), BATCH):
                names = terms[start:start + BATCH]
                cursor.execute(
                    f"DELETE FROM {table} WHERE tenant_id = %s AND policy = %s AND docs <= 0 "  # noqa: S608
                    f"AND term IN ({', '.join(['%s'] * len(names))})", [tenant_id, policy, *names])


def _bump_corpus(deltas: dict[tuple[int, str], tuple[int, int]]) -> None:
    table = LexicalCorpus._meta.db_table
    rows = [(tenant_id, policy, docs, length, UNICODE_VERSION)
            for (tenant_id, policy), (docs, length) in deltas.items() if docs or length]
    if not rows:
        return
    values = ", ".join(["(%s, %s, %s, %s, %s)"] * len(rows))
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (tenant_id, policy, docs, length, unicode_version) VALUES {values} "  # noqa: S608
            f"ON CONFLICT (tenant_id, policy) DO UPDATE SET docs = {table}.docs + excluded.docs, "
            f"length = {table}.length + excluded.length",
            [value for row in rows for value in row])


def _apply(documents: Sequence[Document], sign: int) -> None:
    terms: dict[tuple[int, str, str], int] = defaultdict(int)
    corpus: dict[tuple[int, str], tuple[int, int]] = {}
    for doc in documents:
        for term in doc.counts:
            terms[(doc.tenant_id, doc.policy, term)] += sign
        docs, length = corpus.get((doc.tenant_id, doc.policy), (0, 0))
        corpus[(doc.tenant_id, doc.policy)] = (docs + sign, length + sign * doc.length)
    _bump_terms(terms)
    _bump_corpus(corpus)


def lexicon_add(revisions: Iterable[Revision]) -> None:
    """Index these revisions (those that are active heads); call in the writing transaction."""
    documents = [document(r) for r in revisions if indexed(r)]
    if not documents:
        return
    LexicalPosting.objects.bulk_create(
        [LexicalPosting(tenant_id=d.tenant_id, policy=d.policy, term=term, revision_id=d.revision_id,
                        atom_id=d.atom_id, tf=tf, length=d.length)
         for d in documents for term, tf in d.counts.items()], batch_size=BATCH)
    _apply(documents, +1)


def lexicon_remove(revisions: Iterable[Revision]) -> None:
    """Take these revisions out of the index. Pass each one as it was while indexed (an
    active head): the caller knows, and a revision that was not indexed must not be passed.

    The deltas come from the stored postings, not from re-tokenizing the bodies, so a removal
    takes out exactly what was added even when the term rules changed in between (another
    Unicode version before its rebuild)."""
    removed = list({r.id: r for r in revisions}.values())
    if not removed:
        return
    by_tenant: dict[int, list[str]] = defaultdict(list)
    for revision in removed:
        by_tenant[revision.tenant_id].append(revision.id)
    terms: dict[tuple[int, str, str], int] = defaultdict(int)
    lengths: dict[str, int] = {}
    for tenant_id, ids in by_tenant.items():
        for start in range(0, len(ids), BATCH):
            rows = LexicalPosting.objects.filter(tenant_id=tenant_id, revision_id__in=ids[start:start + BATCH])
            for policy, term, revision_id, length in rows.values_list("policy", "term", "revision_id", "length"):
                terms[(tenant_id, policy, term)] -= 1
                lengths[revision_id] = length
            rows.delete()
    corpus: dict[tuple[int, str], tuple[int, int]] = {}
    for revision in removed:
        docs, length = corpus.get((revision.tenant_id, revision.policy), (0, 0))
        # A head without any term has no posting: it still counts as a document of length 0.
        corpus[(revision.tenant_id, revision.policy)] = (docs - 1, length - lengths.get(revision.id, 0))
    _bump_terms(terms)
    _bump_corpus(corpus)


def lexicon_rebuild(tenant_ids: Sequence[int] | None = None, *, progress: Callable[[int], None] | None = None) -> int:
    """Rewrite the index of these tenants (all when None) from their active heads; returns the
    number of heads indexed. Run inside a transaction (the command and the migration do)."""
    heads = Revision.objects.filter(is_head=True, state=RevisionState.ACTIVE)
    postings, terms, corpus = LexicalPosting.objects.all(), LexicalTerm.objects.all(), LexicalCorpus.objects.all()
    if tenant_ids is not None:
        heads = heads.filter(tenant_id__in=tenant_ids)
        postings, terms = postings.filter(tenant_id__in=tenant_ids), terms.filter(tenant_id__in=tenant_ids)
        corpus = corpus.filter(tenant_id__in=tenant_ids)
    # Writers of a tenant are serialized on its AtomStore row: holding it keeps a concurrent
    # write from applying its deltas to rows this rebuild is replacing.
    stores = AtomStore.objects.select_for_update().order_by("pk")
    list(stores if tenant_ids is None else stores.filter(tenant_id__in=tenant_ids))
    for queryset in (postings, terms, corpus):
        queryset.delete()
    done = 0
    last = ""
    # Keyset pages by primary key: memory stays flat however many heads there are.
    while True:
        page = list(heads.filter(id__gt=last).order_by("id")[:REBUILD_PAGE])
        if not page:
            return done
        lexicon_add(page)
        done += len(page)
        last = page[-1].id
        if progress is not None:
            progress(len(page))


@dataclass(frozen=True)
class CheckResult:
    heads: int
    postings: int
    mismatches: list[str]  # human-readable, ids and counts only (never content)


def lexicon_check(tenant_id: int, *, progress: Callable[[int], None] | None = None) -> CheckResult:
    """Recompute the tenant's index from its active heads and compare it with what is stored."""
    postings: set[tuple[str, str, str, int, int]] = set()
    terms: dict[tuple[str, str], int] = defaultdict(int)
    corpus: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    heads = Revision.objects.filter(tenant_id=tenant_id, is_head=True, state=RevisionState.ACTIVE)
    done, last = 0, ""
    while True:
        page = list(heads.filter(id__gt=last).order_by("id")[:REBUILD_PAGE])
        if not page:
            break
        for revision in page:
            doc = document(revision)
            corpus[doc.policy][0] += 1
            corpus[doc.policy][1] += doc.length
            for term, tf in doc.counts.items():
                postings.add((doc.policy, term, doc.revision_id, tf, doc.length))
                terms[(doc.policy, term)] += 1
        done += len(page)
        last = page[-1].id
        if progress is not None:
            progress(len(page))
    mismatches: list[str] = []
    stored_postings = set(LexicalPosting.objects.filter(tenant_id=tenant_id).values_list(
        "policy", "term", "revision_id", "tf", "length"))
    if stored_postings != postings:
        mismatches.append(f"postings: {len(postings - stored_postings)} missing, "
                          f"{len(stored_postings - postings)} unexpected")
    stored_terms = {(p, t): n for p, t, n in LexicalTerm.objects.filter(tenant_id=tenant_id).values_list(
        "policy", "term", "docs") if n}
    if stored_terms != dict(terms):
        wrong = {k for k in stored_terms.keys() | terms.keys() if stored_terms.get(k) != terms.get(k)}
        mismatches.append(f"term counts: {len(wrong)} terms differ")
    rows = list(LexicalCorpus.objects.filter(tenant_id=tenant_id).values_list("policy", "docs", "length",
                                                                            "unicode_version"))
    stored_corpus = {policy: [docs, length] for policy, docs, length, _ in rows if docs or length}
    if stored_corpus != dict(corpus):
        mismatches.append("corpus statistics differ")
    versions = {version for _, _, _, version in rows} - {UNICODE_VERSION}
    if versions:
        mismatches.append(f"terms made with Unicode {sorted(versions)}, this process uses {UNICODE_VERSION}: rebuild")
    return CheckResult(heads=done, postings=len(postings), mismatches=mismatches)


def lexicon_rebuild_other_versions(**kwargs: object) -> int:
    """Rebuild the index of every tenant whose terms were made with another Unicode version
    than this process's (a Python upgrade can change `unicodedata`). Connected to
    post_migrate, so a deploy that migrates also re-tokenizes; returns the tenants rebuilt."""
    from django.db import transaction

    stale = sorted(set(LexicalCorpus.objects.exclude(unicode_version=UNICODE_VERSION)
                       .values_list("tenant_id", flat=True)))
    for tenant_id in stale:
        with transaction.atomic():
            lexicon_rebuild([tenant_id])
    return len(stale)
