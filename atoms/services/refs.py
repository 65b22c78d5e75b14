"""Refs: opaque per-principal names of exact revisions (docs/atoms.md "Decisions")."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import connection

from atoms.core.ids import new_ref
from atoms.errors import AtomError, denied
from atoms.models import PurgedAtom, Ref, Revision
from atoms.principal import Principal
from memoryhub.prepared import one_of, prepared_cursor

# Every ref is `ref:` + a UUID (atoms.core.ids.new_ref): always this many ASCII bytes.
REF_LENGTH = len("ref:00000000-0000-0000-0000-000000000000")
# Refs per insert statement: 6 parameters each, far below every database's parameter limit.
INSERT_CHUNK = 1_000


def stand_in_refs(revisions: Iterable[Revision]) -> dict[str, str]:
    """Distinct placeholder refs of REF_LENGTH bytes, {revision id: stand-in}: a read prices
    its page with them and issues real refs only for what it shows (docs/atoms.md "Read
    path costs"). A stand-in never leaves the process."""
    out: dict[str, str] = {}
    for revision in revisions:
        if revision.id not in out:
            out[revision.id] = f"ref:00000000-0000-0000-0000-{len(out):012d}"
    return out


def issue_ref(principal: Principal, revision: Revision) -> str:
    """The principal's ref for this revision: stable, created on first use."""
    existing = Ref.objects.filter(tenant=principal.tenant, principal=principal.principal_id,
                                  revision_id=revision.id).values_list("id", flat=True).first()
    if existing:
        return existing
    ref, _ = Ref.objects.get_or_create(
        tenant=principal.tenant, principal=principal.principal_id, revision_id=revision.id,
        defaults={"id": new_ref(), "key": principal.key, "atom_id": revision.atom_id},
    )
    return ref.id


def issue_refs(principal: Principal, revisions: Iterable[Revision]) -> dict[str, str]:
    """Refs for many revisions at once: {revision id: ref}. Missing ones are created in one
    bulk insert (a concurrent request creating the same ref wins; we read back the winner)."""
    unique = list({r.id: r for r in revisions}.values())
    found = _issued(principal, [r.id for r in unique])
    missing = [r for r in unique if r.id not in found]
    if missing and connection.features.can_return_rows_from_bulk_insert:
        found.update(_insert(principal, missing))
        missing = [r for r in missing if r.id not in found]  # another request's refs won
    elif missing:
        Ref.objects.bulk_create(
            [Ref(id=new_ref(), tenant=principal.tenant, principal=principal.principal_id, key=principal.key,
                 atom_id=r.atom_id, revision_id=r.id) for r in missing],
            ignore_conflicts=True,
        )
    if missing:
        found.update(_issued(principal, [r.id for r in missing]))
    return found


def _insert(principal: Principal, revisions: list[Revision]) -> dict[str, str]:
    """Insert refs for these revisions, skipping any a concurrent request created first, and
    return {revision id: ref} of the inserted ones: one statement per INSERT_CHUNK, where the
    ORM's bulk insert needs a read-back (docs/atoms.md "Read path costs")."""
    table = connection.ops.quote_name(Ref._meta.db_table)
    vendor_ignore = connection.vendor != "postgresql"
    out: dict[str, str] = {}
    with connection.cursor() as cursor:
        for start in range(0, len(revisions), INSERT_CHUNK):
            chunk = revisions[start:start + INSERT_CHUNK]
            params: list[Any] = []
            for revision in chunk:
                params += [new_ref(), principal.tenant.pk, principal.principal_id,
                           principal.key.pk if principal.key is not None else None, revision.atom_id, revision.id]
            values = ", ".join(["(%s, %s, %s, %s, %s, %s)"] * len(chunk))
            sql = (f"INSERT {'OR IGNORE ' if vendor_ignore else ''}INTO {table} "  # noqa: S608
                   f"(id, tenant_id, principal, key_id, atom_id, revision_id) VALUES {values} "
                   f"{'' if vendor_ignore else 'ON CONFLICT DO NOTHING '}RETURNING revision_id, id")
            cursor.execute(sql, params)
            out.update(cursor.fetchall())
    return out


def _issued(principal: Principal, revision_ids: list[str]) -> dict[str, str]:
    """{revision id: ref} of the principal's refs to these revisions, in plain SQL: every
    read and search makes this look-up, and the ORM's compiler cost about as much CPU as
    running it (docs/atoms.md "Read path costs"). No ids, no query, as with the ORM."""
    if not revision_ids:
        return {}
    revision_is, revision_params = one_of(revision_ids)
    sql = (f"SELECT revision_id, id FROM {connection.ops.quote_name(Ref._meta.db_table)} "  # noqa: S608
           f"WHERE tenant_id = %s AND principal = %s AND {revision_is('revision_id')}")
    with prepared_cursor() as cursor:
        cursor.execute(sql, [principal.tenant.pk, principal.principal_id, *revision_params])
        return dict(cursor.fetchall())


def resolve_ref(principal: Principal, ref: object, read_policies: Iterable[str], *, path: str = "ref") -> Revision:
    """The revision a ref names, for this principal and these read policies.

    Unknown (another tenant's included) → INVALID_REF; another key's, purged, or outside
    the read policies → ACCESS_DENIED.
    """
    if not isinstance(ref, str):
        raise AtomError("INVALID_REF", "A ref must be a string.", {"path": path})
    row = Ref.objects.filter(tenant=principal.tenant, id=ref).first()
    if row is None:
        raise AtomError("INVALID_REF", "Unknown ref.", {"path": path})
    if row.principal != principal.principal_id:
        raise denied("This ref was issued to another key.", path=path)
    if not row.revision_id or PurgedAtom.objects.filter(tenant=principal.tenant, atom_id=row.atom_id).exists():
        raise denied("This atom was purged.", path=path)
    revision = Revision.objects.filter(id=row.revision_id).select_related("atom").first()
    if revision is None:
        raise denied("This atom was purged.", path=path)
    if revision.policy not in set(read_policies):
        raise denied("The atom is outside the read policies.", path=path)
    return revision
