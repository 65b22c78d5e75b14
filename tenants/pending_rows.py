"""How the memory pending queue shows an item (docs/memory-files.md "Review UI"): its steps,
a compact diff of a few lines, and the store's size if it were approved next.

Pure display helpers for tenants.views_memory_pending; nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memoryhub import threats
from tenants.memory import rules
from tenants.memory.importing import FILE_NAMES
from tenants.memory.rules import MemoryRuleError
from tenants.models import MemoryVolume, PendingWrite

# The compact diff shows at most this many steps, each text cut to this many characters;
# anything longer is in the item's "Full text" <details>.
DIFF_STEPS = 3
DIFF_CHARS = 160
# Sizes after approval are computed without the cap, so an item that would not fit still
# gets a number (and is marked over) instead of only the refusal.
UNCAPPED = 10**9
# Refusals about the store's cap: their service text is written for a model ("In this turn,
# merge … (see current_entries)"); the queue words them for a person (refusal_text).
CAP_CODES = ("OVER_LIMIT", "ENTRY_TOO_LONG")


@dataclass
class SizeAfter:
    """The store's size if this item alone were approved next, against today's entries."""

    file_name: str
    chars: int | None  # None: the item cannot be applied as it stands (see `blocked`)
    limit: int
    fits: bool = True
    blocked: str = ""  # the refusal's code, e.g. TARGET_CHANGED


@dataclass
class DiffLine:
    kind: str  # "add" or "del", the classes of ul.diff
    text: str


@dataclass
class PendingRow:
    item: PendingWrite
    steps: list[dict[str, Any]]  # action, content, old_text, pinned, index (from 1)
    error: str = ""
    drafts: dict[int, str] | None = None  # the reviewer's edits, kept when approval failed
    size: SizeAfter | None = None

    @property
    def last_error_text(self) -> str:
        """The refusal recorded by the last failed approval, worded for a person."""
        error = self.item.last_error or {}
        code, message = error.get("code", ""), error.get("message", "")
        return refusal_text(code, message, self.size) if code in CAP_CODES else f"{code}: {message}"

    @property
    def editable(self) -> bool:
        return any(step["action"] in ("add", "replace") for step in self.steps)

    @property
    def lines(self) -> list[DiffLine]:
        """The first steps as diff lines: what goes (the pinned entry if known) and what comes."""
        out = []
        for step in self.steps[:DIFF_STEPS]:
            gone = step["pinned"] or step["old_text"]
            if gone is not None:
                out.append(DiffLine("del", _cut(gone)))
            if step["content"] is not None:
                out.append(DiffLine("add", _cut(step["content"])))
        return out

    @property
    def more_steps(self) -> int:
        return max(len(self.steps) - DIFF_STEPS, 0)

    @property
    def truncated(self) -> bool:
        """Whether the compact diff leaves anything out (then the full text is offered)."""
        texts = [step[name] for step in self.steps for name in ("content", "old_text", "pinned") if step[name]]
        return self.more_steps > 0 or any(len(text) > DIFF_CHARS or "\n" in text for text in texts)


def _cut(text: str) -> str:
    line = " ⏎ ".join(text.splitlines())  # one line each; the full text keeps its line breaks
    return line if len(line) <= DIFF_CHARS else line[: DIFF_CHARS - 1] + "…"


def steps_of(item: PendingWrite, drafts: dict[int, str] | None = None) -> list[dict[str, Any]]:
    """The payload's steps for display; `draft` is what the edit form shows for each."""
    payload = item.payload
    operations = payload["operations"] if "operations" in payload else [payload]
    pinned = list(item.pinned or [])
    return [{"index": i, "action": op.get("action"), "content": op.get("content"), "old_text": op.get("old_text"),
             "pinned": pinned[i - 1] if i - 1 < len(pinned) else None,
             "draft": (drafts or {}).get(i, op.get("content") or "")}
            for i, op in enumerate(operations, start=1)]


def size_after(item: PendingWrite, volume: MemoryVolume) -> SizeAfter:
    """Plan the item as pending_approve would (same rules, pinned entries), without the cap."""
    entries, limit = volume.entries(item.target), volume.limit(item.target)
    size = SizeAfter(FILE_NAMES[item.target], None, limit)
    try:
        plan = rules.plan_write(rules.parse_request(item.payload, item.target), entries, UNCAPPED, volume.secrets,
                                pinned=item.pinned or [])
    except MemoryRuleError as exc:
        size.blocked = exc.code
        return size
    size.chars = rules.size_of(plan.entries if plan.entries is not None else entries)
    # The service's own size rule: over the cap only when the store gets smaller.
    size.fits = size.chars <= limit or size.chars < rules.size_of(entries)
    return size


def refusal_text(code: str, message: str, size: SizeAfter | None) -> str:
    """An approval's refusal as a person reads it (docs/memory-files.md "Refusals over the
    cap"): over the cap, the numbers and what to do; any other refusal keeps the service's
    message. `size` is the item's size after approval against today's entries; with no
    `chars` (an edited approval, whose size was not computed) the text gives no numbers. The
    API and the tool keep the service's text."""
    if code not in CAP_CODES or size is None:
        return message
    name, limit = size.file_name, size.limit
    if code == "ENTRY_TOO_LONG":
        return (f"An entry of this write alone is longer than the {limit:,} characters {name} may hold in total. "
                "Shorten it (Edit, then approve) or reject it.")
    what_to_do = ("Shorten it (Edit, then approve), remove or shorten another entry on the Memory page first, "
                  "or reject it. An admin can also raise the cap in the memory settings.")
    if size.chars is None or size.chars <= limit:  # the store changed since: no numbers that would not hold
        return f"{name} has no room for this write within its cap of {limit:,} characters. {what_to_do}"
    return (f"With this write, {name} would hold {size.chars:,} of its {limit:,} characters, "
            f"{size.chars - limit:,} too many. {what_to_do}")


def row_of(item: PendingWrite, volume: MemoryVolume, **state: Any) -> PendingRow:
    drafts = state.get("drafts")
    return PendingRow(item, steps_of(item, drafts), size=size_after(item, volume), **state)


def redacted_row(row: PendingRow, secrets: list[str]) -> PendingRow:
    """What a viewer sees: every text redacted again at display time. Items are stored
    redacted; this also covers the tenant's secrets added after an item was staged."""
    def clean(text: str | None) -> str | None:
        return threats.redact(text, secrets) if text is not None else None

    row.item.summary = clean(row.item.summary) or ""
    if isinstance(row.item.last_error, dict) and isinstance(row.item.last_error.get("message"), str):
        # A refusal may quote an entry (TARGET_CHANGED, NO_MATCH); it was recorded before a
        # secret added since could be redacted.
        row.item.last_error = {**row.item.last_error, "message": clean(row.item.last_error["message"])}
    row.error = clean(row.error) or ""
    row.steps = [{**step, **{name: clean(step[name]) for name in ("content", "old_text", "pinned", "draft")}}
                 for step in row.steps]
    return row
