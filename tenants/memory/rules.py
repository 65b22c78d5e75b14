"""The memory tool's rules as pure functions over entry lists (docs/memory-files.md "How it works" and "Using it from an agent").

`plan_write` validates a request and computes the entries after it, without touching any
storage; the services call it under the volume lock and store what it returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memoryhub import threats
from memoryhub.errors import DomainError

# Entries are joined by a line holding only the section sign, as the original tool writes
# the files (docs/memory-files.md "How it works"); spelled as an escape so the one character
# is not mistaken for a section citation.
DIVIDER = "\u00a7"
SEPARATOR = f"\n{DIVIDER}\n"
TARGETS = ("memory", "user")
ACTIONS = ("add", "replace", "remove", "list")
ALIASES = {"read": "list", "get": "list"}
MAX_OPERATIONS = 50
DONE_NOTE = "This write is finished. Do not send it again."
BATCH_SUFFIX = " The batch was rejected as a whole; none of its steps took effect."


def fmt(n: int) -> str:
    return f"{n:,}"


def file_form(entries: Sequence[str]) -> str:
    return SEPARATOR.join(entries)


def holds_divider(text: str) -> bool:
    """Whether `text` holds a divider line, so that it would be read back as several entries
    (a text ending in one would swallow the next entry's divider)."""
    return SEPARATOR in text or text.endswith(f"\n{DIVIDER}")


def size_of(entries: Sequence[str]) -> int:
    return len(file_form(entries))


def usage(entries: Sequence[str], limit: int) -> str:
    cur = size_of(entries)
    return f"{min(cur * 100 // limit, 100)}% — {fmt(cur)}/{fmt(limit)} chars"


def preview(text: str, width: int = 80) -> str:
    return text if len(text) <= width else text[:width] + "..."


class MemoryRuleError(DomainError):
    """A refused write: `code`, English `message` and the extra result fields (`details`, also
    named `extra`: a tool result carries them beside `success: false`). The REST status is the
    code's row in memoryhub/api/codes.py."""

    def __init__(self, code: str, message: str, **extra: Any) -> None:
        super().__init__(code, message, {k: v for k, v in extra.items() if v is not None})

    @property
    def extra(self) -> dict[str, Any]:
        return self.details


def invalid(detail: str) -> MemoryRuleError:
    return MemoryRuleError("INVALID_REQUEST", f"Request not understood: {detail}.")


def unknown_action(action: Any) -> MemoryRuleError:
    return MemoryRuleError(
        "UNKNOWN_ACTION",
        f"Action '{action}' is not supported. Valid: add, replace, remove, list, or an operations list.",
    )


# --- Requests -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    action: str
    content: str | None = None
    old_text: str | None = None


@dataclass(frozen=True)
class WriteRequest:
    """A parsed, shape-checked request: one step, or a batch of steps, or a list."""

    target: str
    action: str  # add | replace | remove | list | batch
    steps: tuple[Step, ...] = ()

    @property
    def is_batch(self) -> bool:
        return self.action == "batch"

    def payload(self) -> dict[str, Any]:
        """The request as stored on a pending item."""
        def step_dict(step: Step) -> dict[str, Any]:
            return {k: v for k, v in {"action": step.action, "content": step.content, "old_text": step.old_text}.items()
                    if v is not None}
        if self.is_batch:
            return {"operations": [step_dict(s) for s in self.steps]}
        return step_dict(self.steps[0])


def redacted(request: WriteRequest, secrets: Sequence[str]) -> WriteRequest:
    """The request as it may be stored (a pending item, its summary): `content` and
    `old_text` of every step redacted, as the check order redacts them (docs/memory-files.md
    "Redaction")."""
    def clean(text: str | None) -> str | None:
        return threats.redact(text, secrets) if text is not None else None

    steps = tuple(Step(step.action, clean(step.content), clean(step.old_text)) for step in request.steps)
    return WriteRequest(request.target, request.action, steps)


def _opt_str(data: dict[str, Any], name: str) -> str | None:
    value = data.get(name)
    if value is not None and not isinstance(value, str):
        raise invalid(f"'{name}' must be a string")
    return value


def parse_target(raw: Any, *, tool_form: bool) -> str:
    if raw is None and tool_form:
        return "memory"
    if raw not in TARGETS:
        raise MemoryRuleError("INVALID_TARGET", f"Target '{raw}' is not valid; the targets are 'memory' and 'user'.")
    return str(raw)


def parse_request(data: Any, target: str) -> WriteRequest:
    """Check order steps (1)-(2): shape, action, batch form."""
    if not isinstance(data, dict):
        raise invalid("the body must be a JSON object")
    if "operations" in data:
        present = [name for name in ("action", "content", "old_text") if data.get(name) is not None]
        if present:
            raise invalid(f"'operations' cannot be combined with {', '.join(repr(p) for p in present)}")
        operations = data["operations"]
        if not isinstance(operations, list):
            raise invalid("'operations' must be a list")
        if len(operations) > MAX_OPERATIONS:
            raise invalid(f"at most {MAX_OPERATIONS} operations per batch, got {len(operations)}")
        if not operations:
            raise MemoryRuleError("BATCH_EMPTY", "The operations list is empty; send at least one.")
        steps = []
        for index, operation in enumerate(operations, start=1):
            if not isinstance(operation, dict):
                raise invalid(f"operation {index} must be an object")
            action = operation.get("action")
            if action not in ("add", "replace", "remove"):
                error = unknown_action(action)
                error.extra.update(operation_index=index, operation_action=action)
                raise error
            steps.append(Step(action, _opt_str(operation, "content"), _opt_str(operation, "old_text")))
        return WriteRequest(target, "batch", tuple(steps))
    action = data.get("action")
    action = ALIASES.get(action, action) if isinstance(action, str) else action
    if action not in ACTIONS:
        raise unknown_action(action)
    if action == "list":
        return WriteRequest(target, "list")
    return WriteRequest(target, action, (Step(action, _opt_str(data, "content"), _opt_str(data, "old_text")),))


# --- Planning ---------------------------------------------------------------------------------

@dataclass
class Plan:
    """The outcome of a write against a state: new entries (None = no change)."""

    entries: list[str] | None
    message: str
    pinned: list[str | None] = field(default_factory=list)


def _clean(step: Step, secrets: Sequence[str]) -> tuple[str | None, str | None]:
    """Steps (3)-(4) for one step: trim, emptiness, redaction, separator rule, threat scan."""
    # old_text is redacted like content: the stored entries are, so a credential quoted
    # from one still matches, and no error message (NO_MATCH echoes it) carries it.
    old = threats.redact(step.old_text.strip(), secrets) if step.old_text is not None else None
    content = step.content.strip() if step.content is not None else None
    if step.action in ("replace", "remove") and not old:
        raise MemoryRuleError(
            "OLD_TEXT_EMPTY",
            f"No old_text given. '{step.action}' needs a short piece of text found in exactly one entry; "
            "pick one from current_entries and call again.",
        )
    if step.action in ("add", "replace"):
        if not content:
            message = ("Nothing to save: content is missing or blank." if step.action == "add"
                       else "The replacement text is blank. To delete an entry, call 'remove'.")
            raise MemoryRuleError("CONTENT_EMPTY", message)
        content = threats.redact(content, secrets)
        if holds_divider(content):
            raise MemoryRuleError(
                "SEPARATOR_IN_CONTENT",
                f"The text contains the entry divider (a line holding only '{DIVIDER}') and would be read back as "
                "several entries. Reword that line.",
            )
        finding = threats.first_finding(content)
        if finding is not None:
            if finding.pattern == "invisible_unicode":
                message = (f"Refused: the text holds the hidden character {finding.codepoint}, which can smuggle "
                           "instructions. Delete it.")
            else:
                message = (f"Refused by scanner rule '{finding.pattern}': memory enters future system prompts, so it "
                           "may not instruct the model or move data out. Store the plain fact instead.")
            raise MemoryRuleError("THREAT_BLOCKED", message, pattern=finding.pattern, codepoint=finding.codepoint)
    return content, old


def _match(entries: list[str], old: str, target: str, pinned: str | None) -> int:
    """Index of the entry a replace/remove aims at. A pinned entry (approval) is found by
    whole-entry equality; otherwise old_text is a case-sensitive substring."""
    if pinned is not None:
        if pinned in entries:
            return entries.index(pinned)
        raise MemoryRuleError(
            "TARGET_CHANGED",
            f"Cannot approve: the entry this change aimed at ('{preview(pinned)}') no longer exists as it was. "
            "Edit the item or reject it.",
        )
    hits = [i for i, entry in enumerate(entries) if old in entry]
    if not hits:
        raise MemoryRuleError(
            "NO_MATCH",
            f"No {target} entry contains '{old}'. Matching is exact and case-sensitive; copy text from current_entries.",
        )
    distinct = list(dict.fromkeys(entries[i] for i in hits))
    if len(distinct) > 1:
        raise MemoryRuleError(
            "AMBIGUOUS_MATCH",
            f"'{old}' occurs in {len(distinct)} different entries. Use a longer piece found in only one (see matches).",
            matches=[preview(e) for e in distinct],
        )
    return hits[0]


def _entry_too_long(content: str, target: str, limit: int) -> MemoryRuleError:
    return MemoryRuleError(
        "ENTRY_TOO_LONG",
        f"This entry is {fmt(len(content))} chars but the whole {target} store is capped at {fmt(limit)}. "
        "Freeing space cannot help; shorten the entry.", entry_length=len(content),
    )


def _fits(before: list[str], after: list[str], limit: int) -> bool:
    # Over the limit is allowed only for writes that make the store strictly smaller
    # (an admin may have lowered the limit below the current size).
    new = size_of(after)
    return new <= limit or new < size_of(before)


def _apply_step(entries: list[str], step: Step, target: str, limit: int, secrets: Sequence[str],
                pinned: str | None) -> tuple[list[str], str, str | None, bool]:
    """One step on a working copy → (entries, message, pinned entry, skipped-duplicate)."""
    content, old = _clean(step, secrets)
    if step.action == "add":
        assert content is not None
        if content in entries:
            return entries, "That exact entry is already stored; nothing changed.", None, True
        if len(content) > limit:
            raise _entry_too_long(content, target, limit)
        return [*entries, content], "Saved a new entry.", None, False
    assert old is not None
    index = _match(entries, old, target, pinned)
    matched = entries[index]
    if step.action == "remove":
        return entries[:index] + entries[index + 1:], "Deleted the entry.", matched, False
    assert content is not None
    if content == matched:
        return entries, "That exact entry is already stored; nothing changed.", matched, False
    if len(content) > limit:
        raise _entry_too_long(content, target, limit)
    return [*entries[:index], content, *entries[index + 1:]], "Updated the entry.", matched, False


def plan_write(request: WriteRequest, entries: list[str], limit: int, secrets: Sequence[str] = (),
               pinned: Sequence[str | None] = ()) -> Plan:
    """Steps (3)-(5) against `entries`. Raises MemoryRuleError; batch errors name the step."""
    target = request.target
    if not request.is_batch:
        step = request.steps[0]
        after, message, matched, _ = _apply_step(list(entries), step, target, limit, secrets,
                                                 pinned[0] if pinned else None)
        if after == entries:
            return Plan(None, message, [matched])
        if step.action != "remove" and not _fits(entries, after, limit):
            if step.action == "add":
                new = after[-1]
                text = (f"The {target} store holds {fmt(size_of(entries))}/{fmt(limit)} chars; this "
                        f"{fmt(len(new))}-char entry does not fit. In this turn, merge or shorten entries with 'replace' "
                        "or drop stale ones with 'remove' (see current_entries), then add again, ideally in one batch.")
            else:
                text = (f"The result would hold {fmt(size_of(after))}/{fmt(limit)} chars. Shorten the new text or trim "
                        "other entries first.")
            raise MemoryRuleError("OVER_LIMIT", text)
        return Plan(after, message, [matched])
    working, skipped, pins = list(entries), 0, []
    for index, step in enumerate(request.steps, start=1):
        try:
            working, _, matched, duplicate = _apply_step(
                working, step, target, limit, secrets, pinned[index - 1] if index - 1 < len(pinned) else None)
        except MemoryRuleError as exc:
            exc.message = f"Step {index} ({step.action}): {exc.message}{BATCH_SUFFIX}"
            exc.extra.update(operation_index=index, operation_action=step.action)
            raise
        skipped += duplicate
        pins.append(matched)
    if not _fits(entries, working, limit):
        raise MemoryRuleError(
            "OVER_LIMIT",
            f"The result would hold {fmt(size_of(working))}/{fmt(limit)} chars. Shorten the new text or trim other "
            f"entries first.{BATCH_SUFFIX}",
        )
    message = f"Applied all {len(request.steps)} operations."
    if skipped:
        message += f" Skipped {skipped} add(s) already present."
    return Plan(working if working != entries else None, message, pins)


def summary_of(request: WriteRequest) -> str:
    if request.is_batch:
        text = f"batch of {len(request.steps)}: " + ", ".join(s.action for s in request.steps)
    else:
        step = request.steps[0]
        text = f"{step.action}: {(step.content or step.old_text or '').strip()}"
    return preview(text, 77)
