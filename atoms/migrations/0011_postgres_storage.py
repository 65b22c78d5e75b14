"""PostgreSQL storage settings of the atom tables (docs/operations.md "PostgreSQL"); nothing on
SQLite.

- Receipt and input-token manifests are compressed with lz4 instead of pglz when the server
  supports it (PostgreSQL 14+ built with lz4): a read writes its manifest (tens of KB of JSON)
  in its own transaction, and pglz made that insert about three times as slow.
- The lexical postings table is vacuumed after 1 % new rows instead of 20 %: the BM25
  lookup reads postings from an index-only scan, which must fetch every row from the heap
  until a vacuum has marked its page all-visible.

Both are storage parameters: no row is rewritten (a manifest stored before keeps its pglz
form until it is written again).
"""

from __future__ import annotations

from typing import Any

from django.db import migrations

MANIFEST_COLUMNS = (("atoms_receipt", "manifest"), ("atoms_inputtoken", "manifest"))
POSTINGS = "atoms_lexicalposting"


def _lz4_supported(cursor: Any) -> bool:
    cursor.execute("SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)")
    return cursor.fetchone() is not None


def _set(schema_editor: Any, *, compression: str, postings: str) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        if _lz4_supported(cursor):
            for table, column in MANIFEST_COLUMNS:
                cursor.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION {compression}")
        cursor.execute(f"ALTER TABLE {POSTINGS} {postings}")


def forwards(apps: Any, schema_editor: Any) -> None:
    _set(schema_editor, compression="lz4",
         postings="SET (autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_vacuum_scale_factor = 0.05)")


def backwards(apps: Any, schema_editor: Any) -> None:
    _set(schema_editor, compression="DEFAULT",
         postings="RESET (autovacuum_vacuum_insert_scale_factor, autovacuum_vacuum_scale_factor)")


class Migration(migrations.Migration):

    dependencies = [
        ("atoms", "0010_state_choices"),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
    ]
