"""Namespace files (docs/kv.md "Import and export"): the export format and the import reader and applier.

A namespace file is one JSON object, exactly the bytes of Python's
json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False), UTF-8, no trailing newline.
The reader is as tolerant as the original where the spec says so (blank file, non-object)
and strict everywhere else; `import_namespace` applies one file in one transaction.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from django.db import transaction

from memoryhub.actors import Actor
from tenants.kv import store
from tenants.kv.rules import KvError, Limits, canonical, export_text, has_lone_surrogate, limit_exceeded, utf8_len
from tenants.models import Agent

FILE_SUFFIX = ".json"
# A file stem must already be a resolved name: resolving it would silently merge files.
NAMESPACE_STEM_RE = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
IMPORT_ACTOR = Actor.system("import")
ORIGINAL_LAYOUT = Path(".chidori") / "memory"

# Used only to locate a problem the parser reported without a position: a string (with its
# escapes), a NaN/Infinity constant or a number. Strings come first so nothing inside one
# is mistaken for a token.
_TOKEN_RE = re.compile(r'"(?:[^"\\]|\\.)*"|-?Infinity|NaN|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?')


def namespace_export(*, agent: Agent, namespace: str) -> str:
    """The namespace's file text; `{}` when it holds no key. Same bytes as the HTTP export."""
    return export_text(list(store.kv_items(agent=agent, namespace=namespace)))


# --- Reading -------------------------------------------------------------------------------

FileStatus = Literal["ok", "skipped", "error"]


@dataclass
class NamespaceFile:
    """One file as read. `items` are (key, canonical value) pairs, ready for store.kv_set."""

    name: str
    namespace: str | None
    status: FileStatus
    items: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None  # what is wrong and where; the caller names the file


class FileFormatError(Exception):
    """The text is not an acceptable namespace file; the message says where."""


def _position(text: str, index: int) -> str:
    line = text.count("\n", 0, index) + 1
    column = index - text.rfind("\n", 0, index)
    return f"line {line}, column {column}"


def _token_problem(token: str) -> str | None:
    if token.startswith('"'):
        return "a string with a lone surrogate" if has_lone_surrogate(json.loads(token)) else None
    if token.endswith(("NaN", "Infinity")):
        return f"{token}, which is not valid JSON"
    if any(mark in token for mark in ".eE"):
        return "a number beyond the range of a double" if math.isinf(float(token)) else None
    digits = len(token.lstrip("-"))
    limit = sys.get_int_max_str_digits()
    return f"an integer of {digits} digits (at most {limit} are supported)" if limit and digits > limit else None


def _locate_problem(text: str) -> str:
    """Where the first value the parser accepted but the store cannot hold is."""
    for match in _TOKEN_RE.finditer(text):
        problem = _token_problem(match.group())
        if problem is not None:
            return f"{_position(text, match.start())}: {problem}"
    return "a value that cannot be stored"


def _lone_surrogate_anywhere(value: Any) -> bool:
    stack = [value]  # iterative: a deep file must not hit the recursion limit here
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if has_lone_surrogate(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def parse_namespace_text(data: bytes) -> tuple[dict[str, Any], list[str]]:
    """The file's object and warnings. Raises FileFormatError with a position."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileFormatError(f"not valid UTF-8 at byte {exc.start}") from exc
    if not text.strip():
        return {}, []  # blank file: the original reads it as an empty store
    rejected: list[str] = []

    def constant(name: str) -> None:
        rejected.append(name)

    def number(token: str) -> float:
        value = float(token)
        if math.isinf(value):
            rejected.append(token)
        return value

    try:
        value = json.loads(text, parse_constant=constant, parse_float=number)
    except json.JSONDecodeError as exc:
        raise FileFormatError(f"invalid JSON at {_position(text, exc.pos)}: {exc.msg}") from exc
    except RecursionError as exc:
        raise FileFormatError("nested too deeply to read") from exc
    except ValueError as exc:  # an integer longer than the interpreter converts
        raise FileFormatError(f"invalid JSON at {_locate_problem(text)}") from exc
    if rejected or _lone_surrogate_anywhere(value):
        raise FileFormatError(f"invalid JSON at {_locate_problem(text)}")
    if not isinstance(value, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")
        return {}, [f"the file holds {kind}, not an object; read as {{}}"]
    return value, []


def _items_of(obj: dict[str, Any], warnings: list[str]) -> list[tuple[str, str]]:
    nulls = sum(1 for value in obj.values() if value is None)
    if nulls:
        # Keys are not echoed: stored text never reaches output or logs (docs/kv.md "Decisions the specification leaves open").
        warnings.append(f"{nulls} top-level null member{'s' if nulls != 1 else ''} skipped (null means absent)")
    if any("\x00" in key for key in obj):
        raise FileFormatError("a key contains U+0000, which a key must not")
    try:
        return sorted((key, canonical(value)) for key, value in obj.items() if value is not None)
    except (ValueError, RecursionError) as exc:
        raise FileFormatError("a value cannot be stored (nested too deeply)") from exc


def read_namespace_file(path: Path) -> NamespaceFile:
    """Read one `<namespace>.json`; never raises for the file's content."""
    # A name that is not UTF-8 arrives with surrogate escapes, which cannot be printed.
    name = os.fsencode(path.name).decode("utf-8", "backslashreplace")
    stem = name[: -len(FILE_SUFFIX)] if name.endswith(FILE_SUFFIX) else name
    if not NAMESPACE_STEM_RE.match(stem):
        shown = "an empty name (a hidden file)" if stem == "" else "not a valid namespace name"
        return NamespaceFile(name, None, "skipped",
                             warnings=[f"skipped: {shown}; names are 1-128 characters of A-Z a-z 0-9 _ -"])
    try:
        data = path.read_bytes()
    except OSError as exc:
        return NamespaceFile(name, stem, "error", error=f"cannot read the file: {exc.strerror}")
    try:
        obj, warnings = parse_namespace_text(data)
        items = _items_of(obj, warnings)
    except FileFormatError as exc:
        return NamespaceFile(name, stem, "error", error=str(exc))
    return NamespaceFile(name, stem, "ok", items=items, warnings=warnings)


def import_directory(path: Path) -> Path:
    """Where the files are: PATH/.chidori/memory when it exists (the original's layout), else PATH."""
    original = path / ORIGINAL_LAYOUT
    return original if original.is_dir() else path


def namespace_file_paths(directory: Path) -> list[Path]:
    """Every `*.json` entry, hidden ones included (so they can be reported), by name."""
    return sorted((p for p in directory.iterdir() if p.name.endswith(FILE_SUFFIX)), key=lambda p: p.name)


# --- Applying -------------------------------------------------------------------------------

@dataclass(frozen=True)
class ImportOutcome:
    namespace: str
    created: int
    updated: int
    cleared: int
    dry_run: bool


def _check_sizes(items: list[tuple[str, str]], limits: Limits) -> None:
    for key, value in items:
        if (size := utf8_len(key)) > limits.key_bytes:
            raise limit_exceeded("key_bytes", limits.key_bytes, size)
        if (size := utf8_len(value)) > limits.value_bytes:
            raise limit_exceeded("value_bytes", limits.value_bytes, size)


def import_namespace(
    *, agent: Agent, namespace: str, items: list[tuple[str, str]], replace: bool, dry_run: bool
) -> ImportOutcome:
    """Apply one file in one transaction: merge (upsert, version +1) or, with `replace`,
    clear first. A limit broken by any item raises KvError and nothing of the file stays.
    `dry_run` does all of it, limits included, then rolls back."""
    limits = store.limits_for(agent.tenant)
    _check_sizes(items, limits)
    created = updated = cleared = 0
    with transaction.atomic():
        if replace:
            cleared = store.kv_clear(agent=agent, namespace=namespace, actor=IMPORT_ACTOR)
        for key, value in items:
            _, was_created = store.kv_set(agent=agent, limits=limits, namespace=namespace, key=key, value=value,
                                          actor=IMPORT_ACTOR)
            created += was_created
            updated += not was_created
        if dry_run:
            transaction.set_rollback(True)
    return ImportOutcome(namespace, created, updated, cleared, dry_run)


__all__ = [
    "FileFormatError", "ImportOutcome", "KvError", "NamespaceFile", "import_directory", "import_namespace",
    "namespace_export", "namespace_file_paths", "parse_namespace_text", "read_namespace_file",
]
