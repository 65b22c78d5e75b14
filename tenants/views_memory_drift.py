"""Drift between the database and the files on disk (docs/memory-files.md "How it works"): the
Drift tab's diff, the two ways out (import the disk version, overwrite the disk), and the
tab's "!" marker, which refreshes in place when a resolve answers with `driftChanged`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpResponse
from django.template.response import TemplateResponse
from django.views.decorators.http import require_GET, require_POST

from tenants.forms import LenientForm, PostedText
from tenants.memory import rules
from tenants.memory.files import DiskState, disk_state, drift_import_disk, drift_overwrite_disk
from tenants.memory.importing import FILE_NAMES
from tenants.memory.rules import MemoryRuleError
from tenants.memory.service import volume_for
from tenants.models import Role
from tenants.ui import tenant_view
from tenants.ui_render import render_page
from tenants.ui_request import TenantRequest, actor_of, can_act
from tenants.views_memory import entry_diff

DRIFT_CHANGED = "driftChanged"  # the Drift tab's marker listens (memory/_drift_marker.html)


@dataclass
class DriftPanel:
    target: str
    file_name: str
    drift: dict[str, Any]
    state: DiskState
    only_database: list[str]
    only_disk: list[str]


def _drift_context(request: TenantRequest, **extra: Any) -> dict[str, Any]:
    volume = volume_for(request.tenant)
    panels = []
    for target in rules.TARGETS:
        drift = getattr(volume, f"{target}_drift")
        if not drift:
            continue
        state = disk_state(volume, target)
        only_disk, only_database = entry_diff(state.database_entries, state.entries or [])
        panels.append(DriftPanel(target, FILE_NAMES[target], drift, state, only_database, only_disk))
    return {"panels": panels, "volume": volume, "can_act": can_act(request), **extra}


@tenant_view(Role.VIEWER)
@require_GET
def drift_view(request: TenantRequest) -> HttpResponse:
    """Hand-edited files on the tenant volume: the database-vs-disk diff and the way out."""
    return render_page(request, "memory/drift.html", _drift_context(request), partial="drift-panel")


@tenant_view(Role.VIEWER)
@require_GET
def drift_marker(request: TenantRequest) -> HttpResponse:
    """The Drift tab's "!" alone, for the nav to swap in after `driftChanged`."""
    return TemplateResponse(request, "memory/_drift_marker.html", {"volume": volume_for(request.tenant)})


class ImportForm(LenientForm):
    # The digest of the file the page showed: the import is refused if the disk changed since.
    disk_digest = PostedText()


def _resolve(request: TenantRequest, target: str, how: str) -> HttpResponse:
    actor = actor_of(request)
    try:
        if how == "import":
            resolution = drift_import_disk(tenant=request.tenant, target=target, actor=actor,
                                           disk_digest=ImportForm.read(request.POST)["disk_digest"] or None)
            done = (f"Imported {FILE_NAMES[target]} from disk as version {resolution.version}."
                    if resolution.version is not None else
                    f"{FILE_NAMES[target]} on disk held the stored entries; the file was rewritten, nothing else changed.")
        else:
            drift_overwrite_disk(tenant=request.tenant, target=target, actor=actor)
            done = f"Wrote the stored entries over {FILE_NAMES[target]} on disk; the backup is kept."
    except MemoryRuleError as exc:
        context = _drift_context(request, notice=exc.message, notice_is_error=True, failed_target=target)
        return render_page(request, "memory/drift.html", context, partial="drift-panel")
    return render_page(request, "memory/drift.html", _drift_context(request, notice=done), partial="drift-panel",
                       event=DRIFT_CHANGED)


@tenant_view(Role.REVIEWER)
@require_POST
def drift_import(request: TenantRequest, target: str) -> HttpResponse:
    return _resolve(request, target, "import")


@tenant_view(Role.REVIEWER)
@require_POST
def drift_overwrite(request: TenantRequest, target: str) -> HttpResponse:
    return _resolve(request, target, "overwrite")
