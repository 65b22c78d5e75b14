"""gunicorn settings. gunicorn reads ./gunicorn.conf.py by default, so every
`gunicorn memoryhub.wsgi ...` started from the checkout uses it (docs/operations.md#processes);
with `-c another-file`, import this one's hooks there.

Bind address, workers and timeouts stay on the command line.
"""

from __future__ import annotations

import os
from typing import Any


def _limit(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    return int(raw) if raw else default


# Request limits, explicit rather than gunicorn's defaults (docs/operations.md "Limits").
# gunicorn answers a request over them itself, with a small HTML page (414 for the request
# line, 431 for headers) before Django sees it; these and gunicorn's 400 for a request it
# cannot parse are the only API answers not in the JSON error shape. A request line of
# 8,190 characters (gunicorn's maximum; its default is 4,094) keeps room for the longest
# path the API takes: a key-value key at the default kv_key_bytes (1,024) is up to 3,072
# characters once percent-encoded, and a tenant may raise that limit.
limit_request_line = _limit("MEMORYHUB_LIMIT_REQUEST_LINE", 8190)
limit_request_fields = _limit("MEMORYHUB_LIMIT_REQUEST_FIELDS", 100)
limit_request_field_size = _limit("MEMORYHUB_LIMIT_REQUEST_FIELD_SIZE", 8190)


def post_worker_init(worker: Any) -> None:
    """Load the embedding model in each worker after the fork and before it accepts a
    request, so that no request pays for it (docs/atoms.md "Read path costs"). The load runs on a thread
    while this one keeps telling the master that the worker is alive: gunicorn's --timeout
    counts from the fork, and several workers loading at once on a small machine can take
    longer than that. A failed load is logged and reported by /healthz; the worker then
    serves with lexical recall. Then the start-up heap is frozen (process_start.freeze_heap)."""
    from memoryhub import process_start

    for thread in process_start.load_in_background():
        while thread.is_alive():
            worker.notify()
            thread.join(1.0)
    # What start-up loaded stays for the worker's life: keep full collections off it.
    process_start.freeze_heap()


# The access log (off unless --access-logfile is given) shows routes instead of paths, and
# the error log is scrubbed like Django's (docs/operations.md "Logs").
logger_class = "memoryhub.gunicorn_log.GunicornLogger"
