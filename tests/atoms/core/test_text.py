"""Word tokens and the seed match (docs/atoms.md "Lexical index" and "Match"), against the worked example."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atoms.core.text import (
    is_cjk,
    lexical,
    lexical_tokens,
    normalize_for_match,
    part,
    seed_match,
    word_tokens,
)

# The five atoms of the worked example (docs/atoms.md "Worked example (search)").
A = "Brewing temperature for coffee: 93 C."
B = "Alice takes her coffee black."
C = "Water above 96 C scorches the grounds."
D = "Applies on weekdays only."
E = "Cold brew steeps for 12 hours."
QUERY = "coffee brew temperature"


def test_it_splits_cjk_runs_into_bigrams_and_keeps_latin_words_whole() -> None:
    assert word_tokens("日本語 needle") == ["日本", "本語", "needle"]


@pytest.mark.parametrize(("text", "expected"), [
    ("", []),
    ("  !?  ", []),
    ("Hello, WORLD hello", ["hello", "world"]),
    ("snake_case and-dash", ["snake_case", "and", "dash"]),
    ("日", ["日"]),
    ("日本", ["日本"]),
    ("東京abc大阪", ["東京", "abc", "大阪"]),
    ("x日y", ["x", "日", "y"]),
    ("ひらがなカタカナ", ["ひら", "らが", "がな", "なカ", "カタ", "タカ", "カナ"]),
    ("한국어", ["한국", "국어"]),
    ("\U00020000\U00020001", ["\U00020000\U00020001"]),
    ("\uff46\uff55\uff4c\uff4c\uff57\uff49\uff44\uff54\uff48 \uff21\uff22\uff23", ["fullwidth", "abc"]),  # fullwidth forms
    ("Straße STRASSE", ["straße", "strasse"]),
    ("ﬁle", ["file"]),
    ("日本日本", ["日本", "本日"]),
    ("93 C. 96 C", ["93", "c", "96"]),
])
def test_it_tokenizes_per_the_documented_rule(text: str, expected: list[str]) -> None:
    assert word_tokens(text) == expected


def test_it_counts_the_listed_cjk_ranges_only() -> None:
    assert is_cjk("あ") and is_cjk("ア") and is_cjk("中") and is_cjk("가") and is_cjk("\u3400")
    assert is_cjk("\uf900") and is_cjk("\U0002ffff")
    assert not is_cjk("a") and not is_cjk("é") and not is_cjk("\u303f") and not is_cjk("\U00030000")


def test_it_normalizes_with_nfkc_then_lowercase() -> None:
    assert normalize_for_match("\uff22\uff32\uff25\uff37 \u216b") == "brew xii"


def test_the_query_has_three_tokens() -> None:
    assert word_tokens(QUERY) == ["coffee", "brew", "temperature"]


@pytest.mark.parametrize(("atom", "expected"), [
    (A, Fraction(1)),
    (B, Fraction(1, 3)),
    (C, Fraction(0)),
    (D, Fraction(0)),
    (E, Fraction(1, 3)),
])
def test_it_reproduces_the_lexical_table(atom: str, expected: Fraction) -> None:
    assert lexical(QUERY, atom) == pytest.approx(float(expected), abs=1e-12)
    assert seed_match({"query": [QUERY]}, atom) == pytest.approx(float(expected), abs=1e-12)


def test_it_matches_by_substring_so_brew_is_found_in_brewing() -> None:
    assert lexical("brew", "Brewing temperature") == 1.0


def test_it_scores_zero_for_a_signal_without_tokens() -> None:
    assert lexical("?!", A) == 0.0
    assert lexical_tokens([], "anything") == 0.0


def test_it_counts_repeated_signal_tokens_once() -> None:
    assert lexical("coffee coffee tea", B) == pytest.approx(1 / 2)


@pytest.mark.parametrize(("lexical_score", "cosine", "expected"), [
    (1.0, 0.62, 0.696),
    (1 / 3, -0.10, 0.066667),
    (1 / 3, None, 0.333333),
    (0.0, 0.40, 0.32),
    (0.5, 1.7, 0.9),
])
def test_it_reproduces_the_part_checks(lexical_score: float, cosine: float | None, expected: float) -> None:
    assert part(lexical_score, cosine) == pytest.approx(expected, abs=5e-7)


@pytest.mark.parametrize(("atom", "expected"), [
    (A, Fraction(2, 3)),
    (B, Fraction(1, 2)),
    (E, Fraction(1, 6)),
    (C, Fraction(0)),
    (D, Fraction(0)),
])
def test_it_averages_query_and_context_kinds(atom: str, expected: Fraction) -> None:
    kinds = {"query": [QUERY], "context": ["Alice wants coffee"]}
    assert seed_match(kinds, atom) == pytest.approx(float(expected), abs=1e-9)


@pytest.mark.parametrize(("atom", "expected"), [
    (A, Fraction(5, 8)),
    (B, Fraction(5, 12)),
    (D, Fraction(1, 4)),
    (E, Fraction(1, 6)),
    (C, Fraction(0)),
])
def test_it_averages_each_kind_inside_itself_first(atom: str, expected: Fraction) -> None:
    kinds = {"query": [QUERY], "observations": ["black coffee", "weekdays"]}
    assert seed_match(kinds, atom) == pytest.approx(float(expected), abs=1e-9)


def test_the_six_decimal_figures_match_too() -> None:
    kinds = {"query": [QUERY], "observations": ["black coffee", "weekdays"]}
    assert seed_match(kinds, B) == pytest.approx(0.416667, abs=5e-7)
    assert seed_match({"query": [QUERY], "context": ["Alice wants coffee"]}, A) == pytest.approx(0.666667, abs=5e-7)


def test_blank_texts_and_empty_kinds_are_not_present() -> None:
    kinds = {"query": [QUERY], "context": ["   "], "thought": [], "observations": ["", "black tea", "\n"]}
    # Only query (1/3) and the one non-blank observation (1/2) count for B.
    assert seed_match(kinds, B) == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert seed_match({"context": [" "]}, B) == 0.0
    assert seed_match({}, B) == 0.0


def test_a_non_blank_text_without_tokens_still_counts_as_zero() -> None:
    assert seed_match({"observations": ["coffee", "!!!"]}, B) == pytest.approx(0.5)


def test_the_cosine_callback_switches_a_text_to_the_weighted_part() -> None:
    cosines = {QUERY: 0.62, "Alice wants coffee": None}
    kinds = {"query": [QUERY], "context": ["Alice wants coffee"]}
    # query: 0.8·0.62 + 0.2·1 = 0.696; context falls back to lexical 1/3.
    assert seed_match(kinds, A, cosine=cosines.get) == pytest.approx((0.696 + 1 / 3) / 2)


@given(st.text(max_size=60))
def test_tokens_are_distinct_non_empty_and_found_in_the_normalized_text(text: str) -> None:
    tokens = word_tokens(text)
    assert len(tokens) == len(set(tokens))
    normalized = normalize_for_match(text)
    assert all(token and token in normalized for token in tokens)
    assert lexical(text, text) == (1.0 if tokens else 0.0)



@given(st.text(alphabet=st.sampled_from("ab_ Z9.-\u00e9\u00df\ufb01\uff21\u65e5\u672c\u8a9e\uac00"), max_size=40))
def test_the_ascii_shortcut_gives_the_terms_of_the_per_run_rule(text: str) -> None:
    """An ASCII text skips the per-run split (atoms.core.text._make_terms); every text, ASCII
    or not, keeps the terms of the documented per-run rule, in order, duplicates kept."""
    from atoms.core.text import _WORD_RUN, _run_terms, index_terms, normalize_for_match

    for sample in (text, text.encode("ascii", "ignore").decode()):
        by_run = [term for run in _WORD_RUN.findall(normalize_for_match(sample)) for term in _run_terms(run)]
        assert index_terms(sample) == by_run
