"""The Celery app. Configuration lives in settings under the CELERY_ prefix."""

from __future__ import annotations

import os
from typing import Any

from celery import Celery
from celery.signals import after_setup_logger, after_setup_task_logger, worker_init, worker_process_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")

app = Celery("memoryhub")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@after_setup_logger.connect
@after_setup_task_logger.connect
def _scrub_worker_logs(logger: Any = None, **_: Any) -> None:
    """Celery workers and beat replace the root logger's handlers (and give the task logger
    its own), so settings.LOGGING's scrub filter is gone there: put it back on each of them.
    Failure lines of tasks would otherwise carry database error details
    (memoryhub/log_scrub.py, docs/operations.md "Logs")."""
    from memoryhub.log_scrub import install

    if logger is not None:
        install(logger)


def _pool_forks(pool_cls: Any) -> bool:
    """Whether tasks run in forked pool children (prefork) rather than in this process."""
    from celery import concurrency
    from celery.concurrency.prefork import TaskPool

    cls = concurrency.get_implementation(pool_cls)
    return isinstance(cls, type) and issubclass(cls, TaskPool)


@worker_init.connect
def _load_encoder_in_worker(sender: Any = None, **_: Any) -> None:
    """The embedding model is loaded where tasks run, once, when the worker starts
    (docs/atoms.md "Read path costs"): here for the solo and thread pools; in each child for prefork,
    since torch does not survive a fork (see below). Encoding uses the worker's torch
    thread count (ATOMS_WORKER_TORCH_THREADS)."""
    from memoryhub import process_start

    process_start.enter_worker()
    if sender is not None and not _pool_forks(sender.pool_cls):
        process_start.load_now()


@worker_process_init.connect
def _load_encoder_in_pool_child(**_: Any) -> None:
    """A prefork child loads after its fork, on a thread: the parent kills a child that has
    not reported for duty within worker_proc_alive_timeout (4 s), less than a load may take.
    A task that arrives meanwhile waits for that load rather than starting another."""
    from memoryhub import process_start

    process_start.enter_worker()
    process_start.load_in_background()
