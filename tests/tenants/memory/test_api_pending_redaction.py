"""The pending queue keeps no secret: staged writes are redacted before they are stored,
stay redacted after approval, and agent keys see only their own items' content
(docs/memory-files.md "Redaction")."""

from __future__ import annotations

import json

import pytest

from memoryhub.redaction import REDACTED
from tenants.models import MemorySession, MemoryVersion, PendingWrite
from tests.conftest import error_of
from tests.tenants.memory.helpers import Mem, set_volume

TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
NOTE = f"Deploy token is {TOKEN} for CI."
STORED = f"Deploy token is {REDACTED} for CI."
TENANT_SECRET = "opensesame-42"


@pytest.fixture
def agent(acme, make_key, client_for) -> Mem:
    set_volume(acme, approval="all")
    return Mem(client_for(make_key(acme, "agent")[1]))


@pytest.fixture
def other_agent(acme, make_key, client_for) -> Mem:
    return Mem(client_for(make_key(acme, "agent", name="other bot")[1]))


def stored_text() -> str:
    """Every memory-file row of the database, as one string to search for secrets."""
    rows = [list(PendingWrite.objects.values()), list(MemoryVersion.objects.values()),
            list(MemorySession.objects.values("snapshot"))]
    return json.dumps(rows, default=str)


def pending_items(mem: Mem, query: str = "") -> list[dict]:
    response = mem.client.get(f"/api/v1/pending{query}")
    assert response.status_code == 200, response.content
    return response.json()["items"]


def test_an_agents_credential_is_redacted_before_it_is_staged(agent, reviewer_mem):
    response = agent.add("memory", NOTE)
    assert response.status_code == 202
    item = PendingWrite.objects.get()
    assert item.payload == {"action": "add", "content": STORED}
    assert item.summary == f"add: {STORED}"
    assert TOKEN not in stored_text()
    [listed] = pending_items(reviewer_mem)
    assert listed["payload"] == {"action": "add", "content": STORED} and TOKEN not in json.dumps(listed)


def test_the_approved_item_and_its_version_stay_redacted(agent, reviewer_mem):
    pending_id = agent.add("memory", NOTE).json()["pending_id"]
    assert reviewer_mem.client.post(f"/api/v1/pending/{pending_id}/approve", {}, format="json").status_code == 200
    [approved] = pending_items(agent, "?status=approved")
    assert approved["payload"]["content"] == STORED
    assert agent.entries("memory") == [STORED]
    assert agent.client.post("/api/v1/sessions", {}, format="json").status_code == 201
    assert TOKEN not in stored_text()


def test_a_tenant_secret_is_redacted_before_it_is_staged(acme, agent, reviewer_mem):
    set_volume(acme, secrets=[TENANT_SECRET])
    assert agent.add("user", f"The vault password is {TENANT_SECRET}").status_code == 202
    [listed] = pending_items(reviewer_mem)
    assert listed["payload"]["content"] == f"The vault password is {REDACTED}"
    assert TENANT_SECRET not in stored_text()


def test_a_staged_batch_is_redacted_step_by_step(agent):
    assert agent.batch("memory", [{"action": "add", "content": "plain fact"},
                                  {"action": "add", "content": f"key sk_live_{'a' * 24}"}]).status_code == 202
    operations = PendingWrite.objects.get().payload["operations"]
    assert operations == [{"action": "add", "content": "plain fact"}, {"action": "add", "content": f"key {REDACTED}"}]


def test_a_reviewers_edit_is_stored_redacted(agent, reviewer_mem):
    pending_id = agent.add("memory", "Project uses Bun").json()["pending_id"]
    edit = {"content": "Project uses Bun; DATABASE_URL=postgres://app:s3cretpass@db:5432/app"}
    assert reviewer_mem.client.post(f"/api/v1/pending/{pending_id}/approve", edit, format="json").status_code == 200
    item = PendingWrite.objects.get()
    assert item.payload["content"] == f"Project uses Bun; DATABASE_URL=postgres://app:{REDACTED}@db:5432/app"
    assert "s3cretpass" not in stored_text()


def test_a_replace_quoting_a_credential_finds_the_redacted_entry(acme, mem):
    assert mem.add("memory", NOTE).status_code == 200
    assert mem.entries("memory") == [STORED]
    assert mem.replace("memory", f"token is {TOKEN}", "Deploy token rotated").status_code == 200
    assert mem.entries("memory") == ["Deploy token rotated"]


def test_an_agent_key_sees_no_content_of_another_keys_pending_item(agent, other_agent):
    agent.add("memory", "Project uses Bun and Nx")
    [hidden] = pending_items(other_agent)
    assert hidden["content_hidden"] is True
    assert hidden["payload"] is None and hidden["original_payload"] is None and hidden["pinned"] == []
    assert hidden["summary"] == "add"
    assert "Bun" not in json.dumps(hidden)


def test_an_agent_key_sees_its_own_pending_items_content(agent):
    agent.add("memory", "Project uses Bun and Nx")
    [own] = pending_items(agent)
    assert own["payload"] == {"action": "add", "content": "Project uses Bun and Nx"}
    assert "content_hidden" not in own


def test_decided_items_of_another_key_stay_without_content(agent, other_agent, reviewer_mem):
    pending_id = agent.add("memory", "Project uses Bun and Nx").json()["pending_id"]
    reviewer_mem.client.post(f"/api/v1/pending/{pending_id}/reject", {"reason": "Bun and Nx is old news"},
                             format="json")
    [rejected] = pending_items(other_agent, "?status=rejected")
    assert rejected["content_hidden"] is True and rejected["reason"] == ""
    assert "Bun" not in json.dumps(rejected)


def test_reviewer_keys_see_every_items_content(agent, reviewer_mem):
    agent.add("memory", "Project uses Bun and Nx")
    [seen] = pending_items(reviewer_mem)
    assert seen["payload"]["content"] == "Project uses Bun and Nx"


def test_a_rejection_reason_is_stored_redacted(acme, agent, reviewer_mem):
    set_volume(acme, secrets=[TENANT_SECRET])
    pending_id = agent.add("memory", "Project uses Bun").json()["pending_id"]
    reason = f"not needed; it was {TENANT_SECRET} anyway"
    assert reviewer_mem.client.post(f"/api/v1/pending/{pending_id}/reject", {"reason": reason},
                                    format="json").status_code == 200
    assert PendingWrite.objects.get().reason == f"not needed; it was {REDACTED} anyway"


def test_the_item_detail_hides_content_from_other_agent_keys(agent, other_agent, reviewer_mem):
    pending_id = agent.add("memory", "Project uses Bun and Nx").json()["pending_id"]
    own = agent.client.get(f"/api/v1/pending/{pending_id}")
    assert own.status_code == 200 and own.json()["payload"] == {"action": "add", "content": "Project uses Bun and Nx"}
    other = other_agent.client.get(f"/api/v1/pending/{pending_id}").json()
    assert other["id"] == pending_id and other["content_hidden"] is True and "Bun" not in json.dumps(other)
    assert reviewer_mem.client.get(f"/api/v1/pending/{pending_id}").json()["summary"] == "add: Project uses Bun and Nx"


def test_the_item_detail_of_another_tenant_is_not_found(agent, globex, make_key, client_for):
    pending_id = agent.add("memory", "Project uses Bun and Nx").json()["pending_id"]
    stranger = client_for(make_key(globex, "reviewer")[1])
    for path in (f"/api/v1/pending/{pending_id}", "/api/v1/pending/pw_nosuchitem"):
        response = stranger.get(path)
        assert response.status_code == 404 and error_of(response)["code"] == "PENDING_NOT_FOUND"
