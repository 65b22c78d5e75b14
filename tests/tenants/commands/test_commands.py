from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from tenants.models import ApiKey, Membership, Tenant


def run(*args: str) -> list[str]:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip().splitlines()


def test_createtenant_is_idempotent(db):
    assert run("createtenant", "acme", "--name", "Acme")[-1].startswith("created")
    assert run("createtenant", "acme")[-1].startswith("exists")
    assert Tenant.objects.get(slug="acme").name == "Acme"
    run("createtenant", "acme", "--name", "Acme Corp")
    assert Tenant.objects.get().name == "Acme Corp"


def test_createtenant_rejects_a_bad_slug(db):
    with pytest.raises(CommandError, match="invalid slug"):
        run("createtenant", "Not A Slug")
    assert not Tenant.objects.exists()


def test_createapikey_prints_a_working_key_on_the_last_line(acme, client_for):
    lines = run("createapikey", "--tenant", "acme", "--kind", "host", "--read-only", "--agents", "a,b",
                "--read-policies", "default,user:x", "--write-policies", "user:x")
    raw = lines[-1]
    assert ApiKey.parse(raw)
    key = client_for(raw).get("/api/v1/whoami").json()["key"]
    assert key["kind"] == "host" and key["read_only"] is True and key["agents"] == ["a", "b"]
    assert key["read_policies"] == ["default", "user:x"] and key["write_policies"] == ["user:x"]


def test_createapikey_validates_like_the_api(acme):
    with pytest.raises(CommandError, match="agents"):
        run("createapikey", "--tenant", "acme", "--kind", "agent", "--agents", "Bad Slug")
    with pytest.raises(CommandError, match="no tenant"):
        run("createapikey", "--tenant", "nope", "--kind", "agent")
    assert not ApiKey.objects.exists()


def test_createreviewer_creates_a_member_with_a_role(acme, alice):
    # alice stays acme's admin, so rita may be made one and demoted again (the last-admin
    # rule: tests/tenants/commands/test_createreviewer.py).
    run("createreviewer", "--tenant", "acme", "--username", "rita", "--password", "pw-1", "--role", "admin")
    user = User.objects.get(username="rita")
    assert user.check_password("pw-1")
    assert Membership.objects.get(user=user, tenant=acme).role == "admin"
    run("createreviewer", "--tenant", "acme", "--username", "rita", "--password", "pw-2")
    user.refresh_from_db()
    assert user.check_password("pw-2")
    assert Membership.objects.get(user=user, tenant=acme).role == "reviewer"


def test_demo_is_idempotent_and_prints_working_keys(db, client_for, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    first = run("demo")
    second = run("demo")
    keys = lambda lines: [line.split("key: ")[1] for line in lines if " key: " in line]  # noqa: E731
    assert keys(first) == keys(second) and len(keys(first)) == 5
    kinds = [client_for(raw).get("/api/v1/whoami").json()["key"]["kind"] for raw in keys(first)]
    assert kinds == ["agent", "ingest", "host", "reviewer", "admin"]
    assert Tenant.objects.filter(slug__in=["demo", "sandbox"]).count() == 2
    assert ApiKey.objects.count() == 5
    assert User.objects.get(username="reviewer").memberships.get(tenant__slug="demo").role == "reviewer"


def test_demo_replaces_a_revoked_demo_key(db, client_for, settings, tmp_path):
    settings.VAR_DIR = tmp_path
    run("demo")
    ApiKey.objects.filter(kind="agent").update(revoked_at="2026-01-01T00:00:00Z")
    agent_line = next(line for line in run("demo") if "agent key:" in line)
    assert client_for(agent_line.split("key: ")[1]).get("/api/v1/whoami").status_code == 200


def test_demo_refuses_production(db, settings):
    settings.PRODUCTION = True
    with pytest.raises(CommandError, match="production"):
        run("demo")
