"""Signal texts are encoded on the encoder thread while the request goes on
(docs/atoms.md "Query encoding"; atoms/encoder_thread.py)."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from atoms import encoder_thread
from atoms.embedding import forget_providers, warm_up
from atoms.services import candidates
from tests.atoms.api.helpers import create
from tests.atoms.index import providers
from tests.atoms.index.helpers import drain

GATED = {"class": "tests.atoms.index.providers.EncodeGated", "options": {}}
BROKEN = {"class": "tests.atoms.index.providers.Broken", "options": {}}


@pytest.fixture
def encode_gated(settings: Any) -> dict[str, Any]:
    settings.ATOMS_EMBEDDING_PROVIDERS = [*settings.ATOMS_EMBEDDING_PROVIDERS, GATED["class"], BROKEN["class"]]
    settings.ATOMS_EMBEDDING_PROVIDER = GATED
    forget_providers()
    providers.GATE.set()
    providers.ENCODED_ON.clear()
    yield GATED
    providers.GATE.set()  # never leave an encode waiting


@pytest.mark.parametrize("op, body", [("read", {"state": {"query": "coffee"}}), ("search", {"query": "coffee"})])
def test_the_lexical_channel_runs_while_the_signal_is_encoded(encode_gated, monkeypatch, I, X, op, body):
    """The encode waits until the lexical channel has started. Encoded before the
    transaction, as it once was, it would wait in vain, fail, and leave the index pending."""
    I.ok_write(create("a", "coffee beans"), create("b", "green tea"))
    drain(X)
    providers.GATE.clear()
    providers.ENCODED_ON.clear()
    lexical_channels = candidates.lexical_channels

    def open_the_gate_first(**kwargs: Any) -> Any:
        providers.GATE.set()
        return lexical_channels(**kwargs)

    monkeypatch.setattr(candidates, "lexical_channels", open_the_gate_first)
    response = X.post(op, body)
    assert response.status_code == 200
    answer = response.json()
    assert answer["diagnostics"]["index"] == "ready"
    assert answer["items"][0]["text"] == "coffee beans"
    assert len(providers.ENCODED_ON) == 1
    assert providers.ENCODED_ON[0].startswith("atoms-encoder")
    assert providers.ENCODED_ON[0] != threading.current_thread().name


def test_a_failed_encode_is_logged_without_the_text(encode_gated, settings, caplog, I, X):
    I.ok_write(create("a", "coffee beans"))
    settings.ATOMS_EMBEDDING_PROVIDER = BROKEN
    forget_providers()
    with caplog.at_level(logging.WARNING, logger="atoms.semantic"):
        response = X.post("read", {"state": {"query": "coffee quillwort-marker"}})
    assert response.status_code == 200
    assert response.json()["diagnostics"]["index"] == "pending"
    assert "signal encoding failed (RuntimeError)" in caplog.text
    assert "quillwort" not in caplog.text
    assert "crashed" not in caplog.text  # the exception's message is not logged either


def test_warm_up_encodes_on_the_encoder_thread(encode_gated):
    assert warm_up() is True
    assert len(providers.ENCODED_ON) == 1
    assert providers.ENCODED_ON[0].startswith("atoms-encoder")


def test_a_pool_inherited_through_fork_is_replaced(monkeypatch):
    pool = encoder_thread._executor()
    assert encoder_thread._executor() is pool
    monkeypatch.setattr(encoder_thread, "_pool_pid", -1)  # as a forked child sees its parent's pool
    fresh = encoder_thread._executor()
    assert fresh is not pool
    assert encoder_thread.encode_later(lambda texts: [len(t) for t in texts], ["ab", "c"]).result(5) == [2, 1]
