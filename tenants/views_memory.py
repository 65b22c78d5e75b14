"""Memory-file pages (docs/memory-files.md "How it works"): both stores with usage bars, inline edit,
remove and add; a store's history with restore; the nav's pending badge.

Every write goes through tenants.memory.service as origin `human` with the signed-in person
as actor, so it is never staged. Entries are untrusted text: templates escape them, and the
`reveal` filter escapes each piece before showing hidden characters as ⟨U+XXXX⟩ markers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.http import HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from tenants.forms import LenientForm, OptionalInteger, PostedText, ReasonForm
from tenants.memory import rules
from tenants.memory.importing import FILE_NAMES
from tenants.memory.rules import MemoryRuleError
from tenants.memory.service import WriteOutcome, memory_undo, memory_write, pending_count, volume_for
from tenants.memory_ui_text import ui_message
from tenants.models import MemoryVersion, MemoryVolume, Origin, Role, Tenant
from tenants.ui import tenant_view
from tenants.ui_render import render_page, wants_partial
from tenants.ui_request import TenantRequest, actor_of, can_act, int_or_none

PENDING_CHANGED = "pendingChanged"  # the nav badge listens (memory/badge.html)
VERSIONS_PER_PAGE = 50
STORE_LABELS = {"memory": "Environment notes", "user": "User profile"}
LOST_VERSION = "The form lost the version it was loaded at; reload the page."


# --- Shared helpers (the review pages use them too) ----------------------------------------

def nav_pending_count(tenant: Tenant) -> int:
    return pending_count(volume_for(tenant))


# --- The stores ------------------------------------------------------------------------------

@dataclass
class StorePanel:
    """One store as the page shows it, plus the state of its forms after a request."""

    target: str
    entries: list[str]
    chars: int
    limit: int
    version: int
    usage: str
    pending: int
    drifted: bool
    editing: int | None = None  # index of the entry open in the editor
    draft: str = ""
    error: str = ""
    add_draft: str = ""
    add_error: str = ""
    # The error is about the store's cap: the page adds how to raise it (a link for admins).
    cap_hint: bool = False
    add_cap_hint: bool = False
    notice: str = ""
    notice_is_error: bool = False
    conflict_draft: str = ""  # the person's text, kept visible when a conflict refused it

    @property
    def file_name(self) -> str:
        return FILE_NAMES[self.target]

    @property
    def label(self) -> str:
        return STORE_LABELS[self.target]

    @property
    def pct(self) -> int:
        return min(self.chars * 100 // self.limit, 100)

    @property
    def level(self) -> str:
        # Neutral, amber from 80 %, red from 100 % (docs/memory-files.md "How it works"), on the floored percentage
        # the usage string shows, so the colour and the text never disagree.
        return "full" if self.pct >= 100 else "warn" if self.pct >= 80 else "ok"

    @property
    def bar_now(self) -> int:
        return min(self.chars, self.limit)  # aria-valuenow may not pass aria-valuemax

    @property
    def add_base(self) -> int:
        """Size before the new entry's own characters: adding costs a 3-char gap unless empty."""
        return self.chars + (3 if self.entries else 0)

    @property
    def edit_base(self) -> int:
        """Size without the entry being edited (its gap stays)."""
        return self.chars - len(self.entries[self.editing]) if self.editing is not None else self.chars

    @property
    def rows(self) -> list[tuple[int, str]]:
        return list(enumerate(self.entries))


def store_panel(volume: MemoryVolume, target: str, **state: Any) -> StorePanel:
    entries = volume.entries(target)
    return StorePanel(
        target=target, entries=entries, chars=rules.size_of(entries), limit=volume.limit(target),
        version=volume.version(target), usage=rules.usage(entries, volume.limit(target)),
        pending=pending_count(volume, target), drifted=bool(getattr(volume, f"{target}_drift")), **state,
    )


def _page_context(request: TenantRequest, focus: StorePanel | None = None) -> dict[str, Any]:
    volume = volume_for(request.tenant)
    stores = [focus if focus is not None and focus.target == t else store_panel(volume, t) for t in rules.TARGETS]
    return {"stores": stores, "store": focus, "volume": volume, "can_act": can_act(request),
            "pending_total": pending_count(volume)}


def _render_store(request: TenantRequest, panel: StorePanel) -> TemplateResponse:
    return render_page(request, "memory/memory.html", _page_context(request, panel), partial="store-panel")


@tenant_view(Role.VIEWER)
@require_GET
def memory_page(request: TenantRequest) -> HttpResponse:
    """Both stores; with ?store= an htmx request gets that store's panel (Cancel in the editor)."""
    target = request.GET.get("store")
    if target in rules.TARGETS and wants_partial(request):
        return _render_store(request, store_panel(volume_for(request.tenant), target))
    return TemplateResponse(request, "memory/memory.html", _page_context(request))


class EntryForm(LenientForm):
    """An entry's editor (GET opens it from the query, POST saves it): the entry's index and
    the store version the page showed; a missing or garbled number is as if not sent."""

    index = OptionalInteger()
    version = OptionalInteger()
    content = PostedText()


class EntryRemoveForm(LenientForm):
    index = OptionalInteger()
    version = OptionalInteger()


class EntryAddForm(LenientForm):
    version = OptionalInteger()
    content = PostedText()


class RestoreForm(ReasonForm):
    version = OptionalInteger(min_value=0)  # 0 restores the empty store; below it is no version


class StaleVersion(Exception):
    """The store moved on since the page was rendered: the edit is refused, not applied over a change the
    person has not seen."""


def _write_at_version(
    request: TenantRequest, target: str, version: int, data_for: Callable[[list[str]], dict[str, Any]]
) -> WriteOutcome:
    """Apply a human write only if the store is still at `version` (a refusal raises
    `MemoryRuleError`).

    The volume row is locked first, in this transaction, so the version check and the write
    see one state; memory_write takes the same lock again, which is a no-op inside it.
    """
    tenant = request.tenant
    with transaction.atomic():
        volume = MemoryVolume.objects.select_for_update().get(pk=volume_for(tenant).pk)
        if volume.version(target) != version:
            raise StaleVersion
        data = data_for(volume.entries(target))
        write = rules.parse_request(data, target)
        # The person picked one exact entry: aim at it whole, not by substring.
        pinned = [data["old_text"]] if "old_text" in data else []
        return memory_write(tenant=tenant, request=write, origin=Origin.HUMAN, actor=actor_of(request), pinned=pinned)


def _entry_at(index: int | None) -> Callable[[list[str]], str]:
    def pick(entries: list[str]) -> str:
        if index is None or not 0 <= index < len(entries):
            raise StaleVersion  # only a tampered form gets here: the version matched
        return entries[index]

    return pick


def _stale_panel(request: TenantRequest, target: str, *, what: str, **state: Any) -> StorePanel:
    volume = volume_for(request.tenant)
    notice = (f"{FILE_NAMES[target]} changed since this page was loaded; it is now at version "
              f"{volume.version(target)}. {what} Check the current entries below and try again.")
    return store_panel(volume, target, notice=notice, notice_is_error=True, **state)


@tenant_view(Role.REVIEWER)
@require_http_methods(["GET", "POST"])
def memory_entry_edit(request: TenantRequest, target: str) -> HttpResponse:
    """GET: open the inline editor for entry ?index= of ?version=. POST: replace that entry."""
    values = EntryForm.read(request.GET if request.method == "GET" else request.POST)
    index, version = values["index"], values["version"]
    volume = volume_for(request.tenant)
    if request.method == "GET":
        if version != volume.version(target) or index is None or not 0 <= index < len(volume.entries(target)):
            return _render_store(request, _stale_panel(request, target, what="Nothing was changed."))
        panel = store_panel(volume, target, editing=index, draft=volume.entries(target)[index])
        return _render_store(request, panel)

    draft = values["content"]
    if version is None:
        return _render_store(request, store_panel(volume, target, notice=LOST_VERSION, notice_is_error=True))
    try:
        outcome = _write_at_version(request, target, version, lambda entries: {
            "action": "replace", "old_text": _entry_at(index)(entries), "content": draft})
    except StaleVersion:
        return _render_store(request, _stale_panel(request, target, what="Your edit was not saved.",
                                                   conflict_draft=draft))
    except MemoryRuleError as exc:  # shown in the editor, with the draft kept
        volume = volume_for(request.tenant)
        entries = volume.entries(target)
        data = ({"action": "replace", "old_text": entries[index], "content": draft}
                if index is not None and 0 <= index < len(entries) else None)
        message, cap_hint = ui_message(exc, volume, target, data)
        panel = store_panel(volume, target, editing=index, draft=draft, error=message, cap_hint=cap_hint)
        return _render_store(request, panel)
    volume = volume_for(request.tenant)
    return _render_store(request, store_panel(volume, target, notice=outcome.body["message"]))


@tenant_view(Role.REVIEWER)
@require_POST
def memory_entry_remove(request: TenantRequest, target: str) -> HttpResponse:
    values = EntryRemoveForm.read(request.POST)
    index, version = values["index"], values["version"]
    if version is None:
        panel = store_panel(volume_for(request.tenant), target, notice=LOST_VERSION, notice_is_error=True)
        return _render_store(request, panel)
    try:
        outcome = _write_at_version(request, target, version, lambda entries: {
            "action": "remove", "old_text": _entry_at(index)(entries)})
    except StaleVersion:
        return _render_store(request, _stale_panel(request, target, what="Nothing was deleted."))
    except MemoryRuleError as exc:
        volume = volume_for(request.tenant)
        panel = store_panel(volume, target, notice=ui_message(exc, volume, target)[0], notice_is_error=True)
        return _render_store(request, panel)
    volume = volume_for(request.tenant)
    return _render_store(request, store_panel(volume, target, notice=outcome.body["message"]))


@tenant_view(Role.REVIEWER)
@require_POST
def memory_entry_add(request: TenantRequest, target: str) -> HttpResponse:
    values = EntryAddForm.read(request.POST)
    draft, version = values["content"], values["version"]
    if version is None:
        panel = store_panel(volume_for(request.tenant), target, add_draft=draft, add_error=LOST_VERSION)
        return _render_store(request, panel)
    try:
        outcome = _write_at_version(request, target, version, lambda _: {"action": "add", "content": draft})
    except StaleVersion:
        # The draft stays in the add form, now based on the current version.
        return _render_store(request, _stale_panel(request, target, what="Your entry was not added.",
                                                   add_draft=draft))
    except MemoryRuleError as exc:
        volume = volume_for(request.tenant)
        message, cap_hint = ui_message(exc, volume, target, {"action": "add", "content": draft})
        panel = store_panel(volume, target, add_draft=draft, add_error=message, add_cap_hint=cap_hint)
        return _render_store(request, panel)
    volume = volume_for(request.tenant)
    return _render_store(request, store_panel(volume, target, notice=outcome.body["message"]))


# --- History ---------------------------------------------------------------------------------

@dataclass
class HistoryRow:
    version: MemoryVersion
    added: list[str]
    removed: list[str]
    unchanged: int
    current: bool
    reordered: bool = False


def entry_diff(before: list[str], after: list[str]) -> tuple[list[str], list[str]]:
    """(added, removed) as multisets, each in its list's order: a duplicate counts twice."""
    def minus(left: list[str], right: list[str]) -> list[str]:
        spare = Counter(right)
        out = []
        for entry in left:
            if spare[entry]:
                spare[entry] -= 1
            else:
                out.append(entry)
        return out

    return minus(after, before), minus(before, after)


def _history_context(request: TenantRequest, target: str, **extra: Any) -> dict[str, Any]:
    volume = volume_for(request.tenant)
    before = int_or_none(request.GET.get("before"))
    versions = MemoryVersion.objects.filter(volume=volume, target=target).select_related("pending").order_by("-number")
    if before is not None:
        versions = versions.filter(number__lt=before)
    page = list(versions[: VERSIONS_PER_PAGE + 1])
    more = len(page) > VERSIONS_PER_PAGE
    page = page[:VERSIONS_PER_PAGE]
    earlier = dict(MemoryVersion.objects.filter(volume=volume, target=target, number__in={v.number - 1 for v in page})
                   .values_list("number", "entries"))
    rows = []
    for row in page:
        previous = list(earlier.get(row.number - 1, []))
        added, removed = entry_diff(previous, list(row.entries))
        rows.append(HistoryRow(
            version=row, added=added, removed=removed, unchanged=len(row.entries) - len(added),
            current=row.number == volume.version(target),
            reordered=not added and not removed and list(row.entries) != previous,
        ))
    url = reverse("memory-history", args=[request.tenant.slug, target])
    return {
        "target": target, "file_name": FILE_NAMES[target], "rows": rows, "volume": volume,
        "current_version": volume.version(target), "can_act": can_act(request),
        "next_url": f"{url}?before={page[-1].number}" if more else "", "first_url": url if before is not None else "",
        "show_empty": not more and volume.version(target) > 0, **extra,
    }


@tenant_view(Role.VIEWER)
@require_GET
def memory_history(request: TenantRequest, target: str) -> HttpResponse:
    """A store's versions, newest first, 50 a page, with entry-level diffs."""
    return render_page(request, "memory/history.html", _history_context(request, target), partial="history-panel")


@tenant_view(Role.REVIEWER)
@require_POST
def memory_restore(request: TenantRequest, target: str) -> HttpResponse:
    """Restore the entries after version N (0 = empty) as a new human version."""
    values = RestoreForm.read(request.POST)
    version = values["version"]
    if version is None:
        context = _history_context(request, target, notice="No version given; nothing was restored.",
                                   notice_is_error=True)
        return render_page(request, "memory/history.html", context, partial="history-panel")
    try:
        outcome = memory_undo(tenant=request.tenant, target=target, version=version, actor=actor_of(request),
                              reason=values["reason"])
    except MemoryRuleError as exc:
        context = _history_context(request, target, notice=f"Version {version} was not restored: {exc.message}",
                                   notice_is_error=True)
        return render_page(request, "memory/history.html", context, partial="history-panel")
    if outcome.version is None:
        notice = f"{FILE_NAMES[target]} already holds the entries of version {version}; nothing changed."
    else:
        notice = f"Restored the entries of version {version} as version {outcome.version}."
    context = _history_context(request, target, notice=notice)
    return render_page(request, "memory/history.html", context, partial="history-panel")


# --- The nav badge ---------------------------------------------------------------------------

@tenant_view(Role.VIEWER)
@require_GET
def memory_badge(request: TenantRequest) -> HttpResponse:
    """The pending count in the nav; polled every 30 s and on `pendingChanged`."""
    return TemplateResponse(request, "memory/badge.html", {"memory_pending_count": nav_pending_count(request.tenant)})

