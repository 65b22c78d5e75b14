"""Full-text prefilter over active head revisions (see atoms/fulltext.py for the design).

SQLite: an FTS5 trigram table over folded bodies, kept in sync by triggers on
atoms_revision. A side table gives each indexed revision an INTEGER PRIMARY KEY used as the
FTS rowid, because the revision table's implicit rowid may change on VACUUM and the FTS
table must be deletable by revision without a scan. Where FTS5 or its trigram tokenizer is
missing (SQLite before 3.34), nothing is created and the provider scans the heads instead.

PostgreSQL: pg_trgm GIN index on the ASCII-folded NFKC body of active heads, and a partial
index listing active heads whose bodies PostgreSQL cannot fold like Python. Without pg_trgm
(not installable for this role) only the partial index is created; the provider's query is
the same, just unindexed.

The SQL texts repeat atoms.fulltext.PG_FOLDED / PG_UNFOLDED; tests/atoms/test_fulltext.py
checks that they stay equal.
"""

from __future__ import annotations

import sqlite3
import unicodedata

from django.db import DatabaseError, migrations, transaction

FOLD_FUNCTION = "atoms_match_fold"

PG_FOLDED = 'lower(normalize(body, NFKC) COLLATE "C")'
PG_UNFOLDED = (r"body ~ '[^\u0001-\u007f\u2000-\u206f\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
               r"\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0002ffff]'")
PG_HEADS = "is_head AND state = 'active'"

_INDEXED = "new.is_head AND new.state = 'active'"
_INSERT = f"""
    INSERT INTO atoms_revision_fts_rowid (revision_id) SELECT new.id WHERE {_INDEXED};
    INSERT INTO atoms_revision_fts (rowid, revision_id, tenant_id, body)
        SELECT n, new.id, new.tenant_id, {FOLD_FUNCTION}(new.body)
        FROM atoms_revision_fts_rowid WHERE revision_id = new.id AND {_INDEXED};
"""  # noqa: S608 - constants only, here and below
_DELETE = """
    DELETE FROM atoms_revision_fts
        WHERE rowid = (SELECT n FROM atoms_revision_fts_rowid WHERE revision_id = old.id);
    DELETE FROM atoms_revision_fts_rowid WHERE revision_id = old.id;
"""
SQLITE_CREATE = [
    "CREATE TABLE atoms_revision_fts_rowid (n INTEGER PRIMARY KEY, revision_id varchar(64) NOT NULL UNIQUE)",
    "CREATE VIRTUAL TABLE atoms_revision_fts USING fts5("
    "revision_id UNINDEXED, tenant_id UNINDEXED, body, tokenize = 'trigram case_sensitive 1')",
    f"CREATE TRIGGER atoms_revision_fts_insert AFTER INSERT ON atoms_revision BEGIN {_INSERT} END",
    f"CREATE TRIGGER atoms_revision_fts_delete AFTER DELETE ON atoms_revision BEGIN {_DELETE} END",
    # Revisions are immutable apart from side data; head and state decide membership, and
    # review status is filtered at query time (require_approval can change without a write).
    f"CREATE TRIGGER atoms_revision_fts_update AFTER UPDATE OF is_head, state, body ON atoms_revision "
    f"BEGIN {_DELETE} {_INSERT} END",
    "INSERT INTO atoms_revision_fts_rowid (revision_id) "
    "SELECT id FROM atoms_revision WHERE is_head AND state = 'active'",
    f"INSERT INTO atoms_revision_fts (rowid, revision_id, tenant_id, body) "  # noqa: S608
    f"SELECT m.n, r.id, r.tenant_id, {FOLD_FUNCTION}(r.body) "
    f"FROM atoms_revision r JOIN atoms_revision_fts_rowid m ON m.revision_id = r.id",
]
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS atoms_revision_fts_insert",
    "DROP TRIGGER IF EXISTS atoms_revision_fts_delete",
    "DROP TRIGGER IF EXISTS atoms_revision_fts_update",
    "DROP TABLE IF EXISTS atoms_revision_fts",
    "DROP TABLE IF EXISTS atoms_revision_fts_rowid",
]
PG_TRIGRAM_INDEX = (f"CREATE INDEX atoms_rev_fold_trgm ON atoms_revision USING gin (({PG_FOLDED}) gin_trgm_ops) "
                    f"WHERE {PG_HEADS}")
PG_UNFOLDED_INDEX = f"CREATE INDEX atoms_rev_unfolded ON atoms_revision (tenant_id, seq) WHERE {PG_HEADS} AND {PG_UNFOLDED}"
PG_DROP = ["DROP INDEX IF EXISTS atoms_rev_fold_trgm", "DROP INDEX IF EXISTS atoms_rev_unfolded"]


def _fold(text: str | None) -> str | None:
    # Frozen copy of atoms.fulltext.fold: NFKC, then lowercase (atoms.core.text).
    return None if text is None else unicodedata.normalize("NFKC", text).lower()


def _sqlite_has_trigram_fts5(cursor) -> bool:
    try:
        cursor.execute("CREATE VIRTUAL TABLE temp.atoms_fts5_probe USING fts5(x, tokenize = 'trigram')")
    except sqlite3.OperationalError:
        return False
    cursor.execute("DROP TABLE temp.atoms_fts5_probe")
    return True


def forwards(apps, schema_editor) -> None:
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            connection.connection.create_function(FOLD_FUNCTION, 1, _fold, deterministic=True)
            if not _sqlite_has_trigram_fts5(cursor):
                return  # no FTS5 trigram: the provider falls back to scanning heads
            for statement in SQLITE_CREATE:
                cursor.execute(statement)
        elif connection.vendor == "postgresql":
            try:
                with transaction.atomic(using=connection.alias):
                    cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
                    cursor.execute(PG_TRIGRAM_INDEX)
            except DatabaseError:  # no pg_trgm for this role: stay correct, unindexed
                pass
            cursor.execute(PG_UNFOLDED_INDEX)


def backwards(apps, schema_editor) -> None:
    connection = schema_editor.connection
    statements = {"sqlite": SQLITE_DROP, "postgresql": PG_DROP}.get(connection.vendor, [])
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


class Migration(migrations.Migration):

    dependencies = [
        ("atoms", "0002_uses"),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
    ]
