from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from memoryhub.actors import Actor
from memoryhub.models import AuditEvent
from tenants.kv import store
from tenants.kv.rules import canonical
from tenants.models import Agent, KvConfig, KvEntry, KvJournalRecord, Tenant

ACTOR = Actor.system("tests")


@pytest.fixture
def agent(acme: Tenant) -> Agent:
    return store.agent_ensure(tenant=acme, slug="notes", actor=ACTOR)[0]


def put(agent: Agent, key: str, value: Any, namespace: str = "default") -> None:
    store.kv_set(agent=agent, limits=store.limits_for(agent.tenant), namespace=namespace, key=key,
                 value=canonical(value), actor=ACTOR)


def stored(agent: Agent, namespace: str = "default") -> dict[str, Any]:
    return {key: json.loads(value) for key, value in store.kv_items(agent=agent, namespace=namespace)}


def files(folder: Path, **contents: str | bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in contents.items():
        path = folder / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return folder


def run_import(path: Path, *args: str, agent: str = "notes") -> tuple[list[str], int]:
    """The command's lines and its exit status (a CommandError exits with 1)."""
    out = io.StringIO()
    try:
        call_command("kv_import", "--tenant", "acme", "--agent", agent, str(path), *args, stdout=out)
    except CommandError as exc:
        return out.getvalue().splitlines(), exc.returncode
    return out.getvalue().splitlines(), 0


def imported(path: Path, *args: str, agent: str = "notes") -> list[str]:
    lines, status = run_import(path, *args, agent=agent)
    assert status == 0, lines
    return lines


def failed_import(path: Path, *args: str, agent: str = "notes") -> list[str]:
    lines, status = run_import(path, *args, agent=agent)
    assert status == 1, lines
    return lines


def test_it_imports_valid_files_and_refuses_blank_non_object_and_invalid_ones(agent, tmp_path):
    folder = files(tmp_path, **{"default.json": '{"house-style": "Use active voice", "n": 3.0}', "e.json": "  \n\t",
                                "l.json": "[1,2]", "bad.json": '{"k": 1,\n "j": }'})
    lines, status = run_import(folder)
    assert status == 1
    assert lines == [
        "bad.json: error: invalid JSON at line 2, column 7: Expecting value; nothing imported",
        "default.json -> default: imported 2 keys (2 new, 0 updated)",
        "e.json -> e: imported 0 keys (0 new, 0 updated)",
        "l.json -> l: warning: the file holds an array, not an object; read as {}; imported 0 keys (0 new, 0 updated)",
    ]
    assert stored(agent) == {"house-style": "Use active voice", "n": 3.0}
    assert store.kv_get(agent=agent, namespace="default", key="n").value == "3.0"
    assert [s.namespace for s in store.kv_namespaces(agent=agent)] == ["default"]


def test_an_import_without_failures_exits_normally(agent, tmp_path):
    assert imported(files(tmp_path, **{"a.json": '{"k": 1}'})) == ["a.json -> a: imported 1 key (1 new, 0 updated)"]


def test_export_then_import_then_export_gives_identical_bytes(agent, acme, tmp_path):
    values: dict[str, Any] = {
        "": "empty key", "a/b": {"z": [1, 2.5, -0.0, 1e21, 1e-7], "a": {"nested": {"deep": [True, False, None]}}},
        "big": 12345678901234567890123456789, "neg": -98765432109876543210, "f": 3.0, "f2": 1.1,
        "uni": "日本語 🙂 ﬀ", "nul": "a\x00b", "ctl": "tab\tquote\"backslash\\", "list": [], "obj": {}, "zero": 0,
        "false": False, "日本": {"é": "ü"},
    }
    for key, value in values.items():
        put(agent, key, value)
        put(agent, key, value, namespace="per-user")
    first, second = tmp_path / "first", tmp_path / "second"
    call_command("kv_export", "--tenant", "acme", "--agent", "notes", str(first), stdout=io.StringIO())
    imported(first, agent="copy")
    call_command("kv_export", "--tenant", "acme", "--agent", "copy", str(second), stdout=io.StringIO())
    for name in ["default.json", "per-user.json"]:
        assert (second / name).read_bytes() == (first / name).read_bytes()
    text = (first / "default.json").read_text(encoding="utf-8")
    assert "12345678901234567890123456789" in text and '"f": 3.0' in text and '"a\\u0000b"' in text and "🙂" in text
    copy = Agent.objects.get(tenant=acme, slug="copy")
    assert store.kv_get(agent=copy, namespace="default", key="big").value == "12345678901234567890123456789"


def test_a_merge_upserts_bumps_versions_and_records_import_as_writer(agent, tmp_path):
    put(agent, "kept", 1)
    put(agent, "changed", "old")
    imported(files(tmp_path, **{"default.json": '{"changed": "new", "added": [1]}'}))
    assert stored(agent) == {"kept": 1, "changed": "new", "added": [1]}
    rows = {e.key: e for e in KvEntry.objects.filter(agent=agent)}
    assert (rows["changed"].version, rows["changed"].created_by, rows["changed"].updated_by) == (2, "tests", "import")
    assert (rows["added"].version, rows["added"].created_by, rows["added"].updated_by) == (1, "import", "import")
    assert (rows["kept"].version, rows["kept"].updated_by) == (1, "tests")
    assert all(e.last_run_id is None for e in rows.values())
    assert not KvJournalRecord.objects.exists()  # imports are not journaled


def test_importing_the_same_file_twice_bumps_every_version(agent, tmp_path):
    folder = files(tmp_path, **{"default.json": '{"k": 1}'})
    imported(folder)
    assert imported(folder) == ["default.json -> default: imported 1 key (0 new, 1 updated)"]
    assert KvEntry.objects.get().version == 2


def test_replace_clears_the_namespace_first_and_leaves_others(agent, tmp_path):
    put(agent, "old", 1)
    put(agent, "k", "before")
    put(agent, "other", 1, namespace="untouched")
    lines = imported(files(tmp_path, **{"default.json": '{"k": "after"}'}), "--replace")
    assert lines == ["default.json -> default: imported 1 key (1 new, 0 updated) after clearing 2 keys"]
    assert stored(agent) == {"k": "after"}
    assert KvEntry.objects.get(namespace="default").version == 1  # deleted and recreated restarts at 1
    assert stored(agent, "untouched") == {"other": 1}


def test_replace_with_a_blank_file_empties_the_namespace(agent, tmp_path):
    put(agent, "old", 1)
    imported(files(tmp_path, **{"default.json": ""}), "--replace")
    assert stored(agent) == {}


def test_a_dry_run_changes_nothing(agent, tmp_path):
    put(agent, "old", 1)
    before = list(KvEntry.objects.values())
    audits = AuditEvent.objects.count()
    folder = files(tmp_path, **{"default.json": '{"k": 1, "old": 2}', "new.json": '{"x": true}'})
    lines = imported(folder, "--dry-run", "--replace")
    assert lines == ["default.json -> default: would import 2 keys (2 new, 0 updated) after clearing 1 key",
                     "new.json -> new: would import 1 key (1 new, 0 updated)"]
    assert list(KvEntry.objects.values()) == before
    assert AuditEvent.objects.count() == audits


def test_a_dry_run_neither_creates_the_agent_nor_hides_a_limit(acme, tmp_path):
    KvConfig.objects.create(tenant=acme, namespaces_per_agent=1)
    folder = files(tmp_path, **{"a.json": '{"k": 1}', "b.json": '{"k": 1}'})
    lines = failed_import(folder, "--dry-run", agent="fresh")
    assert lines[0] == "would create agent acme/fresh"
    assert lines[2].startswith("b.json -> b: error: LIMIT_EXCEEDED: The namespaces_per_agent limit is 1")
    assert not Agent.objects.filter(slug="fresh").exists()
    assert not KvEntry.objects.exists()


def test_it_reads_the_originals_layout_when_present(agent, tmp_path):
    files(tmp_path, **{"top.json": '{"ignored": 1}'})
    files(tmp_path / ".chidori" / "memory", **{"default.json": '{"house-style": "short"}'})
    assert imported(tmp_path) == ["default.json -> default: imported 1 key (1 new, 0 updated)"]
    assert stored(agent) == {"house-style": "short"}
    assert stored(agent, "top") == {}


def test_it_skips_the_hidden_file_and_other_invalid_names_with_a_warning(agent, tmp_path):
    folder = files(tmp_path, **{".json": '{"hidden": 1}', "a.b.json": '{"k": 1}', "日本.json": '{"k": 1}',
                                ("x" * 129) + ".json": '{"k": 1}', ("y" * 128) + ".json": '{"k": 1}',
                                "notes.txt": "not a namespace file"})
    lines = imported(folder)
    assert lines[0] == (".json: warning: skipped: an empty name (a hidden file); "
                        "names are 1-128 characters of A-Z a-z 0-9 _ -")
    assert lines[1].startswith("a.b.json: warning: skipped: not a valid namespace name")
    assert lines[2].startswith("x" * 129 + ".json: warning: skipped")
    assert lines[3] == f"{'y' * 128}.json -> {'y' * 128}: imported 1 key (1 new, 0 updated)"
    assert lines[4].startswith("日本.json: warning: skipped")
    assert len(lines) == 5
    assert [s.namespace for s in store.kv_namespaces(agent=agent)] == ["y" * 128]


def test_a_file_name_that_is_not_utf8_is_skipped_and_printable(agent, tmp_path):
    (tmp_path / os.fsdecode(b"\xff.json")).write_text('{"k": 1}')
    assert imported(tmp_path) == ["\\xff.json: warning: skipped: not a valid namespace name; "
                                    "names are 1-128 characters of A-Z a-z 0-9 _ -"]
    assert not KvEntry.objects.exists()


def test_top_level_null_members_are_skipped_with_a_warning(agent, tmp_path):
    lines = imported(files(tmp_path, **{"default.json": '{"a": null, "b": {"c": null}, "d": null}'}))
    assert lines == ["default.json -> default: warning: 2 top-level null members skipped (null means absent); "
                     "imported 1 key (1 new, 0 updated)"]
    assert stored(agent) == {"b": {"c": None}}


@pytest.mark.parametrize(("content", "error"), [
    (b'{"a": NaN}', "invalid JSON at line 1, column 7: NaN, which is not valid JSON"),
    (b'{"a": 1,\n"b": -Infinity}', "invalid JSON at line 2, column 6: -Infinity, which is not valid JSON"),
    (b'{"a": [1e400]}', "invalid JSON at line 1, column 8: a number beyond the range of a double"),
    (b'{"a": "\\ud800"}', "invalid JSON at line 1, column 7: a string with a lone surrogate"),
    (b'{"a": "\xff"}', "not valid UTF-8 at byte 7"),
    (b'\xef\xbb\xbf{"a": 1}', "invalid JSON at line 1, column 1: Unexpected UTF-8 BOM (decode using utf-8-sig)"),
    (b'{"a\\u0000b": 1}', "a key contains U+0000, which a key must not"),
])
def test_a_file_the_store_cannot_hold_is_an_error_naming_file_and_position(agent, tmp_path, content, error):
    put(agent, "keep", 1, namespace="bad")
    lines = failed_import(files(tmp_path, **{"bad.json": content, "good.json": '{"k": 1}'}))
    assert lines[0] == f"bad.json: error: {error}; nothing imported"
    assert stored(agent, "bad") == {"keep": 1}
    assert stored(agent, "good") == {"k": 1}


def test_a_file_breaking_the_key_count_limit_is_rejected_whole(agent, acme, tmp_path):
    KvConfig.objects.create(tenant=acme, keys_per_namespace=3)
    put(agent, "a", "old")
    folder = files(tmp_path, **{"default.json": '{"a": 1, "b": 2, "c": 3, "d": 4}', "other.json": '{"k": 1}'})
    lines = failed_import(folder)
    assert lines == [
        "default.json -> default: error: LIMIT_EXCEEDED: The keys_per_namespace limit is 3; this call needs 4; "
        "nothing imported",
        "other.json -> other: imported 1 key (1 new, 0 updated)",
    ]
    assert stored(agent) == {"a": "old"}
    assert KvEntry.objects.get(key="a").version == 1


def test_a_rejected_replace_keeps_the_namespace_as_it_was(agent, acme, tmp_path):
    KvConfig.objects.create(tenant=acme, keys_per_namespace=2)
    put(agent, "x", 1)
    put(agent, "y", 2)
    failed_import(files(tmp_path, **{"default.json": '{"a": 1, "b": 2, "c": 3}'}), "--replace")
    assert stored(agent) == {"x": 1, "y": 2}
    put(agent, "x", 3)  # the key counter was rolled back with the rest: overwrites still work
    with pytest.raises(store.KvError):
        put(agent, "z", 1)


def test_merging_overwrites_counts_only_new_keys_against_the_limit(agent, acme, tmp_path):
    KvConfig.objects.create(tenant=acme, keys_per_namespace=2)
    put(agent, "a", 1)
    put(agent, "b", 1)
    imported(files(tmp_path, **{"default.json": '{"a": 2, "b": 2}'}))
    assert stored(agent) == {"a": 2, "b": 2}


@pytest.mark.parametrize(("limit", "content"), [
    ("key_bytes", '{"ok": 1, "' + "é" * 512 + 'a": 1}'),
    ("value_bytes", '{"ok": 1, "v": "' + "x" * 20 + '"}'),
])
def test_a_file_with_an_oversized_key_or_value_is_rejected_whole(agent, acme, tmp_path, limit, content):
    KvConfig.objects.create(tenant=acme, value_bytes=21)
    lines = failed_import(files(tmp_path, **{"default.json": content}))
    assert lines[0].startswith(f"default.json -> default: error: LIMIT_EXCEEDED: The {limit} limit is")
    assert stored(agent) == {}


def test_a_value_exactly_at_the_limit_is_imported(agent, acme, tmp_path):
    KvConfig.objects.create(tenant=acme, value_bytes=22)
    imported(files(tmp_path, **{"default.json": '{"v": "' + "x" * 20 + '"}'}))
    assert stored(agent) == {"v": "x" * 20}


def test_it_creates_a_missing_agent(acme, tmp_path):
    lines = imported(files(tmp_path, **{"default.json": '{"k": 1}'}), agent="fresh")
    assert lines[0] == "created agent acme/fresh"
    assert stored(Agent.objects.get(tenant=acme, slug="fresh")) == {"k": 1}


def test_it_rejects_a_bad_agent_slug_an_unknown_tenant_and_a_missing_folder(acme, tmp_path):
    folder = files(tmp_path, **{"default.json": '{"k": 1}'})
    with pytest.raises(CommandError, match="invalid agent slug"):
        call_command("kv_import", "--tenant", "acme", "--agent", "Not_A_Slug", str(folder))
    with pytest.raises(CommandError, match="no tenant"):
        call_command("kv_import", "--tenant", "nope", "--agent", "x", str(folder))
    with pytest.raises(CommandError, match="is not a directory"):
        call_command("kv_import", "--tenant", "acme", "--agent", "x", str(tmp_path / "missing"))
    assert not Agent.objects.exists()


def test_a_folder_without_files_imports_nothing(acme, tmp_path):
    assert imported(tmp_path) == [f"no .json files in {tmp_path}"]
    assert not Agent.objects.exists()
