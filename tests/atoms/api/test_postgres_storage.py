"""PostgreSQL storage settings of migration atoms 0011 (docs/operations.md "PostgreSQL"): read
manifests are compressed with lz4, and the postings table is vacuumed early enough for the
BM25 lookup's index-only scans."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection

from tests.atoms.api.helpers import create
from tests.atoms.api.test_read import ok_read


@pytest.fixture
def postgres(db: None) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL storage parameters: this run is on SQLite (set DATABASE_URL)")


# The migration's own check, so the test skips exactly when the migration leaves the column.
storage = importlib.import_module("atoms.migrations.0011_postgres_storage")


def _lz4_supported() -> bool:
    with connection.cursor() as cursor:
        return bool(storage._lz4_supported(cursor))


def test_a_read_manifest_is_stored_with_lz4(postgres, I) -> None:
    if not _lz4_supported():
        pytest.skip("this PostgreSQL server was built without lz4")
    # Enough atoms that the manifest passes the 2 KB at which PostgreSQL compresses a value.
    I.ok_write(*[create(f"a{i}", f"green tea number {i} brewed at {70 + i} degrees") for i in range(40)])
    receipt = ok_read(I, {"query": "green tea"})["receipt"]["id"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_column_compression(manifest), octet_length(manifest::text) "
                       "FROM atoms_receipt WHERE id = %s", [receipt])
        method, size = cursor.fetchone()
    assert size > 2048
    assert method == "lz4"


def test_the_postings_table_is_vacuumed_after_one_percent_new_rows(postgres) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE relname = 'atoms_lexicalposting'")
        options = cursor.fetchone()[0]
    assert "autovacuum_vacuum_insert_scale_factor=0.01" in options
