"""Playwright driving Debian's chromium against pytest-django's live server."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connections

CHROMIUM = os.environ.get("MEMORYHUB_CHROMIUM", "/usr/bin/chromium")
# How long an action waits for its element, and an `expect()` for its condition. Playwright's
# own defaults differ (30 s for actions, 5 s for assertions); CI runs the two suites side by
# side on two cores, where a page that the live server answers in a second can take several,
# so both wait the same ten seconds (README, "`make test`").
WAIT_MS = 10_000
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        pytest.skip(f"{CHROMIUM} not found: install Debian's chromium (apt-get install -y chromium)")
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=WAIT_MS)

    # Django keeps this thread's database connections in thread-local storage while no event
    # loop runs in the thread, and in a context variable while one does; the sync Playwright
    # API runs its loop in this thread from start to stop. A connection opened on one side of
    # either switch is invisible on the other, so nothing would close it and PostgreSQL would
    # refuse to drop the test database at the end ("being accessed by other users"). Both
    # switches therefore happen with no connection open.
    connections.close_all()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield browser
        browser.close()
        connections.close_all()


@pytest.fixture
def page(browser: object, live_server: object) -> Iterator[object]:
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1366, "height": 800})  # type: ignore[attr-defined]
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    yield page
    context.close()


@pytest.fixture
def screenshot(page: object, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    ARTIFACTS.mkdir(exist_ok=True)

    def take(name: str) -> Path:
        path = ARTIFACTS / f"{request.node.name}-{name}.png"
        page.screenshot(path=str(path), full_page=True)  # type: ignore[attr-defined]
        return path

    return take
