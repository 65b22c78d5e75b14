"""Runs, journal, replay and verify (docs/kv.md "Endpoints" and "How it is stored")."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection

from tenants.models import KvEntry, KvRun
from tests.conftest import error_of


def new_run(kv, **body):
    response = kv.client.post(kv.url("runs"), body, format="json")
    assert response.status_code == 201, response.content
    return response.json()["run_id"]


def call(kv, run, seq, body, **headers):
    return kv.call({**body, "run_id": run, "seq": seq}, **headers)


def test_runs_are_created_listed_shown_and_closed(kv):
    run = new_run(kv, mode="verify", lax=True)
    shown = kv.client.get(kv.url(f"runs/{run}")).json()
    assert shown | {"created_at": None} == {"run_id": run, "agent": "bot", "mode": "verify", "lax": True,
                                           "status": "open", "frontier": 0, "created_at": None, "closed_at": None}
    assert [r["run_id"] for r in kv.client.get(kv.url("runs")).json()["items"]] == [run]
    closed = kv.client.post(kv.url(f"runs/{run}/close")).json()
    assert closed["status"] == "closed" and closed["closed_at"]
    assert kv.client.post(kv.url(f"runs/{run}/close")).json()["closed_at"] == closed["closed_at"]
    bad = kv.client.post(kv.url("runs"), {"mode": "replay"}, format="json")
    assert bad.status_code == 400


def test_a_replayed_get_returns_the_recorded_value(kv):
    """A replayed get returns the recorded value, marked X-Memoryhub-Replayed, whatever the store holds now."""
    kv.set("k", "v1")
    run = new_run(kv)
    assert call(kv, run, 1, {"action": "get", "key": "k"}).json()["result"] == "v1"
    kv.client.put(kv.url("namespaces/default/keys/k"), {"value": "v2"}, format="json")
    replay = call(kv, run, 1, {"action": "get", "key": "k"})
    assert replay.json()["result"] == "v1"
    assert replay["X-Memoryhub-Replayed"] == "true"
    assert kv.get("k") == "v2"


def test_a_replayed_set_writes_nothing(kv):
    """A replayed set writes nothing."""
    run = new_run(kv)
    call(kv, run, 1, {"action": "get", "key": "k"})
    assert call(kv, run, 2, {"action": "set", "key": "k", "value": "x"}).json()["result"] is None
    kv.client.put(kv.url("namespaces/default/keys/k"), {"value": "y"}, format="json")
    version = KvEntry.objects.get(key="k").version
    replay = call(kv, run, 2, {"action": "set", "key": "k", "value": "x"})
    assert replay.status_code == 200 and replay["X-Memoryhub-Replayed"] == "true"
    assert kv.get("k") == "y"
    assert KvEntry.objects.get(key="k").version == version


def test_divergence_is_refused_or_warned_on_lax_runs(kv):
    """A call that differs from the recorded one is REPLAY_DIVERGED; a lax run answers with a warning unless the
    action differs."""
    kv.set("k", "v")
    strict, lax = new_run(kv), new_run(kv, lax=True)
    for run in (strict, lax):
        call(kv, run, 1, {"action": "get", "key": "k"})
    diverged = call(kv, strict, 1, {"action": "get", "key": "other"})
    assert diverged.status_code == 409
    error = error_of(diverged)
    assert error["code"] == "REPLAY_DIVERGED" and error["details"]["seq"] == 1
    assert error["details"]["recorded"]["key"] == "k" and error["details"]["received"]["key"] == "other"
    warned = call(kv, lax, 1, {"action": "get", "key": "other"}).json()
    assert warned == {"result": "v", "namespace": "default", "warnings": ["args differ from recorded call at seq 1"]}
    other_action = call(kv, lax, 1, {"action": "list"})
    assert error_of(other_action)["code"] == "REPLAY_DIVERGED"


def test_divergence_compares_numbers_and_namespaces_exactly_but_ignores_expected_version(kv):
    run = new_run(kv)
    call(kv, run, 1, {"action": "set", "key": "k", "value": 3, "namespace": "a.b"})
    assert call(kv, run, 1, {"action": "set", "key": "k", "value": 3, "namespace": "a.b", "expected_version": 9}).status_code == 200
    assert error_of(call(kv, run, 1, {"action": "set", "key": "k", "value": 3, "namespace": "a_b"}))["code"] == "REPLAY_DIVERGED"
    raw = b'{"action":"set","key":"k","value":3.0,"namespace":"a.b","run_id":"%s","seq":1}' % run.encode()
    assert error_of(kv.call({}, raw=raw))["code"] == "REPLAY_DIVERGED"


def test_a_seq_gap_is_a_conflict_and_a_seq_below_one_is_invalid(kv):
    """A seq past the next one is SEQ_GAP; a seq below 1 is INVALID_REQUEST."""
    run = new_run(kv)
    call(kv, run, 1, {"action": "get", "key": "a"})
    call(kv, run, 2, {"action": "get", "key": "b"})
    gap = call(kv, run, 4, {"action": "get", "key": "c"})
    assert gap.status_code == 409
    assert error_of(gap)["code"] == "SEQ_GAP" and error_of(gap)["details"] == {"expected": 3}
    assert error_of(call(kv, run, 0, {"action": "get", "key": "c"}))["code"] == "INVALID_REQUEST"


def test_verify_mode_refuses_live_calls_but_replays(kv):
    """Verify mode refuses live calls (VERIFY_LIVE_CALL) but replays recorded ones."""
    kv.set("k", "v")
    run = new_run(kv)
    call(kv, run, 1, {"action": "get", "key": "k"})
    refused = call(kv, run, 2, {"action": "set", "key": "k", "value": "new"}, X_Memoryhub_Mode="verify")
    assert refused.status_code == 409 and error_of(refused)["code"] == "VERIFY_LIVE_CALL"
    assert kv.get("k") == "v"
    assert call(kv, run, 1, {"action": "get", "key": "k"}, X_Memoryhub_Mode="verify").json()["result"] == "v"
    verify_run = new_run(kv, mode="verify")
    assert error_of(call(kv, verify_run, 1, {"action": "get", "key": "k"}))["code"] == "VERIFY_LIVE_CALL"


def test_a_closed_run_replays_but_refuses_new_calls(kv):
    """A closed run still replays but refuses new calls (RUN_CLOSED)."""
    run = new_run(kv)
    call(kv, run, 1, {"action": "get", "key": "k"})
    kv.client.post(kv.url(f"runs/{run}/close"))
    assert call(kv, run, 1, {"action": "get", "key": "k"}).status_code == 200
    assert error_of(call(kv, run, 2, {"action": "get", "key": "k"}))["code"] == "RUN_CLOSED"


def test_recorded_errors_consume_the_seq_and_replay_as_errors(kv):
    """A refused call is journaled too: it takes its seq and replays as the same error."""
    run = new_run(kv)
    call(kv, run, 1, {"action": "get", "key": "a"})
    call(kv, run, 2, {"action": "get", "key": "b"})
    first = call(kv, run, 3, {"action": "set", "key": "k"})
    assert first.status_code == 400 and error_of(first)["code"] == "VALUE_REQUIRED"
    again = call(kv, run, 3, {"action": "set", "key": "k"})
    assert again.status_code == 400 and again.json() == first.json()
    assert again["X-Memoryhub-Replayed"] == "true"
    assert call(kv, run, 4, {"action": "get", "key": "k"}).status_code == 200
    assert KvRun.objects.get(run_id=run).frontier == 4


def test_unjournaled_errors_leave_the_run_unchanged(kv, make_key, acme, client_for):
    run = new_run(kv)
    kv.call({}, raw=b'{"action":"set","key":"k","value":NaN,"run_id":"%s","seq":1}' % run.encode())
    assert KvRun.objects.get(run_id=run).frontier == 0
    assert call(kv, run, 1, {"action": "get", "key": "k"}).status_code == 200


def test_the_journal_is_jsonl_in_the_originals_shape(kv):
    """The journal is JSONL in the original's record shape."""
    run = new_run(kv)
    call(kv, run, 1, {"action": "set", "key": "k", "value": "日本", "namespace": "a/b"})
    call(kv, run, 2, {"action": "get", "key": "k", "namespace": "a/b"})
    call(kv, run, 3, {"action": "list"})
    call(kv, run, 4, {"action": "set", "key": "k"})
    response = kv.client.get(kv.url(f"runs/{run}/journal"))
    assert response["Content-Type"] == "application/x-ndjson"
    text = b"".join(response.streaming_content).decode()
    lines = text.split("\n")
    assert lines[-1] == "" and len(lines) == 5
    records = [json.loads(line) for line in lines[:-1]]
    assert list(records[0]) == ["seq", "function", "args", "result", "duration_ms", "timestamp"]
    assert records[0]["args"] == {"action": "set", "key": "k", "namespace": "a/b", "prefix": "", "value": "日本"}
    assert '"value":"日本"' in lines[0] and lines[0].startswith('{"seq":1,"function":"memory","args":{"action":"set"')
    assert records[1]["args"]["value"] is None and records[1]["result"] == "日本"
    assert records[2]["args"]["key"] is None
    assert records[3]["result"] is None and "non-null" in records[3]["error"]
    assert records[0]["timestamp"].endswith("Z") and len(records[0]["timestamp"]) == 27


@pytest.mark.django_db(transaction=True)
def test_two_identical_concurrent_calls_write_once(acme, make_key, client_for):
    """Two identical concurrent calls with one seq write once; the other gets the recorded answer."""
    if connection.vendor == "sqlite":
        pytest.skip("threads share one in-memory SQLite connection; the PostgreSQL run covers this")
    from tests.tenants.kv.helpers import Kv

    _, raw = make_key(acme, "agent")
    kv = Kv(client_for(raw))
    run = new_run(kv)
    results = []

    def worker():
        client = Kv(client_for(raw))
        response = call(client, run, 1, {"action": "set", "key": "k", "value": "x"})
        results.append((response.status_code, response.get("X-Memoryhub-Replayed")))
        connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results, key=lambda r: str(r[1])) == [(200, None), (200, "true")]
    assert KvEntry.objects.get(key="k").version == 1


def test_run_and_seq_must_come_together_and_agree(kv):
    run = new_run(kv)
    assert error_of(kv.call({"action": "get", "key": "k", "run_id": run}))["code"] == "INVALID_REQUEST"
    assert error_of(kv.call({"action": "get", "key": "k", "seq": 1}))["code"] == "INVALID_REQUEST"
    disagree = kv.call({"action": "get", "key": "k", "run_id": run, "seq": 1}, X_Memoryhub_Seq="2")
    assert error_of(disagree)["code"] == "INVALID_REQUEST"
    by_headers = kv.call({"action": "get", "key": "k"}, X_Memoryhub_Run=run, X_Memoryhub_Seq="1")
    assert by_headers.status_code == 200
    assert KvRun.objects.get(run_id=run).frontier == 1


def test_live_writes_in_a_run_record_the_run_on_the_key(kv):
    run = new_run(kv)
    call(kv, run, 1, {"action": "set", "key": "k", "value": 1})
    assert kv.client.get(kv.url("namespaces/default/keys/k")).json()["last_run_id"] == run


# Strictness (docs/api.md "Conventions"): no coercion, unknown fields and filters refused.

def test_starting_a_run_refuses_a_string_for_lax(kv):
    for body, path in [({"lax": "true"}, "lax"), ({"lax": 1}, "lax"), ({"mode": None}, "mode"),
                       ({"mode": "record", "dry_run": True}, "dry_run")]:
        response = kv.client.post(kv.url("runs"), body, format="json")
        assert response.status_code == 400, body
        error = error_of(response)
        assert error["code"] == "INVALID_REQUEST"
        assert [e["path"] for e in error["details"]["errors"]] == [path]
    assert not KvRun.objects.exists()


def test_the_run_list_refuses_unknown_query_parameters(kv):
    new_run(kv)
    response = kv.client.get(kv.url("runs") + "?status=open")
    assert response.status_code == 400
    assert [e["path"] for e in error_of(response)["details"]["errors"]] == ["status"]
