"""WAL checkpoints of a SQLite file run on a thread of their own, not in a request's commit
(docs/operations.md "SQLite checkpoints"; memoryhub/sqlite_checkpoints.py)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from memoryhub import sqlite_checkpoints
from memoryhub.sqlite_checkpoints import database_file, on_connection_created, start

MEGABYTE = 1 << 20
ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import threading
from django.db import connection
with connection.cursor() as cursor:
    cursor.execute("PRAGMA wal_autocheckpoint")
    print(cursor.fetchone()[0], sorted(t.name for t in threading.enumerate() if t.name == "sqlite-checkpoint"))
"""


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=120, check=False)


def wal_database(path: Path) -> sqlite3.Connection:
    """A WAL database whose own connection never checkpoints, holding 1 MB in its log only."""
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA wal_autocheckpoint=0")
    connection.execute("CREATE TABLE t (b BLOB)")
    connection.execute("INSERT INTO t VALUES (?)", [b"x" * MEGABYTE])
    return connection


def wait_for(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def checkpoint_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "sqlite-checkpoint"]


def test_the_thread_copies_the_log_into_the_database_file(tmp_path):
    path = tmp_path / "db.sqlite3"
    connection = wal_database(path)
    assert path.stat().st_size < MEGABYTE  # the row is in the -wal file only
    thread = start(str(path), 0.05)
    assert thread is not None
    assert wait_for(lambda: path.stat().st_size > MEGABYTE), "no checkpoint copied the log"
    assert connection.execute("SELECT length(b) FROM t").fetchone() == (MEGABYTE,)
    connection.close()
    path.unlink()
    thread.join(5)
    assert not thread.is_alive()  # its file is gone


def test_a_file_gets_one_thread_per_process(tmp_path):
    path = tmp_path / "db.sqlite3"
    wal_database(path).close()
    first = start(str(path), 0.05)
    assert first is not None
    assert start(str(path), 0.05) is None
    path.unlink()
    first.join(5)
    # Once it ended, the file may get a thread again (a new database at the same path).
    wal_database(path).close()
    again = start(str(path), 0.05)
    assert again is not None
    path.unlink()
    again.join(5)


@pytest.mark.parametrize("name", ["", ":memory:", "file:memorydb_default?mode=memory&cache=shared", None])
def test_an_in_memory_database_has_no_file(name):
    assert database_file(name) is None


def test_a_sqlite_connection_starts_the_thread_for_its_file(settings, tmp_path):
    settings.SQLITE_CHECKPOINT_SECONDS = 0.05
    path = tmp_path / "db.sqlite3"
    wal_database(path).close()
    before = len(checkpoint_threads())
    on_connection_created(sender=None, connection=SimpleNamespace(vendor="sqlite", settings_dict={"NAME": str(path)}))
    assert len(checkpoint_threads()) == before + 1
    assert (sqlite_checkpoints.os.getpid(), str(path)) in sqlite_checkpoints._started
    path.unlink()
    assert wait_for(lambda: len(checkpoint_threads()) == before)


@pytest.mark.parametrize("vendor, seconds", [("postgresql", 0.05), ("sqlite", 0)])
def test_no_thread_for_another_database_or_when_turned_off(settings, tmp_path, vendor, seconds):
    settings.SQLITE_CHECKPOINT_SECONDS = seconds
    path = tmp_path / "db.sqlite3"
    wal_database(path).close()
    before = len(checkpoint_threads())
    on_connection_created(sender=None, connection=SimpleNamespace(vendor=vendor, settings_dict={"NAME": str(path)}))
    assert len(checkpoint_threads()) == before


def test_a_process_on_a_sqlite_file_checkpoints_on_its_thread(tmp_path):
    url = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    result = manage("shell", "-c", PROBE, DATABASE_URL=url, MEMORYHUB_VAR_DIR=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-2] == "10000 ['sqlite-checkpoint']"
    result = manage("shell", "-c", PROBE, DATABASE_URL=url, MEMORYHUB_VAR_DIR=str(tmp_path),
                    SQLITE_CHECKPOINT_SECONDS="0", SQLITE_WAL_AUTOCHECKPOINT="1000")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-2] == "1000 []"


@pytest.mark.parametrize("value", ["soon", "-1", "nan"])
def test_a_bad_checkpoint_interval_is_refused(tmp_path, value):
    result = manage("check", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", MEMORYHUB_VAR_DIR=str(tmp_path),
                    SQLITE_CHECKPOINT_SECONDS=value)
    assert result.returncode != 0
    assert "SQLITE_CHECKPOINT_SECONDS must be a number" in result.stderr
