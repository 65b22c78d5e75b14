"""Showing memory entries: hidden characters made visible, text always escaped."""

from __future__ import annotations

import unicodedata

from django import template
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

# Zero-width characters, joiners and bidi controls are format characters (Cf); control
# characters (Cc) other than newline and tab, and the Unicode line/paragraph separators, are
# just as invisible in a page. A reviewer must see every one of them to judge an entry.
_SHOWN_CONTROLS = {"\n", "\t"}
_HIDDEN_CATEGORIES = {"Cf", "Cc", "Zl", "Zp"}


def is_hidden(char: str) -> bool:
    return char not in _SHOWN_CONTROLS and unicodedata.category(char) in _HIDDEN_CATEGORIES


def codepoint(char: str) -> str:
    return f"U+{ord(char):04X}"


def segments(text: str) -> list[tuple[str, bool]]:
    """The text split into (piece, is_marker) runs; markers read "⟨U+200B⟩"."""
    parts: list[tuple[str, bool]] = []
    run: list[str] = []
    for char in text:
        if is_hidden(char):
            if run:
                parts.append(("".join(run), False))
                run = []
            parts.append((f"⟨{codepoint(char)}⟩", True))
        else:
            run.append(char)
    if run:
        parts.append(("".join(run), False))
    return parts


@register.filter
def reveal(text: str) -> SafeString:
    """Escaped text with each hidden character replaced by a visible ⟨U+XXXX⟩ marker.
    Every piece goes through escaping; only the marker element itself is markup."""
    html = [
        format_html('<span class="hidden-char" title="hidden character {}">{}</span>', piece[1:-1], piece)
        if marker else conditional_escape(piece)
        for piece, marker in segments(str(text))
    ]
    return mark_safe("".join(html))  # noqa: S308 - every piece above is escaped


@register.filter
def thousands(value: int) -> str:
    """2072 → "2,072", as the usage strings write counts (docs/memory-files.md "How it works")."""
    try:
        return f"{int(value):,}"
    except (TypeError, ValueError):
        return str(value)
