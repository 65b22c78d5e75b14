"""Runs and their journals: record / replay / verify, exactly once (docs/kv.md "Endpoints").

A journaled call locks its run row for the whole transaction, so calls in a run are
serialized: a second caller at the same seq waits, then finds the record and replays it.
The live action and the journal append commit together.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC
from typing import Any

from django.db import transaction
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.api.codes import status_for
from memoryhub.api.errors import ApiError
from memoryhub.audit import audit_record
from tenants.kv.rules import KvError, args_for_comparison, canonical
from tenants.models import Agent, KvJournalRecord, KvRun


@dataclass
class CallOutcome:
    """What an RPC call answers: `result` is JSON text; `etag` the key's version, if any."""

    result: str
    namespace: str
    etag: int | None = None
    replayed: bool = False
    warnings: list[str] = field(default_factory=list)


class ReplayedError(ApiError):
    """A recorded error raised again on replay, with the replay header. It answers the status
    recorded with the call, not its code's row today: a replay repeats the recorded answer."""

    def __init__(self, record: KvJournalRecord) -> None:
        super().__init__(record.error_message, code=record.error_code, status=record.error_status or 400,
                         details=record.error_details or {})
        self.headers = {"X-Memoryhub-Replayed": "true"}


def run_create(*, agent: Agent, mode: str, lax: bool, actor: Actor) -> KvRun:
    with transaction.atomic():
        run = KvRun.objects.create(agent=agent, mode=mode, lax=lax, created_by=actor.label)
        audit_record(tenant=agent.tenant, actor=actor, action="kv.run.create", object_type="kv_run",
                     object_id=run.run_id, after={"mode": mode, "lax": lax})
    return run


def run_close(*, run: KvRun, actor: Actor) -> KvRun:
    """Close a run; closing a closed run changes nothing."""
    with transaction.atomic():
        locked = KvRun.objects.select_for_update().get(pk=run.pk)
        if locked.closed_at is None:
            locked.closed_at = timezone.now()
            locked.save(update_fields=["closed_at"])
            audit_record(tenant=run.agent.tenant, actor=actor, action="kv.run.close", object_type="kv_run",
                         object_id=locked.run_id, after={"frontier": locked.frontier})
    return locked


def _replay(run: KvRun, seq: int, args: dict[str, Any]) -> CallOutcome:
    record = run.records.get(seq=seq)
    recorded_args = json.loads(record.args)
    diverged = args_for_comparison(recorded_args) != args_for_comparison(args)
    if diverged:
        details = {"seq": seq, "recorded": recorded_args, "received": args}
        if record.function != "memory" or recorded_args.get("action") != args.get("action") or not run.lax:
            raise KvError("REPLAY_DIVERGED", f"The call differs from the call recorded at seq {seq}.",
                          details=details)
    if record.error_code:
        raise ReplayedError(record)
    warnings = [f"args differ from recorded call at seq {seq}"] if diverged else []
    return CallOutcome(result=record.result, namespace=record.namespace, replayed=True, warnings=warnings)


def journaled_call(
    *,
    agent: Agent,
    run_id: str,
    seq: int,
    verify_header: bool,
    args: dict[str, Any],
    execute: Callable[[str], CallOutcome],
) -> CallOutcome:
    """Replay, refuse or run live one call of a run. `execute(run_id)` performs the call
    (validation included) and raises KvError; journaled errors are recorded and re-raised."""
    with transaction.atomic():
        run = KvRun.objects.select_for_update().filter(agent=agent, run_id=run_id).first()
        if run is None:
            raise KvError("RUN_NOT_FOUND", "No such run for this agent.")
        frontier = run.frontier
        if seq <= frontier:
            return _replay(run, seq, args)
        if run.mode == "verify" or verify_header:
            raise KvError("VERIFY_LIVE_CALL", f"Verify mode allows replays only; seq {seq} is past the recorded "
                          f"frontier {frontier}.", details={"frontier": frontier})
        if run.closed_at is not None:
            raise KvError("RUN_CLOSED", "The run is closed; only replays are allowed.")
        if seq > frontier + 1:
            raise KvError("SEQ_GAP", f"The next seq of this run is {frontier + 1}.",
                          details={"expected": frontier + 1})
        started = time.perf_counter()
        record = KvJournalRecord(run=run, seq=seq, args=canonical(args), timestamp=timezone.now())
        failure: KvError | None = None
        try:
            with transaction.atomic():  # a failed action leaves nothing behind but its record
                outcome = execute(run.run_id)
            record.result = outcome.result
            record.namespace = outcome.namespace
            record.etag_version = outcome.etag
        except KvError as exc:
            if not exc.journaled:
                raise
            failure = exc
            record.error_status, record.error_code = status_for(exc), exc.code
            record.error_message, record.error_details = exc.message, exc.details
        record.duration_ms = int((time.perf_counter() - started) * 1000)
        record.save()
        KvRun.objects.filter(pk=run.pk).update(frontier=seq)
    if failure is not None:
        raise failure
    return outcome


def _timestamp(record: KvJournalRecord) -> str:
    return record.timestamp.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def journal_line(record: KvJournalRecord) -> str:
    """One JSONL line in the original's member order; nested objects sorted, raw non-ASCII."""
    parts = [
        f'"seq":{record.seq}', f'"function":{json.dumps(record.function)}', f'"args":{record.args}',
        f'"result":{record.result if not record.error_code else "null"}',
        f'"duration_ms":{record.duration_ms}', f'"timestamp":"{_timestamp(record)}"',
    ]
    if record.error_code:
        parts.append(f'"error":{json.dumps(record.error_message, ensure_ascii=False)}')
    return "{" + ",".join(parts) + "}\n"


def journal_jsonl(run: KvRun) -> Iterator[str]:
    for record in run.records.order_by("seq").iterator(chunk_size=1000):
        yield journal_line(record)
