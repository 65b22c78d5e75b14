"""length_batches: how the MiniLM provider cuts a call's texts into forward batches (atoms/minilm_runtime.py)."""

from __future__ import annotations

from itertools import combinations, pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from atoms.minilm_runtime import length_batches


def cost(batches: list[list[int]], lengths: list[int], overhead: int) -> int:
    return sum(len(batch) * max(lengths[i] for i in batch) + overhead for batch in batches)


def cheapest(lengths: list[int], max_rows: int, max_tokens: int, overhead: int) -> int:
    """Every way to cut the sorted texts into runs, by brute force."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    best = None
    for k in range(len(order)):
        for cuts in combinations(range(1, len(order)), k):
            bounds = [0, *cuts, len(order)]
            batches = [order[a:b] for a, b in pairwise(bounds)]
            if any(len(b) > max_rows or (len(b) > 1 and len(b) * lengths[b[0]] > max_tokens) for b in batches):
                continue
            total = cost(batches, lengths, overhead)
            best = total if best is None else min(best, total)
    assert best is not None
    return best


def test_equal_lengths_share_a_batch_and_a_long_text_goes_first():
    assert length_batches([10, 10, 10, 200], max_rows=8, overhead=48) == [[3], [0, 1, 2]]


def test_without_overhead_every_length_is_its_own_batch():
    assert length_batches([5, 7, 5, 9], max_rows=8, overhead=0) == [[3], [1], [0, 2]]


def test_the_row_and_token_caps_hold_and_a_longer_text_stands_alone():
    batches = length_batches([30] * 10 + [300], max_rows=4, max_tokens=100, overhead=1000)
    assert batches[0] == [10]
    assert all(len(b) <= 3 for b in batches[1:])  # 4 x 30 > 100 tokens
    assert sorted(i for b in batches for i in b) == list(range(11))


def test_nothing_gives_no_batches():
    assert length_batches([], max_rows=8) == []


@settings(max_examples=150, deadline=None)
@given(lengths=st.lists(st.integers(1, 40), min_size=1, max_size=8), max_rows=st.integers(1, 5),
       max_tokens=st.integers(20, 200), overhead=st.integers(0, 60))
def test_the_cuts_are_the_cheapest_and_cover_every_text_once(lengths, max_rows, max_tokens, overhead):
    batches = length_batches(lengths, max_rows=max_rows, max_tokens=max_tokens, overhead=overhead)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(flat, reverse=True)
    assert cost(batches, lengths, overhead) == cheapest(lengths, max_rows, max_tokens, overhead)
