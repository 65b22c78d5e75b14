"""Loaded into a test worker with `celery worker -I tests.faults.worker_hooks`.

Each run of a watched task writes `<MH_FAULT_DIR>/start-<n>` (holding the pool child's pid)
when it starts and `done-<n>` when its service call has returned, i.e. committed. With
MH_FAULT_PAUSE=after_commit the first run then stops inside the task body and waits until
the test kills it: its work is committed, the task has not returned, the message is not
acknowledged. Nothing here runs outside these tests.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from celery.signals import task_prerun

from tenants import tasks

FAULT_DIR = os.environ.get("MH_FAULT_DIR", "")
PAUSE = os.environ.get("MH_FAULT_PAUSE", "")
WATCHED = {"tenants.memory_rescan_volume", "tenants.memory_files_sync"}


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


@task_prerun.connect
def _started(sender: Any = None, **kwargs: Any) -> None:
    if FAULT_DIR and sender is not None and sender.name in WATCHED:
        _next("start")


def _pausing(service: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(service)
    def run(*args: Any, **kwargs: Any) -> Any:
        result = service(*args, **kwargs)
        if FAULT_DIR and _next("done") == 1 and PAUSE == "after_commit":
            while True:  # killed here by the test
                time.sleep(1)
        return result

    return run


# The task functions look these names up in their module at call time.
tasks.rescan_volume = _pausing(tasks.rescan_volume)
tasks.files_sync = _pausing(tasks.files_sync)
