"""Bulk revision loads of the read path in plain SQL (docs/atoms.md "Read path costs").

A read makes the same few bulk look-ups on every closure and graph level; building each of
them through the ORM's query compiler cost about as much CPU as running it. These statements
are written once, and their rows become the same Revision instances the ORM would build
(the same field conversions, `_state` marking them as loaded from the database), without
`Model.__init__`, which sets every field through its descriptor and cost more CPU than the
query itself on the lexical channel's hundreds of rows per text.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models.base import ModelState

from atoms.models import Atom, Revision

# Ids per statement: far below every database's parameter limit, above a normal level.
CHUNK = 1_000

_FIELDS = tuple(Revision._meta.concrete_fields)
ATTNAMES = tuple(f.attname for f in _FIELDS)
# Per database vendor: (position, converters, column) of every column that needs converting.
_converters: dict[str, list[tuple[int, list[Callable[..., Any]], Any]]] = {}


_columns: dict[tuple[str, str], str] = {}


def revision_columns(alias: str) -> str:
    """The Revision columns in ATTNAMES order, for `SELECT {revision_columns('r')} …`
    (written once per database vendor and table alias: every bulk load asks)."""
    key = (connection.vendor, alias)
    if key not in _columns:
        _columns[key] = ", ".join(f"{alias}.{connection.ops.quote_name(f.column)}" for f in _FIELDS)
    return _columns[key]


def _conversions() -> list[tuple[int, list[Callable[..., Any]], Any]]:
    """What the ORM's compiler applies to these columns on this database (a boolean on
    SQLite, the JSON field everywhere), found once per vendor."""
    vendor = connection.vendor
    if vendor not in _converters:
        out = []
        for i, f in enumerate(_FIELDS):
            column = f.get_col(Revision._meta.db_table)
            found = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
            if found:
                out.append((i, found, column))
        _converters[vendor] = out
    return _converters[vendor]


def build_revisions(rows: Iterable[Sequence[Any]]) -> list[Revision]:
    """Revision instances from rows of `revision_columns` (in that order), as from_db builds them."""
    conversions = _conversions()
    db = connections[DEFAULT_DB_ALIAS]  # the proxy `connection` costs a context lookup per use
    alias = db.alias
    out = []
    new = Revision.__new__
    for row in rows:
        values = list(row)
        for i, converters, column in conversions:
            value = values[i]
            for converter in converters:
                value = converter(value, column, db)
            values[i] = value
        revision = new(Revision)
        state = ModelState()
        state.adding = False
        state.db = alias
        revision.__dict__.update(zip(ATTNAMES, values, strict=True))
        revision._state = state
        out.append(revision)
    return out


def select_revisions(sql: str, params: Sequence[Any]) -> list[Revision]:
    """The revisions of one statement whose first columns are `revision_columns`."""
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        width = len(ATTNAMES)
        return build_revisions(row[:width] for row in cursor.fetchall())


def _table(model: type[Atom] | type[Revision]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def head_revisions(tenant_id: int, atom_ids: Collection[str]) -> dict[str, Revision]:
    """atom id → head revision, for the atoms of this tenant that have a row and a head;
    the others are absent (a caller that must tell purged atoms apart looks those up)."""
    ids = list(atom_ids)
    out: dict[str, Revision] = {}
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start:start + CHUNK]
        marks = ", ".join(["%s"] * len(chunk))
        sql = (f"SELECT {revision_columns('r')} FROM {_table(Atom)} a "  # noqa: S608
               f"JOIN {_table(Revision)} r ON r.id = a.head_id WHERE a.tenant_id = %s AND a.id IN ({marks})")
        out.update((r.atom_id, r) for r in select_revisions(sql, [tenant_id, *chunk]))
    return out


def revisions_by_id(tenant_id: int, revision_ids: Collection[str]) -> dict[str, Revision]:
    """revision id → revision, for the ids that exist in this tenant."""
    ids = list(revision_ids)
    out: dict[str, Revision] = {}
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start:start + CHUNK]
        marks = ", ".join(["%s"] * len(chunk))
        sql = (f"SELECT {revision_columns('r')} FROM {_table(Revision)} r "  # noqa: S608
               f"WHERE r.tenant_id = %s AND r.id IN ({marks})")
        out.update((r.id, r) for r in select_revisions(sql, [tenant_id, *chunk]))
    return out


def heads_and_revisions(tenant_id: int, atom_ids: Collection[str], revision_ids: Collection[str]
                        ) -> tuple[dict[str, Revision | None], dict[str, Revision]]:
    """(atom id → head or None for each of `atom_ids`, revision id → revision for those of
    `revision_ids` that exist) in this tenant, in one statement (or none when both are
    empty): staleness needs both of every level of generated revisions, and each statement
    is a PostgreSQL round trip. One IN list each, as the ORM look-ups it replaces."""
    atoms, ids = list(atom_ids), list(revision_ids)
    parts: list[str] = []
    params: list[Any] = []
    if atoms:
        parts.append(f"SELECT 0, a.id, {revision_columns('h')} FROM {_table(Atom)} a "  # noqa: S608
                     f"LEFT JOIN {_table(Revision)} h ON h.id = a.head_id "
                     f"WHERE a.tenant_id = %s AND a.id IN ({', '.join(['%s'] * len(atoms))})")
        params += [tenant_id, *atoms]
    if ids:
        parts.append(f"SELECT 1, r.id, {revision_columns('r')} FROM {_table(Revision)} r "  # noqa: S608
                     f"WHERE r.tenant_id = %s AND r.id IN ({', '.join(['%s'] * len(ids))})")
        params += [tenant_id, *ids]
    heads: dict[str, Revision | None] = dict.fromkeys(atoms)
    rows: dict[str, Revision] = {}
    if not parts:
        return heads, rows
    with connection.cursor() as cursor:
        cursor.execute(" UNION ALL ".join(parts), params)
        found = cursor.fetchall()
    width = len(ATTNAMES)
    with_head = [row for row in found if row[0] == 0 and row[2] is not None]
    for row, revision in zip(with_head, build_revisions(row[2:2 + width] for row in with_head), strict=True):
        heads[row[1]] = revision
    rows.update((r.id, r) for r in build_revisions(row[2:2 + width] for row in found if row[0] == 1))
    return heads, rows


def visible_sql(require_approval: bool) -> str:
    """Eligibility of the revision aliased `r` (both channels). Without approval required it is
    `Revision.is_unquarantined_active_head`, which checks the rows a late lookup joined."""
    sql = "r.is_head AND r.state = 'active' AND r.review_status <> 'quarantined'"
    if require_approval:
        sql += " AND r.review_status = 'approved'"
    return sql
