"""Signal texts of a read or search state (shared by candidates and semantic scoring)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from atoms.core.text import is_blank


def signal_texts(kinds: Mapping[str, Sequence[str]]) -> list[str]:
    """Distinct non-blank texts over every kind, first seen first: what gets a vector v_s."""
    seen: dict[str, None] = {}
    for texts in kinds.values():
        for text in texts:
            if isinstance(text, str) and not is_blank(text):
                seen.setdefault(text, None)
    return list(seen)
