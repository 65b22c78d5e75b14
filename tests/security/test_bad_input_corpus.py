"""Every operation of the served OpenAPI schema against a corpus of bad input: each answer
is a 4xx in the error shape and nothing the tenant owns changes (docs/api.md "Input
boundary").

The operations are read from `/api/v1/schema/` when the test runs, so new endpoints are
covered without listing them. Each request aims at tenant A's real objects (tests/security/
world.py): path parameters name A's agent, namespace, key, run, key id, session and pending
write; bodies start from the operation's own schema example, so without the boundary most
requests would be valid and would store something (or, on PostgreSQL, fail with a 500).
Each operation is called with the first key kind it allows, in the order admin, host,
agent, reviewer, ingest, so the request reaches the view and its parser.

The corpus, and where each entry applies:

| Entry | Applies to |
|---|---|
| JSON nested 1,000 deep | operations with a request body |
| U+0000 in a string value / in an object key | operations with a request body |
| a lone surrogate escape (`\\ud800`) in a string value | operations with a request body |
| a repeated object key | operations with a request body |
| a JSON array where the object is expected | operations with a request body |
| `%00` / an encoded lone surrogate in a query parameter | every operation |
| `%00` / an encoded lone surrogate in a path parameter | operations with path parameters |

A GET or DELETE ignores a body, as HTTP says it may, so body entries go only where the
schema documents one. U+0000 stays where a view allows it (key-value values, docs/kv.md);
the entry then puts it elsewhere in the body. The memory tool's in-band error (200,
`success: false`) counts as a refusal for a body that is valid JSON (see IN_BAND). Encoded lone surrogates reach the server as the raw bytes a WSGI
server passes (`PATH_INFO` set directly, with gunicorn's `RAW_URI`): Django's test client would
re-encode them.

"Nothing changes" compares every row of every model with a path to the tenant
(tests/security/world.py `state_of`, which includes the audit log) before and after each
corpus entry; a difference names the models that changed. One world and Django's test
client keep the run at about 20 s.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pytest
from django.urls import resolve
from rest_framework.test import APIClient

from tests.conftest import error_of
from tests.security.world import AGENT, ENTRY_KEY, NAMESPACE, World, build_world, state_of

KIND_ORDER = ("admin", "host", "agent", "reviewer", "ingest")
# The memory tool answers every call it can read with 200 and a tool result, errors
# included, so that a framework hands it to the model unchanged (docs/memory-files.md). A
# JSON array is such a call; a body the boundary refuses is not (4xx, as for any endpoint).
IN_BAND = {"POST /api/v1/tools/memory"}
DEEP = "[" * 1000 + "]" * 1000
NUL, SURROGATE = "a\u0000b", "a\ud800b"
# Raw bytes as WSGI passes them (PEP 3333: bytes decoded as ISO-8859-1).
RAW_NUL, RAW_SURROGATE = "\x00", b"\xed\xa0\x80".decode("iso-8859-1")
MARK = "\ufdd0"  # a noncharacter no path holds: where the raw bytes go


@dataclass(frozen=True)
class Operation:
    method: str
    template: str  # "/api/v1/keys/{key_id}"
    path_params: tuple[str, ...]
    query_params: tuple[str, ...]
    example: Any  # the request body example, None without a body

    @property
    def label(self) -> str:
        return f"{self.method} {self.template}"


@dataclass(frozen=True)
class Request:
    path: str  # as the client would send it (percent-encoded)
    body: bytes | None = None
    path_info: str | None = None  # raw PATH_INFO, when it must not be re-encoded


def operations(schema: dict[str, Any]) -> Iterator[Operation]:
    for template, item in schema["paths"].items():
        for method, op in item.items():
            params = op.get("parameters", [])
            content = op.get("requestBody", {}).get("content", {}).get("application/json")
            example: Any = None
            if content is not None:
                examples = list(content.get("examples", {}).values())
                example = examples[0]["value"] if examples else {}
            yield Operation(method.upper(), template, tuple(p["name"] for p in params if p["in"] == "path"),
                            tuple(p["name"] for p in params if p["in"] == "query"), example)


def path_values(world: World) -> dict[str, str]:
    return {"agent": AGENT, "ns": NAMESPACE, "key": ENTRY_KEY, "run_id": world.run_id, "key_id": world.key_id,
            "target": "memory", "session_id": world.session_id, "pending_id": str(world.pending_id)}


def fill(template: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        template = template.replace("{" + name + "}", value)
    return template


def encode(values: dict[str, str]) -> dict[str, str]:
    return {name: quote(value, safe="") for name, value in values.items()}


def map_strings(value: Any, change: Callable[[str], Any]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [map_strings(item, change) for item in value]
    if isinstance(value, dict):
        return {key: map_strings(item, change) for key, item in value.items()}
    return value


def map_keys(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, list):
        return [map_keys(item, change) for item in value]
    if isinstance(value, dict):
        return {change(key): map_keys(item, change) for key, item in value.items()}
    return value


def as_object(example: Any) -> dict[str, Any]:
    return dict(example) if isinstance(example, dict) else {}


def with_bad_strings(example: Any, bad: str, exempt: Collection[str] = ()) -> bytes:
    """Every string of the example outside the `exempt` members gets `bad` appended; with
    none to change, a member "x" holding `bad` is added (refused by the boundary, whatever
    the view would say about an unknown member)."""
    changed: list[bool] = []

    def change(text: str) -> str:
        changed.append(True)
        return text + bad

    obj = {name: value if name in exempt else map_strings(value, change) for name, value in as_object(example).items()}
    if not changed:
        obj["x"] = bad
    return json.dumps(obj).encode()


def repeat_first_member(example: Any) -> bytes:
    obj = as_object(example) or {"x": "y"}
    first = next(iter(obj))
    text = json.dumps(obj)
    return ("{" + json.dumps(first) + ": " + json.dumps(obj[first]) + ", " + text[1:]).encode()


def deep_in_first_string(example: Any) -> bytes:
    marker = "\u2603deep\u2603"
    done: list[bool] = []

    def change(text: str) -> str:
        if done:
            return text
        done.append(True)
        return marker

    obj = map_strings(as_object(example), change)
    if not done:
        obj = {**obj, "x": marker}
    return json.dumps(obj).replace(json.dumps(marker), DEEP).encode()


# How each body entry turns an operation's example into a body; `exempt` names the members
# where the view allows U+0000 (key-value values, docs/kv.md).
BodyMaker = Callable[[Any, Collection[str]], bytes]
BODY_ENTRIES: dict[str, BodyMaker] = {
    "deep JSON": lambda ex, exempt: deep_in_first_string(ex),
    "U+0000 in a string value": lambda ex, exempt: with_bad_strings(ex, NUL, exempt),
    "U+0000 in an object key": lambda ex, exempt: json.dumps(map_keys({**as_object(ex), "k": 1},
                                                                      lambda k: k + NUL)).encode(),
    "lone surrogate escape": lambda ex, exempt: with_bad_strings(ex, SURROGATE),
    "repeated key": lambda ex, exempt: repeat_first_member(ex),
    "array for an object": lambda ex, exempt: json.dumps([as_object(ex)]).encode(),
}
QUERY_ENTRIES = {"%00 in a query parameter": "a%00b", "lone surrogate in a query parameter": "a%ED%A0%80b"}
PATH_ENTRIES = {"%00 in a path parameter": RAW_NUL, "lone surrogate in a path parameter": RAW_SURROGATE}
CORPUS = [*BODY_ENTRIES, *QUERY_ENTRIES, *PATH_ENTRIES]


def view_of(op: Operation, world: World) -> Any:
    return getattr(resolve(fill(op.template, encode(path_values(world)))).func, "view_class", None)


def requests_for(entry: str, op: Operation, world: World) -> list[Request]:
    values = path_values(world)
    path = fill(op.template, encode(values))
    example_body = json.dumps(op.example).encode() if op.example is not None else None
    if entry in BODY_ENTRIES:
        exempt = getattr(view_of(op, world), "body_nul_allowed", ())
        return [] if op.example is None else [Request(path, BODY_ENTRIES[entry](op.example, exempt))]
    if entry in QUERY_ENTRIES:
        names = op.query_params or ("q",)
        return [Request(f"{path}?{name}={QUERY_ENTRIES[entry]}", example_body) for name in names]
    made = []
    for name in op.path_params:
        # The path as UTF-8 bytes with the entry's raw bytes (not their UTF-8 encoding) spliced
        # in, then as a WSGI server passes it: those bytes decoded as ISO-8859-1.
        marked = fill(op.template, {**values, name: values[name] + MARK}).encode("utf-8")
        raw = marked.replace(MARK.encode("utf-8"), PATH_ENTRIES[entry].encode("iso-8859-1"))
        made.append(Request(path, example_body, path_info=raw.decode("iso-8859-1")))
    return made


def client_for(op: Operation, world: World) -> APIClient:
    allowed = getattr(view_of(op, world), "allowed_kinds", KIND_ORDER)
    kind = next(kind for kind in KIND_ORDER if kind in allowed)
    return world.client(kind)


def changed_models(before: str, after: str) -> list[str]:
    """The models whose rows differ between two `state_of` dumps."""
    old, new = json.loads(before), json.loads(after)
    return sorted(label for label in old.keys() | new.keys() if old.get(label) != new.get(label))


@pytest.fixture
def schema(client: Any) -> dict[str, Any]:
    response = client.get("/api/v1/schema/", {"format": "json"})
    assert response.status_code == 200
    return json.loads(response.content)


def test_every_operation_refuses_every_entry_of_the_corpus_and_nothing_changes(acme, eager, schema):
    world = build_world(acme)
    problems: list[str] = []
    sent = 0
    for entry in CORPUS:
        before = state_of(world.tenant)
        for op in operations(schema):
            client = client_for(op, world)
            for request in requests_for(entry, op, world):
                extra = {} if request.path_info is None else {
                    # What gunicorn passes: the raw bytes as ISO-8859-1 text, and the request
                    # line as the client sent it (memoryhub/api/url_input.py).
                    "PATH_INFO": request.path_info,
                    "RAW_URI": quote(request.path_info.encode("iso-8859-1"), safe="/")}
                response = client.generic(op.method, request.path, request.body or b"",
                                          content_type="application/json", **extra)
                sent += 1
                where = f"{entry}: {op.label} {request.path!r}"
                if op.label in IN_BAND and response.status_code == 200 and response.json().get("success") is False:
                    continue
                if not 400 <= response.status_code < 500:
                    problems.append(f"{where}: {response.status_code} {response.content[:200]!r}")
                    continue
                try:
                    error_of(response)
                except (AssertionError, ValueError) as exc:
                    problems.append(f"{where}: not the error shape: {exc}")
        if (after := state_of(world.tenant)) != before:
            problems.append(f"{entry}: rows changed in {', '.join(changed_models(before, after))}")
    assert sent > 300  # every operation got the query entries, and most got more
    assert not problems, "\n".join(problems)
