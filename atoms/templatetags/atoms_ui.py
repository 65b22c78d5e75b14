"""Template helpers of the Atom pages: epoch-millisecond times and the quarantine count."""

from __future__ import annotations

from datetime import datetime

from django import template

from atoms.ui.common import from_ms, quarantine_count
from tenants.models import Tenant

register = template.Library()


@register.filter
def ms_time(value: int | None) -> datetime | None:
    """Engine times are epoch milliseconds; templates format datetimes."""
    return None if value is None else from_ms(int(value))


@register.simple_tag
def atoms_quarantined(tenant: Tenant | None) -> int:
    """For the nav badge: one indexed count per page that shows the nav."""
    return quarantine_count(tenant) if tenant is not None else 0
