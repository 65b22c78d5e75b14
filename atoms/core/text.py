"""Word tokens, index terms and the seed match m(x) (docs/atoms.md "Candidates" as amended; docs/atoms.md
"Recall": "Lexical relevance").

The reference library segmented words with ICU; we use a documented rule instead so that
matching is reproducible without ICU: NFKC, lowercase, runs of `\\w`, CJK runs split into
overlapping bigrams (CJK has no spaces, and bigrams are the usual substitute for words).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Final

_WORD_RUN: Final = re.compile(r"\w+")

# Hiragana/Katakana, CJK Extension A, CJK Unified, Compatibility Ideographs, Hangul
# syllables, and planes 2-3 (Extensions B onwards): docs/atoms.md "Candidates" step 3.
CJK_RANGES: Final[tuple[tuple[int, int], ...]] = (
    (0x3040, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0xAC00, 0xD7AF),
    (0x20000, 0x2FFFF),
)

# The signal kinds of a read state (docs/atoms.md "Recall"); search uses "query" alone.
SIGNAL_KINDS: Final = ("query", "context", "thought", "observations", "signal")

# The weights of the observation match (below). Recall's weights are the tenant's
# `retrieval.weights` (atoms.config.DEFAULT_WEIGHTS).
SEMANTIC_WEIGHT: Final = 0.8
LEXICAL_WEIGHT: Final = 0.2


def normalize_for_match(text: str) -> str:
    """NFKC, then lowercase: the form both signal tokens and atom text are compared in."""
    return unicodedata.normalize("NFKC", text).lower()


_CJK_CLASS: Final = "".join(f"{chr(low)}-{chr(high)}" for low, high in CJK_RANGES)
# One sub-run: CJK characters, or anything else (applied to `\\w` runs only).
_SUB_RUN: Final = re.compile(f"[{_CJK_CLASS}]+|[^{_CJK_CLASS}]+")
_CJK_RUN: Final = re.compile(f"[{_CJK_CLASS}]+")


def is_cjk(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in CJK_RANGES)


def _run_tokens(run: str) -> Iterable[str]:
    """Split one `\\w` run into CJK and non-CJK sub-runs and yield their tokens.

    The character classes are compiled once: checking ranges per character in Python was
    a third of a search's time when every candidate re-tokenized its signals."""
    if run.isascii():
        yield run
        return
    for sub in _SUB_RUN.findall(run):
        if len(sub) == 1 or not _CJK_RUN.fullmatch(sub):
            yield sub
        else:
            for index in range(len(sub) - 1):
                yield sub[index:index + 2]


@lru_cache(maxsize=4096)
def _tokens(text: str) -> tuple[str, ...]:
    seen: dict[str, None] = {}  # a dict keeps insertion order: distinct, first-seen
    for run in _WORD_RUN.findall(normalize_for_match(text)):
        for token in _run_tokens(run):
            seen.setdefault(token, None)
    return tuple(seen)


def word_tokens(text: str) -> list[str]:
    """Distinct word tokens of `text`, in first-seen order (cached: signals are tokenized
    once per request, not once per candidate).

    >>> word_tokens("日本語 needle")
    ['日本', '本語', 'needle']
    """
    return list(_tokens(text))


def _run_terms(run: str) -> Iterable[str]:
    """The index terms of one `\\w` run: its tokens, plus every single character of a CJK
    sub-run longer than one character (so a one-character query still matches)."""
    yield from _run_tokens(run)
    if not run.isascii():
        for sub in _SUB_RUN.findall(run):
            if len(sub) > 1 and _CJK_RUN.fullmatch(sub):
                yield from sub


# Signal texts repeat across candidates and requests and are cached; a long text (a body) is
# tokenized each time, so the cache never pins large bodies in memory.
CACHED_TEXT = 2_048


def _make_terms(text: str) -> tuple[str, ...]:
    normalized = normalize_for_match(text)
    runs = _WORD_RUN.findall(normalized)
    if normalized.isascii():
        # An ASCII run is its own one term (_run_terms): no generator per word, the same tuple.
        return tuple(runs)
    return tuple(term for run in runs for term in _run_terms(run))


_cached_terms = lru_cache(maxsize=4096)(_make_terms)


def _terms(text: str) -> tuple[str, ...]:
    return _cached_terms(text) if len(text) <= CACHED_TEXT else _make_terms(text)


def body_terms(text: str) -> tuple[str, ...]:
    """`index_terms` as a tuple, from the same cache (not to be modified: it is shared)."""
    return _terms(text)


def index_terms(text: str) -> list[str]:
    """Every index term of `text`, duplicates kept, in text order (the BM25 index, docs/atoms.md
    "Lexical relevance").

    >>> index_terms("日本語 tea tea")
    ['日本', '本語', '日', '本', '語', 'tea', 'tea']
    """
    return list(_terms(text))


def distinct_terms(text: str) -> list[str]:
    """The distinct index terms of `text`, first seen first: the terms a signal text queries."""
    return list(dict.fromkeys(_terms(text)))


def term_counts(text: str) -> tuple[dict[str, int], int]:
    """(term → count, number of terms) of a body: BM25's tf(t, x) and |x|."""
    terms = _terms(text)
    # Counter counts in C, first seen first like the loop it replaced (a read scores ~200 bodies).
    return dict(Counter(terms)), len(terms)


def lexical_tokens(tokens: Sequence[str], normalized_text: str) -> float:
    """Share of `tokens` (already distinct) found as substrings of `normalized_text`.

    For callers that score one signal against many atoms: tokenize and normalize once.
    """
    if not tokens:
        return 0.0
    found = sum(1 for token in tokens if token in normalized_text)
    return found / len(tokens)


def lexical(signal_text: str, atom_text: str) -> float:
    """lexical(s, x): distinct tokens of s found in NFKC-lowercased x.text, over their count.

    Substring matching is deliberate: `brew` matches inside `brewing`. 0 when s has no tokens.
    """
    return lexical_tokens(word_tokens(signal_text), normalize_for_match(atom_text))


def part(lexical_score: float, cosine: float | None = None) -> float:
    """part(s, x) from the lexical score and, when x is indexed and v_s exists, the largest
    cosine between v_s and x's vectors (clamped to [0, 1]). Without a cosine the weights
    present are divided out, which leaves the lexical score alone."""
    if cosine is None:
        return lexical_score
    semantic = min(1.0, max(0.0, cosine))
    return SEMANTIC_WEIGHT * semantic + LEXICAL_WEIGHT * lexical_score


def is_blank(text: str) -> bool:
    return not text.strip()


def match(kinds: Mapping[str, Sequence[str]], part_of: Callable[[str], float]) -> float:
    """m(x) (docs/atoms.md "Match"): the mean over kinds present of the mean `part_of(text)` over
    that kind's non-blank texts; 0 when no kind is present."""
    kind_means: list[float] = []
    for texts in kinds.values():
        parts = [part_of(text) for text in texts if not is_blank(text)]
        if parts:
            kind_means.append(math.fsum(parts) / len(parts))
    if not kind_means:
        return 0.0
    return math.fsum(kind_means) / len(kind_means)


def seed_match(kinds: Mapping[str, Sequence[str]], atom_text: str,
               cosine: Callable[[str], float | None] | None = None) -> float:
    """The observation match (docs/atoms.md "Match" `mFloor` and staleness): the substring rule of
    docs/atoms.md "Candidates" before the amendment, kept so that an observation's floor and the staleness
    check of a later head compare like with like, whatever the corpus statistics do meanwhile.
    Recall ranks with `match` and BM25 instead (atoms.services.scoring).

    The mean over kinds present of the mean part over that kind's non-blank texts.

    `kinds` maps a signal kind to its texts (observations has many, the others one). A kind
    whose texts are all blank is not present. `cosine(signal_text)`, when given, returns the
    largest cosine for that text or None when there is no semantic score for it (no entry,
    no v_s); without it the match is lexical only. A text with no tokens still counts, with
    lexical 0, because the spec averages over non-blank texts, not over tokenizable ones.
    """
    normalized = normalize_for_match(atom_text)
    kind_means: list[float] = []
    for texts in kinds.values():
        parts = [
            part(lexical_tokens(_tokens(text), normalized), cosine(text) if cosine else None)
            for text in texts if not is_blank(text)
        ]
        if parts:
            kind_means.append(math.fsum(parts) / len(parts))
    if not kind_means:
        return 0.0
    return math.fsum(kind_means) / len(kind_means)
