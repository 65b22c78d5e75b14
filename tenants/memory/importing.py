"""Reading USER.md / MEMORY.md as the original tool writes them, and importing them
(docs/memory-files.md "How it works"). Used by `manage.py memory_import` and by the drift resolution
"Import disk version"; both store the result as one `import` version per store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import transaction

from memoryhub.actors import Actor
from memoryhub.audit import audit_record
from memoryhub.digests import sha256_hex
from tenants.memory import rules
from tenants.memory.rules import DIVIDER, SEPARATOR, MemoryRuleError, fmt, holds_divider
from tenants.models import MemoryVolume, Origin, Tenant

FILE_NAMES = {"memory": "MEMORY.md", "user": "USER.md"}
MAX_LIMIT = 65_536
BOM = "\ufeff"


class EntryProblem(MemoryRuleError):
    """A file that cannot be imported: `entry` is the 1-based entry number, or None when
    the problem is the file as a whole (unreadable, over the limit, store not empty)."""

    def __init__(self, code: str, message: str, *, entry: int | None = None, **extra: object) -> None:
        super().__init__(code, message, entry=entry, **extra)
        self.entry = entry


@dataclass(frozen=True)
class ParsedFile:
    entries: list[str]
    dropped_duplicates: int


def decode_file(data: bytes) -> str:
    """The file's text with a leading BOM removed and CRLF turned into LF.
    Raises EntryProblem(NOT_UTF8): such a file is never read as empty."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EntryProblem("NOT_UTF8", f"The file is not valid UTF-8 (byte {exc.start}).") from exc
    return text.removeprefix(BOM).replace("\r\n", "\n")


def parse_file(data: bytes) -> ParsedFile:
    """Split on the entry divider, trim, drop empty pieces and exact duplicates (first kept).
    A trailing newline or none both read the same."""
    entries: list[str] = []
    dropped = 0
    for piece in decode_file(data).split(SEPARATOR):
        entry = piece.strip()
        if not entry:
            continue
        if entry in entries:
            dropped += 1
            continue
        entries.append(entry)
    return ParsedFile(entries, dropped)


def threat_problem(entry_number: int, pattern: str, codepoint: str | None) -> EntryProblem:
    if pattern == "invisible_unicode":
        message = f"Refused: the text holds the hidden character {codepoint}, which can smuggle instructions."
    else:
        message = (f"Refused by scanner rule '{pattern}': memory enters future system prompts, so it may not "
                   "instruct the model or move data out.")
    return EntryProblem("THREAT_BLOCKED", message, entry=entry_number, pattern=pattern, codepoint=codepoint)


def clean_entries(entries: Sequence[str], secrets: Sequence[str]) -> list[str]:
    """Redact, then apply the separator rule and the threat scan to each entry, as a write
    would. Returns the redacted entries (duplicates that redaction created dropped)."""
    from memoryhub import threats

    cleaned: list[str] = []
    for number, entry in enumerate(entries, start=1):
        text = threats.redact(entry, secrets)
        if holds_divider(text):
            raise EntryProblem("SEPARATOR_IN_CONTENT", f"The entry ends with a line holding only '{DIVIDER}' and would "
                               "be read back differently.", entry=number)
        finding = threats.first_finding(text)
        if finding is not None:
            raise threat_problem(number, finding.pattern, finding.codepoint)
        if text not in cleaned:
            cleaned.append(text)
    return cleaned


def limit_for(entries: Sequence[str], before: Sequence[str], limit: int, target: str, *, raise_limit: bool) -> int:
    """The limit the store needs after the import: the current one when the entries fit
    (or shrink a store that is already over it, docs/memory-files.md "How it works"), a raised one when allowed."""
    size = rules.size_of(entries)
    if size <= limit or size < rules.size_of(before):
        return limit
    if raise_limit and size <= MAX_LIMIT:
        return size
    hint = "" if raise_limit else " Use --raise-limits to raise the limit to fit."
    raise EntryProblem("OVER_LIMIT", f"The {target} store would hold {fmt(size)}/{fmt(limit)} chars.{hint}")


def own_folder(tenant: Tenant) -> Path | None:
    root = getattr(settings, "MEMORYHUB_VOLUME_ROOT", None)
    return Path(root) / tenant.slug / "memories" if root else None


# --- The import command's service -----------------------------------------------------------

@dataclass
class StoreImport:
    """One file's outcome: what it held and what happened (or would happen) to the store."""

    target: str
    file_name: str
    entries: list[str] = field(default_factory=list)
    dropped_duplicates: int = 0
    before_count: int = 0
    version: int | None = None  # the new version; None when unchanged or a dry run
    unchanged: bool = False
    limit_raised_to: int | None = None
    disk_digest: str = ""


class ImportFailure(Exception):
    """A file that stops the whole import: its name and the problem."""

    def __init__(self, file_name: str, problem: EntryProblem) -> None:
        super().__init__(file_name, problem.code)
        self.file_name, self.problem = file_name, problem

    def __str__(self) -> str:
        where = f"entry {self.problem.entry}: " if self.problem.entry else ""
        return f"{self.file_name}: {where}{self.problem.code}: {self.problem.message}"


def read_folder(folder: Path) -> dict[str, bytes]:
    """The bytes of the files present in `folder`, by target. Raises ImportFailure when a
    present file cannot be read."""
    found: dict[str, bytes] = {}
    for target, name in FILE_NAMES.items():
        path = folder / name
        if not path.exists():
            continue
        try:
            found[target] = path.read_bytes()
        except OSError as exc:
            raise ImportFailure(name, EntryProblem("UNREADABLE", f"The file cannot be read: {exc.strerror or exc}.")) from exc
    return found


def memory_import(
    *, tenant: Tenant, files: dict[str, bytes], actor: Actor, replace: bool = False, raise_limits: bool = False,
    dry_run: bool = False, adopt: bool = False, reason: str = "import",
) -> list[StoreImport]:
    """Import both files in one transaction: all of them or none (ImportFailure names the
    file, entry and code). Never staged. `adopt` records the read bytes' digests as the
    ones on disk, so the tenant's own folder does not count as hand-edited afterwards."""
    from tenants.memory.service import _locked, commit_entries

    outcomes: list[StoreImport] = []
    with transaction.atomic():
        volume = _locked(tenant)
        for target in rules.TARGETS:
            if target not in files:
                continue
            outcome = _check_one(volume, target, files[target], replace=replace, raise_limits=raise_limits)
            outcomes.append(outcome)
        if dry_run:
            transaction.set_rollback(True)
            return outcomes
        for outcome in outcomes:
            target = outcome.target
            if outcome.limit_raised_to is not None:
                before_limit = volume.limit(target)
                setattr(volume, f"{target}_limit", outcome.limit_raised_to)
                volume.save(update_fields=[f"{target}_limit"])
                audit_record(tenant=tenant, actor=actor, action="memory.limit.raise", object_type="memory_store",
                             object_id=target, before=before_limit, after=outcome.limit_raised_to)
            if not outcome.unchanged:
                outcome.version = commit_entries(volume=volume, target=target, entries=outcome.entries,
                                                 origin=Origin.IMPORT, actor=actor, reason=reason)
            if adopt:
                setattr(volume, f"{target}_file_digest", outcome.disk_digest)
                setattr(volume, f"{target}_drift", None)
                volume.save(update_fields=[f"{target}_file_digest", f"{target}_drift"])
        if adopt and outcomes:
            from tenants.memory.projection import schedule_sync

            schedule_sync(volume)  # rewrites the adopted files in the canonical form
    return outcomes


def _check_one(volume: MemoryVolume, target: str, data: bytes, *, replace: bool, raise_limits: bool) -> StoreImport:
    name = FILE_NAMES[target]
    try:
        parsed = parse_file(data)
        entries = clean_entries(parsed.entries, volume.secrets)
        current = volume.entries(target)
        outcome = StoreImport(target, name, entries, parsed.dropped_duplicates, len(current),
                              unchanged=entries == current, disk_digest=sha256_hex(data))
        if current and not replace and not outcome.unchanged:
            raise EntryProblem("STORE_NOT_EMPTY", f"The {target} store already holds {len(current)} entries; "
                               "use --replace to replace them.")
        limit = volume.limit(target)
        new_limit = limit_for(entries, current, limit, target, raise_limit=raise_limits)
        outcome.limit_raised_to = new_limit if new_limit != limit else None
    except EntryProblem as problem:
        raise ImportFailure(name, problem) from problem
    return outcome
