"""The agents list and one agent's page (namespaces and runs)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tenants.models import KvRun

HX = {"HX-Request": "true"}


@pytest.mark.parametrize("who", ["alice", "bob", "carol"])
def test_every_member_sees_the_agents_with_their_counts(request, client, support, make_agent, acme, put, who):
    put(support, "a", 1)
    put(support, "b", 2)
    put(support, "c", 3, namespace="per-user")
    make_agent(acme, "idle")
    client.force_login(request.getfixturevalue(who))
    response = client.get("/t/acme/agents/")
    assert response.status_code == 200
    content = response.content.decode()
    assert 'href="/t/acme/agents/support/"' in content and 'href="/t/acme/agents/idle/"' in content
    rows = response.context_data["agents"]
    assert [(r.agent.slug, r.namespaces, r.keys) for r in rows] == [("idle", 0, 0), ("support", 2, 3)]


@pytest.mark.parametrize("who", ["alice", "bob", "carol"])
def test_the_nav_links_to_agents_for_every_member(request, client, who):
    client.force_login(request.getfixturevalue(who))
    assert b'<a href="/t/acme/agents/">Agents</a>' in client.get("/t/acme/").content


def test_it_lists_only_the_current_tenants_agents(alice, dave, client, support, make_agent, globex, put):
    foreign = make_agent(globex, "globex-only")
    put(foreign, "secret", "globex data")
    client.force_login(alice)
    content = client.get("/t/acme/agents/").content.decode()
    assert "support" in content and "globex-only" not in content


def test_non_members_get_404_and_visitors_are_sent_to_login(dave, client, support):
    client.force_login(dave)
    assert client.get("/t/acme/agents/").status_code == 404
    assert client.get("/t/acme/agents/support/").status_code == 404
    client.logout()
    response = client.get("/t/acme/agents/")
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_another_tenants_agent_slug_is_404(alice, client, make_agent, globex):
    make_agent(globex, "globex-only")
    client.force_login(alice)
    assert client.get("/t/acme/agents/globex-only/").status_code == 404
    assert client.get("/t/globex/agents/globex-only/").status_code == 404


def test_the_same_slug_in_two_tenants_shows_each_tenants_own_store(erin, client, support, make_agent, globex, put):
    put(support, "acme-key", 1)
    put(make_agent(globex, "support"), "globex-key", 1, namespace="globex-ns")
    client.force_login(erin)
    acme_page = client.get("/t/acme/agents/support/").content.decode()
    globex_page = client.get("/t/globex/agents/support/").content.decode()
    assert "/ns/default/" in acme_page and "globex-ns" not in acme_page
    assert "globex-ns" in globex_page and "/ns/default/" not in globex_page


def test_an_agent_page_shows_namespaces_with_keys_bytes_and_update_time(carol, client, support, put):
    put(support, "k", "v")
    later = put(support, "x", {"b": 1}, namespace="notes")
    client.force_login(carol)
    response = client.get("/t/acme/agents/support/")
    assert response.status_code == 200
    summaries = [(s.namespace, s.keys, s.bytes) for s in response.context_data["namespaces"]]
    assert summaries == [("default", 1, 4), ("notes", 1, 8)]
    content = response.content.decode()
    assert 'href="/t/acme/agents/support/ns/notes/"' in content
    assert later.updated_at.isoformat() in content


def test_an_agent_page_shows_runs_newest_first(carol, client, support):
    old = KvRun.objects.create(agent=support, mode="record", frontier=3)
    new = KvRun.objects.create(agent=support, mode="verify", lax=True, closed_at=timezone.now())
    KvRun.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=1))
    client.force_login(carol)
    response = client.get("/t/acme/agents/support/")
    content = response.content.decode()
    assert content.index(new.run_id) < content.index(old.run_id)
    assert f'href="/t/acme/agents/support/runs/{new.run_id}/"' in content
    runs = list(response.context_data["runs"])
    assert [(r.mode, r.lax, r.status, r.frontier) for r in runs] == [("verify", True, "closed", 0), ("record", False, "open", 3)]


def test_runs_are_paged_fifty_at_a_time(carol, client, support):
    KvRun.objects.bulk_create([KvRun(agent=support) for _ in range(51)])
    client.force_login(carol)
    first = client.get("/t/acme/agents/support/")
    assert len(first.context_data["runs"]) == 50 and b"Older runs" in first.content
    second = client.get("/t/acme/agents/support/?page=2", headers={**HX, "HX-Target": "run-list"})
    assert len(second.context_data["runs"]) == 1
    assert b'id="run-list"' in second.content and b"Namespaces" not in second.content and b"<html" not in second.content
    # Both pager links put their page in the address bar, so reload and back keep it.
    assert b'hx-get="?page=2" hx-target="#run-list" hx-swap="outerHTML" hx-push-url="true"' in first.content
    assert b'hx-get="?page=1" hx-target="#run-list" hx-swap="outerHTML" hx-push-url="true"' in second.content


def test_htmx_requests_get_the_named_partials(alice, client, support, put):
    put(support, "k", 1)
    client.force_login(alice)
    agents = client.get("/t/acme/agents/", headers=HX)
    assert b'id="agent-list"' in agents.content and b"<html" not in agents.content
    panel = client.get("/t/acme/agents/support/", headers=HX)
    assert b'id="agent-panel"' in panel.content and b"<html" not in panel.content
    restore = client.get("/t/acme/agents/support/", headers={**HX, "HX-History-Restore-Request": "true"})
    assert b"<html" in restore.content


def test_agent_names_are_escaped(alice, client, acme, make_agent):
    agent = make_agent(acme, "named")
    agent.name = "<script>alert(1)</script>"
    agent.save()
    client.force_login(alice)
    for url in ["/t/acme/agents/", "/t/acme/agents/named/"]:
        content = client.get(url).content
        assert b"<script>alert(1)" not in content and b"&lt;script&gt;alert(1)" in content
