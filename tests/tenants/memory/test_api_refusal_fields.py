"""What a refusal carries besides its code and message: the store's approved entries and usage
(docs/memory-files.md "Using it from an agent"), for the refusals the services raise under the
volume lock too, and the retry cap counting them."""

from __future__ import annotations

from memoryhub.actors import Actor
from tenants.memory.sessions import session_create
from tests.conftest import error_of
from tests.tenants.memory.helpers import Mem, seed, set_volume


def test_a_refused_write_counts_toward_the_retry_cap_and_the_cap_keeps_its_fields(acme, mem):
    seed(acme, "memory", ["Project A uses Postgres", "Project B uses Postgres"])
    session, _ = session_create(tenant=acme, chat_id="c", actor=Actor.system("tests"))
    headers = {"X-Memoryhub-Session": str(session.id), "X-Memoryhub-Turn": "t1"}
    rest = [mem.replace("memory", "nope", "x") for _ in range(2)]
    assert [r.status_code for r in rest] == [409, 409]
    rest = [mem.post("memory", {"action": "replace", "old_text": "Postgres", "content": "x"}, **headers)
            for _ in range(2)]
    assert [error_of(r)["code"] for r in rest] == ["AMBIGUOUS_MATCH", "AMBIGUOUS_MATCH"]
    assert error_of(rest[0])["details"]["current_entries"] == ["Project A uses Postgres", "Project B uses Postgres"]
    tool = mem.tool({"action": "remove", "target": "memory", "old_text": "Postgres"}, **headers).json()
    assert tool["code"] == "AMBIGUOUS_MATCH" and tool["usage"] == "2% — 49/2,200 chars"
    capped = mem.post("memory", {"action": "remove", "old_text": "Postgres"}, **headers)
    assert capped.status_code == 429
    details = error_of(capped)["details"]
    assert details["cause_code"] == "AMBIGUOUS_MATCH" and details["done"] is True
    assert details["current_entries"] == ["Project A uses Postgres", "Project B uses Postgres"]
    assert details["usage"] == "2% — 49/2,200 chars" and len(details["matches"]) == 2
    assert mem.tool({"action": "add", "content": "ok"}, **headers).json()["success"] is True
    again = mem.post("memory", {"action": "remove", "old_text": "Postgres"}, **headers)
    assert error_of(again)["code"] == "AMBIGUOUS_MATCH"  # a done write started the count again


def test_undo_refusals_carry_the_store_entries_and_usage(acme, mem, reviewer_mem):
    mem.add("user", "likes tea")
    missing = reviewer_mem.client.post("/api/v1/memory/user/undo", {"version": 9}, format="json")
    assert missing.status_code == 404
    assert error_of(missing) == {"code": "VERSION_NOT_FOUND", "message": "No user version 9.", "details": {
        "current_entries": ["likes tea"], "usage": "0% — 9/1,375 chars"}}


def test_review_refusals_carry_the_store_entries_and_usage(acme, make_key, client_for, reviewer_mem):
    seed(acme, "memory", ["kept"])
    agent = Mem(client_for(make_key(acme, "agent")[1]))
    pending_id = agent.add("user", "likes tea").json()["pending_id"]
    assert reviewer_mem.client.post(f"/api/v1/pending/{pending_id}/approve", {}, format="json").status_code == 200
    set_volume(acme, user_limit=100)
    user_fields = {"current_entries": ["likes tea"], "usage": "9% — 9/100 chars"}
    memory_fields = {"current_entries": ["kept"], "usage": "0% — 4/2,200 chars"}
    again = reviewer_mem.client.post(f"/api/v1/pending/{pending_id}/approve", {}, format="json")
    assert again.status_code == 409 and error_of(again)["details"] == user_fields
    # A rejection's refusals have always carried the memory store's fields, whatever the item's store.
    rejected = reviewer_mem.client.post(f"/api/v1/pending/{pending_id}/reject", {}, format="json")
    assert rejected.status_code == 409 and error_of(rejected)["details"] == memory_fields
    missing = reviewer_mem.client.post("/api/v1/pending/pw_nope/approve", {}, format="json")
    assert error_of(missing)["code"] == "PENDING_NOT_FOUND" and error_of(missing)["details"] == memory_fields
