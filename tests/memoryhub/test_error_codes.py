"""One domain error, one table of statuses (docs/api.md "Errors"): every code the code base
can raise has its row, and the stores' errors carry no HTTP status of their own."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from atoms.errors import AtomError
from memoryhub.api.codes import STATUS, status_for
from memoryhub.api.errors import ApiError, translate
from memoryhub.errors import DomainError
from tenants.kv.rules import KvError
from tenants.kv.runs import ReplayedError
from tenants.memory.importing import EntryProblem
from tenants.memory.rules import MemoryRuleError
from tenants.models import KvJournalRecord
from tenants.services.keys import TenantLimitReached

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("memoryhub", "tenants", "atoms", "mcp_server")
CODE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$|^[A-Z]{4,}$")
# Calls whose first argument is an error code: the error classes (…Error, …Problem), their
# `super().__init__`, helpers named …_error and those that build an error body from a code.
CODE_FIRST = {"__init__", "error_body", "_answer"}
# Assignments that name a code: an error class's fixed code, the Atom core's default code
# and the codes an API family answers for refused validation, permissions and parsing.
CODE_NAMES = re.compile(r"^(code|default_code|\w+_error_code|\w+_denied_code)$")


def _name_of(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _constant_code(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE.match(node.value):
        return node.value
    return None


def codes_in(source: str) -> set[str]:
    """Every literal error code a module raises or answers."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = _name_of(node)
            if (name in CODE_FIRST or name.endswith(("Error", "Problem", "_error"))) and node.args:
                found.add(_constant_code(node.args[0]) or "")
            if name == "Family":  # an MCP tool family: the codes it answers for refusals
                found.update(_constant_code(arg) or "" for arg in node.args)
            found.update(_constant_code(kw.value) or "" for kw in node.keywords if kw.arg == "code")
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and CODE_NAMES.match(t.id) for t in targets):
                found.add(_constant_code(node.value) or "")
    return found - {""}


def raised_codes() -> dict[str, list[str]]:
    where: dict[str, list[str]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for code in codes_in(path.read_text(encoding="utf-8")):
                where.setdefault(code, []).append(str(path.relative_to(ROOT)))
    return where


def test_every_code_raised_anywhere_has_a_status_in_the_table():
    where = raised_codes()
    missing = {code: paths for code, paths in where.items() if code not in STATUS}
    assert missing == {}
    # The scan sees every store, so an empty or partial scan cannot pass for a clean one.
    assert len(where) >= 55
    assert {"REPLAY_DIVERGED", "AMBIGUOUS_MATCH", "CURSOR_EXPIRED", "TENANT_LIMIT_REACHED", "INVALID_CHARACTER",
            "BUDGET_EXHAUSTED", "ACCESS_DENIED", "SESSION_NOT_FOUND", "DISK_CHANGED"} <= set(where)


def test_the_scan_finds_codes_in_each_way_they_are_written():
    source = '''
class Refusal(DomainError):
    code = "CLASS_CODE"
    default_code: ClassVar[str] = "DEFAULT_CODE"
    def __init__(self, message):
        super().__init__("SUPER_CODE", message)
class View:
    validation_error_code = "FAMILY_CODE"
raise KvError("KV_CODE", "m")
raise ApiError("m", code="KEYWORD_CODE")
raise MemoryRuleError(
    "SPLIT_CODE",
    "m",
)
raise _drift_error("HELPER_CODE", "m")
body = error_body("BODY_CODE", "m")
REST = Family("FAMILY_VALIDATION", "FAMILY_DENIED", "FAMILY_PARSE")
log("NOT_A_CODE_CALL")
'''
    assert codes_in(source) == {"CLASS_CODE", "DEFAULT_CODE", "SUPER_CODE", "FAMILY_CODE", "KV_CODE", "KEYWORD_CODE",
                                "SPLIT_CODE", "HELPER_CODE", "BODY_CODE", "FAMILY_VALIDATION", "FAMILY_DENIED",
                                "FAMILY_PARSE"}


@pytest.mark.parametrize("error", [
    KvError("SEQ_GAP", "m"),
    AtomError("CURSOR_EXPIRED", "m"),
    MemoryRuleError("RETRY_LIMIT", "m"),
    EntryProblem("STORE_NOT_EMPTY", "m"),
    TenantLimitReached("m", details={"limit": "max_api_keys"}),
    DomainError("INVALID_REQUEST", "m"),
])
def test_the_stores_errors_are_domain_errors_without_a_status(error):
    assert isinstance(error, DomainError)
    assert not hasattr(error, "status")


@pytest.mark.parametrize(("error", "status"), [
    (KvError("SEQ_GAP", "m", details={"expected": 3}), 409),
    (KvError("PRECONDITION_FAILED", "m"), 412),
    (AtomError("CURSOR_EXPIRED", "m"), 410),
    (AtomError("BUDGET_EXHAUSTED", "m"), 422),
    (MemoryRuleError("RETRY_LIMIT", "m", done=True), 429),
    (MemoryRuleError("THREAT_BLOCKED", "m"), 422),
    (TenantLimitReached("m", details={"limit": "max_api_keys"}), 409),
    (ApiError("m", code="SESSION_NOT_FOUND"), 404),
])
def test_the_handler_answers_a_domain_error_with_its_codes_row(error, status):
    got_status, body, _ = translate(error, {})
    assert got_status == status == status_for(error)
    assert body == {"error": {"code": error.code, "message": "m", "details": error.details}}


def test_a_replayed_key_value_error_keeps_the_status_it_was_recorded_with():
    record = KvJournalRecord(error_code="SEQ_GAP", error_status=418, error_message="m", error_details={"expected": 3})
    status, body, headers = translate(ReplayedError(record), {})
    assert (status, body["error"]["code"], headers) == (418, "SEQ_GAP", {"X-Memoryhub-Replayed": "true"})
