"""Drop indexes that no query uses and every write maintains (docs/operations.md "PostgreSQL").

- The tenant foreign key's own index, on the tables where an index or unique constraint
  already leads with the tenant: that one serves the key's look-ups and the cascade of a
  tenant's deletion. (tests/atoms/test_model_indexes.py keeps the rule.) The models say
  `db_index=False`; the database only drops the index, by Django's own name for it. A plain
  AlterField would also drop and re-validate each foreign key on PostgreSQL (a table scan
  under an exclusive lock) and copy each table on SQLite.
- PostgreSQL only: the `varchar_pattern_ops` copies Django adds beside the index of a text
  primary or foreign key, for `LIKE 'prefix%'` under a non-C collation. No statement matches
  an id by pattern. A revision had eleven indexes; the planner weighs every one of them for
  each table a read's link statements join, and an insert writes every one.

Django makes a pattern copy again if a later migration alters one of these columns; such a
migration should drop it again.
"""

from typing import Any

import django.db.models.deletion
from django.db import migrations, models

# The tables whose tenant key loses its own index.
TENANT_KEY_TABLES = (
    "atoms_atom", "atoms_erasedependency", "atoms_indexcheckpoint", "atoms_indexentry", "atoms_inputtoken",
    "atoms_lexicalcorpus", "atoms_lexicalposting", "atoms_lexicalterm", "atoms_origin", "atoms_policyfeed",
    "atoms_purgedatom", "atoms_receipt", "atoms_ref", "atoms_replayrecord", "atoms_revision", "atoms_slot",
    "atoms_tombstone", "atoms_usemarker", "atoms_usestate", "atoms_vectorindexsnapshot", "atoms_vectortombstone",
)

# (table, column) of every pattern copy Django made for an atoms id column.
PATTERN_COPIES = (
    ("atoms_atom", "id"), ("atoms_atom", "head_id"), ("atoms_erasurereceipt", "id"), ("atoms_inputtoken", "id"),
    ("atoms_origin", "revision_id"), ("atoms_receipt", "id"), ("atoms_ref", "id"), ("atoms_reviewnote", "revision_id"),
    ("atoms_revision", "id"), ("atoms_revision", "atom_id"), ("atoms_revision", "previous_id"),
    ("atoms_slot", "revision_id"), ("atoms_tombstone", "id"),
)
_MODELS = {"atoms_atom": "Atom", "atoms_erasurereceipt": "ErasureReceipt", "atoms_inputtoken": "InputToken",
           "atoms_origin": "Origin", "atoms_receipt": "Receipt", "atoms_ref": "Ref", "atoms_reviewnote": "ReviewNote",
           "atoms_revision": "Revision", "atoms_slot": "Slot", "atoms_tombstone": "Tombstone"}


def drop_pattern_copies(apps: Any, schema_editor: Any) -> None:
    """Found by what they are (an index on the column with a pattern operator class), not by
    Django's generated name."""
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for table, column in PATTERN_COPIES:
            cursor.execute(
                "SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid "
                "JOIN pg_class t ON t.oid = x.indrelid JOIN pg_attribute a ON a.attrelid = t.oid "
                "AND a.attnum = x.indkey[0] JOIN pg_opclass o ON o.oid = x.indclass[0] "
                "WHERE t.relname = %s AND t.relnamespace = to_regnamespace(current_schema()) "
                "AND x.indnatts = 1 AND a.attname = %s AND o.opcname IN ('varchar_pattern_ops', 'text_pattern_ops')",
                [table, column])
            for (name,) in cursor.fetchall():
                cursor.execute(f"DROP INDEX {connection.ops.quote_name(name)}")


def make_pattern_copies(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for table, column in PATTERN_COPIES:
        model = apps.get_model("atoms", _MODELS[table])
        field = next(f for f in model._meta.concrete_fields if f.column == column)
        statement = schema_editor._create_like_index_sql(model, field)
        if statement is not None:
            schema_editor.execute(statement)


def _tenant_index_names(schema_editor: Any) -> list[tuple[str, str]]:
    """(table, index name) of each tenant key index Django made, by its naming rule."""
    return [(table, schema_editor._create_index_name(table, ["tenant_id"])) for table in TENANT_KEY_TABLES]


def drop_tenant_indexes(apps: Any, schema_editor: Any) -> None:
    quote = schema_editor.connection.ops.quote_name
    for _, name in _tenant_index_names(schema_editor):
        schema_editor.execute(f"DROP INDEX IF EXISTS {quote(name)}")


def make_tenant_indexes(apps: Any, schema_editor: Any) -> None:
    quote = schema_editor.connection.ops.quote_name
    for table, name in _tenant_index_names(schema_editor):
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {quote(name)} ON {quote(table)} ({quote('tenant_id')})")


class Migration(migrations.Migration):

    dependencies = [
        ('atoms', '0011_postgres_storage'),
        ('tenants', '0007_tenant_suspension'),
    ]

    operations = [
        migrations.RunPython(drop_pattern_copies, make_pattern_copies),
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(drop_tenant_indexes, make_tenant_indexes)],
            state_operations=[
                migrations.AlterField(
                    model_name='atom',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='atoms', to='tenants.tenant'),
                ),
                migrations.AlterField(
                    model_name='erasedependency',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant'),
                ),
                migrations.AlterField(
                    model_name='indexcheckpoint',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant'),
                ),
                migrations.AlterField(
                    model_name='indexentry',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant'),
                ),
                migrations.AlterField(
                    model_name='inputtoken',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant'),
                ),
                migrations.AlterField(
                    model_name='lexicalcorpus',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant'),
                ),
                migrations.AlterField(
                    model_name='lexicalposting',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant'),
                ),
                migrations.AlterField(
                    model_name='lexicalterm',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant'),
                ),
                migrations.AlterField(
                    model_name='origin',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant'),
                ),
                migrations.AlterField(
                    model_name='policyfeed',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant'),
                ),
                migrations.AlterField(
                    model_name='purgedatom',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant'),
                ),
                migrations.AlterField(
                    model_name='receipt',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant'),
                ),
                migrations.AlterField(
                    model_name='ref',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant'),
                ),
                migrations.AlterField(
                    model_name='replayrecord',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant'),
                ),
                migrations.AlterField(
                    model_name='revision',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant'),
                ),
                migrations.AlterField(
                    model_name='slot',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant'),
                ),
                migrations.AlterField(
                    model_name='tombstone',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant'),
                ),
                migrations.AlterField(
                    model_name='usemarker',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant'),
                ),
                migrations.AlterField(
                    model_name='usestate',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant'),
                ),
                migrations.AlterField(
                    model_name='vectorindexsnapshot',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant'),
                ),
                migrations.AlterField(
                    model_name='vectortombstone',
                    name='tenant',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant'),
                ),
            ],
        ),
    ]
