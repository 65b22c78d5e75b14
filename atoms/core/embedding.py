"""Embedding providers, the deterministic fake, chunking and vector helpers (docs/atoms.md "Semantic index").

Only the provider protocol and the pure parts live here. The MiniLM provider needs torch
and is built on the Django/worker side; FakeHashProvider is pure so that indexing and
semantic scoring can be tested without a model.
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable

from atoms.core.canonical import digest, sha256_hex
from atoms.core.spans import trim_to_boundary
from atoms.core.text import word_tokens

if TYPE_CHECKING:
    import numpy as np

REPRESENTATION_VERSION: Final = 3
CHUNK_MAX_BYTES: Final = 1024
MAX_CHUNKS: Final = 128
FAKE_DEFAULT_DIMENSIONS: Final = 64


@runtime_checkable
class EmbeddingProvider(Protocol):
    """Encodes texts into vectors of `dimensions` floats; `id` names the encoder. The
    answer is one row per text: lists of floats or a (len(texts), dimensions) array."""

    id: str
    dimensions: int

    def encode(self, texts: list[str]) -> list[list[float]] | np.ndarray: ...


def l2_normalize(vector: Sequence[float]) -> list[float]:
    """`vector` scaled to unit length; a zero vector stays zero (it has no direction)."""
    norm = math.sqrt(math.fsum(x * x for x in vector))
    if norm == 0:
        return [0.0] * len(vector)
    return [x / norm for x in vector]


class FakeHashProvider:
    """A deterministic bag-of-words encoder for tests (`fake-hash-v1:<dims>`).

    Each word token t adds ±1 at `int.from_bytes(d[0:4], "big") % dims`, where
    d = sha256(t) and the sign is negative when d[4] is odd; the sum is then L2-normalized.
    Texts sharing tokens therefore have positive cosine, and nothing needs a model.
    """

    def __init__(self, dimensions: int = FAKE_DEFAULT_DIMENSIONS) -> None:
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
            raise ValueError("dimensions must be a positive integer")
        self.dimensions = dimensions
        self.id = f"fake-hash-v1:{dimensions}"

    def encode_one(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        for token in word_tokens(text):
            d = hashlib.sha256(token.encode("utf-8")).digest()
            index = int.from_bytes(d[0:4], "big") % self.dimensions
            vector[index] += -1.0 if d[4] % 2 else 1.0
        return l2_normalize(vector)

    def encode(self, texts: list[str]) -> list[list[float]]:
        return [self.encode_one(text) for text in texts]


def chunk_text(text: str) -> list[str]:
    """Split an atom's text into the chunks that get one vector each.

    A chunk is at most 1,024 UTF-8 bytes and ends just after the last whitespace that fits,
    or, with no whitespace in the window, at the last whole character. The whitespace stays
    in the chunk, so the chunks concatenate back to the text. At most 128 chunks are made;
    the rest of a longer text is not embedded (its lexical match still sees all of it).
    An empty text has no chunks.
    """
    data = text.encode("utf-8")
    chunks: list[str] = []
    position = 0
    while position < len(data) and len(chunks) < MAX_CHUNKS:
        if len(data) - position <= CHUNK_MAX_BYTES:
            chunks.append(data[position:].decode("utf-8"))
            break
        # position is always on a boundary, so the window decodes cleanly.
        window = data[position:trim_to_boundary(data, position + CHUNK_MAX_BYTES)].decode("utf-8")
        cut = len(window)
        for index in range(len(window) - 1, -1, -1):
            if window[index].isspace():
                cut = index + 1
                break
        chunk = window[:cut]
        chunks.append(chunk)
        position += len(chunk.encode("utf-8"))
    return chunks


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0 when either vector is zero (no direction, no similarity)."""
    if len(a) != len(b):
        raise ValueError("vectors of different dimensions")
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    if norm == 0:
        return 0.0
    return math.fsum(x * y for x, y in zip(a, b, strict=True)) / norm


def best_cosine(signal_vector: Sequence[float], vectors: Sequence[Sequence[float]]) -> float | None:
    """The largest cosine between v_s and an atom's vectors, or None when it has none.

    Unclamped: text.part() clamps it into [0, 1] as semantic(s, x)."""
    if not vectors:
        return None
    return max(cosine(signal_vector, vector) for vector in vectors)


def pack_vector(vector: Sequence[float]) -> bytes:
    """Little-endian float32, the stored form of an index vector."""
    return struct.pack(f"<{len(vector)}f", *vector)


def unpack_vector(data: bytes, dimensions: int) -> list[float]:
    if len(data) != 4 * dimensions:
        raise ValueError(f"expected {4 * dimensions} bytes for {dimensions} dimensions, got {len(data)}")
    return list(struct.unpack(f"<{dimensions}f", data))


def index_config(encoder_id: str, dimensions: int) -> str:
    """An index entry's `config`: sha256(canonical({dimensions, encoderId, representationVersion}))."""
    return digest({"dimensions": dimensions, "encoderId": encoder_id, "representationVersion": REPRESENTATION_VERSION})


def text_hash(text: str) -> str:
    """An index entry's `hash`: sha256 of the atom's text (UTF-8)."""
    return sha256_hex(text)
