"""Random operation sequences on the KV store services, checked against a plain dict.

The model is written from the documented behaviour (docs/kv.md "Endpoints", "How it is stored"
and "Limits"), not from the code: namespace resolution, the validation order, canonical
values, versions (+1 on every set, 1 again after a delete), compare-and-set, the per-tenant
limits and code point order. The store is driven
the way the RPC drives it (tenants.kv.rules.validate_call, then tenants.kv.store), with
tiny limits so that every limit is reached. After every step the namespace summaries and
the per-namespace key counters must agree with the model.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from tenants.kv.rules import KvError, Limits, validate_call
from tenants.kv.store import (
    Precondition,
    PreconditionMismatch,
    kv_clear,
    kv_delete,
    kv_get,
    kv_list_text,
    kv_namespaces,
    kv_page,
    kv_set,
    limits_for,
)
from tenants.models import Agent, KvConfig, KvNamespace, Tenant
from tests.conftest import TEST_ACTOR

LIMITS = {"key_bytes": 16, "value_bytes": 64, "keys_per_namespace": 4, "namespaces_per_agent": 3,
          "response_bytes": 400}
ABSENT = object()  # a field left out of the body
_slugs = itertools.count()

namespaces = st.sampled_from([ABSENT, None, "default", "a", "a.b", "a_b", "a/b", "B", "日本", "é", "", 42,
                              "n" * 128, "n" * 129])
keys = st.one_of(
    st.sampled_from(["", " ", "a", "ab", "a_b", "a%", "b", "C", "user_10", "user_2", "User_x", "ﬀ", "😀", "a/b",
                     "x\x00y", "k" * 16, "k" * 17, "é" * 8, "é" * 9, None, 42]),
    st.text(alphabet="ab_%Cé", max_size=4),
)
prefixes = st.sampled_from([ABSENT, None, "", "a", "a_", "a%", "u", "user_", "é", "zz", 7])
expected_versions = st.one_of(st.just(ABSENT), st.integers(min_value=0, max_value=4),
                              st.sampled_from([-1, "1", True, 1.0, None]))
scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(max_size=8))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                                             max_size=3), max_leaves=6)


def canonical(value: Any) -> str:
    """Canonical JSON (docs/kv.md "How it is stored"): sorted keys at every level, no spaces, non-ASCII raw
    (Python's shortest floats)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def nbytes(text: str) -> int:
    return len(text.encode("utf-8"))


class Refused(Exception):
    """What the model expects the store to refuse with: (code, details subset)."""

    def __init__(self, code: str, **details: Any) -> None:
        super().__init__(code)
        self.code, self.details = code, details


class Conflict(Exception):
    def __init__(self, current: int | None) -> None:
        super().__init__(current)
        self.current = current


def model_namespace(body: dict[str, Any]) -> str:
    raw = body.get("namespace")
    if raw is None:
        return "default"
    if not isinstance(raw, str) or raw == "":
        raise Refused("INVALID_NAMESPACE")
    resolved = re.sub(r"[^A-Za-z0-9_-]", "_", raw)
    if len(resolved) > 128:
        raise Refused("INVALID_NAMESPACE", max=128, actual=len(resolved))
    return resolved


class KvStoreMachine(RuleBasedStateMachine):
    tenant: Tenant

    def __init__(self) -> None:
        super().__init__()
        self.agent = Agent.objects.create(tenant=self.tenant, slug=f"prop-{next(_slugs)}")
        self.limits: Limits = limits_for(self.tenant)
        # (resolved namespace, key) -> (canonical value, version)
        self.model: dict[tuple[str, str], tuple[str, int]] = {}

    # --- the model ------------------------------------------------------------------------

    def keys_in(self, namespace: str) -> list[str]:
        return sorted(key for ns, key in self.model if ns == namespace)

    def expect_key(self, body: dict[str, Any]) -> str:
        key = body.get("key")
        if not isinstance(key, str):
            raise Refused("KEY_REQUIRED")
        if "\x00" in key:
            raise Refused("KEY_INVALID")
        return key

    def expect_version_field(self, body: dict[str, Any]) -> int | None:
        if "expected_version" not in body:
            return None
        expected = body["expected_version"]
        if not isinstance(expected, int) or isinstance(expected, bool) or expected < 0:
            raise Refused("INVALID_ARGUMENT", field="expected_version")
        return expected

    def check_expected(self, expected: int | None, current: int | None) -> None:
        if expected is None:
            return
        if expected == 0 and current is not None:
            raise Conflict(current)
        if expected > 0 and current != expected:
            raise Conflict(current)

    def expect_set(self, body: dict[str, Any]) -> tuple[str, str, str, int, bool]:
        namespace = model_namespace(body)
        expected = self.expect_version_field(body)
        key = self.expect_key(body)
        if body.get("value") is None:
            raise Refused("VALUE_REQUIRED")
        if nbytes(key) > LIMITS["key_bytes"]:
            raise Refused("LIMIT_EXCEEDED", limit="key_bytes", max=LIMITS["key_bytes"], actual=nbytes(key))
        value = canonical(body["value"])
        if nbytes(value) > LIMITS["value_bytes"]:
            raise Refused("LIMIT_EXCEEDED", limit="value_bytes", max=LIMITS["value_bytes"], actual=nbytes(value))
        current = self.model.get((namespace, key))
        self.check_expected(expected, current[1] if current else None)
        if current is None:
            count = len(self.keys_in(namespace))
            if count + 1 > LIMITS["keys_per_namespace"]:
                raise Refused("LIMIT_EXCEEDED", limit="keys_per_namespace", max=LIMITS["keys_per_namespace"],
                              actual=count + 1)
            if count == 0:
                in_use = len({ns for ns, _ in self.model})
                if in_use + 1 > LIMITS["namespaces_per_agent"]:
                    raise Refused("LIMIT_EXCEEDED", limit="namespaces_per_agent",
                                  max=LIMITS["namespaces_per_agent"], actual=in_use + 1)
        version = current[1] + 1 if current else 1
        return namespace, key, value, version, current is None

    # --- running one call against the store and the model ------------------------------------

    @staticmethod
    def body(action: str, **fields: Any) -> dict[str, Any]:
        return {"action": action, **{name: value for name, value in fields.items() if value is not ABSENT}}

    @staticmethod
    def outcome_of(function: Any) -> tuple[str, Any]:
        try:
            return "ok", function()
        except (Refused, KvError) as exc:
            details = exc.details if isinstance(exc, Refused) else {
                name: value for name, value in exc.details.items() if name in ("limit", "max", "actual", "field")}
            return "refused", (exc.code, details)
        except (Conflict, PreconditionMismatch) as exc:
            return "conflict", exc.current if isinstance(exc, Conflict) else exc.current_version

    def precondition_of(self, expected: int | None) -> Precondition | None:
        # As the RPC maps expected_version: 0 = must be absent, N = must be at version N.
        if expected is None:
            return None
        return Precondition(must_be_absent=True) if expected == 0 else Precondition(versions=frozenset({expected}))

    def do_set(self, body: dict[str, Any]) -> None:
        def store() -> tuple[str, str, str, int, bool]:
            call = validate_call(body, self.limits)
            assert call.key is not None and call.value is not None
            entry, created = kv_set(agent=self.agent, limits=self.limits, namespace=call.namespace, key=call.key,
                                    value=call.value, actor=TEST_ACTOR,
                                    precondition=self.precondition_of(call.expected_version))
            return call.namespace, entry.key, entry.value, entry.version, created

        expected = self.outcome_of(lambda: self.expect_set(body))
        actual = self.outcome_of(store)
        assert actual == expected, body
        if expected[0] == "ok":
            namespace, key, value, version, _ = expected[1]
            self.model[(namespace, key)] = (value, version)

    # --- rules -------------------------------------------------------------------------------

    @rule(ns=namespaces, key=keys, value=values | st.just(ABSENT), expected=expected_versions)
    def set_key(self, ns: Any, key: Any, value: Any, expected: Any) -> None:
        self.do_set(self.body("set", namespace=ns, key=key, value=value, expected_version=expected))

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data(), value=values, stale=st.booleans())
    def compare_and_set(self, data: st.DataObject, value: Any, stale: bool) -> None:
        """A read-modify-write with the version just read (succeeds), or a stale one (conflicts)."""
        namespace, key = data.draw(st.sampled_from(sorted(self.model)))
        version = self.model[(namespace, key)][1] - (1 if stale else 0)
        self.do_set(self.body("set", namespace=namespace, key=key, value=value, expected_version=version))

    @rule(ns=st.sampled_from(["default", "a_b"]))
    def increment(self, ns: str) -> None:
        """The counter pattern: get, then set value + 1 with expected_version, then again stale."""
        entry = kv_get(agent=self.agent, namespace=ns, key="n")
        stored = json.loads(entry.value) if entry else 0
        current = stored if isinstance(stored, int) and not isinstance(stored, bool) else 0
        version = entry.version if entry else 0
        body = self.body("set", namespace=ns, key="n", value=current + 1, expected_version=version)
        self.do_set(body)
        self.do_set(body)  # the same version again: now stale, or the first one was refused

    @rule(ns=namespaces, key=keys)
    def get_key(self, ns: Any, key: Any) -> None:
        body = self.body("get", namespace=ns, key=key)

        def expect() -> tuple[str, int] | None:
            namespace, key_ = model_namespace(body), self.expect_key(body)
            return self.model.get((namespace, key_))

        def store() -> tuple[str, int] | None:
            call = validate_call(body, self.limits)
            assert call.key is not None
            entry = kv_get(agent=self.agent, namespace=call.namespace, key=call.key)
            return (entry.value, entry.version) if entry else None

        assert self.outcome_of(store) == self.outcome_of(expect), body

    @rule(ns=namespaces, key=keys, expected=expected_versions)
    def delete_key(self, ns: Any, key: Any, expected: Any) -> None:
        body = self.body("delete", namespace=ns, key=key, expected_version=expected)

        def expect() -> bool:
            namespace = model_namespace(body)
            version = self.expect_version_field(body)
            key_ = self.expect_key(body)
            current = self.model.get((namespace, key_))
            self.check_expected(version, current[1] if current else None)
            return current is not None

        def store() -> bool:
            call = validate_call(body, self.limits)
            assert call.key is not None
            return kv_delete(agent=self.agent, namespace=call.namespace, key=call.key, actor=TEST_ACTOR,
                             precondition=self.precondition_of(call.expected_version))

        expected_outcome = self.outcome_of(expect)
        assert self.outcome_of(store) == expected_outcome, body
        if expected_outcome == ("ok", True):
            del self.model[(model_namespace(body), body["key"])]

    @rule(ns=namespaces)
    def clear_namespace(self, ns: Any) -> None:
        body = self.body("clear", namespace=ns)

        def expect() -> int:
            namespace = model_namespace(body)
            return len(self.keys_in(namespace))

        def store() -> int:
            return kv_clear(agent=self.agent, namespace=validate_call(body, self.limits).namespace, actor=TEST_ACTOR)

        expected = self.outcome_of(expect)
        assert self.outcome_of(store) == expected, body
        if expected[0] == "ok":
            namespace = model_namespace(body)
            self.model = {k: v for k, v in self.model.items() if k[0] != namespace}

    @rule(ns=namespaces, prefix=prefixes)
    def list_keys(self, ns: Any, prefix: Any) -> None:
        body = self.body("list", namespace=ns, prefix=prefix)

        def expect() -> str:
            namespace = model_namespace(body)
            raw = body.get("prefix")
            if raw is not None and not isinstance(raw, str):
                raise Refused("INVALID_ARGUMENT", field="prefix")
            items = [(key, self.model[(namespace, key)][0]) for key in self.keys_in(namespace)
                     if key.startswith(raw or "")]
            text = "[" + ",".join(f'{{"key":{json.dumps(k, ensure_ascii=False)},"value":{v}}}' for k, v in items) + "]"
            if nbytes(text) > LIMITS["response_bytes"]:
                raise Refused("LIMIT_EXCEEDED", limit="response_bytes", max=LIMITS["response_bytes"],
                              actual=nbytes(text))
            return text

        def store() -> str:
            call = validate_call(body, self.limits)
            return kv_list_text(agent=self.agent, namespace=call.namespace, prefix=call.prefix, limits=self.limits)

        assert self.outcome_of(store) == self.outcome_of(expect), body

    @rule(ns=st.sampled_from(["default", "a_b", "B", "n" * 128]), prefix=st.sampled_from(["", "a", "u", "é"]),
          limit=st.integers(min_value=1, max_value=3))
    def walk_pages(self, ns: str, prefix: str, limit: int) -> None:
        """Pages in list order, no key twice or missing, never empty while keys remain."""
        seen: list[tuple[str, str, int]] = []
        after: str | None = None
        for _ in range(len(self.model) + 2):
            page, last = kv_page(agent=self.agent, namespace=ns, prefix=prefix, after=after, limit=limit,
                                 max_bytes=LIMITS["response_bytes"])
            assert 1 <= len(page) <= limit or (not page and last is None and after is None)
            seen += [(entry.key, entry.value, entry.version) for entry in page]
            if last is None:
                break
            after = last
        expected = [(key, *self.model[(ns, key)]) for key in self.keys_in(ns) if key.startswith(prefix)]
        assert seen == expected

    # --- invariants ----------------------------------------------------------------------------

    @invariant()
    def namespaces_summarize_the_model(self) -> None:
        summaries = [(s.namespace, s.keys, s.bytes) for s in kv_namespaces(agent=self.agent)]
        expected = []
        for namespace in sorted({ns for ns, _ in self.model}):
            keys_ = self.keys_in(namespace)
            size = sum(nbytes(key) + nbytes(self.model[(namespace, key)][0]) for key in keys_)
            expected.append((namespace, len(keys_), size))
        assert summaries == expected

    @invariant()
    def key_counters_match(self) -> None:
        # The counter rows are what the limits are enforced against.
        for name, count in KvNamespace.objects.filter(agent=self.agent).values_list("name", "key_count"):
            assert count == len(self.keys_in(name)), name


@pytest.mark.django_db
def test_kv_store_follows_the_model(acme: Tenant) -> None:
    KvConfig.objects.update_or_create(tenant=acme, defaults=LIMITS)
    KvStoreMachine.tenant = acme
    run_state_machine_as_test(KvStoreMachine, settings=settings(
        max_examples=60, stateful_step_count=30, derandomize=True, database=None, deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    ))
