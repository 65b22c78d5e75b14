"""What a candidate channel returns (docs/atoms.md "Candidates"): its own module because both
channels produce it, and the lexical channel's module calls the semantic one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Hits:
    pairs: list[tuple[str, str]]  # (atomId, revisionId), best first
    full: bool  # the channel returned its whole limit: more may have matched
    skipped: bool = False  # a term was left out of the lookup
    approximate: bool = False
    # Revision id → the whole row, read with the hits (both channels do: the core's re-read
    # then costs no query; docs/atoms.md "Read path costs").
    rows: dict[str, Any] = field(default_factory=dict, compare=False)
    # Revision id → the vectors of the row's valid index entry, or None without one, when the
    # channel read them with the rows (the lexical channel does when signals were encoded).
    vectors: dict[str, Any] = field(default_factory=dict, compare=False)
