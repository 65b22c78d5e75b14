"""A worker records a heartbeat as soon as it is ready, so /healthz need not wait for beat."""

from __future__ import annotations

import logging
from typing import Any

from celery.signals import worker_ready

logger = logging.getLogger("memoryhub.worker")


@worker_ready.connect
def _record_ready(sender: Any = None, **kwargs: Any) -> None:
    from memoryhub.tasks import heartbeat_record

    try:
        heartbeat_record(hostname=sender.hostname)
    except Exception:
        logger.warning("could not record the worker-ready heartbeat", exc_info=True)
