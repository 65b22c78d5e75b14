"""The isolation matrix: for every URL the project serves, how to aim a request at tenant A's
objects and what tenant B's principals may get back.

`test_isolation_matrix.py` walks Django's resolver; a URL with no entry here (in API, UI or
EXEMPT) fails the test with a message pointing at this file. To add a URL:

1. its parameters must have a filler in PARAMS (add one for a new parameter name);
2. add an ApiCase to API (under /api/v1/) or a UiCase to UI (under /t/<slug>/), keyed by
   the route exactly as the failure message prints it;
3. or, for a URL that serves no tenant data, add it to EXEMPT with the reason.

Kinds and roles come from the specs: an endpoint's `kinds` are the key kinds allowed to
call it at all (others must get 403); `expect` is what an allowed kind of tenant B gets:
NOT_FOUND when the request names one of A's objects (the URL's ids are A's), or OWN when
the request can only act inside B's own tenant (lists, searches, creates), where any
non-5xx answer is allowed as long as nothing of A's is in it or changed by it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tenants.models import Membership, Role
from tests.security.world import AGENT, CANARY, ENTRY_KEY, NAMESPACE, World

OWN = frozenset({"own"})
NOT_FOUND = frozenset({404})

ALL = frozenset({"agent", "ingest", "host", "reviewer", "admin"})
KV = frozenset({"agent", "host", "reviewer", "admin"})
ADMIN = frozenset({"admin"})
HOSTS = frozenset({"host", "admin"})
MEMORY_WRITERS = KV
MEMORY_REVIEWERS = frozenset({"reviewer", "admin"})

# How to fill each URL parameter from tenant A's world. Unknown names fail the test.
PARAMS: dict[str, Callable[[World], str]] = {
    "slug": lambda w: w.slug,
    "key_id": lambda w: w.key_id,
    "agent": lambda w: AGENT,
    "ns": lambda w: NAMESPACE,
    "key": lambda w: ENTRY_KEY,
    "run_id": lambda w: w.run_id,
    "target": lambda w: "memory",
    "session_id": lambda w: w.session_id,
    "pending_id": lambda w: w.pending_id,
    "finding_id": lambda w: w.finding_id,
    "path": lambda w: f"keys/{w.key_id}/anything",
    # Atom pages and endpoints (t/<slug>/atoms/..., /api/v1/atoms/...).
    "atom_id": lambda w: w.atom_id,
    "ref": lambda w: w.atom_ref,
    # A membership of tenant A (t/<slug>/members/<id>/...).
    "member_id": lambda w: str(Membership.objects.filter(tenant=w.tenant).order_by("pk").values_list("pk", flat=True)[0]),
    # NEW PARAMETER NAMES GO HERE.
}

Body = Callable[[World], list[Any]]


def _none(w: World) -> list[Any]:
    return [None]


@dataclass(frozen=True)
class ApiCase:
    kinds: frozenset[str]
    expect: frozenset[Any]
    bodies: Body = _none
    query: Callable[[World], dict[str, str]] | None = None
    # Kinds per method where they differ from `kinds` (e.g. GET for all, PATCH for admins).
    method_kinds: dict[str, frozenset[str]] = field(default_factory=dict)
    # Whether a read-only key is refused (403, before any lookup: docs/api.md "Key kinds and flags").
    # None: refused for unsafe methods. Atom observe/manifest stay open to read-only keys.
    refuses_read_only: bool | None = None


def bodies(*make: Callable[[World], Any]) -> Body:
    return lambda w: [m(w) for m in make]


def _revise(w: World) -> dict[str, Any]:
    change = {"id": "v", "op": "revise", "target": w.atom_ref, "content": {"text": "b was here", "links": []},
              "sources": []}
    return {"changes": [change]}


def _cite(w: World) -> dict[str, Any]:
    change = {"id": "c", "op": "create", "content": {"text": "b cites a", "links": []},
              "sources": [{"ref": w.atom_ref, "start": 0, "end": 2}], "input": w.input_token}
    return {"changes": [change]}


def _link(w: World) -> dict[str, Any]:
    change = {"id": "l", "op": "create", "content": {"text": "b links a", "links": {"about": [w.admin_ref]}},
              "sources": []}
    return {"changes": [change]}


ATOM_QUERY = "zq canary atom text"  # matches A's atom by tokens without spelling its canary

# --- API: every route under /api/v1/ --------------------------------------------------------
API: dict[str, ApiCase] = {
    "api/v1/whoami": ApiCase(ALL, OWN),
    "api/v1/tenant": ApiCase(ALL, OWN, bodies(lambda w: {"name": "b renamed"}), method_kinds={"PATCH": ADMIN}),
    "api/v1/keys": ApiCase(ADMIN, OWN, bodies(lambda w: {"kind": "agent", "name": "b key"})),
    "api/v1/keys/<str:key_id>": ApiCase(ADMIN, NOT_FOUND),
    "api/v1/audit": ApiCase(ADMIN, OWN),
    # KV: an agent, host, reviewer or admin key that may write creates a missing agent on
    # first use (docs/kv.md "Implicit agents"), so paths naming A's agent act on B's own new, empty agent.
    "api/v1/agents": ApiCase(KV, OWN, bodies(lambda w: {"slug": AGENT, "name": "b agent"}),
                             method_kinds={"POST": ADMIN}),
    "api/v1/agents/<str:agent>": ApiCase(ADMIN, NOT_FOUND),
    "api/v1/agents/<str:agent>/memory": ApiCase(KV, OWN, bodies(
        lambda w: {"action": "get", "namespace": NAMESPACE, "key": ENTRY_KEY},
        lambda w: {"action": "list", "namespace": NAMESPACE},
        lambda w: {"action": "set", "namespace": NAMESPACE, "key": ENTRY_KEY, "value": 1},
        lambda w: {"action": "get", "namespace": NAMESPACE, "key": "in-run", "run_id": w.run_id, "seq": 2},
    ), refuses_read_only=False),
    "api/v1/agents/<str:agent>/namespaces": ApiCase(KV, OWN),
    "api/v1/agents/<str:agent>/namespaces/<str:ns>": ApiCase(KV, OWN),
    "api/v1/agents/<str:agent>/namespaces/<str:ns>/keys": ApiCase(KV, OWN),
    "api/v1/agents/<str:agent>/namespaces/<str:ns>/keys/<path:key>": ApiCase(KV, OWN, bodies(lambda w: {"b": 1})),
    "api/v1/agents/<str:agent>/namespaces/<str:ns>/key": ApiCase(KV, OWN, bodies(lambda w: {"b": 1}),
                                                                   query=lambda w: {"key": ENTRY_KEY}),
    "api/v1/agents/<str:agent>/namespaces/<str:ns>/export": ApiCase(KV, OWN),
    "api/v1/agents/<str:agent>/runs": ApiCase(KV, OWN, bodies(lambda w: {"mode": "record"})),
    "api/v1/agents/<str:agent>/runs/<str:run_id>": ApiCase(KV, NOT_FOUND),
    "api/v1/agents/<str:agent>/runs/<str:run_id>/close": ApiCase(KV, NOT_FOUND),
    "api/v1/agents/<str:agent>/runs/<str:run_id>/journal": ApiCase(KV, NOT_FOUND),
    # Memory files: any key reads; writes need an agent-scope or reviewer-scope key.
    "api/v1/memory": ApiCase(ALL, OWN),
    "api/v1/memory/<str:target>": ApiCase(ALL, OWN, bodies(lambda w: {"action": "add", "content": "b note"}),
                                         method_kinds={"POST": MEMORY_WRITERS}),
    "api/v1/memory/<str:target>/history": ApiCase(ALL, OWN),
    "api/v1/memory/<str:target>/undo": ApiCase(MEMORY_REVIEWERS, NOT_FOUND,
                                              bodies(lambda w: {"version": w.memory_version})),
    "api/v1/sessions": ApiCase(ALL, OWN, bodies(lambda w: {}, lambda w: {"chat_id": w.session_id}),
                               refuses_read_only=False),
    "api/v1/sessions/<str:session_id>": ApiCase(ALL, NOT_FOUND),
    "api/v1/pending": ApiCase(ALL, OWN),
    "api/v1/pending/approve-all": ApiCase(MEMORY_REVIEWERS, OWN, bodies(lambda w: {})),
    "api/v1/pending/<str:pending_id>": ApiCase(ALL, NOT_FOUND),
    "api/v1/pending/<str:pending_id>/approve": ApiCase(MEMORY_REVIEWERS, NOT_FOUND, bodies(lambda w: {})),
    "api/v1/pending/<str:pending_id>/reject": ApiCase(MEMORY_REVIEWERS, NOT_FOUND, bodies(lambda w: {})),
    "api/v1/tools/memory": ApiCase(MEMORY_WRITERS, OWN, bodies(
        lambda w: {"action": "add", "target": "memory", "content": "b note"},
        lambda w: {"action": "remove", "target": "memory", "old_text": CANARY["memory"][:12]},
    )),
    "api/v1/tools/memory/schema": ApiCase(ALL, OWN),
    # Atoms (docs/atoms.md "Decisions"): refs, tokens, receipts and keys belong to A's tenant and are unknown in B:
    # INVALID_REF / INVALID_INPUT (400) for data, ACCESS_DENIED (403) for a foreign binding key.
    "api/v1/atoms/write": ApiCase(ALL, frozenset({400, 403}), bodies(_revise, _cite, _link),
                                  refuses_read_only=True),
    "api/v1/atoms/inspect": ApiCase(ALL, frozenset({400}), bodies(
        lambda w: {"ref": w.atom_ref}, lambda w: {"ref": w.admin_ref}), refuses_read_only=False),
    "api/v1/atoms/search": ApiCase(ALL, OWN, bodies(lambda w: {"query": ATOM_QUERY}),
                                   refuses_read_only=False),
    "api/v1/atoms/read": ApiCase(ALL, OWN, bodies(lambda w: {"state": {"query": ATOM_QUERY}}),
                                 refuses_read_only=False),
    "api/v1/atoms/purge": ApiCase(ADMIN, frozenset({400, 403, 404}), bodies(
        lambda w: {"atomId": w.atom_id, "options": {"dryRun": True}},
        lambda w: {"ref": w.admin_ref}, lambda w: {"atomId": w.atom_id})),
    "api/v1/atoms/observe": ApiCase(HOSTS, frozenset({400, 403}), bodies(
        lambda w: {"binding": {"key": w.key_id}, "input": {"presentations": [], "payloadDigest": "0" * 64}},
        lambda w: {"binding": {}, "input": {"presentations": [{"receipt": w.receipt_id}], "payloadDigest": "0" * 64}},
        lambda w: {"binding": {}, "input": {"inherit": [w.input_token], "payloadDigest": "0" * 64}},
    ), refuses_read_only=False),
    "api/v1/atoms/manifest": ApiCase(HOSTS, frozenset({400, 403}), bodies(
        lambda w: {"binding": {"key": w.key_id}, "receipt": w.receipt_id},
        lambda w: {"binding": {}, "receipt": w.receipt_id},
        lambda w: {"binding": {}, "input": w.input_token},
    ), refuses_read_only=False),
    "api/v1/atoms/uses": ApiCase(HOSTS, frozenset({400, 403}), bodies(
        lambda w: {"binding": {"key": w.key_id}, "refs": [], "eventId": "e"},
        lambda w: {"binding": {}, "refs": [w.admin_ref], "eventId": "e"},
        lambda w: {"binding": {}, "refs": [], "eventId": "e", "input": w.input_token},
    ), refuses_read_only=True),
    "api/v1/atoms/uses/reset": ApiCase(HOSTS, frozenset({403}), bodies(lambda w: {"binding": {"key": w.key_id}}),
                                       refuses_read_only=True),
    # The catch-all: any unmatched path under /api/v1/ is a 404 whoever asks.
    # No route: 404 NOT_FOUND for every key, read-only or not (docs/api.md), since nothing is there to refuse.
    "api/v1/(?P<path>.*)": ApiCase(ALL, NOT_FOUND, refuses_read_only=False),
    "api/v1/atoms/index/update": ApiCase(HOSTS, frozenset({200, 403, 503}), bodies(
        lambda w: {"binding": {"key": w.key_id}}, lambda w: {}), refuses_read_only=True),
    "api/v1/atoms/index/prioritize": ApiCase(HOSTS, frozenset({400, 403}), bodies(
        lambda w: {"binding": {}, "refs": [w.admin_ref]}, lambda w: {"binding": {"key": w.key_id}, "refs": []}),
        refuses_read_only=True),
    "api/v1/atoms/index/status": ApiCase(HOSTS, OWN, bodies(lambda w: {}), refuses_read_only=False),
    # NEW API ENTRIES GO HERE.
}


# --- UI: every page under /t/<slug>/ ---------------------------------------------------------
@dataclass(frozen=True)
class UiCase:
    """`methods` maps each method the page answers to the least role it needs. With A's slug
    every request is a 404; with B's own slug and A's object ids it is `expect` (after the
    role check: 403 below the role)."""

    methods: dict[str, str]
    expect: frozenset[Any]
    data: Callable[[World], dict[str, Any]] | None = None
    query: Callable[[World], dict[str, str]] | None = None


V, R, A = Role.VIEWER, Role.REVIEWER, Role.ADMIN
GET = {"GET": V}
ENTRY_QUERY = lambda w: {"key": ENTRY_KEY}  # noqa: E731 - a table cell

UI: dict[str, UiCase] = {
    "t/<slug:slug>/": UiCase(GET, OWN),
    "t/<slug:slug>/keys/": UiCase({"GET": A, "POST": A}, OWN, data=lambda w: {"kind": "agent", "name": "b key"}),
    "t/<slug:slug>/keys/<str:key_id>/revoke": UiCase({"POST": A}, NOT_FOUND),
    "t/<slug:slug>/agents/": UiCase(GET, OWN),
    "t/<slug:slug>/agents/<slug:agent>/": UiCase(GET, NOT_FOUND),
    "t/<slug:slug>/agents/<slug:agent>/runs/<str:run_id>/": UiCase(GET, NOT_FOUND),
    "t/<slug:slug>/agents/<slug:agent>/ns/<slug:ns>/": UiCase(GET, NOT_FOUND),
    "t/<slug:slug>/agents/<slug:agent>/ns/<slug:ns>/clear": UiCase({"POST": R}, NOT_FOUND),
    "t/<slug:slug>/agents/<slug:agent>/ns/<slug:ns>/entry": UiCase(GET, NOT_FOUND, query=ENTRY_QUERY),
    "t/<slug:slug>/agents/<slug:agent>/ns/<slug:ns>/entry/edit": UiCase(
        {"GET": R, "POST": R}, NOT_FOUND, data=lambda w: {"value": "1", "version": "1"}, query=ENTRY_QUERY),
    "t/<slug:slug>/agents/<slug:agent>/ns/<slug:ns>/entry/delete": UiCase(
        {"POST": R}, NOT_FOUND, data=lambda w: {"version": "1"}, query=ENTRY_QUERY),
    "t/<slug:slug>/memory/": UiCase(GET, OWN),
    "t/<slug:slug>/memory/badge": UiCase(GET, OWN),
    "t/<slug:slug>/memory/<target:target>/add": UiCase({"POST": R}, OWN, data=lambda w: {"content": "b", "version": "0"}),
    "t/<slug:slug>/memory/<target:target>/edit": UiCase(
        {"GET": R, "POST": R}, OWN, data=lambda w: {"index": "0", "version": "1", "content": "b"},
        query=lambda w: {"index": "0", "version": "1"}),
    "t/<slug:slug>/memory/<target:target>/remove": UiCase({"POST": R}, OWN, data=lambda w: {"index": "0", "version": "1"}),
    "t/<slug:slug>/memory/<target:target>/history/": UiCase(GET, OWN),
    "t/<slug:slug>/memory/<target:target>/restore": UiCase({"POST": R}, OWN, data=lambda w: {"version": str(w.memory_version)}),
    "t/<slug:slug>/memory/pending/": UiCase(GET, OWN),
    "t/<slug:slug>/memory/pending/approve-all": UiCase({"POST": R}, OWN),
    "t/<slug:slug>/memory/pending/bulk": UiCase({"POST": R}, NOT_FOUND,
                                                data=lambda w: {"decision": "approve", "ids": w.pending_id}),
    "t/<slug:slug>/memory/pending/<str:pending_id>/approve": UiCase({"POST": R}, NOT_FOUND),
    "t/<slug:slug>/memory/pending/<str:pending_id>/reject": UiCase({"POST": R}, NOT_FOUND),
    "t/<slug:slug>/memory/findings/": UiCase(GET, OWN),
    "t/<slug:slug>/memory/findings/<str:finding_id>/remove": UiCase({"POST": R}, NOT_FOUND),
    "t/<slug:slug>/memory/drift/": UiCase(GET, OWN),
    "t/<slug:slug>/memory/drift/marker": UiCase(GET, OWN),
    "t/<slug:slug>/memory/drift/<target:target>/import": UiCase({"POST": R}, OWN),
    "t/<slug:slug>/memory/drift/<target:target>/overwrite": UiCase({"POST": R}, OWN),
    "t/<slug:slug>/memory/settings/": UiCase({"GET": A, "POST": A}, OWN, data=lambda w: {"approval": "off"}),
    "t/<slug:slug>/memory/settings/secrets": UiCase({"POST": A}, OWN, data=lambda w: {"secret": "b-secret-value-1234"}),
    "t/<slug:slug>/memory/settings/secrets/clear": UiCase({"POST": A}, OWN),
    "t/<slug:slug>/audit/": UiCase(GET, OWN),
    # Atoms (docs/atoms.md "Review UI"): A's atom ids under B's slug are unknown atoms.
    "t/<slug:slug>/atoms/": UiCase(GET, OWN, query=lambda w: {"q": ATOM_QUERY}),
    "t/<slug:slug>/atoms/badge": UiCase(GET, OWN),
    "t/<slug:slug>/atoms/quarantine/": UiCase(GET, OWN),
    "t/<slug:slug>/atoms/playground/": UiCase({"GET": V, "POST": V}, OWN,
                                              data=lambda w: {"query": ATOM_QUERY, "tokens": "4096", "limit": "24"}),
    "t/<slug:slug>/atoms/<atomid:atom_id>/": UiCase(GET, NOT_FOUND),
    "t/<slug:slug>/atoms/<atomid:atom_id>/approve": UiCase({"POST": R}, NOT_FOUND),
    "t/<slug:slug>/atoms/<atomid:atom_id>/edit": UiCase({"POST": R}, NOT_FOUND, data=lambda w: {"text": "b was here"}),
    "t/<slug:slug>/atoms/<atomid:atom_id>/retire": UiCase({"POST": R}, NOT_FOUND),
    "t/<slug:slug>/atoms/<atomid:atom_id>/reject": UiCase({"POST": R}, NOT_FOUND),
    "t/<slug:slug>/atoms/<atomid:atom_id>/restore": UiCase({"POST": R}, NOT_FOUND),
    # The purge pages of an atom B does not have: a preview or progress of nothing in B.
    "t/<slug:slug>/atoms/<str:atom_id>/purge": UiCase({"GET": A, "POST": A}, OWN,
                                                      data=lambda w: {"confirm": "on"}),
    "t/<slug:slug>/atoms/<str:atom_id>/purge/progress": UiCase({"GET": A}, OWN),
    "t/<slug:slug>/atoms/<str:atom_id>/purge/resume": UiCase({"POST": A}, OWN),
    "t/<slug:slug>/atoms/<atomid:atom_id>/link-targets": UiCase({"GET": R}, NOT_FOUND, query=lambda w: {"q": ATOM_QUERY}),
    # Tenant administration: B's admin adds no one of A's (an unknown username), and A's
    # membership ids are unknown under B's slug.
    "t/<slug:slug>/members/": UiCase({"GET": A, "POST": A}, OWN, data=lambda w: {"username": "b-newcomer", "role": "viewer"}),
    "t/<slug:slug>/members/<int:member_id>/role": UiCase({"POST": A}, NOT_FOUND, data=lambda w: {"role": "viewer"}),
    "t/<slug:slug>/members/<int:member_id>/remove": UiCase({"POST": A}, NOT_FOUND),
    "t/<slug:slug>/settings/": UiCase({"GET": A, "POST": A}, OWN, data=lambda w: {"name": "b renamed"}),
    # NEW UI ENTRIES GO HERE.
}

# URLs that serve no tenant data, with the reason: exact routes, then route prefixes.
EXEMPT: dict[str, str] = {
    "healthz": "health report: no tenant data",
    "favicon.ico": "redirect to the static icon",
    "login/": "login form",
    "logout/": "logout",
    "": "home: redirects to the user's own tenants only",
    "api/v1/schema/": "the public OpenAPI schema",
    "api/v1/docs/": "Swagger UI over the public schema",
    "api/v1/redoc/": "ReDoc over the public schema",
}
EXEMPT_PREFIXES: dict[str, str] = {
    "admin/": "the Django admin: staff only, tested in tests/tenants/ui/test_admin_site.py",
}


def exempt(template: str) -> bool:
    return template in EXEMPT or any(template.startswith(prefix) for prefix in EXEMPT_PREFIXES)
