"""Slots, origins and the revisions they name, of many revisions in one statement
(docs/atoms.md "Read path costs"), for graph acquisition, read's closure levels and views.

Each walks a level of revisions at a time and needs the same things of it: its slots, its
origins, the head of every atom its slots name, the pinned targets of its observed slots
and the sources its origins cite. One UNION ALL statement reads them all: the slots come
with their target's head row (a LEFT JOIN through the atom), the origins with their source
row, so no separate look-up runs per level (each is a PostgreSQL round trip). The level's
slots, and the slots that link into it, are WITH tables that every branch reads, so the
slot table is searched once for each, not once per branch. Graph acquisition adds the slots of active heads that
link into the level, with those heads' rows. Read's closures need no statement per level:
`load_closure_links` reads every revision a closure walk can reach from its seeds in one
recursive statement. Rows are plain tuples, not model instances; revisions are built by
atoms.services.rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from django.db import connection
from django.db.models import Field

from atoms.models import Atom, Origin, Revision, Slot, SlotMode
from atoms.services.rows import ATTNAMES, build_revisions, revision_columns
from memoryhub.prepared import one_of, prepared_cursor

# Revision ids per statement: far below every database's parameter limit (an id is bound at
# most four times, an atom id twice), and above a normal level.
LINKS_CHUNK = 1_000
_OWN, _ORIGIN, _LINKER, _PINNED, _MEMBER = 0, 1, 2, 3, 4
_REVISION = 14  # the first revision column of a row
_SLOT_COLUMNS = ("revision_id", "position", "role", "mode", "target_atom_id", "target_revision_id", "required", "order_key")


def _slot(alias: str) -> str:
    """The slot columns that views and closures read, of the table or WITH table `alias`."""
    return ", ".join(f"{alias}.{column}" for column in _SLOT_COLUMNS)


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
    # Revisions read beyond those asked for (`_statement`'s `ahead`, `_closure_statement`),
    # with their atom ids where their linking slots were read too (else None): their slots
    # and origins are in too.
    members: dict[str, str | None] = field(default_factory=dict)


@dataclass
class GraphLinks:
    """What graph acquisition (and a closure prefetch) read in this snapshot, for search's page
    and read's closure load to reuse: slots and origins (a list, possibly empty, for every
    revision whose links were read: the expanded ones and those read ahead), the heads of
    their link targets that have one, and their pinned targets and cited sources that exist."""

    slots: dict[str, list[SlotRow]] = field(default_factory=dict)
    origins: dict[str, list[OriginRow]] = field(default_factory=dict)
    heads: dict[str, Revision] = field(default_factory=dict)
    rows: dict[str, Revision] = field(default_factory=dict)

    def absorb(self, links: Links, ids: Iterable[str]) -> None:
        """Take what one load read: the slots and origins of the revisions `ids` not known yet
        (each of them read whole by that load), every head and row it found."""
        fresh = {revision_id for revision_id in ids if revision_id not in self.slots}
        for revision_id in fresh:
            self.slots[revision_id] = []
            self.origins[revision_id] = []
        for slot in links.slots:  # in (revision id, position) order
            if slot.revision_id in fresh:
                self.slots[slot.revision_id].append(slot)
        for origin in links.origins:
            if origin.revision_id in fresh:
                self.origins[origin.revision_id].append(origin)
        self.heads.update(links.heads)
        self.rows.update(links.rows)


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


def _selected(subquery: str) -> Callable[[str], str]:
    """A column is one of the values `subquery` (over a WITH clause's table) selects.

    PostgreSQL estimates a WITH table's rows poorly: a recursive one at ten times its seeds
    per step (953 rows for 15 at 10k atoms), a look-ahead one at four times its rows. With
    `IN (subquery)` it then hashed whole tables (the tenant's atoms and revisions) where a few
    index look-ups do, and a read's closure statement ran 9-11 ms instead of 2. `= ANY(ARRAY(
    subquery))` runs the subquery once, before the branch, and the planner expects a short
    array, so it looks the rows up by index (docs/atoms.md "Read path costs"). SQLite has no
    arrays; it runs an `IN (subquery)` once into an index of its own and probes it."""
    if connection.vendor == "postgresql":
        return lambda column: f"{column} = ANY(ARRAY({subquery}))"
    return lambda column: f"{column} IN ({subquery})"


def _slot_table(name: str, tenant_id: int, among: Callable[[str], str], member_params: list[Any]) -> tuple[str, list[Any]]:
    """A WITH table `name`: the slots of the revisions `among` admits (`one_of` or
    `_selected`), each with its target atom's head id (NULL for an atom of no row, of another
    tenant or without a head). The branches that need a level's slots read them from it, so
    the slot table is searched once per level, not once per branch."""
    slot, atom = _quoted(Slot), _quoted(Atom)
    return (f"{name} AS (SELECT {_slot('s')}, a.head_id FROM {slot} s LEFT JOIN {atom} a "  # noqa: S608
            f"ON a.id = s.target_atom_id AND a.tenant_id = %s WHERE {among('s.revision_id')})"), [tenant_id, *member_params]


def _own_branches(tenant_id: int, table: str, among: Callable[[str], str], member_params: list[Any]) -> tuple[list[str], list[Any]]:
    """The branches of the revisions whose slots the WITH table `table` (`_slot_table`) holds
    and whose origins `among` admits: their slots with their targets' heads, their origins
    with their sources, the pinned targets of their observed slots."""
    origin, revision = _quoted(Origin), _quoted(Revision)
    typed = _typed_nulls()
    parts = [
        f"SELECT {_OWN}, {_slot(table)}, {typed}, {revision_columns('h')} "  # noqa: S608
        f"FROM {table} LEFT JOIN {revision} h ON h.id = {table}.head_id",
        f"SELECT {_ORIGIN}, o.revision_id, o.position, NULL, NULL, NULL, NULL, NULL, NULL, "  # noqa: S608
        f"o.source_atom_id, o.source_revision_id, o.start, o.\"end\", o.quote_digest, "
        f"{revision_columns('c')} FROM {origin} o "
        f"LEFT JOIN {revision} c ON c.id = o.source_revision_id AND c.tenant_id = %s "
        f"WHERE {among('o.revision_id')}",
        # CROSS JOIN: SQLite then walks the slots first, never the tenant's revisions (on
        # PostgreSQL it is an inner join like any other).
        f"SELECT {_PINNED}, {_slot(table)}, NULL, NULL, NULL, NULL, NULL, {revision_columns('p')} "  # noqa: S608
        f"FROM {table} CROSS JOIN {revision} p WHERE p.id = {table}.target_revision_id AND p.tenant_id = %s",
    ]
    return parts, [tenant_id, *member_params, tenant_id]


def _linker_table(name: str, tenant_id: int, among: Callable[[str], str], atom_params: list[Any]) -> tuple[str, list[Any]]:
    """A WITH table `name`: the slots of active heads that link to the atoms `among` admits,
    with those heads' rows."""
    slot, revision = _quoted(Slot), _quoted(Revision)
    return (f"{name} AS (SELECT {_slot('s')}, {revision_columns('r')} FROM {slot} s "  # noqa: S608
            f"JOIN {revision} r ON r.id = s.revision_id WHERE s.tenant_id = %s "
            f"AND {among('s.target_atom_id')} AND r.is_head AND r.state = 'active')"), [tenant_id, *atom_params]


def _linker_branch(table: str) -> str:
    """The rows of the WITH table `table` (`_linker_table`) as linking slots with their heads."""
    return f"SELECT {_LINKER}, {_slot(table)}, {_typed_nulls()}, {revision_columns(table)} FROM {table}"  # noqa: S608


Ahead = Literal["", "links", "level"]


def _statement(tenant_id: int, own: list[str], atoms: list[str], ahead: Ahead = "") -> tuple[str, list[Any]]:
    """Linking slots of `atoms` (when any), then of the revisions `own`: the slots with their
    targets' heads, the origins with their sources, the pinned targets of observed slots.
    PostgreSQL types a UNION's NULL columns from the branches before them, so the first
    branch types every column.

    `ahead` (with both lists given): the same again for every revision that could join the
    graph at this level: the heads of the atoms the slots of `own` name, and the active heads
    that link to `atoms` (the WITH table `n`), with a last branch that names each of them and
    its atom. "links" reads their slots and origins, which search's page and read's closures
    need; "level" also the slots that link into them, so that expanding them costs no
    statement. Acquisition judges later which of them join (visibility, staleness, relation
    weights, maxNodes); the others are read for nothing."""
    tables: list[str] = []
    parts: list[str] = []
    table_params: list[Any] = []
    params: list[Any] = []

    def add(table: tuple[str, list[Any]], branches: tuple[list[str], list[Any]] | None = None) -> None:
        tables.append(table[0])
        table_params.extend(table[1])
        if branches:
            parts.extend(branches[0])
            params.extend(branches[1])

    if atoms:
        atom_is, atom_params = one_of(atoms)
        add(_linker_table("lk", tenant_id, atom_is, atom_params), ([_linker_branch("lk")], []))
    if own:
        own_is, own_params = one_of(own)
        add(_slot_table("lv", tenant_id, own_is, own_params), _own_branches(tenant_id, "lv", own_is, own_params))
    if ahead and own and atoms:
        tables.append("n(id, atom_id) AS (SELECT head_id, target_atom_id FROM lv WHERE head_id IS NOT NULL "
                      "UNION SELECT id, atom_id FROM lk)")
        if ahead == "level":
            add(_linker_table("nk", tenant_id, _selected("SELECT atom_id FROM n"), []), ([_linker_branch("nk")], []))
        add(_slot_table("nv", tenant_id, _selected("SELECT id FROM n"), []),
            _own_branches(tenant_id, "nv", _selected("SELECT id FROM n"), []))
        # The member's atom id only where its linkers were read.
        parts.append(_member_branch("atom_id" if ahead == "level" else "NULL", "n"))
    return f"WITH {', '.join(tables)} {' UNION ALL '.join(parts)}", [*table_params, *params]


def _member_branch(atom: str, table: str) -> str:
    """One row per revision id of `table`, with the atom id `atom` names in the target atom
    column: `_collect` records them as members whose links the statement read."""
    before, after = ", ".join(["NULL"] * 3), ", ".join(["NULL"] * (_REVISION - 6 + len(ATTNAMES)))
    return f"SELECT {_MEMBER}, id, {before}, {atom}, {after} FROM {table} WHERE id IS NOT NULL"  # noqa: S608


def _closure_statement(tenant_id: int, seeds: list[str]) -> tuple[str, list[Any]]:
    """The branches of `_statement` for every revision a closure walk from `seeds` can reach:
    a recursive WITH follows each member's required and include slots to their pinned
    revision, or to their target atom's head, as read's closure does (docs/atoms.md "Read
    path costs"), to revisions of this tenant only, and a last branch names every member, so
    that a member without slots or origins is known too. UNION drops repeats, so a cycle
    ends the recursion."""
    slot, revision, atom = _quoted(Slot), _quoted(Revision), _quoted(Atom)
    seed_is, seed_params = one_of(seeds)
    walk = (f"WITH RECURSIVE m(id) AS (SELECT r.id FROM {revision} r "  # noqa: S608
            f"WHERE r.tenant_id = %s AND {seed_is('r.id')} "
            f"UNION SELECT t.id FROM m JOIN {slot} s ON s.revision_id = m.id "
            f"LEFT JOIN {atom} a ON a.id = s.target_atom_id AND a.tenant_id = %s "
            # CROSS JOIN: SQLite looks the target up last, never walking the tenant's revisions.
            f"CROSS JOIN {revision} t WHERE (s.required OR s.mode = '{SlotMode.INCLUDE.value}') "
            f"AND t.id = CASE WHEN s.target_revision_id <> '' THEN s.target_revision_id ELSE a.head_id END "
            f"AND t.tenant_id = %s), ")
    members = _selected("SELECT id FROM m")
    table, table_params = _slot_table("mv", tenant_id, members, [])
    branches, params = _own_branches(tenant_id, "mv", members, [])
    branches.append(_member_branch("NULL", "m"))
    return (walk + table + " " + " UNION ALL ".join(branches),
            [tenant_id, *seed_params, tenant_id, tenant_id, *table_params, *params])


def load_links(tenant_id: int, ids: Sequence[str], linked_atoms: Sequence[str] = (), *, ahead: Ahead = "") -> Links:
    """The slots, origins, target heads, pinned targets and cited sources of the revisions
    `ids`, and the slots of active heads that link to `linked_atoms` with those heads: one
    query per LINKS_CHUNK of each (docs/atoms.md "Read path costs"). With `ahead`, the same
    for every revision that could join graph acquisition at this level (`_statement`), named
    in `members` (with their atom ids when their linking slots were read too). One instance
    per revision."""
    out = Links()
    linker_heads: dict[str, Revision] = {}
    with prepared_cursor() as cursor:
        for start in range(0, max(len(ids), len(linked_atoms)), LINKS_CHUNK):
            own, atoms = list(ids[start:start + LINKS_CHUNK]), list(linked_atoms[start:start + LINKS_CHUNK])
            cursor.execute(*_statement(tenant_id, own, atoms, ahead))
            _collect(cursor.fetchall(), out, linker_heads)
    if out.members:  # a revision both asked for and ahead came back twice
        out.slots = list(set(out.slots))
        out.origins = list(set(out.origins))
        out.linkers = list({(slot.revision_id, slot.position): (slot, head) for slot, head in out.linkers}.values())
    out.slots.sort(key=lambda s: (s.revision_id, s.position))
    out.origins.sort(key=lambda o: (o.revision_id, o.position))
    return out


def load_closure_links(tenant_id: int, seeds: Sequence[str]) -> Links:
    """What `load_links` reads, for `seeds` and every revision their closures can reach
    (`_closure_statement`), all of them named in `members`: one query per LINKS_CHUNK seeds,
    however deep the closures go (docs/atoms.md "Read path costs")."""
    out = Links()
    with prepared_cursor() as cursor:
        for start in range(0, len(seeds), LINKS_CHUNK):
            cursor.execute(*_closure_statement(tenant_id, list(seeds[start:start + LINKS_CHUNK])))
            _collect(cursor.fetchall(), out, {})
    # A revision reached from two chunks came back twice.
    out.slots = sorted(set(out.slots), key=lambda s: (s.revision_id, s.position))
    out.origins = sorted(set(out.origins), key=lambda o: (o.revision_id, o.position))
    return out


def _collect(rows: list[tuple[Any, ...]], out: Links, linker_heads: dict[str, Revision]) -> None:
    """Add one statement's rows to `out`."""
    end = _REVISION + len(ATTNAMES)
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
        if row[0] == _MEMBER:
            out.members[row[1]] = row[5]
            continue
        # SQLite hands booleans back as 0 / 1.
        slot = SlotRow(row[1], row[2], row[3], row[4], row[5], row[6], bool(row[7]), row[8])
        if row[0] == _OWN:
            out.slots.append(slot)
        else:
            out.linkers.append((slot, linker_heads[row[_REVISION]]))
