"""Actors as people read them: {% actor_name %} and the per-page lookup behind it."""

from __future__ import annotations

from django.db import connection
from django.template import engines
from django.test import RequestFactory
from django.test.utils import CaptureQueriesContext

from tenants.actor_names import ActorNames, actor_names

ROWS = engines["django"].from_string(
    "{% load actors %}{% for label in labels %}[{% actor_name label %}]{% endfor %}")


def render(tenant, labels: list[str]) -> tuple[str, int]:
    request = RequestFactory().get("/")
    request.tenant = tenant
    with CaptureQueriesContext(connection) as queries:
        html = ROWS.render({"labels": labels}, request)
    return html, len(queries)


def test_each_kind_of_label_reads_as_a_name(acme, alice, make_key):
    key, _ = make_key(acme, name="support-bot", agents=["support", "triage"])
    plain, _ = make_key(acme, kind="ingest")
    names = ActorNames(acme).prime([f"key:{key.public_id}", plain.public_id, "alice", "import"])
    shown = {label: (n.kind, n.text, n.raw) for label in [
        f"key:{key.public_id}", key.public_id, plain.public_id, "user:alice", "alice", "import", "agent:custom"]
        for n in [names.name(label)]}
    assert shown == {
        f"key:{key.public_id}": ("key", "key support-bot (support, triage)", f"key:{key.public_id}"),
        key.public_id: ("key", "key support-bot (support, triage)", key.public_id),  # KV writers are bare ids
        plain.public_id: ("key", f"key {plain.public_id} (ingest)", plain.public_id),  # no name: its id
        "user:alice": ("user", "alice", "user:alice"),
        "alice": ("user", "alice", "alice"),  # a KV writer's bare username
        "import": ("system", "system", "import"),
        "agent:custom": ("subject", "agent:custom", "agent:custom"),  # an Atom key's own subject
    }
    assert names.name("alice", "system").text == "system"  # the audit row's kind wins


def test_an_unprimed_page_asks_once_however_many_keys_it_shows(acme, make_key):
    keys = [make_key(acme, name=f"bot-{i}")[0] for i in range(12)]
    html, one = render(acme, [f"key:{keys[0].public_id}"])
    assert "key bot-0 (agent)" in html
    html, many = render(acme, [f"key:{k.public_id}" for k in keys] + ["user:bob"])
    assert all(f"key bot-{i} (agent)" in html for i in range(12)) and ">bob</span>" in html
    assert many == one == 1


def test_another_tenants_key_is_never_named(acme, globex, make_key):
    foreign, _ = make_key(globex, name="globex-bot")
    html, _ = render(acme, [f"key:{foreign.public_id}"])
    assert "globex-bot" not in html and f"key {foreign.public_id}</span>" in html
    assert ActorNames(acme).prime([foreign.public_id]).name(foreign.public_id).text == f"key {foreign.public_id}"


def test_names_and_labels_are_escaped(acme, make_key):
    key, _ = make_key(acme, name="<b>bot</b>")
    html, _ = render(acme, [f"key:{key.public_id}", 'user:"><script>x</script>'])
    assert "<b>" not in html and "&lt;b&gt;bot&lt;/b&gt;" in html
    assert "<script>" not in html and 'title="user:&quot;&gt;&lt;script&gt;x&lt;/script&gt;"' in html


def test_a_request_keeps_one_resolver(acme):
    request = RequestFactory().get("/")
    request.tenant = acme
    assert actor_names(request) is actor_names(request)


def test_an_unprimed_page_asks_once_however_many_bare_labels_it_shows(acme, alice, bob):
    labels = ["alice", "bob", *[f"import-{n}" for n in range(10)]]
    html, queries = render(acme, labels)
    assert queries == 1  # every member's username at once
    assert html.count('class="actor actor-user"') == 2 and html.count('class="actor actor-system"') == 10


def test_a_bare_label_names_a_person_only_if_they_belong_to_this_tenant(acme, alice, dave):
    # dave exists, as a member of globex only: acme's page does not say so.
    assert ActorNames(acme).name("dave").kind == "system"
    assert ActorNames(acme).prime(["dave"]).name("dave").kind == "system"
    assert ActorNames(acme).name("alice").kind == "user"
