"""gunicorn settings. gunicorn reads ./gunicorn.conf.py by default, so every
`gunicorn memoryhub.wsgi ...` started from the checkout uses it (docs/operations.md#processes);
with `-c another-file`, import this one's hooks there.

Bind address, workers and timeouts stay on the command line.
"""

from __future__ import annotations

from typing import Any


def post_worker_init(worker: Any) -> None:
    """Load the embedding model in each worker after the fork and before it accepts a
    request, so that no request pays for it (atoms-recall.md §5). The load runs on a thread
    while this one keeps telling the master that the worker is alive: gunicorn's --timeout
    counts from the fork, and several workers loading at once on a small machine can take
    longer than that. A failed load is logged and reported by /healthz; the worker then
    serves with lexical recall."""
    from atoms.embedding import warm_up_in_background

    thread = warm_up_in_background()
    while thread is not None and thread.is_alive():
        worker.notify()
        thread.join(1.0)


# The access log (off unless --access-logfile is given) shows routes instead of paths, and
# the error log is scrubbed like Django's (docs/operations.md "Logs").
logger_class = "memoryhub.gunicorn_log.GunicornLogger"
