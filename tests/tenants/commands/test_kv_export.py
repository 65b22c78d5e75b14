from __future__ import annotations

import io
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from memoryhub.actors import Actor
from tenants.kv import store
from tenants.kv.files import namespace_export
from tenants.kv.rules import canonical
from tenants.kv.runs import journal_jsonl
from tenants.models import Agent, KvJournalRecord, KvRun, Tenant

ACTOR = Actor.system("tests")


@pytest.fixture
def agent(acme: Tenant) -> Agent:
    return store.agent_ensure(tenant=acme, slug="notes", actor=ACTOR)[0]


def put(agent: Agent, key: str, value: Any, namespace: str = "default") -> None:
    store.kv_set(agent=agent, limits=store.limits_for(agent.tenant), namespace=namespace, key=key,
                 value=canonical(value), actor=ACTOR)


def export(path: Path, *args: str, agent: str = "notes") -> str:
    out = io.StringIO()
    call_command("kv_export", "--tenant", "acme", "--agent", agent, str(path), *args, stdout=out)
    return out.getvalue()


def test_it_writes_the_namespace_file_byte_for_byte_and_an_empty_one_after_clear(agent, tmp_path):
    put(agent, "b", 1)
    put(agent, "a", {"y": 2, "x": 1})
    export(tmp_path)
    assert (tmp_path / "default.json").read_bytes() == b'{\n  "a": {\n    "x": 1,\n    "y": 2\n  },\n  "b": 1\n}'
    store.kv_clear(agent=agent, namespace="default", actor=ACTOR)
    export(tmp_path, "--namespace", "default")
    assert (tmp_path / "default.json").read_bytes() == b"{}"


def test_it_writes_non_ascii_raw_as_utf8(agent, tmp_path):
    put(agent, "日本", "日本語 🙂")
    export(tmp_path)
    assert (tmp_path / "default.json").read_bytes() == '{\n  "日本": "日本語 🙂"\n}'.encode()


def test_it_writes_the_exact_bytes_of_python_json_dumps(agent, tmp_path):
    values = {"": 0, "big": 12345678901234567890, "f": 3.0, "e": 1e21, "s": "a\x00b\n\"", "n": [1, {"b": None, "a": []}],
              "t": True, "o": {}}
    for key, value in values.items():
        put(agent, key, value, namespace="mixed")
    export(tmp_path)
    expected = json.dumps(values, indent=2, sort_keys=True, ensure_ascii=False)
    assert (tmp_path / "mixed.json").read_text(encoding="utf-8") == expected
    assert not expected.endswith("\n") and "3.0" in expected and "1e+21" in expected
    assert namespace_export(agent=agent, namespace="mixed") == expected


def test_the_file_has_the_same_bytes_as_the_http_export(agent, acme, make_key, client_for, tmp_path):
    for key, value in {"b": [1, 2.5, 1e21], "a": {"日本": "🙂", "z": None}, "": 12345678901234567890}.items():
        put(agent, key, value, namespace="a_b")
    export(tmp_path)
    _, raw = make_key(acme, "agent", read_only=True)
    response = client_for(raw).get("/api/v1/agents/notes/namespaces/a_b/export")
    assert response.status_code == 200
    assert response.content == (tmp_path / "a_b.json").read_bytes()


def test_it_writes_one_file_per_non_empty_namespace_and_leaves_other_files_alone(agent, tmp_path):
    put(agent, "k", "A")
    put(agent, "k", "B", namespace="per-user")
    put(agent, "gone", 1, namespace="emptied")
    store.kv_delete(agent=agent, namespace="emptied", key="gone", actor=ACTOR)
    (tmp_path / "default.json").write_text("stale")
    (tmp_path / "notes.txt").write_text("mine")
    out = export(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["default.json", "notes.txt", "per-user.json"]
    assert (tmp_path / "default.json").read_text() == '{\n  "k": "A"\n}'
    assert (tmp_path / "per-user.json").read_text() == '{\n  "k": "B"\n}'
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert out.splitlines() == ["default.json: 14 bytes", "per-user.json: 14 bytes"]


def test_files_get_an_ordinary_mode_and_no_temporary_file_is_left(agent, tmp_path):
    put(agent, "k", 1)
    export(tmp_path)
    path = tmp_path / "default.json"
    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask
    assert [p.name for p in tmp_path.iterdir()] == ["default.json"]


def test_it_creates_the_target_directory(agent, tmp_path):
    put(agent, "k", 1)
    export(tmp_path / "a" / "b")
    assert (tmp_path / "a" / "b" / "default.json").read_text() == '{\n  "k": 1\n}'


def test_a_named_namespace_is_resolved_like_the_api(agent, tmp_path):
    put(agent, "k", 1, namespace="a_b")
    export(tmp_path, "--namespace", "a/b")
    assert [p.name for p in tmp_path.iterdir()] == ["a_b.json"]
    assert (tmp_path / "a_b.json").read_text() == '{\n  "k": 1\n}'


def test_a_never_used_namespace_exports_as_an_empty_object(agent, tmp_path):
    export(tmp_path, "--namespace", "never")
    assert (tmp_path / "never.json").read_bytes() == b"{}"


def test_an_agent_without_keys_writes_nothing(agent, tmp_path):
    assert "nothing written" in export(tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("namespace", ["", "x" * 129])
def test_it_rejects_an_invalid_namespace(agent, tmp_path, namespace):
    with pytest.raises(CommandError, match="invalid namespace"):
        export(tmp_path, "--namespace", namespace)


def test_it_rejects_an_unknown_agent_or_tenant_without_creating_anything(acme, tmp_path):
    with pytest.raises(CommandError, match="no agent 'ghost'"):
        export(tmp_path, agent="ghost")
    with pytest.raises(CommandError, match="no tenant 'nope'"):
        call_command("kv_export", "--tenant", "nope", "--agent", "ghost", str(tmp_path))
    assert not Agent.objects.exists()


def test_it_never_exports_another_tenants_agent(agent, globex, tmp_path):
    put(agent, "k", 1)
    store.agent_ensure(tenant=globex, slug="notes", actor=ACTOR)
    call_command("kv_export", "--tenant", "globex", "--agent", "notes", str(tmp_path), stdout=io.StringIO())
    assert list(tmp_path.iterdir()) == []


def test_namespace_and_run_are_exclusive(agent, tmp_path):
    with pytest.raises(CommandError):
        export(tmp_path, "--namespace", "default", "--run", "x")


def _record(run: KvRun, seq: int, args: dict[str, Any], result: str = "null", **error: Any) -> None:
    KvJournalRecord.objects.create(
        run=run, seq=seq, args=canonical(args), namespace=args.get("namespace", "default"), result=result,
        timestamp=datetime(2026, 7, 17, 10, 2, seq, 123456, tzinfo=UTC), **error,
    )


def test_a_run_exports_as_its_journal_in_jsonl(agent, tmp_path):
    run = KvRun.objects.create(agent=agent, frontier=2)
    _record(run, 2, {"action": "set", "key": "k", "namespace": "default", "prefix": "", "value": None},
            error_status=400, error_code="VALUE_REQUIRED", error_message="set needs a non-null value.")
    _record(run, 1, {"action": "set", "key": "house-style", "namespace": "a/b", "prefix": "", "value": "Lead with impact"})
    out = export(tmp_path, "--run", run.run_id)
    path = tmp_path / f"{run.run_id}.jsonl"
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
    text = path.read_text(encoding="utf-8")
    assert text == "".join(journal_jsonl(run))
    assert text.splitlines()[0] == (
        '{"seq":1,"function":"memory","args":{"action":"set","key":"house-style","namespace":"a/b","prefix":"",'
        '"value":"Lead with impact"},"result":null,"duration_ms":0,"timestamp":"2026-07-17T10:02:01.123456Z"}'
    )
    assert [json.loads(line)["seq"] for line in text.splitlines()] == [1, 2] and text.endswith("}\n")
    assert out == f"{path.name}: {len(text.encode())} bytes\n"


def test_an_unknown_or_foreign_run_is_an_error(agent, acme, tmp_path):
    other = store.agent_ensure(tenant=acme, slug="other", actor=ACTOR)[0]
    run = KvRun.objects.create(agent=other)
    with pytest.raises(CommandError, match="no run"):
        export(tmp_path, "--run", run.run_id)
    with pytest.raises(CommandError, match="no run"):
        export(tmp_path, "--run", "missing")
    assert list(tmp_path.iterdir()) == []
