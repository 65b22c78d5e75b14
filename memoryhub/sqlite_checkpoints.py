"""WAL checkpoints of a SQLite database file, on a thread of their own, so that no request's
commit copies the log back (docs/operations.md "SQLite checkpoints": why, the settings, and
what it means for durability).

Each process starts one daemon thread per file, on its first connection to that file (Django's
`connection_created`). The thread ends when its file is gone or replaced by another (a test's
or a benchmark's temporary database, a restore).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from typing import Any
from urllib.parse import quote

from django.conf import settings

logger = logging.getLogger("memoryhub.sqlite")

_lock = threading.Lock()
_started: set[tuple[int, str]] = set()  # (pid, file): a forked child starts its own
# Held by a checkpoint while it runs, and by os.fork() around the fork: a child forked in the
# middle of a checkpoint could inherit SQLite's own mutexes locked and hang on its first query
# (a Celery prefork parent writes its heartbeat to the database and keeps forking).
_fork_guard = threading.Lock()


def _before_fork() -> None:
    _fork_guard.acquire()


def _after_fork_in_parent() -> None:
    _fork_guard.release()


def _after_fork_in_child() -> None:
    global _lock, _fork_guard
    _lock = threading.Lock()
    _fork_guard = threading.Lock()
    _started.clear()  # the parent's threads do not exist here


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                    after_in_child=_after_fork_in_child)


def database_file(name: Any) -> str | None:
    """The file of a SQLite database NAME given as a path, or None: in memory (the test suite's
    database) or a `file:` URI, which this module leaves alone."""
    text = str(name or "")
    if not text or text == ":memory:" or "mode=memory" in text or text.startswith("file:"):
        return None
    return os.path.abspath(text)


def on_connection_created(sender: Any, connection: Any, **kwargs: Any) -> None:
    """django.db.backends.signals.connection_created: start the file's checkpoint thread."""
    if connection.vendor != "sqlite":
        return
    interval = float(getattr(settings, "SQLITE_CHECKPOINT_SECONDS", 0) or 0)
    path = database_file(connection.settings_dict.get("NAME"))
    if interval > 0 and path is not None:
        start(path, interval)


def start(path: str, interval: float) -> threading.Thread | None:
    """The checkpoint thread of `path` in this process; None when one is already running or
    none could start (then commits checkpoint, as SQLite does by default)."""
    key = (os.getpid(), path)
    with _lock:
        if key in _started:
            return None
        _started.add(key)
    thread = threading.Thread(target=_run, args=(path, interval), name="sqlite-checkpoint", daemon=True)
    try:
        thread.start()
    except RuntimeError as exc:  # no thread may start: the connection must still open
        logger.warning("SQLite checkpoint thread not started (%s)", type(exc).__name__)
        _forget(path)
        return None
    return thread


def _inode(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def _run(path: str, interval: float) -> None:
    inode = _inode(path)
    try:
        # mode=rw: a file removed before this line is not created again (this thread would
        # then keep it for ever).
        connection = sqlite3.connect(f"file:{quote(path)}?mode=rw", uri=True, timeout=0, isolation_level=None)
    except sqlite3.Error as exc:
        if inode is not None:
            logger.warning("SQLite checkpoint thread not started (%s)", type(exc).__name__)
        _forget(path)
        return
    failing: str | None = None  # the class of the last failure: logged once, not every round
    try:
        while inode is not None and _inode(path) == inode:
            time.sleep(interval)
            try:
                with _fork_guard:
                    # Passive: copies what it can without waiting for a lock, blocks no one.
                    connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.Error as exc:  # the class only: a message may name the file
                if type(exc).__name__ != failing:
                    failing = type(exc).__name__
                    logger.warning("SQLite checkpoints failing (%s); commits checkpoint meanwhile", failing)
            else:
                failing = None
    finally:
        connection.close()
        _forget(path)


def _forget(path: str) -> None:
    with _lock:
        _started.discard((os.getpid(), path))
