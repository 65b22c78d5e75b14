"""WAL checkpoints of a SQLite database file, on a thread of their own
(docs/operations.md "SQLite checkpoints").

In WAL mode, SQLite copies the log back into the database file (a checkpoint) inside the
commit that takes the log past `wal_autocheckpoint` pages, so one request in every few
dozen paid for it: about 18 ms, two fsyncs and a thousand pages, at the commit of a read on
the 100k-atom corpus, where the read itself takes 15 (docs/benchmarks.md "SQLite
checkpoints off the request path"). Here each process that opens a SQLite file starts one
daemon thread, on the first connection to that file, which runs a PASSIVE checkpoint every
`SQLITE_CHECKPOINT_SECONDS`. A passive checkpoint never waits for a lock and never blocks a
reader or a writer, and the driver releases the GIL while it runs. The connections' own
`wal_autocheckpoint` stays as a backstop at `SQLITE_WAL_AUTOCHECKPOINT` pages (settings.py),
for a process that writes faster than its thread copies.

Not for an in-memory database (the test suite's): it has no log to copy. The thread ends
when its file is gone (a test's or a benchmark's temporary database).
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


def database_file(name: Any) -> str | None:
    """The file of a SQLite database NAME, or None for an in-memory one."""
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
    """The checkpoint thread of `path` in this process; None when one is already running."""
    key = (os.getpid(), path)
    with _lock:
        if key in _started:
            return None
        _started.add(key)
    thread = threading.Thread(target=_run, args=(path, interval), name="sqlite-checkpoint", daemon=True)
    thread.start()
    return thread


def _run(path: str, interval: float) -> None:
    try:
        # mode=rw: a file removed before this line is not created again (it would be kept
        # alive by this thread for ever).
        connection = sqlite3.connect(f"file:{quote(path)}?mode=rw", uri=True, timeout=0, isolation_level=None)
    except sqlite3.Error as exc:
        if os.path.exists(path):
            logger.warning("SQLite checkpoint thread not started (%s)", type(exc).__name__)
        _forget(path)
        return
    try:
        while os.path.exists(path):
            time.sleep(interval)
            try:
                # (busy, frames in the log, frames copied); busy only while another
                # checkpoint runs, and the next round copies what this one could not.
                connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.Error as exc:  # the class only: a message may name the file
                logger.warning("SQLite checkpoint failed (%s)", type(exc).__name__)
    finally:
        connection.close()
        _forget(path)


def _forget(path: str) -> None:
    with _lock:
        _started.discard((os.getpid(), path))
