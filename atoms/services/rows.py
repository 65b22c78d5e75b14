"""Bulk revision loads of the read path in plain SQL (docs/atoms.md "Read path costs").

A read makes the same few bulk look-ups on every closure and graph level; building each of
them through the ORM's query compiler cost about as much CPU as running it. These statements
are written once, and `Revision.objects.raw` turns their rows into the same model instances
(with the same field conversions) the ORM would.
"""

from __future__ import annotations

from collections.abc import Collection

from django.db import connection

from atoms.models import Atom, Revision

# Ids per statement: far below every database's parameter limit, above a normal level.
CHUNK = 1_000


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
        sql = (f"SELECT r.* FROM {_table(Atom)} a JOIN {_table(Revision)} r ON r.id = a.head_id "  # noqa: S608
               f"WHERE a.tenant_id = %s AND a.id IN ({marks})")
        out.update((r.atom_id, r) for r in Revision.objects.raw(sql, [tenant_id, *chunk]))
    return out


def revisions_by_id(tenant_id: int, revision_ids: Collection[str]) -> dict[str, Revision]:
    """revision id → revision, for the ids that exist in this tenant."""
    ids = list(revision_ids)
    out: dict[str, Revision] = {}
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start:start + CHUNK]
        marks = ", ".join(["%s"] * len(chunk))
        sql = f"SELECT * FROM {_table(Revision)} WHERE tenant_id = %s AND id IN ({marks})"  # noqa: S608
        out.update((r.id, r) for r in Revision.objects.raw(sql, [tenant_id, *chunk]))
    return out
