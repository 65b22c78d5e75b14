"""A run's journal page."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tenants.kv.rules import canonical
from tenants.models import KvJournalRecord, KvRun

HX = {"HX-Request": "true"}
WHEN = datetime(2026, 7, 17, 10, 2, 3, 123456, tzinfo=UTC)


def record(run: KvRun, seq: int, args: dict, result: object = None, **error: object) -> KvJournalRecord:
    return KvJournalRecord.objects.create(
        run=run, seq=seq, args=canonical(args), namespace="default", result=canonical(result), timestamp=WHEN, **error,
    )


@pytest.fixture
def run(support) -> KvRun:
    run = KvRun.objects.create(agent=support, frontier=4)
    record(run, 1, {"action": "set", "key": "house-style", "namespace": "a/b", "prefix": "", "value": "Lead"})
    record(run, 2, {"action": "get", "key": "house-style", "namespace": "a/b", "prefix": "", "value": None}, "Lead")
    record(run, 3, {"action": "list", "key": None, "namespace": "default", "prefix": "", "value": None},
           [{"key": "k", "value": 1}])
    record(run, 4, {"action": "set", "key": "k", "namespace": 42, "prefix": "", "value": 1},
           error_status=400, error_code="INVALID_NAMESPACE", error_message="namespace must be a string or null.")
    return run


def page_url(run: KvRun) -> str:
    return f"/t/acme/agents/support/runs/{run.run_id}/"


@pytest.mark.parametrize("who", ["alice", "bob", "carol"])
def test_every_member_reads_the_journal(request, client, run, who):
    client.force_login(request.getfixturevalue(who))
    response = client.get(page_url(run))
    assert response.status_code == 200
    rows = response.context_data["rows"]
    assert [(r.seq, r.action, r.key, r.namespace) for r in rows] == [
        (1, "set", "house-style", "a/b"), (2, "get", "house-style", "a/b"), (3, "list", None, "default"),
        (4, "set", "k", "42"),
    ]
    content = response.content.decode()
    assert '<code class="key">a/b</code>' in content  # the raw namespace, not the resolved a_b
    assert "&quot;Lead&quot;" in content and "[{&quot;key&quot;:&quot;k&quot;,&quot;value&quot;:1}]" in content
    assert "400 INVALID_NAMESPACE</span>: namespace must be a string or null." in content
    assert "2026-07-17 10:02:03.123456 UTC" in content
    assert 'data-testid="run-frontier">4<' in content and 'data-testid="run-status">open<' in content


def test_an_htmx_request_gets_the_journal_partial(carol, client, run):
    client.force_login(carol)
    response = client.get(page_url(run), headers=HX)
    assert response.content.lstrip().startswith(b'<section class="card" id="journal"')
    assert b"<html" not in response.content and b"Frontier" not in response.content


def test_the_journal_is_paged_by_seq(carol, client, support):
    run = KvRun.objects.create(agent=support, frontier=105)
    for seq in range(1, 106):
        record(run, seq, {"action": "get", "key": f"k{seq}", "namespace": "default", "prefix": "", "value": None})
    client.force_login(carol)
    first = client.get(page_url(run))
    assert [r.seq for r in first.context_data["rows"]] == list(range(1, 101))
    assert first.context_data["next_url"] == f"{page_url(run)}?after=100"
    second = client.get(first.context_data["next_url"], headers=HX)
    assert [r.seq for r in second.context_data["rows"]] == list(range(101, 106))
    assert second.context_data["next_url"] == ""
    assert client.get(f"{page_url(run)}?after=oops").context_data["rows"][0].seq == 1


def test_an_empty_run_says_so(carol, client, support):
    run = KvRun.objects.create(agent=support)
    client.force_login(carol)
    assert b"No journaled calls" in client.get(page_url(run)).content


def test_recorded_args_are_escaped(carol, client, support):
    run = KvRun.objects.create(agent=support, frontier=1)
    record(run, 1, {"action": "<b>set</b>", "key": "<script>x</script>", "namespace": "<i>n</i>", "prefix": "",
                    "value": None}, error_status=400, error_code="UNKNOWN_ACTION", error_message="<em>bad</em>")
    client.force_login(carol)
    content = client.get(page_url(run)).content.decode()
    for raw in ["<b>set", "<script>x", "<i>n", "<em>bad"]:
        assert raw not in content
    assert "&lt;script&gt;x&lt;/script&gt;" in content and "&lt;em&gt;bad&lt;/em&gt;" in content


def test_runs_of_other_agents_and_tenants_are_404(alice, dave, client, run, support, make_agent, acme, globex):
    other_agent = make_agent(acme, "triage")
    foreign = KvRun.objects.create(agent=make_agent(globex, "globex-only"))
    client.force_login(alice)
    assert client.get(f"/t/acme/agents/triage/runs/{run.run_id}/").status_code == 404
    assert client.get(f"/t/acme/agents/support/runs/{foreign.run_id}/").status_code == 404
    assert client.get(f"/t/acme/agents/globex-only/runs/{foreign.run_id}/").status_code == 404
    assert client.get("/t/acme/agents/support/runs/no-such-run/").status_code == 404
    assert other_agent.runs.count() == 0
    client.force_login(dave)
    assert client.get(page_url(run)).status_code == 404


def written_values(content: str) -> list[str]:
    import re

    return re.findall(r'data-testid="written-value">(.*?)</td>', content, re.S)


def test_the_journal_shows_the_value_a_set_wrote_pretty_printed(carol, client, support):
    run = KvRun.objects.create(agent=support, frontier=3)
    record(run, 1, {"action": "set", "key": "k", "namespace": "default", "prefix": "", "value": {"b": [1, "é"]}})
    record(run, 2, {"action": "get", "key": "k", "namespace": "default", "prefix": "", "value": None}, {"b": 1})
    record(run, 3, {"action": "set", "key": "n", "namespace": "default", "prefix": "", "value": None})
    client.force_login(carol)
    values = written_values(client.get(page_url(run)).content.decode())
    assert values[0] == '<pre class="json">{\n  &quot;b&quot;: [\n    1,\n    &quot;é&quot;\n  ]\n}</pre>'
    assert values[1] == '<span class="muted">—</span>'  # a get writes nothing
    assert values[2] == '<pre class="json">null</pre>'  # null is a value a set can write


def test_a_long_written_value_is_folded_into_details(carol, client, support):
    run = KvRun.objects.create(agent=support, frontier=1)
    long = {"items": [f"item-{i}" for i in range(40)], "tail": "<script>x</script>"}
    record(run, 1, {"action": "set", "key": "k", "namespace": "default", "prefix": "", "value": long})
    client.force_login(carol)
    (value,) = written_values(client.get(page_url(run)).content.decode())
    assert value.startswith("<details><summary><code>{&quot;items&quot;:[&quot;item-0&quot;")
    assert "&quot;item-39&quot;" in value and "&lt;script&gt;x&lt;/script&gt;" in value and "<script>" not in value


def test_journal_pages_put_their_address_in_the_bar_and_name_the_runs_key(carol, client, support, make_key):
    from memoryhub.actors import Actor
    from tenants.kv.runs import run_create

    key, _ = make_key(support.tenant, name="support-bot", agents=["support"])
    run = run_create(agent=support, actor=Actor.for_key(key), mode="record", lax=False)
    for seq in range(1, 102):
        record(run, seq, {"action": "get", "key": f"k{seq}", "namespace": "default", "prefix": "", "value": None})
    client.force_login(carol)
    content = client.get(page_url(run)).content.decode()
    assert 'data-testid="run-created-by"><span class="actor actor-key"' in content and "key support-bot (support)" in content
    assert f'href="{page_url(run)}?after=100" hx-get="{page_url(run)}?after=100"' in content
    assert 'hx-push-url="true" data-testid="next-records"' in content
