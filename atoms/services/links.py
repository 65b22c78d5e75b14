"""Slots, origins and the revisions they name, of many revisions in one statement
(docs/atoms.md "Read path costs"), for graph acquisition, read's closure levels and views.

Each walks a level of revisions at a time and needs the same things of it: its slots, its
origins, the head of every atom its slots name, the pinned targets of its observed slots
and the sources its origins cite. One UNION ALL statement reads them all: the slots come
with their target's head row (a LEFT JOIN through the atom), the origins with their source
row, so no separate look-up runs per level (each is a PostgreSQL round trip). Graph acquisition adds the slots of active heads that
link into the level, with those heads' rows. Rows are plain tuples, not model instances;
revisions are built by atoms.services.rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from django.db import connection
from django.db.models import Field

from atoms.models import Atom, Origin, Revision, Slot
from atoms.services.rows import ATTNAMES, build_revisions, revision_columns

# Revision ids per statement: far below every database's parameter limit (each id is bound
# twice), and above a normal level.
LINKS_CHUNK = 1_000
_OWN, _ORIGIN, _LINKER, _PINNED = 0, 1, 2, 3
_REVISION = 14  # the first revision column of a row
_SLOT = "s.revision_id, s.position, s.role, s.mode, s.target_atom_id, s.target_revision_id, s.required, s.order_key"


class SlotRow(NamedTuple):
    """A stored Slot's fields that views and closures read, without a model instance."""

    revision_id: str
    position: int
    role: str
    mode: str
    target_atom_id: str
    target_revision_id: str
    required: bool
    order_key: str


class OriginRow(NamedTuple):
    """A stored Origin's fields that views and closures read, without a model instance."""

    revision_id: str
    position: int
    source_atom_id: str
    source_revision_id: str
    start: int
    end: int
    quote_digest: str


@dataclass
class Links:
    """What one load read: slots and origins in (revision id, position) order, atom id →
    head for the slots' targets that have one (an atom without a row or without a head is
    absent), and the linking slots with their heads (graph acquisition only)."""

    slots: list[SlotRow] = field(default_factory=list)
    origins: list[OriginRow] = field(default_factory=list)
    heads: dict[str, Revision] = field(default_factory=dict)
    linkers: list[tuple[SlotRow, Revision]] = field(default_factory=list)
    rows: dict[str, Revision] = field(default_factory=dict)  # pinned targets and cited sources that exist


@dataclass
class GraphLinks:
    """What graph acquisition read about the revisions it expanded, for a closure load of the
    same snapshot to reuse: their slots and origins (a list, possibly empty, for every
    expanded revision), the heads of their link targets that have one, and their pinned
    targets and cited sources that exist."""

    slots: dict[str, list[SlotRow]] = field(default_factory=dict)
    origins: dict[str, list[OriginRow]] = field(default_factory=dict)
    heads: dict[str, Revision] = field(default_factory=dict)
    rows: dict[str, Revision] = field(default_factory=dict)


def _quoted(model: type[Atom] | type[Origin] | type[Revision] | type[Slot]) -> str:
    return connection.ops.quote_name(model._meta.db_table)


_typed: dict[str, str] = {}


def _typed_nulls() -> str:
    """NULLs typed as the origin columns, once per database vendor."""
    if connection.vendor not in _typed:
        casts = []
        for name in ("source_atom_id", "source_revision_id", "start", "end", "quote_digest"):
            column = Origin._meta.get_field(name)
            assert isinstance(column, Field)
            casts.append(f"CAST(NULL AS {column.db_type(connection)})")
        _typed[connection.vendor] = ", ".join(casts)
    return _typed[connection.vendor]


def _statement(tenant_id: int, own: list[str], atoms: list[str]) -> tuple[str, list[Any]]:
    """Linking slots of `atoms` (when any), then of the revisions `own`: the slots with their
    targets' heads, the origins with their sources, the pinned targets of observed slots.
    PostgreSQL types a UNION's NULL columns from the branches before them, so the first
    branch types every column."""
    slot, origin, revision, atom = _quoted(Slot), _quoted(Origin), _quoted(Revision), _quoted(Atom)
    typed = _typed_nulls()
    marks = ", ".join(["%s"] * len(own))
    parts: list[str] = []
    params: list[Any] = []
    if atoms:
        parts.append(f"SELECT {_LINKER}, {_SLOT}, {typed}, {revision_columns('r')} FROM {slot} s "  # noqa: S608
                     f"JOIN {revision} r ON r.id = s.revision_id WHERE s.tenant_id = %s "
                     f"AND s.target_atom_id IN ({', '.join(['%s'] * len(atoms))}) AND r.is_head AND r.state = 'active'")
        params += [tenant_id, *atoms]
    if own:
        parts.append(f"SELECT {_OWN}, {_SLOT}, {typed}, {revision_columns('h')} "  # noqa: S608
                     f"FROM {slot} s LEFT JOIN {atom} a ON a.id = s.target_atom_id AND a.tenant_id = %s "
                     f"LEFT JOIN {revision} h ON h.id = a.head_id WHERE s.revision_id IN ({marks})")
        parts.append(f"SELECT {_ORIGIN}, o.revision_id, o.position, NULL, NULL, NULL, NULL, NULL, NULL, "  # noqa: S608
                     f"o.source_atom_id, o.source_revision_id, o.start, o.\"end\", o.quote_digest, "
                     f"{revision_columns('c')} FROM {origin} o "
                     f"LEFT JOIN {revision} c ON c.id = o.source_revision_id AND c.tenant_id = %s "
                     f"WHERE o.revision_id IN ({marks})")
        # CROSS JOIN: SQLite then walks the slots first, never the tenant's revisions (on
        # PostgreSQL it is an inner join like any other).
        parts.append(f"SELECT {_PINNED}, {_SLOT}, NULL, NULL, NULL, NULL, NULL, {revision_columns('p')} "  # noqa: S608
                     f"FROM {slot} s CROSS JOIN {revision} p WHERE s.revision_id IN ({marks}) "
                     f"AND p.id = s.target_revision_id AND p.tenant_id = %s")
        params += [tenant_id, *own, tenant_id, *own, *own, tenant_id]
    return " UNION ALL ".join(parts), params


def load_links(tenant_id: int, ids: Sequence[str], linked_atoms: Sequence[str] = ()) -> Links:
    """The slots, origins, target heads, pinned targets and cited sources of the revisions
    `ids`, and the slots of active heads that link to `linked_atoms` with those heads: one
    query per LINKS_CHUNK of each (docs/atoms.md "Read path costs"). One instance per
    revision."""
    out = Links()
    linker_heads: dict[str, Revision] = {}
    end = _REVISION + len(ATTNAMES)
    with connection.cursor() as cursor:
        for start in range(0, max(len(ids), len(linked_atoms)), LINKS_CHUNK):
            own, atoms = list(ids[start:start + LINKS_CHUNK]), list(linked_atoms[start:start + LINKS_CHUNK])
            cursor.execute(*_statement(tenant_id, own, atoms))
            rows = cursor.fetchall()
            heads = {row[5]: row[_REVISION:end] for row in rows
                     if row[0] == _OWN and row[_REVISION] is not None and row[5] not in out.heads}
            out.heads.update((r.atom_id, r) for r in build_revisions(heads.values()))
            found = {row[_REVISION]: row[_REVISION:end] for row in rows
                     if row[0] in (_ORIGIN, _PINNED) and row[_REVISION] is not None and row[_REVISION] not in out.rows}
            out.rows.update((r.id, r) for r in build_revisions(found.values()))
            linking = {row[_REVISION]: row[_REVISION:end] for row in rows
                       if row[0] == _LINKER and row[_REVISION] not in linker_heads}
            linker_heads.update((r.id, r) for r in build_revisions(linking.values()))
            for row in rows:
                if row[0] == _ORIGIN:
                    out.origins.append(OriginRow(row[1], row[2], row[9], row[10], row[11], row[12], row[13]))
                    continue
                if row[0] == _PINNED:
                    continue
                # SQLite hands booleans back as 0 / 1.
                slot = SlotRow(row[1], row[2], row[3], row[4], row[5], row[6], bool(row[7]), row[8])
                if row[0] == _OWN:
                    out.slots.append(slot)
                else:
                    out.linkers.append((slot, linker_heads[row[_REVISION]]))
    out.slots.sort(key=lambda s: (s.revision_id, s.position))
    out.origins.sort(key=lambda o: (o.revision_id, o.position))
    return out
