"""The storage-side candidate provider (atoms.md §6.3).

It returns pinned refs of eligible heads: active, readable (policy among the binding's read
policies), visible (not quarantined; approved when the tenant requires approval), with a
lexical match above 0, at most `limit` = min(maxScan, maxCandidates) of them, ordered by
`seq` descending, then atomId. Eligibility is part of the SQL, so it applies before the
limit, never after.

Lexical match > 0 means "some word token of some signal text is a substring of the
NFKC-lowercased body". The database narrows the heads with its trigram index
(atoms/fulltext.py); every head it returns is then checked here in Python with the very
rule of atoms.core.text, so a prefilter that returns too much costs time, never accuracy.
The core re-reads and re-scores whatever this returns; bodies and scores stay here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from atoms.core.text import is_blank, normalize_for_match, word_tokens
from atoms.fulltext import FTS_TABLE, PG_FOLDED, PG_UNFOLDED, TRIGRAM
from atoms.models import Revision
from tenants.models import Tenant

FETCH = 256
# Beyond these many distinct tokens an OR of index probes stops paying off; the provider
# then scans the eligible heads (still exact, just slower).
MAX_FTS_TOKENS = 1024
MAX_LIKE_TOKENS = 64


@dataclass(frozen=True)
class Candidates:
    """`refs` are PinnedRefs `{"kind": "pinned", "atomId", "revisionId"}` in provider order;
    `complete` is False when more heads were eligible than returned; `scanned` counts the
    heads examined."""

    refs: list[dict[str, str]]
    complete: bool
    scanned: int
    approximate: bool = False
    # The rows behind `refs` when the provider read them whole (ours does): the core then
    # skips its re-read for these. Read in the same transaction, they are the same rows.
    rows: dict[str, Revision] = field(default_factory=dict)


def signal_tokens(kinds: Mapping[str, Sequence[str]]) -> list[str]:
    """Distinct word tokens over every non-blank signal text, first seen first. A head has
    m > 0 exactly when it contains one of them."""
    seen: dict[str, None] = {}
    for texts in kinds.values():
        for text in texts:
            if not is_blank(text):
                for token in word_tokens(text):
                    seen.setdefault(token, None)
    return list(seen)


def _eligible(tenant: Tenant, read_policies: Sequence[str], require_approval: bool, alias: str = "") -> tuple[str, list[Any]]:
    """The WHERE clause of an eligible head (without the match)."""
    col = f"{alias}." if alias else ""
    marks = ", ".join(["%s"] * len(read_policies))
    sql = (f"{col}tenant_id = %s AND {col}is_head AND {col}state = 'active' AND {col}policy IN ({marks}) "
           f"AND {col}review_status <> 'quarantined'")
    if require_approval:
        sql += f" AND {col}review_status = 'approved'"
    return sql, [tenant.pk, *read_policies]


def _has_fts_table() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = %s", [FTS_TABLE])
        return cursor.fetchone() is not None


def _quoted(token: str) -> str:
    return '"' + token.replace('"', '""') + '"'


def _like(token: str) -> str:
    return "%" + token.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


COLUMNS = [f.column for f in Revision._meta.concrete_fields]
ATTNAMES = [f.attname for f in Revision._meta.concrete_fields]
BODY = COLUMNS.index("body")


Converters = list[tuple[int, list[Any], Any]]


def _converters() -> Converters:
    """(position, converters, column) of the fields whose raw values need converting on this
    connection, as the ORM's compiler would apply them (SQLite booleans, JSON fields)."""
    out: Converters = []
    for position, field_ in enumerate(Revision._meta.concrete_fields):
        column = field_.get_col(Revision._meta.db_table)
        converters = connection.ops.get_db_converters(column) + field_.get_db_converters(connection)
        if converters:
            out.append((position, converters, column))
    return out


def _revision(values: Sequence[Any], converters: Converters) -> Revision:
    """A Revision from one raw row, converted exactly as a normal ORM load."""
    row = list(values)
    for position, functions, column in converters:
        for convert in functions:
            row[position] = convert(row[position], column, connection)
    return Revision.from_db(connection.alias, ATTNAMES, row)


def _columns(alias: str = "") -> str:
    return ", ".join(f"{alias}.{c}" if alias else c for c in COLUMNS)


def _query(tenant: Tenant, tokens: list[str], read_policies: Sequence[str],
           require_approval: bool) -> tuple[str, list[Any]]:
    """SQL returning every column of eligible heads that may match, in provider order.

    Only constants and `%s` placeholders are formatted into the SQL (hence the S608 waivers);
    every value, tokens included, is a parameter."""
    if connection.vendor == "sqlite" and len(tokens) <= MAX_FTS_TOKENS and _has_fts_table():
        where, params = _eligible(tenant, read_policies, require_approval, "r")
        long = [t for t in tokens if len(t) >= TRIGRAM]
        short = [t for t in tokens if len(t) < TRIGRAM]
        probes: list[str] = []
        probe_params: list[Any] = []
        if long:
            probes.append(f"SELECT revision_id FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s AND tenant_id = %s")  # noqa: S608
            probe_params += [" OR ".join(_quoted(t) for t in long), tenant.pk]
        if short:
            # Trigram queries cannot find one- or two-character tokens; instr() over the
            # folded text the table stores can.
            found = " OR ".join(["instr(body, %s) > 0"] * len(short))
            probes.append(f"SELECT revision_id FROM {FTS_TABLE} WHERE tenant_id = %s AND ({found})")  # noqa: S608
            probe_params += [tenant.pk, *short]
        # CROSS JOIN keeps SQLite from walking every revision of the tenant in seq order:
        # the index matches drive, each looked up by primary key, then sorted.
        sql = (f"SELECT {_columns('r')} FROM ({' UNION '.join(probes)}) AS m "  # noqa: S608
               f"CROSS JOIN atoms_revision r ON r.id = m.revision_id WHERE {where} ORDER BY r.seq DESC, r.atom_id")
        return sql, probe_params + params
    where, params = _eligible(tenant, read_policies, require_approval)
    if connection.vendor == "postgresql" and len(tokens) <= MAX_LIKE_TOKENS:
        likes = " OR ".join([f"{PG_FOLDED} LIKE %s"] * len(tokens))
        params += [_like(t) for t in tokens]
        where += f" AND ({likes} OR {PG_UNFOLDED})"
    # Otherwise (another database, SQLite without FTS5 trigram, very many tokens): every
    # eligible head, checked below.
    return f"SELECT {_columns()} FROM atoms_revision WHERE {where} ORDER BY seq DESC, atom_id", params  # noqa: S608


def _matches(tokens: Iterable[str], body: str) -> bool:
    folded = normalize_for_match(body)
    return any(token in folded for token in tokens)


def lexical_candidates(*, tenant: Tenant, kinds: Mapping[str, Sequence[str]], read_policies: Sequence[str],
                       require_approval: bool, limit: int) -> Candidates:
    """Eligible heads with lexical match > 0, at most `limit`, newest first."""
    tokens = signal_tokens(kinds)
    if not tokens or not read_policies:
        return Candidates(refs=[], complete=True, scanned=0)
    sql, params = _query(tenant, tokens, list(read_policies), require_approval)
    found: list[dict[str, str]] = []
    rows: dict[str, Revision] = {}
    converters = _converters()
    scanned = 0
    complete = True
    # A server-side cursor on PostgreSQL: the scan stops once one head past the limit shows
    # that more were eligible, without loading every body first.
    with connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while complete:
            fetched = cursor.fetchmany(FETCH)
            if not fetched:
                break
            for values in fetched:
                scanned += 1
                if not _matches(tokens, values[BODY]):
                    continue
                if len(found) == limit:
                    complete = False
                    break
                revision = _revision(values, converters)
                rows[revision.id] = revision
                found.append({"kind": "pinned", "atomId": revision.atom_id, "revisionId": revision.id})
    return Candidates(refs=found, complete=complete, scanned=scanned, rows=rows)
