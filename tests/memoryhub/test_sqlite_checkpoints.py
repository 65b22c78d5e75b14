"""WAL checkpoints of a SQLite file run on a thread of their own, not in a request's commit
(docs/operations.md "SQLite checkpoints"; memoryhub/sqlite_checkpoints.py)."""

from __future__ import annotations

import logging
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
    assert not first.is_alive()
    # Once it ended, the file may get a thread again (a new database at the same path).
    wal_database(path).close()
    again = start(str(path), 0.05)
    assert again is not None
    path.unlink()
    again.join(5)
    assert not again.is_alive()


def test_the_thread_ends_when_its_file_is_replaced(tmp_path):
    """A restore moves another file over the database: the old file's thread ends, so the
    new one's first connection can start a thread of its own."""
    path = tmp_path / "db.sqlite3"
    wal_database(path).close()
    thread = start(str(path), 0.05)
    assert thread is not None
    wal_database(tmp_path / "restored.sqlite3").close()
    (tmp_path / "restored.sqlite3").replace(path)
    thread.join(5)
    assert not thread.is_alive()
    again = start(str(path), 0.05)
    assert again is not None
    path.unlink()
    again.join(5)


def test_a_failing_checkpoint_is_logged_once_by_its_class(tmp_path, monkeypatch, caplog):
    """Every round fails (here: the database is not a database); one warning names the error's
    class, never the file."""
    path = tmp_path / "secret-name.sqlite3"
    path.write_bytes(b"not a database" * 1000)
    with caplog.at_level(logging.WARNING, logger="memoryhub.sqlite"):
        thread = start(str(path), 0.05)
        assert thread is not None
        assert wait_for(lambda: "SQLite checkpoints failing" in caplog.text)
        time.sleep(0.3)  # several more failing rounds
        path.unlink()
        thread.join(5)
    warnings = [r.getMessage() for r in caplog.records if r.name == "memoryhub.sqlite"]
    assert warnings == ["SQLite checkpoints failing (DatabaseError); commits checkpoint meanwhile"]
    assert "secret-name" not in caplog.text


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


@pytest.mark.parametrize("seconds, autocheckpoint, error", [
    ("soon", "10000", "SQLITE_CHECKPOINT_SECONDS must be a number from 0 to 3600"),
    ("nan", "10000", "SQLITE_CHECKPOINT_SECONDS must be a number from 0 to 3600"),
    ("0.001", "10000", "SQLITE_CHECKPOINT_SECONDS must be 0 or at least 0.05"),
    ("0.5", "0", "SQLITE_WAL_AUTOCHECKPOINT must be a number of pages of 1 or more"),
])
def test_bad_checkpoint_settings_stop_the_start(tmp_path, seconds, autocheckpoint, error):
    result = manage("check", DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", MEMORYHUB_VAR_DIR=str(tmp_path),
                    SQLITE_CHECKPOINT_SECONDS=seconds, SQLITE_WAL_AUTOCHECKPOINT=autocheckpoint)
    assert result.returncode != 0
    assert error in result.stderr


def test_a_fork_waits_for_a_checkpoint_in_progress_and_the_child_starts_free():
    """A child forked in the middle of a checkpoint could inherit SQLite's mutexes held."""
    held = threading.Event()

    def checkpoint() -> None:
        with sqlite_checkpoints._fork_guard:  # as _run holds it around each checkpoint
            held.set()
            time.sleep(0.3)

    checkpointing = threading.Thread(target=checkpoint)
    checkpointing.start()
    assert held.wait(5)
    read_end, write_end = os.pipe()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: report whether its guard and registry are free, then leave at once
        free = sqlite_checkpoints._fork_guard.acquire(blocking=False) and not sqlite_checkpoints._started
        os.write(write_end, b"free" if free else b"held")
        os._exit(0)
    waited = time.monotonic() - started
    os.close(write_end)
    answer = os.read(read_end, 16)
    os.close(read_end)
    os.waitpid(pid, 0)
    checkpointing.join(5)
    assert waited >= 0.2
    assert answer == b"free"
