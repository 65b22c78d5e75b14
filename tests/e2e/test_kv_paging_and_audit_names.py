"""KV key pages live in the address bar; the audit log reads as sentences with names."""

from __future__ import annotations

import pytest

from memoryhub.actors import Actor
from tenants.kv.rules import canonical
from tenants.kv.store import agent_ensure, kv_set, limits_for
from tests.conftest import TEST_ACTOR
from tests.e2e.helpers import log_in

pytestmark = pytest.mark.browser


def test_the_second_key_page_survives_reload_and_back(carol, acme, page, screenshot):
    agent, _ = agent_ensure(tenant=acme, slug="support", actor=TEST_ACTOR)
    for i in range(51):
        kv_set(agent=agent, limits=limits_for(acme), namespace="default", key=f"k{i:03}", value=canonical(i),
               actor=TEST_ACTOR)
    log_in(page, "carol")
    page.goto("/t/acme/agents/support/ns/default/")
    rows = page.get_by_test_id("key-row")
    assert rows.count() == 50
    page.get_by_test_id("next-page").click()
    page.wait_for_url("**cursor=**")  # htmx swapped the list and pushed the page's address
    assert rows.count() == 1 and "k050" in rows.first.inner_text()
    page.reload()
    assert rows.count() == 1 and "k050" in rows.first.inner_text()
    screenshot("second-page")
    page.go_back()
    page.wait_for_url("**/ns/default/")
    assert rows.count() == 50


def test_the_audit_log_names_the_key_and_the_person(alice, carol, acme, make_key, page, screenshot):
    from tenants.services.keys import apikey_revoke

    key, _ = make_key(acme, name="support-bot", agents=["support"])
    agent, _ = agent_ensure(tenant=acme, slug="support", actor=TEST_ACTOR)
    kv_set(agent=agent, limits=limits_for(acme), namespace="default", key="k", value=canonical(1),
           actor=Actor.for_key(key))
    apikey_revoke(key=key, actor=Actor.for_user(alice))
    log_in(page, "carol")
    page.goto("/t/acme/audit/")
    sentences = page.get_by_test_id("audit-sentence").all_inner_texts()
    assert sentences[:2] == ["alice revoked key support-bot (support)",
                             "key support-bot (support) set a KV value of agent support"]
    title = page.get_by_test_id("audit-sentence").nth(1).locator(".actor").get_attribute("title")
    assert title == f"key:{key.public_id} (revoked)"
    screenshot("audit")
