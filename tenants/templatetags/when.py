"""Times as people read them: a date in the site's time zone and "N minutes ago", with the
exact ISO time kept machine-readable in `<time datetime>`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.timesince import timesince

register = template.Library()

JUST_NOW = timedelta(minutes=1)


def as_datetime(value: datetime | str | None) -> datetime | None:
    """A datetime, or the ISO text stored in JSON (drift records end in `Z`); else None."""
    if isinstance(value, datetime):
        return value if timezone.is_aware(value) else timezone.make_aware(value, UTC)
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment, UTC)


def ago(moment: datetime, now: datetime | None = None) -> str:
    now = now or timezone.now()
    if abs(now - moment) < JUST_NOW:
        return "just now"
    return f"{timesince(moment, now)} ago" if moment <= now else f"in {timesince(now, moment)}"


@register.simple_tag
def when(value: datetime | str | None) -> SafeString | str:
    """`<time datetime="2026-12-01T23:40:05Z">1 Dec 2026, 23:40 UTC (5 minutes ago)</time>`;
    text that is not a time is shown as it is (escaped)."""
    moment = as_datetime(value)
    if moment is None:
        return format_html("{}", value or "")
    local = timezone.localtime(moment)
    iso = moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return format_html('<time datetime="{}">{} ({})</time>', iso, date_format(local, "j M Y, H:i T"), ago(moment))
