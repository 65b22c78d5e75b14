"""Loaded into a test worker with `celery worker -I tests.faults.blocking_task`.

`tests.faults.block_once` writes `<MH_FAULT_DIR>/start-<n>` (holding the pool child's pid)
each time it starts. Its first run then blocks until the test kills the worker; any later
run writes `done-<n>` and returns. Nothing here runs outside these tests."""

from __future__ import annotations

import os
import time
from pathlib import Path

from celery import shared_task

FAULT_DIR = os.environ.get("MH_FAULT_DIR", "")


def _next(prefix: str) -> int:
    """Create the first free `<prefix>-<n>` file atomically, holding this pid; returns n."""
    n = 1
    while True:
        try:
            fd = os.open(Path(FAULT_DIR) / f"{prefix}-{n}", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            n += 1
            continue
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        return n


@shared_task(name="tests.faults.block_once")
def block_once() -> int:
    run = _next("start")
    while run == 1:  # killed here by the test
        time.sleep(0.5)
    _next("done")
    return run
