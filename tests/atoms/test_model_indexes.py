"""The atoms tables keep one index per use (docs/operations.md "PostgreSQL", "Indexes").

A tenant foreign key gets its own index only where no index or unique constraint of the
table leads with the tenant; where one does, that one serves the key, and a second index
would cost every insert and every plan for nothing. On PostgreSQL no atoms id column keeps
Django's pattern-matching copy of its index.
"""

from __future__ import annotations

import pytest
from django.apps import apps
from django.db import connection
from django.db.models import ForeignKey, Model

from tenants.models import Tenant


def _led_by_tenant(model: type[Model]) -> bool:
    """An index or unique constraint of the table leads with the tenant and covers every row
    (a partial one, with a condition, cannot serve the key)."""
    meta = model._meta
    whole = [*meta.indexes, *meta.constraints]
    groups = [list(getattr(one, "fields", ())) for one in whole if getattr(one, "condition", None) is None]
    groups += [list(fields) for fields in meta.unique_together]
    return any(fields and fields[0].lstrip("-") == "tenant" for fields in groups)


def _tenant_keys() -> list[tuple[type[Model], ForeignKey]]:
    out = []
    for model in apps.get_app_config("atoms").get_models():
        for field in model._meta.concrete_fields:
            if isinstance(field, ForeignKey) and field.related_model is Tenant and not field.one_to_one:
                out.append((model, field))
    return out


def test_every_tenant_key_is_indexed_once() -> None:
    keys = _tenant_keys()
    assert len(keys) > 20  # every atoms table but the store row holds a tenant key
    for model, field in keys:
        indexed = field.db_index  # type: ignore[attr-defined]  # set by Field.__init__, absent from the stubs
        assert indexed != _led_by_tenant(model), model.__name__


@pytest.mark.django_db
def test_no_atoms_id_column_keeps_a_pattern_index_on_postgresql() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("pattern-matching index copies are PostgreSQL's")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT t.relname, i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
            "JOIN pg_class t ON t.oid = x.indrelid JOIN pg_opclass o ON o.oid = ANY(x.indclass) "
            "WHERE t.relname LIKE 'atoms\\_%%' AND o.opcname IN ('varchar_pattern_ops', 'text_pattern_ops')")
        assert cursor.fetchall() == []
