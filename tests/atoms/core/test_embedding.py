"""FakeHashProvider, chunking and vector helpers (docs/atoms.md "Semantic index")."""

from __future__ import annotations

import hashlib
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atoms.core.canonical import canonical, sha256_hex
from atoms.core.embedding import (
    EmbeddingProvider,
    FakeHashProvider,
    best_cosine,
    chunk_text,
    cosine,
    index_config,
    l2_normalize,
    pack_vector,
    text_hash,
    unpack_vector,
)
from atoms.core.text import part


def _slot(token: str, dims: int) -> tuple[int, float]:
    d = hashlib.sha256(token.encode()).digest()
    return int.from_bytes(d[0:4], "big") % dims, (-1.0 if d[4] % 2 else 1.0)


def test_it_names_itself_by_its_dimensions_and_defaults_to_64() -> None:
    assert FakeHashProvider().id == "fake-hash-v1:64"
    assert FakeHashProvider().dimensions == 64
    assert FakeHashProvider(8).id == "fake-hash-v1:8"
    assert isinstance(FakeHashProvider(), EmbeddingProvider)


@pytest.mark.parametrize("dimensions", [0, -1, True, 2.0])
def test_it_refuses_dimensions_that_are_not_positive_integers(dimensions: object) -> None:
    with pytest.raises(ValueError):
        FakeHashProvider(dimensions)  # type: ignore[arg-type]


def test_one_token_gives_a_signed_unit_vector_at_its_hashed_index() -> None:
    index, sign = _slot("needle", 64)
    [vector] = FakeHashProvider().encode(["NEEDLE!"])
    assert vector[index] == sign
    assert sum(abs(x) for x in vector) == 1.0


def test_it_sums_tokens_then_normalizes() -> None:
    dims = 64
    expected = [0.0] * dims
    for token in ["日本", "本語", "needle"]:
        index, sign = _slot(token, dims)
        expected[index] += sign
    norm = math.sqrt(sum(x * x for x in expected))
    [vector] = FakeHashProvider(dims).encode(["日本語 needle"])
    assert vector == pytest.approx([x / norm for x in expected], abs=1e-15)
    assert math.fsum(x * x for x in vector) == pytest.approx(1.0)


def test_repeated_tokens_count_once_because_tokens_are_distinct() -> None:
    provider = FakeHashProvider()
    assert provider.encode(["needle needle"]) == provider.encode(["needle"])


def test_texts_without_tokens_encode_to_the_zero_vector() -> None:
    assert FakeHashProvider(4).encode(["", "  ?! "]) == [[0.0] * 4, [0.0] * 4]
    assert l2_normalize([0.0, 0.0]) == [0.0, 0.0]


def test_shared_words_give_a_positive_cosine_and_identical_texts_one() -> None:
    provider = FakeHashProvider()
    a, b, same = provider.encode(["needle a", "needle b", "Needle A"])
    assert cosine(a, same) == pytest.approx(1.0)
    assert cosine(a, b) > 0


def test_the_best_cosine_feeds_the_semantic_part() -> None:
    provider = FakeHashProvider()
    signal = provider.encode_one("needle")
    vectors = provider.encode(["hay stack", "a needle"])
    best = best_cosine(signal, vectors)
    assert best is not None and best > 0
    assert part(1.0, best) == pytest.approx(0.8 * min(1.0, best) + 0.2)
    assert best_cosine(signal, []) is None
    assert cosine([0.0, 0.0], [1.0, 0.0]) == 0.0
    with pytest.raises(ValueError):
        cosine([1.0], [1.0, 0.0])


def test_vectors_pack_as_little_endian_float32() -> None:
    packed = pack_vector([1.0, -0.5])
    assert packed == b"\x00\x00\x80\x3f\x00\x00\x00\xbf"
    assert unpack_vector(packed, 2) == [1.0, -0.5]
    with pytest.raises(ValueError):
        unpack_vector(packed, 3)


def test_index_entries_name_their_config_and_text_by_digest() -> None:
    expected = sha256_hex(canonical({"dimensions": 64, "encoderId": "fake-hash-v1:64", "representationVersion": 3}))
    assert index_config("fake-hash-v1:64", 64) == expected
    assert text_hash("needle a") == hashlib.sha256(b"needle a").hexdigest()


# --- Chunking -------------------------------------------------------------------------------

def test_short_texts_are_one_chunk_and_empty_texts_none() -> None:
    assert chunk_text("needle a") == ["needle a"]
    assert chunk_text("x" * 1024) == ["x" * 1024]
    assert chunk_text("") == []


def test_chunks_end_after_the_last_whitespace_within_the_limit() -> None:
    text = "needle " * 300  # 2,100 bytes
    chunks = chunk_text(text)
    assert chunks[0] == "needle " * 146  # 1,022 bytes; the next word would pass 1,024
    assert all(chunk.endswith(" ") for chunk in chunks)
    assert "".join(chunks) == text


def test_without_whitespace_a_chunk_ends_at_the_last_whole_character() -> None:
    assert chunk_text("a" * 1025) == ["a" * 1024, "a"]
    chunks = chunk_text("日" * 400)  # 3 bytes each: 341 fit in 1,023 bytes
    assert [len(chunk) for chunk in chunks] == [341, 59]


def test_unicode_whitespace_counts_as_a_break() -> None:
    text = "x" * 1000 + "\u3000" + "y" * 100
    assert chunk_text(text) == ["x" * 1000 + "\u3000", "y" * 100]


def test_at_most_128_chunks_are_made() -> None:
    chunks = chunk_text("a" * (1024 * 130))
    assert len(chunks) == 128
    assert all(len(chunk) == 1024 for chunk in chunks)


@given(st.text(alphabet=st.sampled_from(["a", "é", "日", "😀", " ", "\n"]), max_size=3000))
def test_chunks_fit_the_limit_and_concatenate_back_to_the_text(text: str) -> None:
    chunks = chunk_text(text)
    assert "".join(chunks) == text
    assert all(0 < len(chunk.encode()) <= 1024 for chunk in chunks)
