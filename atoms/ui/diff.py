"""Side-by-side diff of two revision texts, in pure Python (difflib), rendered as a table.

Lines are compared first; a block of changed lines is then paired line by line and each
pair is compared word by word, so a one-word edit inside a long paragraph (the usual shape
of an atom) shows as one `<del>` and one `<ins>`, not as a whole replaced line. Every piece
of text is escaped here: revision texts are untrusted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from html import escape

WORD_RE = re.compile(r"\s+|\w+|[^\w\s]")


@dataclass(frozen=True)
class Segment:
    text: str
    changed: bool = False


@dataclass(frozen=True)
class Row:
    """One table row. `kind`: equal, replace, delete or insert; a side that has no line
    in this row has number None and no segments."""

    kind: str
    old_number: int | None
    new_number: int | None
    old: tuple[Segment, ...] = ()
    new: tuple[Segment, ...] = ()


def words(line: str) -> list[str]:
    """Words, runs of whitespace and single punctuation marks; joined they give `line`."""
    return WORD_RE.findall(line)


def _merge(segments: list[Segment]) -> tuple[Segment, ...]:
    out: list[Segment] = []
    for segment in segments:
        if not segment.text:
            continue
        if out and out[-1].changed == segment.changed:
            out[-1] = Segment(out[-1].text + segment.text, segment.changed)
        else:
            out.append(segment)
    return tuple(out)


def inline_diff(old: str, new: str) -> tuple[tuple[Segment, ...], tuple[Segment, ...]]:
    """Word-level segments of two lines: what only one side has is `changed`."""
    a, b = words(old), words(new)
    left: list[Segment] = []
    right: list[Segment] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            left.append(Segment("".join(a[i1:i2])))
            right.append(Segment("".join(b[j1:j2])))
        else:
            left.append(Segment("".join(a[i1:i2]), changed=True))
            right.append(Segment("".join(b[j1:j2]), changed=True))
    return _merge(left), _merge(right)


def diff_rows(old: str, new: str) -> list[Row]:
    """The rows of a side-by-side diff of `old` and `new`, line numbers from 1."""
    a, b = old.splitlines(), new.splitlines()
    rows: list[Row] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            rows += [Row("equal", i1 + k + 1, j1 + k + 1, (Segment(a[i1 + k]),), (Segment(b[j1 + k]),))
                     for k in range(i2 - i1)]
            continue
        paired = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        for k in range(paired):
            left, right = inline_diff(a[i1 + k], b[j1 + k])
            rows.append(Row("replace", i1 + k + 1, j1 + k + 1, left, right))
        rows += [Row("delete", i + 1, None, old=(Segment(a[i], changed=True),)) for i in range(i1 + paired, i2)]
        rows += [Row("insert", None, j + 1, new=(Segment(b[j], changed=True),)) for j in range(j1 + paired, j2)]
    return rows


def counts(rows: list[Row]) -> tuple[int, int]:
    """(lines added, lines removed); a changed line counts once on each side."""
    added = sum(1 for r in rows if r.kind in ("insert", "replace"))
    removed = sum(1 for r in rows if r.kind in ("delete", "replace"))
    return added, removed


def _cell(segments: tuple[Segment, ...], tag: str) -> str:
    return "".join(f"<{tag}>{escape(s.text)}</{tag}>" if s.changed else escape(s.text) for s in segments)


def render_table(rows: list[Row], *, old_label: str, new_label: str) -> str:
    """An accessible `<table class="diff">`: `<del>` on the old side, `<ins>` on the new."""
    head = (f'<table class="diff" data-testid="diff-table"><caption class="sr-only">Changes from {escape(old_label)} '
            f"to {escape(new_label)}</caption><thead><tr>"
            f'<th scope="col" class="num"><span class="sr-only">Line</span></th><th scope="col">{escape(old_label)}</th>'
            f'<th scope="col" class="num"><span class="sr-only">Line</span></th><th scope="col">{escape(new_label)}</th>'
            "</tr></thead><tbody>")
    body = []
    for row in rows:
        old_class = {"delete": "del", "replace": "del"}.get(row.kind, "")
        new_class = {"insert": "ins", "replace": "ins"}.get(row.kind, "")
        old_number = "" if row.old_number is None else str(row.old_number)
        new_number = "" if row.new_number is None else str(row.new_number)
        body.append(
            f'<tr class="{row.kind}"><td class="num">{old_number}</td>'
            f'<td class="{old_class or "same"}">{_cell(row.old, "del")}</td>'
            f'<td class="num">{new_number}</td><td class="{new_class or "same"}">{_cell(row.new, "ins")}</td></tr>')
    if not rows:
        body.append('<tr><td colspan="4" class="muted">Both texts are empty.</td></tr>')
    return head + "".join(body) + "</tbody></table>"
