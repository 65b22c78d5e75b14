"""The thread that encodes a request's signal texts while the request goes on
(docs/atoms.md "Semantic index", "Query encoding").

A read or search hands its signal texts to this thread before its transaction and runs its
first statements (the store row, the lexical statistics and the lexical channel) meanwhile.
It waits for the vectors only where the semantic channel needs them. The model's forward
releases the GIL, and so do the database drivers while a statement runs, so on two cores the
encoding costs the request little wall time instead of its whole length (docs/benchmarks.md
"Query encoding beside the lexical channel").

One thread per process, so encodings in one process run one at a time, in the order they
were asked for:
- A sync gunicorn worker serves one request at a time anyway.
- A threaded server (the MCP server's) queues its encodings here instead of running several
  forwards at once on the web processes' single torch thread each, which would oversubscribe
  the cores.
- A fast tokenizer is never entered by two threads at once.

The pool is made on first use in each process, so a pool inherited through fork (which has
no thread in the child) is never used.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_pid = 0


def _executor() -> ThreadPoolExecutor:
    global _pool, _pool_pid
    with _lock:
        if _pool is None or _pool_pid != os.getpid():
            _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="atoms-encoder")
            _pool_pid = os.getpid()
        return _pool


def encode_later(encode: Callable[[list[str]], np.ndarray], texts: Sequence[str]) -> Future[np.ndarray]:
    """`encode(texts)` on the encoder thread; the future holds its vectors or its exception."""
    return _executor().submit(encode, list(texts))
