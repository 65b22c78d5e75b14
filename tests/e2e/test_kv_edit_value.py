from __future__ import annotations

import json

import pytest

from tenants.kv.rules import canonical
from tenants.kv.store import agent_ensure, kv_get, kv_set, limits_for
from tests.conftest import PASSWORD, TEST_ACTOR

pytestmark = pytest.mark.browser


def test_a_reviewer_edits_a_value_and_sees_the_new_version(bob, acme, page, screenshot):
    agent, _ = agent_ensure(tenant=acme, slug="release-notes", actor=TEST_ACTOR)
    kv_set(agent=agent, limits=limits_for(acme), namespace="default", key="house-style",
           value=canonical({"rules": ["Lead with impact"]}), actor=TEST_ACTOR)

    page.goto("/login/")
    page.get_by_label("Username").fill("bob")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/t/acme/")

    page.get_by_role("link", name="Agents").click()
    page.get_by_role("link", name="release-notes").click()
    page.get_by_role("link", name="default").click()
    page.get_by_role("link", name="house-style").click()
    page.wait_for_url("**/entry?key=house-style")
    assert page.get_by_test_id("entry-version").inner_text() == "1"
    assert json.loads(page.get_by_test_id("entry-value").inner_text()) == {"rules": ["Lead with impact"]}

    page.get_by_role("link", name="Edit value").click()
    editor = page.get_by_label("JSON value")
    editor.fill('{"rules": ["Lead with impact", "Use active voice"]}')
    screenshot("editing")
    page.get_by_role("button", name="Save").click()

    notice = page.get_by_test_id("entry-notice")
    notice.wait_for()
    assert notice.inner_text() == "Saved version 2."
    assert page.url.endswith("/entry?key=house-style")  # htmx swapped the panel in place
    assert page.get_by_test_id("entry-version").inner_text() == "2"
    assert page.get_by_test_id("updated-by").inner_text() == "bob"
    shown = json.loads(page.get_by_test_id("entry-value").inner_text())
    assert shown == {"rules": ["Lead with impact", "Use active voice"]}
    screenshot("saved")

    entry = kv_get(agent=agent, namespace="default", key="house-style")
    assert entry.version == 2 and entry.value == '{"rules":["Lead with impact","Use active voice"]}'
    page.reload()
    assert page.get_by_test_id("entry-version").inner_text() == "2"
