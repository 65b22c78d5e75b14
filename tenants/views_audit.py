"""The audit log page: every change in the tenant, newest first, with filters and cursor paging.

Viewers may read it: rows hold actor, action, object ids, digests and time, never content
(purges leave nothing to hide here). Paging is keyset on (created_at, id) so a page is
stable while new rows arrive at the top; the cursor is signed so a hand-edited link is
refused rather than misread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any
from urllib.parse import urlencode

from django.db.models import Q, QuerySet
from django.http import HttpResponse
from django.utils import timezone
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET
from django_htmx.http import push_url

from memoryhub.keyset import open_cursor, sign_cursor
from memoryhub.models import AuditEvent
from tenants.actor_names import actor_names
from tenants.audit_text import Facts, sentence
from tenants.models import Role, Tenant
from tenants.ui import tenant_view
from tenants.ui_render import render_page, wants_partial
from tenants.ui_request import TenantRequest

PAGE_SIZE = 50
CURSOR_SALT = "memoryhub.audit.cursor"
FILTER_FIELDS = ("actor", "action", "object_type", "since", "until")


@dataclass
class AuditFilters:
    """The filter form as submitted, the part of it that was valid, and its errors."""

    actor: str = ""
    action: str = ""
    object_type: str = ""
    since: str = ""
    until: str = ""
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def active(self) -> bool:
        return any(getattr(self, name) for name in FILTER_FIELDS)

    def query(self, **extra: str) -> str:
        """The filters as a query string (empty ones left out), plus `extra`."""
        params = {name: getattr(self, name) for name in FILTER_FIELDS if getattr(self, name)}
        params.update({k: v for k, v in extra.items() if v})
        return urlencode(params)


def _parse_date(raw: str, name: str, errors: dict[str, str]) -> date | None:
    if not raw:
        return None
    try:
        return date.fromisoformat(raw)
    except ValueError:
        errors[name] = "Use a date like 2026-01-31."
        return None


def _start_of(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min), timezone.get_current_timezone())


def filtered_events(tenant: Tenant, params: Any) -> tuple[QuerySet[AuditEvent], AuditFilters]:
    """The tenant's events narrowed by the valid filters in `params` (a QueryDict)."""
    filters = AuditFilters(**{name: params.get(name, "").strip()[:200] for name in FILTER_FIELDS})
    events = AuditEvent.objects.for_tenant(tenant)
    if filters.actor:
        # The stored label (user:alice, key:k_…, import) or the acting key's name, as shown.
        events = events.filter(Q(actor_label__icontains=filters.actor) | Q(actor_key__name__icontains=filters.actor))
    if filters.action:
        events = events.filter(action__startswith=filters.action)
    if filters.object_type:
        events = events.filter(object_type=filters.object_type)
    since = _parse_date(filters.since, "since", filters.errors)
    until = _parse_date(filters.until, "until", filters.errors)
    if since and until and until < since:
        filters.errors["until"] = "The end date is before the start date."
        until = None
    if since:
        events = events.filter(created_at__gte=_start_of(since))
    if until:  # the whole end day is included
        events = events.filter(created_at__lt=_start_of(until + timedelta(days=1)))
    return events, filters


@dataclass(frozen=True)
class AuditRow:
    event: AuditEvent
    sentence: SafeString  # escaped: built with format_html from the row's ids only


def make_cursor(event: AuditEvent) -> str:
    # Readable by anyone (memoryhub/keyset.py): it names the row by its public id, never by
    # the global pk (memoryhub/public_ids.py).
    return sign_cursor([event.created_at.isoformat(), event.public_id], salt=CURSOR_SALT)


def after_cursor(events: QuerySet[AuditEvent], cursor: str) -> QuerySet[AuditEvent]:
    """Rows older than the cursor's row. Raises ValueError for a cursor we did not sign
    (BadCursor is one). The events are the tenant's already, so the cursor needs no scope."""
    try:
        created, public_id = open_cursor(cursor, salt=CURSOR_SALT)
        at = datetime.fromisoformat(created)
        if not isinstance(public_id, str):
            raise TypeError("bad cursor")
    except (TypeError, ValueError) as exc:
        raise ValueError("bad cursor") from exc
    return events.filter(Q(created_at__lt=at) | Q(created_at=at, public_id__lt=public_id))


@tenant_view(Role.VIEWER)
@require_GET
def audit_log(request: TenantRequest) -> HttpResponse:
    """GET /t/<slug>/audit/: filters in the query string; `cursor` names the page's upper end."""
    tenant = request.tenant
    events, filters = filtered_events(tenant, request.GET)
    cursor = request.GET.get("cursor", "")
    notice = ""
    if cursor:
        try:
            events = after_cursor(events, cursor)
        except ValueError:
            notice = "That page link is not valid any more; showing the newest entries."
            cursor = ""
    rows = list(events.order_by("-created_at", "-public_id")[: PAGE_SIZE + 1])
    more = len(rows) > PAGE_SIZE
    rows = rows[:PAGE_SIZE]
    facts = Facts.for_rows(tenant, actor_names(request), rows)
    context = {
        "events": [AuditRow(event, sentence(event, facts)) for event in rows],
        "filters": filters,
        "notice": notice,
        "paged": bool(cursor),
        "next_query": filters.query(cursor=make_cursor(rows[-1])) if more else "",
        "first_query": filters.query(),
        "object_types": list(AuditEvent.objects.for_tenant(tenant).order_by("object_type")
                             .values_list("object_type", flat=True).distinct()),
    }
    response = render_page(request, "tenants/audit.html", context, partial="audit-results")
    if wants_partial(request):
        # The address bar gets the filters without the form's empty fields.
        query = filters.query(cursor=cursor)
        push_url(response, request.path + (f"?{query}" if query else ""))
    return response
