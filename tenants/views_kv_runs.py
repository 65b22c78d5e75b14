"""A KV run's page: the run and its journal, in seq order (docs/kv.md "In the web UI").

The journal shows each call as it was recorded, including the value a `set` wrote: it is
the tenant's own data shown to its members, like the entry pages show stored values.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from tenants.actor_names import prime_actor_names
from tenants.kv.rules import canonical
from tenants.models import KvJournalRecord, KvRun, Role
from tenants.ui import tenant_view
from tenants.ui_render import render_page
from tenants.ui_request import TenantRequest, int_or_none
from tenants.views_kv_common import agent_or_404

JOURNAL_PER_PAGE = 100
# A value longer than this (or of more lines) is folded into a <details>: a page of 100 calls
# each writing a large document would otherwise be unreadable.
VALUE_SHORT_CHARS = 160
VALUE_SHORT_LINES = 6
# Values may be a MiB each; the journal shows the start of a longer one (the entry page has it all).
VALUE_MAX_CHARS = 20_000


def _shown(value: Any) -> str | None:
    # Args are recorded as sent, so a field may hold any JSON value, not only a string.
    if value is None:
        return None
    return value if isinstance(value, str) else canonical(value)


@dataclass(frozen=True)
class WrittenValue:
    """The value a `set` sent, pretty-printed; `summary` is its first line when folded."""

    text: str
    folded: bool
    summary: str
    cut: bool


def written_value(args: dict[str, Any]) -> WrittenValue | None:
    if args.get("action") != "set" or "value" not in args:
        return None
    text = json.dumps(args["value"], indent=2, ensure_ascii=False)
    cut = len(text) > VALUE_MAX_CHARS
    if cut:
        text = text[:VALUE_MAX_CHARS]
    folded = cut or len(text) > VALUE_SHORT_CHARS or text.count("\n") >= VALUE_SHORT_LINES
    summary = canonical(args["value"])[:VALUE_SHORT_CHARS] if folded else ""
    return WrittenValue(text, folded, summary, cut)


@dataclass(frozen=True)
class JournalRow:
    seq: int
    action: str | None
    key: str | None
    namespace: str | None
    value: WrittenValue | None
    result: str
    error_status: int | None
    error_code: str
    error_message: str
    duration_ms: int
    timestamp: datetime


def _journal_row(record: KvJournalRecord) -> JournalRow:
    args = json.loads(record.args)
    return JournalRow(
        seq=record.seq, action=_shown(args.get("action")), key=_shown(args.get("key")),
        namespace=_shown(args.get("namespace")), value=written_value(args), result=record.result,
        error_status=record.error_status, error_code=record.error_code, error_message=record.error_message,
        duration_ms=record.duration_ms, timestamp=record.timestamp,
    )


@tenant_view(Role.VIEWER)
@require_GET
def kv_run(request: TenantRequest, agent: str, run_id: str) -> HttpResponse:
    """A run and its journal, in seq order, 100 records a page; `?after=<seq>` is the page."""
    found = agent_or_404(request, agent)
    run = get_object_or_404(KvRun, agent=found, run_id=run_id)
    after = max(int_or_none(request.GET.get("after")) or 0, 0)
    records = list(run.records.filter(seq__gt=after).order_by("seq")[: JOURNAL_PER_PAGE + 1])
    rows = [_journal_row(record) for record in records[:JOURNAL_PER_PAGE]]
    url = reverse("kv-run", args=[request.tenant.slug, found.slug, run.run_id])
    next_url = f"{url}?{urlencode({'after': rows[-1].seq})}" if len(records) > JOURNAL_PER_PAGE else ""
    prime_actor_names(request, [run.created_by])
    context = {"agent": found, "run": run, "rows": rows, "after": after, "next_url": next_url, "first_url": url}
    return render_page(request, "kv/run.html", context, partial="journal")
