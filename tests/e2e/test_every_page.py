"""Every page of the review UI, with real data, at 1366 and 390 px wide: a full-page screenshot
of each in test-artifacts/pages/<name>-<width>.png, no horizontal overflow (at either width), no
console error (CSP violations are console errors) and no failed request.

The page table is checked against Django's resolver: a tenant URL that is neither a page here
nor in EXCLUDED fails `test_every_tenant_page_is_in_the_table` (docs/operations.md "Small screens").
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from tenants.kv.rules import canonical
from tenants.kv.store import agent_ensure, kv_set, limits_for
from tenants.memory.files import files_sync
from tenants.models import MemoryVolume, Tenant
from tests.atoms.ui.review_helpers import FLAGGED, purge, write
from tests.conftest import TEST_ACTOR
from tests.e2e.conftest import ARTIFACTS, WAIT_MS
from tests.e2e.helpers import log_in
from tests.security.routes import all_routes
from tests.security.world import AGENT, ENTRY_KEY, NAMESPACE, World, build_world

WIDTHS = (1366, 390)
SHOTS = ARTIFACTS / "pages"


@dataclass
class Data:
    """The tenant's world plus the atoms the atom pages show."""

    world: World
    linked: str = ""  # an atom with links in and out, and a cited source
    quarantined: str = ""
    purgeable: str = ""  # the purge preview's atom
    purged: str = ""


@dataclass(frozen=True)
class Page:
    name: str  # the screenshot's name
    url_name: str
    kwargs: Callable[[Data], dict[str, str]] = lambda d: {}
    query: str = ""
    status: int = 200  # what the page answers (a purged atom's address is 410 Gone)


def _slug(d: Data) -> dict[str, str]:
    return {"slug": d.world.slug}


def _agent(d: Data) -> dict[str, str]:
    return _slug(d) | {"agent": AGENT}


def _ns(d: Data) -> dict[str, str]:
    return _agent(d) | {"ns": NAMESPACE}


# Every GET page under /t/<slug>/, by URL name; a name may be visited with several objects.
PAGES: list[Page] = [
    Page("dashboard", "dashboard", _slug),
    Page("keys", "keys", _slug),
    Page("audit", "audit", _slug),
    Page("agents", "kv-agents", _slug),
    Page("agent", "kv-agent", _agent),
    Page("run", "kv-run", lambda d: _agent(d) | {"run_id": d.world.run_id}),
    Page("namespace", "kv-namespace", _ns),
    Page("entry", "kv-entry", _ns, f"key={ENTRY_KEY}"),
    Page("entry-edit", "kv-entry-edit", _ns, f"key={ENTRY_KEY}"),
    Page("memory", "memory", _slug),
    Page("memory-edit", "memory-edit", lambda d: _slug(d) | {"target": "memory"}, "index=0&version={version}"),
    Page("memory-history", "memory-history", lambda d: _slug(d) | {"target": "memory"}),
    Page("pending", "memory-pending", _slug),
    Page("pending-decided", "memory-pending", _slug, "show=decided"),
    Page("findings", "memory-findings", _slug),
    Page("drift", "memory-drift", _slug),
    Page("memory-settings", "memory-settings", _slug),
    Page("atoms", "atoms", _slug),
    Page("quarantine", "atoms-quarantine", _slug),
    Page("playground", "atoms-playground", _slug),
    Page("atom", "atom-detail", lambda d: _slug(d) | {"atom_id": d.linked}),
    Page("atom-quarantined", "atom-detail", lambda d: _slug(d) | {"atom_id": d.quarantined}),
    Page("atom-purged", "atom-detail", lambda d: _slug(d) | {"atom_id": d.purged}, status=410),
    # The atom picker: a fragment for htmx, and a page of its own without JavaScript.
    Page("link-targets", "atom-link-targets", lambda d: _slug(d) | {"atom_id": d.linked}, "q=coffee"),
    Page("purge", "atoms-purge", lambda d: _slug(d) | {"atom_id": d.purgeable}),
    Page("purge-progress", "atoms-purge-progress", lambda d: _slug(d) | {"atom_id": d.purged}),
    Page("members", "members", _slug),
    Page("tenant-settings", "tenant-settings", _slug),
]

# Tenant URLs that are not pages: what each answers instead.
EXCLUDED: dict[str, str] = {
    # POST-only actions (they answer a partial or a redirect, never a page of their own).
    "key-revoke": "POST",
    "kv-namespace-clear": "POST",
    "kv-entry-delete": "POST",
    "memory-add": "POST",
    "memory-remove": "POST",
    "memory-restore": "POST",
    "memory-pending-approve-all": "POST",
    "memory-pending-approve": "POST",
    "memory-pending-reject": "POST",
    "memory-finding-remove": "POST",
    "memory-drift-import": "POST",
    "memory-drift-overwrite": "POST",
    "memory-secret-add": "POST",
    "memory-secrets-clear": "POST",
    "atom-approve": "POST",
    "atom-edit": "POST",
    "atom-retire": "POST",
    "atom-restore": "POST",
    "atoms-purge-resume": "POST",
    "atom-reject": "POST",
    "memory-pending-bulk": "POST",
    "member-role": "POST",
    "member-remove": "POST",
    # Nav badges: a fragment that htmx swaps into the navigation.
    "memory-badge": "badge fragment",
    "atoms-badge": "badge fragment",
    "memory-drift-marker": "the Drift tab's marker, a fragment",
}


def tenant_url_names() -> set[str]:
    return {route.name or route.template for route in all_routes() if route.template.startswith("t/")}


def test_every_tenant_page_is_in_the_table() -> None:
    known = {page.url_name for page in PAGES}
    missing = sorted(tenant_url_names() - known - set(EXCLUDED))
    assert not missing, f"tenant URLs neither visited nor excluded in {__name__}: {missing}"
    stale = sorted((known | set(EXCLUDED)) - tenant_url_names())
    assert not stale, f"entries for URL names that no longer exist: {stale}"


def build_data(tenant: Tenant, root: Path) -> Data:
    """A tenant as a reviewer finds it after a busy day: long agent, namespace and key names,
    a run journal, memory entries with pending writes and a finding, a hand-edited MEMORY.md,
    linked, quarantined and purged atoms."""
    data = Data(world=build_world(tenant))
    limits = limits_for(tenant)
    for slug in ("acme-corp-release-notes", "customer-support-triage"):
        agent, _ = agent_ensure(tenant=tenant, slug=slug, actor=TEST_ACTOR)
        for key in ("house-style-guide-for-release-notes", "onboarding-checklist-v2", "tone"):
            kv_set(agent=agent, limits=limits, namespace="customer-facing-defaults", key=key,
                   value=canonical({"rules": ["Lead with impact", "Use active voice"], "owner": slug}),
                   actor=TEST_ACTOR)
    writer, reviewer = data.world.client("agent"), data.world.client("reviewer")
    staged = []
    for text in ("Deploys go through the release-train-2026-q3 pipeline on Thursdays",
                 "Customer acme-corp prefers invoices as PDF attachments",
                 "The on-call rota lives in the ops-handbook repository", "Use tabs, not spaces"):
        answer = writer.post("/api/v1/memory/memory", {"action": "add", "content": text}, format="json")
        assert answer.status_code == 202, answer.content
        staged.append(answer.json()["pending_id"])
    # Two decided items for the Decided tab: one approved, one rejected with its reason.
    assert reviewer.post(f"/api/v1/pending/{staged[2]}/approve", {}, format="json").status_code == 200
    answer = reviewer.post(f"/api/v1/pending/{staged[3]}/reject", {"reason": "House style says spaces"}, format="json")
    assert answer.status_code == 200, answer.content

    volume = MemoryVolume.get_or_create_for(tenant)
    files_sync(volume.pk)
    memory_md = root / tenant.slug / "memories" / "MEMORY.md"
    memory_md.write_bytes(memory_md.read_bytes() + "\n§\nHand-written note about the staging cluster\n".encode())
    assert files_sync(volume.pk)["memory"] == "drift_detected"

    condition = write(tenant, "Only on weekdays.")
    source = write(tenant, "Alice takes her coffee black, no sugar, at 8am, at the acme-corp-headquarters.")
    data.linked = write(tenant, "Alice takes her coffee black.", links=[
        {"role": "condition", "atom": condition, "required": True},
        {"role": "about", "atom": write(tenant, "Alice")},
        {"role": "see-also", "atom": write(tenant, "Office coffee machine on the third floor")}],
        sources=[{"atom": source, "start": 0, "end": 28}])
    write(tenant, "Breakfast plan for Alice", links=[{"role": "uses", "atom": data.linked, "required": True}])
    data.quarantined = write(tenant, FLAGGED)
    data.purgeable = write(tenant, "A note nobody needs any more", links=[{"role": "about", "atom": condition}])
    data.purged = write(tenant, "A note that was purged")
    purge(tenant, data.purged)
    return data


def url_of(page: Page, data: Data) -> str:
    query = page.query.format(version=MemoryVolume.get_or_create_for(data.world.tenant).version("memory"))
    return reverse(page.url_name, kwargs=page.kwargs(data)) + (f"?{query}" if query else "")


class Watch:
    """Console errors (CSP violations among them), page errors and failed requests."""

    def __init__(self, tab: Any) -> None:
        self.problems: list[str] = []
        tab.on("console", self._console)
        tab.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        tab.on("requestfailed", self._failed)
        tab.on("response", self._response)
        self.expected: tuple[str, int] = ("", 200)  # the page being loaded and its own status

    def expect(self, url: str, status: int) -> None:
        self.expected = (url, status)

    def _failed(self, request: Any) -> None:
        # ERR_ABORTED: a poll (the dashboard's every 5 s) cut short by the next page's load.
        if request.failure != "net::ERR_ABORTED":
            self.problems.append(f"failed: {request.url} {request.failure}")

    def _as_expected(self, url: str, status: int) -> bool:
        # The favicon is no page's business until one is served.
        return url.endswith("/favicon.ico") or (url.endswith(self.expected[0]) and status == self.expected[1])

    def _console(self, message: Any) -> None:
        url = message.location.get("url", "")
        if message.type == "error" and not (
                "Failed to load resource" in message.text and self._as_expected(url, self.expected[1])):
            self.problems.append(f"console: {message.text} ({url})")

    def _response(self, response: Any) -> None:
        if response.status >= 400 and not self._as_expected(response.url, response.status):
            self.problems.append(f"HTTP {response.status}: {response.url}")

    def take(self) -> list[str]:
        found, self.problems = self.problems, []
        return found


def overflow(tab: Any) -> int:
    """How many pixels the document is wider than the window (0: it fits)."""
    return tab.evaluate("document.documentElement.scrollWidth - window.innerWidth")


# The innermost elements that stick out of the window, named like a CSS selector, so that a
# failure says what to fix.
CULPRITS = """() => {
  const clipped = (el) => {
    // An absolutely placed box escapes the scrolling of ancestors that do not contain it.
    if (["absolute", "fixed"].includes(getComputedStyle(el).position)) return false;
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== "visible") return true;
    }
    return false;
  };
  const out = [...document.querySelectorAll("body *")].filter((el) => {
    const box = el.getBoundingClientRect();
    return box.right > window.innerWidth + 1 && !clipped(el) &&
      ![...el.children].some((c) => c.getBoundingClientRect().right > window.innerWidth + 1);
  });
  return out.slice(0, 4).map((el) => el.tagName.toLowerCase() + (el.className && typeof el.className === "string"
    ? "." + el.className.trim().split(/\\s+/).join(".") : "") + ` (${Math.round(el.getBoundingClientRect().right)} px)`);
}"""


def visit(tab: Any, watch: Watch, name: str, url: str, width: int, status: int = 200) -> list[str]:
    """Load one page, screenshot it and say what is wrong with it."""
    watch.expect(url, status)
    response = tab.goto(url)
    tab.wait_for_load_state("networkidle")
    tab.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
    answered = response and response.status
    problems = [] if answered == status else [f"answered {answered}, not {status}"]
    if (extra := overflow(tab)) > 0:
        problems.append(f"{extra} px wider than the window: {', '.join(tab.evaluate(CULPRITS))}")
    return [f"{name} at {width} ({url}): {p}" for p in [*problems, *watch.take()]]


@pytest.mark.browser
def test_every_page_renders_cleanly_at_desktop_and_phone_widths(alice, bob, carol, acme, browser, live_server, settings,
                                                                tmp_path):
    settings.MEMORYHUB_VOLUME_ROOT = tmp_path / "volumes"
    data = build_data(acme, settings.MEMORYHUB_VOLUME_ROOT)
    urls = [(page.name, url_of(page, data), page.status) for page in PAGES]
    SHOTS.mkdir(parents=True, exist_ok=True)
    started, problems = time.monotonic(), []
    for width in WIDTHS:
        # One context per width: one login serves every page.
        context = browser.new_context(base_url=live_server.url, viewport={"width": width, "height": 800})
        tab = context.new_page()
        tab.set_default_timeout(WAIT_MS)
        watch = Watch(tab)
        problems += visit(tab, watch, "login", "/login/", width)
        log_in(tab, "alice")
        for name, url, status in urls:
            problems += visit(tab, watch, name, url, width, status)
        context.close()
    print(f"{len(urls)} pages at {len(WIDTHS)} widths in {time.monotonic() - started:.0f} s")
    assert not problems, "\n".join(problems)
