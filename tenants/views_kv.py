"""KV review pages (spec docs/kv.md "Decisions the specification leaves open"): agents → namespaces → keys → one entry; edit, delete and
clear (a run's journal is in tenants/views_kv_runs.py).

Every write goes through tenants.kv.store with the signed-in person as actor, so UI writes
record the username and are never journaled. Keys and values are untrusted text: templates
rely on autoescaping and nothing here marks them safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count, F, Max, Sum
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from tenants.actor_names import prime_actor_names
from tenants.forms import LenientForm, OptionalInteger, PostedText, first_error
from tenants.kv.rules import KvError, Limits, loads_strict, validate_call
from tenants.kv.store import (
    Precondition,
    PreconditionMismatch,
    decode_cursor,
    encode_cursor,
    kv_clear,
    kv_delete,
    kv_get,
    kv_namespaces,
    kv_page,
    kv_set,
    limits_for,
)
from tenants.models import Agent, KvEntry, KvRun, Role
from tenants.ui import tenant_view
from tenants.ui_render import render_page, wants_partial
from tenants.ui_request import TenantRequest, actor_of, can_act
from tenants.views_kv_common import agent_or_404, key_param, pretty
from tenants.views_kv_runs import kv_run  # noqa: F401 - tenants/urls.py routes the run page through this module

KEYS_PER_PAGE = 50
# Values may be up to a MiB each: a page stops early rather than render 50 MB of HTML.
PAGE_MAX_BYTES = 4 * 1024 * 1024
RUNS_PER_PAGE = 50


# --- Agents --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AgentRow:
    agent: Agent
    namespaces: int
    keys: int


@tenant_view(Role.VIEWER)
@require_GET
def kv_agents(request: TenantRequest) -> HttpResponse:
    tenant = request.tenant
    stats = {
        row["agent_id"]: row
        for row in KvEntry.objects.filter(agent__tenant=tenant).values("agent_id")
        .annotate(keys=Count("id"), namespaces=Count("namespace", distinct=True)).order_by()
    }
    rows = [
        AgentRow(agent, stats.get(agent.pk, {}).get("namespaces", 0), stats.get(agent.pk, {}).get("keys", 0))
        for agent in Agent.objects.for_tenant(tenant)
    ]
    return render_page(request, "kv/agents.html", {"agents": rows}, partial="agent-list")


@tenant_view(Role.VIEWER)
@require_GET
def kv_agent(request: TenantRequest, agent: str) -> HttpResponse:
    """An agent's namespaces and its runs, newest first (paged)."""
    found = agent_or_404(request, agent)
    runs = Paginator(KvRun.objects.filter(agent=found).order_by("-created_at", "-id"), RUNS_PER_PAGE)
    context = {
        "agent": found,
        "namespaces": kv_namespaces(agent=found),
        "runs": runs.get_page(request.GET.get("page")),
    }
    partial = "run-list" if request.htmx.target == "run-list" else "agent-panel"
    return render_page(request, "kv/agent.html", context, partial=partial)


# --- Namespaces ---------------------------------------------------------------------------------

def _namespace_url(request: TenantRequest, agent: Agent, namespace: str, **query: str) -> str:
    url = reverse("kv-namespace", args=[request.tenant.slug, agent.slug, namespace])
    return f"{url}?{urlencode(query)}" if query else url


def _entry_url(request: TenantRequest, name: str, agent: Agent, namespace: str, key: str) -> str:
    url = reverse(name, args=[request.tenant.slug, agent.slug, namespace])
    return f"{url}?{urlencode({'key': key})}"


def _namespace_context(request: TenantRequest, agent: Agent, namespace: str, **extra: Any) -> dict[str, Any]:
    prefix = request.GET.get("prefix", "")
    cursor = request.GET.get("cursor", "")
    after: str | None = None
    page_error = ""
    if cursor:
        try:
            after = decode_cursor(cursor, agent=agent, namespace=namespace, prefix=prefix)
        except KvError:
            page_error = "That page link is no longer valid; showing the first page."
    entries, last_key = kv_page(
        agent=agent, namespace=namespace, prefix=prefix, after=after, limit=KEYS_PER_PAGE, max_bytes=PAGE_MAX_BYTES,
    )
    prime_actor_names(request, [entry.updated_by for entry in entries])
    summary = KvEntry.objects.filter(agent=agent, namespace=namespace).aggregate(
        keys=Count("id"), bytes=Sum(F("key_bytes") + F("value_bytes")), updated_at=Max("updated_at"),
    )
    next_url = ""
    if last_key is not None:
        token = encode_cursor(agent=agent, namespace=namespace, prefix=prefix, after=last_key)
        next_url = _namespace_url(request, agent, namespace, prefix=prefix, cursor=token)
    return {
        "agent": agent,
        "namespace": namespace,
        "summary": summary,
        "prefix": prefix,
        "rows": [(entry, _entry_url(request, "kv-entry", agent, namespace, entry.key)) for entry in entries],
        "first_page": after is None,
        "first_url": _namespace_url(request, agent, namespace, **({"prefix": prefix} if prefix else {})),
        "next_url": next_url,
        "page_error": page_error,
        "can_edit": can_act(request),
        **extra,
    }


@tenant_view(Role.VIEWER)
@require_GET
def kv_namespace(request: TenantRequest, agent: str, ns: str) -> HttpResponse:
    """A namespace's keys, 50 a page in code point order, filtered by a literal prefix."""
    found = agent_or_404(request, agent)
    partial = "key-list" if request.htmx.target == "key-list" else "ns-panel"
    return render_page(request, "kv/namespace.html", _namespace_context(request, found, ns), partial=partial)


class ClearForm(forms.Form):
    """The namespace's name as typed to confirm a clear (spaces around it do not count)."""

    confirm = PostedText(strip=True)

    def __init__(self, data: Any, *, namespace: str) -> None:
        super().__init__(data)
        self.namespace = namespace

    def clean_confirm(self) -> str:
        if self.cleaned_data["confirm"] != self.namespace:
            raise forms.ValidationError(f"Type {self.namespace} exactly to confirm. Nothing was deleted.")
        return self.namespace


@tenant_view(Role.REVIEWER)
@require_POST
def kv_namespace_clear(request: TenantRequest, agent: str, ns: str) -> HttpResponse:
    """Clear only once the person typed the namespace's name: one mistyped click is not enough."""
    found = agent_or_404(request, agent)
    form = ClearForm(request.POST, namespace=ns)
    if not form.is_valid():
        context = _namespace_context(request, found, ns, clear_error=first_error(form))
        return render_page(request, "kv/namespace.html", context, partial="ns-panel")
    deleted = kv_clear(agent=found, namespace=ns, actor=actor_of(request))
    notice = f"Cleared {ns}: {deleted} key{'' if deleted == 1 else 's'} deleted."
    if not wants_partial(request):
        messages.success(request, notice)
        return redirect("kv-agent", slug=request.tenant.slug, agent=found.slug)
    context = _namespace_context(request, found, ns, notice=notice)
    return render_page(request, "kv/namespace.html", context, partial="ns-panel")


# --- One entry -------------------------------------------------------------------------------------

class EntryEditForm(LenientForm):
    value = PostedText()  # JSON text, judged as an API `set` would be (_parse_value)
    version = OptionalInteger()  # the version the editor was loaded at (If-Match)


class EntryDeleteForm(LenientForm):
    version = OptionalInteger()


def _entry_context(
    request: TenantRequest, agent: Agent, namespace: str, key: str, entry: KvEntry | None, **extra: Any
) -> dict[str, Any]:
    last_run_url = ""
    if entry is not None:
        prime_actor_names(request, [entry.created_by, entry.updated_by])
    if entry is not None and entry.last_run_id and KvRun.objects.filter(agent=agent, run_id=entry.last_run_id).exists():
        last_run_url = reverse("kv-run", args=[request.tenant.slug, agent.slug, entry.last_run_id])
    return {
        "agent": agent,
        "namespace": namespace,
        "key": key,
        "entry": entry,
        "pretty": pretty(entry.value) if entry is not None else "",
        "last_run_url": last_run_url,
        "namespace_url": _namespace_url(request, agent, namespace),
        "entry_url": _entry_url(request, "kv-entry", agent, namespace, key),
        "edit_url": _entry_url(request, "kv-entry-edit", agent, namespace, key),
        "delete_url": _entry_url(request, "kv-entry-delete", agent, namespace, key),
        "can_edit": can_act(request),
        **extra,
    }


def _entry_or_404(agent: Agent, namespace: str, key: str) -> KvEntry:
    entry = kv_get(agent=agent, namespace=namespace, key=key)
    if entry is None:
        raise Http404("No such key.")
    return entry


@tenant_view(Role.VIEWER)
@require_GET
def kv_entry(request: TenantRequest, agent: str, ns: str) -> HttpResponse:
    found = agent_or_404(request, agent)
    key = key_param(request)
    context = _entry_context(request, found, ns, key, _entry_or_404(found, ns, key))
    return render_page(request, "kv/entry.html", context, partial="entry-panel")


def _parse_value(draft: str, *, key: str, namespace: str, limits: Limits) -> str:
    """The draft as canonical JSON text, validated exactly as an API `set` would be."""
    try:
        value = loads_strict(draft.encode("utf-8"))
    except KvError as exc:
        # The shared parser speaks of a request body; here the person typed a value.
        raise KvError(exc.code, exc.message.replace("The body", "The value", 1)) from exc
    call = validate_call({"action": "set", "key": key, "value": value, "namespace": namespace}, limits)
    assert call.value is not None
    return call.value


@tenant_view(Role.REVIEWER)
@require_http_methods(["GET", "POST"])
def kv_entry_edit(request: TenantRequest, agent: str, ns: str) -> HttpResponse:
    """GET: the editor. POST: save with If-Match on the version the editor was loaded at."""
    found = agent_or_404(request, agent)
    key = key_param(request)
    if request.method == "GET":
        entry = _entry_or_404(found, ns, key)
        context = _entry_context(
            request, found, ns, key, entry, editing=True, draft=pretty(entry.value), form_version=entry.version,
        )
        return render_page(request, "kv/entry.html", context, partial="entry-panel")

    posted = EntryEditForm.read(request.POST)
    draft, loaded_at = posted["value"], posted["version"]
    editor = {"editing": True, "draft": draft, "form_version": loaded_at}
    if loaded_at is None:
        context = _entry_context(request, found, ns, key, kv_get(agent=found, namespace=ns, key=key), **editor,
                                 error="The form lost the version it was loaded at; reload the page.")
        return render_page(request, "kv/entry.html", context, partial="entry-panel")
    limits = limits_for(request.tenant)
    try:
        value = _parse_value(draft, key=key, namespace=ns, limits=limits)
        entry, _ = kv_set(
            agent=found, limits=limits, namespace=ns, key=key, value=value,
            actor=actor_of(request), precondition=Precondition(versions=frozenset({loaded_at})),
        )
    except PreconditionMismatch:
        return _stale(request, found, ns, key, draft=draft, what="Your edit was not saved")
    except KvError as exc:
        context = _entry_context(request, found, ns, key, kv_get(agent=found, namespace=ns, key=key),
                                 **editor, error=exc.message)
        return render_page(request, "kv/entry.html", context, partial="entry-panel")
    context = _entry_context(request, found, ns, key, entry, notice=f"Saved version {entry.version}.")
    return render_page(request, "kv/entry.html", context, partial="entry-panel")


def _stale(request: TenantRequest, agent: Agent, namespace: str, key: str, *, draft: str | None, what: str) -> HttpResponse:
    """Someone else wrote first: show what is stored now; nothing of ours was written."""
    current = kv_get(agent=agent, namespace=namespace, key=key)
    if current is None:
        notice = f"Someone else deleted this key. {what}."
        context = _entry_context(request, agent, namespace, key, None, notice=notice, notice_kind="error")
        return render_page(request, "kv/entry.html", context, partial="entry-panel")
    notice = f"Someone else changed this key; it is now at version {current.version}. {what}."
    extra: dict[str, Any] = {"notice": notice, "notice_kind": "error", "conflict": True}
    if draft is not None:
        # The draft stays, now based on the current version: saving again is a deliberate choice.
        extra.update(editing=True, draft=draft, form_version=current.version)
    context = _entry_context(request, agent, namespace, key, current, **extra)
    return render_page(request, "kv/entry.html", context, partial="entry-panel")


@tenant_view(Role.REVIEWER)
@require_POST
def kv_entry_delete(request: TenantRequest, agent: str, ns: str) -> HttpResponse:
    found = agent_or_404(request, agent)
    key = key_param(request)
    version = EntryDeleteForm.read(request.POST)["version"]
    if version is None:
        context = _entry_context(request, found, ns, key, kv_get(agent=found, namespace=ns, key=key),
                                 notice="The form lost the key's version; reload the page.", notice_kind="error")
        return render_page(request, "kv/entry.html", context, partial="entry-panel")
    try:
        kv_delete(agent=found, namespace=ns, key=key, actor=actor_of(request),
                  precondition=Precondition(versions=frozenset({version})))
    except PreconditionMismatch:
        return _stale(request, found, ns, key, draft=None, what="The key was not deleted")
    if not wants_partial(request):
        messages.success(request, "Key deleted.")
        return redirect(_namespace_url(request, found, ns))
    context = _entry_context(request, found, ns, key, None, notice="Key deleted.", deleted=True)
    return render_page(request, "kv/entry.html", context, partial="entry-panel")


