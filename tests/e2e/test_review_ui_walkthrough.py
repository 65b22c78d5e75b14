"""The walkthrough of docs/review-ui.md, step by step in Chromium: each step checks what the
page says and saves a screenshot of its interesting part to test-artifacts/review-ui/
(`<name>.png` as taken, `<name>-small.png` shrunk for the docs: at most 960 px wide and 256
colours, so that a committed copy stays small; docs/img/review-ui/ holds those copies).

The tenant is Acme after a morning of agent work (pending memory writes, decided ones with a
reason, a hand-edited MEMORY.md, linked, quarantined and purged atoms), seen by alice (admin).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from rest_framework.test import APIClient

from tenants.memory.files import files_sync
from tenants.models import MemoryVolume, Tenant
from tenants.services.keys import apikey_create
from tests.atoms.ui.review_helpers import FLAGGED, purge, write
from tests.conftest import TEST_ACTOR
from tests.e2e.conftest import ARTIFACTS, WAIT_MS
from tests.e2e.helpers import log_in

pytestmark = pytest.mark.browser

SHOTS = ARTIFACTS / "review-ui"
DOC_WIDTH = 960


@dataclass
class Morning:
    linked: str  # an atom with links in and out
    quarantined: str
    purgeable: str


def key_client(tenant: Tenant, kind: str, name: str) -> APIClient:
    _, raw = apikey_create(tenant=tenant, kind=kind, actor=TEST_ACTOR, name=name)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def ok(answer: Any, status: int = 200) -> dict[str, Any]:
    assert answer.status_code == status, answer.content
    return answer.json()


def build_morning(tenant: Tenant, root: Path) -> Morning:
    """What a reviewer finds: agent writes waiting in the queue, two decided, a hand edit of
    MEMORY.md, linked atoms, one quarantined, one purged."""
    agent = key_client(tenant, "agent", "support-bot")
    desk = key_client(tenant, "reviewer", "review-desk")
    for text in ("Support answers in English or German", "Tickets are triaged within four hours"):
        ok(desk.post("/api/v1/memory/memory", {"action": "add", "content": text}, format="json"))
    ok(key_client(tenant, "admin", "ops-admin").patch("/api/v1/tenant", {"approval": "all"}, format="json"))
    ok(agent.post("/api/v1/agents/support-bot/memory", {"action": "set", "namespace": "preferences", "key": "tone",
                                                       "value": {"style": "brief"}}, format="json"))
    staged = [ok(agent.post("/api/v1/memory/memory", {"action": "add", "content": text}, format="json"), 202)
              ["pending_id"] for text in (
                  "Support replies are signed with the team name", "Use tabs, not spaces",
                  "Deploys go through the release train on Thursdays",
                  "Customer acme-corp prefers invoices as PDF attachments",
                  "The on-call rota lives in the ops-handbook repository")]
    ok(desk.post(f"/api/v1/pending/{staged[0]}/approve", {}, format="json"))
    ok(desk.post(f"/api/v1/pending/{staged[1]}/reject", {"reason": "House style says spaces"}, format="json"))

    volume = MemoryVolume.get_or_create_for(tenant)
    files_sync(volume.pk)
    memory_md = root / tenant.slug / "memories" / "MEMORY.md"
    memory_md.write_bytes(memory_md.read_bytes() + "\n§\nStaging cluster notes, written by hand\n".encode())
    assert files_sync(volume.pk)["memory"] == "drift_detected"

    condition = write(tenant, "Only on weekdays.")
    source = write(tenant, "Alice takes her coffee black, no sugar, at 8am.")
    linked = write(tenant, "Alice takes her coffee black.", links=[
        {"role": "condition", "atom": condition, "required": True},
        {"role": "about", "atom": write(tenant, "Alice")},
        {"role": "see-also", "atom": write(tenant, "Office coffee machine on the third floor")}],
        sources=[{"atom": source, "start": 0, "end": 28}])
    write(tenant, "Breakfast plan for Alice", links=[{"role": "uses", "atom": linked, "required": True}])
    quarantined = write(tenant, FLAGGED)
    purgeable = write(tenant, "A note nobody needs any more", links=[{"role": "about", "atom": condition}])
    purge(tenant, write(tenant, "An outdated note"))
    return Morning(linked, quarantined, purgeable)


def shrink(path: Path) -> Path:
    """A copy for the docs: downscaled to DOC_WIDTH and reduced to a 256-colour palette."""
    from PIL import Image

    small = path.with_name(f"{path.stem}-small.png")
    with Image.open(path) as image:
        image = image.convert("RGB")
        if image.width > DOC_WIDTH:
            image = image.resize((DOC_WIDTH, round(image.height * DOC_WIDTH / image.width)), Image.Resampling.LANCZOS)
        image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(small, optimize=True)
    return small


def shoot(target: Any, name: str, **options: Any) -> None:
    """Screenshot a page (its window, or `clip`) or one element, then its small copy."""
    path = SHOTS / f"{name}.png"
    target.screenshot(path=str(path), **options)
    shrink(path)


def top(tab: Any, height: int = 800) -> dict[str, int]:
    """The top of the page, as wide as the window."""
    return {"x": 0, "y": 0, "width": tab.viewport_size["width"], "height": height}


def test_the_walkthrough_of_the_review_ui(alice, bob, carol, acme, browser, live_server, settings, tmp_path):
    settings.MEMORYHUB_VOLUME_ROOT = tmp_path / "volumes"
    data = build_morning(acme, settings.MEMORYHUB_VOLUME_ROOT)
    SHOTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1366, "height": 800})
    tab = context.new_page()
    tab.set_default_timeout(WAIT_MS)
    log_in(tab, "alice")

    # 1. The dashboard: the hand edit is a notice; what changed today links to the items.
    expect(tab.get_by_test_id("drift-notice-memory")).to_contain_text("MEMORY.md on disk differs")
    shoot(tab, "dashboard", clip=top(tab))
    today = tab.get_by_test_id("today")
    expect(today.get_by_test_id("today-memory-rejections")).to_contain_text("1")
    shoot(today, "today")

    # 2. The pending queue: compact items, a selection, the keys and their hint.
    tab.goto("/t/acme/memory/pending/")
    expect(tab.get_by_test_id("queue-hint")).to_have_text("j/k move · a approve · r reject")
    tab.locator("input[name=ids]").first.check()
    tab.keyboard.press("j")
    shoot(tab, "pending", clip=top(tab, 720))

    # 3. Decided items with who decided and why.
    tab.get_by_test_id("tab-decided").click()
    expect(tab.locator("main")).to_contain_text("House style says spaces")
    shoot(tab, "decided", clip=top(tab, 520))

    # 4. Quarantine: reject malicious text outright, with a reason.
    tab.goto("/t/acme/atoms/quarantine/")
    card = tab.get_by_test_id(f"quarantined-{data.quarantined}")
    card.get_by_text("Reject…").click()
    card.get_by_label("Reason").fill("Prompt injection aimed at the system prompt")
    shoot(card, "quarantine-reject")
    card.get_by_role("button", name=re.compile(r"^Reject ")).click()
    expect(tab.get_by_test_id("quarantine-notice")).to_contain_text("Rejected and retired.")

    # 5. The atom page: text, who wrote it, the link picture; then the picker of the edit form.
    tab.goto(f"/t/acme/atoms/{data.linked}/")
    expect(tab.get_by_test_id("atom-graph")).to_be_visible()
    shoot(tab, "atom", clip=top(tab, 640))
    tab.get_by_text("Edit…").click()
    tab.get_by_label("Find the target by its text").press_sequentially("coffee mach", delay=40)
    results = tab.get_by_test_id("picker-results").get_by_role("button")
    results.first.wait_for()
    expect(results.first).to_contain_text("Office coffee machine")
    shoot(tab.locator("details.edit"), "picker")

    # 6. Purge: the dry run an admin reaches from the atom page's link.
    tab.goto(f"/t/acme/atoms/{data.purgeable}/")
    tab.get_by_test_id("purge-link").click()
    expect(tab.get_by_role("heading", name="Dry run: what would be erased")).to_be_visible()
    shoot(tab, "purge", clip=top(tab, 640))

    # 7. The audit log reads as sentences, the rejection above among them.
    tab.goto("/t/acme/audit/")
    expect(tab.get_by_test_id("audit-sentence").first).to_contain_text("alice rejected")
    shoot(tab, "audit", clip=top(tab, 560))

    # 8. For admins: Members and Settings.
    tab.get_by_role("link", name="Members").click()
    expect(tab.get_by_role("heading", name="Members", exact=True)).to_be_visible()
    shoot(tab, "members", clip=top(tab, 720))
    tab.get_by_role("navigation", name="Main").get_by_role("link", name="Settings").click()
    expect(tab.get_by_role("heading", name="Tenant settings")).to_be_visible()
    shoot(tab, "settings", clip=top(tab, 640))

    # 9. A phone: the pending queue at 390 px fits the screen.
    tab.set_viewport_size({"width": 390, "height": 800})
    tab.goto("/t/acme/memory/pending/")
    assert tab.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    shoot(tab, "phone-pending", clip=top(tab, 780))
    context.close()

    for name in ("dashboard", "today", "pending", "decided", "quarantine-reject", "atom", "picker", "purge",
                 "audit", "members", "settings", "phone-pending"):
        assert (SHOTS / f"{name}-small.png").stat().st_size < 150_000, name
