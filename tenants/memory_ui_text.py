"""Refusals of the memory pages' own writes as a person reads them (docs/memory-files.md
"Review UI"). The services' messages are written for a model and stay so in the API and the
tool; only the size refusals get a person's wording here."""

from __future__ import annotations

from typing import Any

from tenants.memory import rules
from tenants.memory.importing import FILE_NAMES
from tenants.memory.rules import MemoryRuleError
from tenants.models import MemoryVolume
from tenants.pending_rows import UNCAPPED


def ui_message(error: MemoryRuleError, volume: MemoryVolume, target: str,
               data: dict[str, Any] | None = None) -> tuple[str, bool]:
    """The service's message, except for a refusal over the store's cap: that text is written
    for a model ("In this turn, merge … (see current_entries)") and stays so in the API and
    the tool; a person gets the numbers and what to do (docs/memory-files.md "Review UI").
    `data` is the refused write. Returns the text and whether it is about the cap. (Matching
    errors cannot happen here: the entry is aimed at whole and was read under the same lock
    as the write.)"""
    if data is None or error.code not in ("OVER_LIMIT", "ENTRY_TOO_LONG"):
        return error.message, False
    file_name, limit = FILE_NAMES[target], volume.limit(target)
    done, what = ("Not added", "entry") if data["action"] == "add" else ("Not saved", "text")
    if error.code == "ENTRY_TOO_LONG":
        length = error.extra.get("entry_length")
        alone = f"has {length:,} characters" if isinstance(length, int) else "is longer"
        return (f"{done}: this {what} alone {alone}, more than the {limit:,} that {file_name} may hold in total. "
                f"Shorten the {what}."), True
    entries = volume.entries(target)
    try:
        # The same rules without the cap give the size the write would have reached.
        plan = rules.plan_write(rules.parse_request(data, target), entries, UNCAPPED, volume.secrets,
                                pinned=[data["old_text"]] if "old_text" in data else [])
    except MemoryRuleError:
        plan = None
    size = rules.size_of(plan.entries) if plan is not None and plan.entries is not None else None
    if size is None or size <= limit:  # the store changed since: say what holds without numbers
        return (f"{done}: {file_name} has no room for this {what} within its cap of {limit:,} characters. "
                f"Shorten the {what}, or remove or shorten another entry first."), True
    return (f"{done}: with this {what}, {file_name} would hold {size:,} of its {limit:,} characters, "
            f"{size - limit:,} too many. Shorten the {what}, or remove or shorten another entry first."), True
