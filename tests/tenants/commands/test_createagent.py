from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from memoryhub.models import AuditEvent
from tenants.models import Agent


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("createagent", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_creates_an_agent_once_and_then_reports_that_it_exists(acme):
    out, _ = run("--tenant", "acme", "release-notes", "--name", "Release notes")
    assert out.startswith("created: acme/release-notes (Release notes)")
    out, _ = run("--tenant", "acme", "release-notes")
    assert out.startswith("exists: acme/release-notes")
    agent = Agent.objects.get()
    assert (agent.tenant, agent.slug, agent.name) == (acme, "release-notes", "Release notes")
    assert AuditEvent.objects.filter(action="kv.agent.create", object_id="release-notes").count() == 1


def test_it_keeps_the_name_of_an_existing_agent_and_says_so(acme):
    run("--tenant", "acme", "bot", "--name", "First")
    _, err = run("--tenant", "acme", "bot", "--name", "Second")
    assert "keeps its name 'First'" in err
    assert Agent.objects.get().name == "First"


def test_the_same_slug_in_two_tenants_is_two_agents(acme, globex):
    run("--tenant", "acme", "bot")
    run("--tenant", "globex", "bot")
    assert sorted(Agent.objects.values_list("tenant__slug", flat=True)) == ["acme", "globex"]


@pytest.mark.parametrize("slug", ["Bot", "a_b", "a.b", "", "x" * 65, "bot!", "é"])
def test_it_rejects_a_slug_outside_the_agent_alphabet(acme, slug):
    with pytest.raises(CommandError, match="invalid agent slug"):
        run("--tenant", "acme", slug)
    assert not Agent.objects.exists()


def test_it_accepts_a_64_character_slug(acme):
    run("--tenant", "acme", "a" * 64)
    assert Agent.objects.get().slug == "a" * 64


def test_it_rejects_an_unknown_tenant(db):
    with pytest.raises(CommandError, match="no tenant 'nope'"):
        run("--tenant", "nope", "bot")
