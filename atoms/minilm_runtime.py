"""How the MiniLM provider (atoms.embedding.MiniLMProvider) runs its model: the batches a
call's texts are cut into, and the transformer traced with TorchScript (docs/atoms.md
"Semantic index")."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import Any, Final

import numpy as np

logger = logging.getLogger("atoms.embedding")

# How MiniLMProvider cuts a call's texts into forward batches (length_batches). A forward
# costs about its padded tokens plus a fixed part: the model's 42 MB of weights stream
# through the cache once per call, about 10 ms on one core, the time of 48 tokens
# (docs/benchmarks.md "Indexing rate: `bench/atoms_index_rate.py`").
BATCH_OVERHEAD_TOKENS: Final = 48
# With several torch threads every operator of a forward ends at a barrier, and while other
# processes hold the cores each barrier can wait a scheduler slice: on the loaded two-core
# machine, two threads with the 48-token cost took 1.67 times the CPU of the path before
# token-count batches. So a threaded encoder cuts fewer, larger batches: for 640 LoCoMo
# turns in steps of 256, 15 forwards computing 13 % more tokens than the texts' own, where
# one thread runs 37 forwards and 4 % (batches of 64 by character length: 10 and 36 %).
BATCH_OVERHEAD_TOKENS_THREADED: Final = 400
BATCH_MAX_TOKENS: Final = 4096  # padded tokens a forward may hold (bounds its memory)
# Texts tokenized at once to count their tokens. Tokenizing a whole call held the tokenizer's
# intermediate lists of every text (8,192 texts of 1 KB: 525 MB more peak RSS, 76 MB in
# slices; docs/benchmarks.md "Indexing rate: `bench/atoms_index_rate.py`"), and a step of
# 256 large events can hold 16k chunks. Each forward's own tensors are built when it runs.
TOKENIZE_SLICE: Final = 1024


def length_batches(lengths: Sequence[int], *, max_rows: int, max_tokens: int = BATCH_MAX_TOKENS,
                   overhead: int = BATCH_OVERHEAD_TOKENS) -> list[list[int]]:
    """The positions of `lengths` (token counts) in encoder batches, longest texts first.

    A batch is padded to its longest text. The texts are sorted by length (longest first,
    ties in input order) and cut where the total of padded tokens plus `overhead` per batch
    is least (dynamic programming over the cut points), with at most `max_rows` texts and
    `max_tokens` padded tokens a batch; a text longer than that is a batch of its own."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    width = np.array([lengths[i] for i in order], dtype=np.int64)
    best = np.zeros(len(order) + 1)  # best[j]: the least cost of the first j sorted texts
    start = np.zeros(len(order) + 1, dtype=np.int64)  # where the last batch of that optimum starts
    for end in range(1, len(order) + 1):
        first = np.arange(max(0, end - max_rows), end)
        padded = (end - first) * width[first]
        cost = best[first] + padded + overhead
        cost[(padded > max_tokens) & (first < end - 1)] = np.inf
        pick = int(np.argmin(cost))
        best[end], start[end] = cost[pick], first[pick]
    batches: list[list[int]] = []
    end = len(order)
    while end:
        batches.append(order[int(start[end]):end])
        end = int(start[end])
    return batches[::-1]


# Fixed texts for tracing and checking the transformer (never a tenant's text): two lengths,
# so the example batch is padded; then check batches of other shapes: one text alone (no
# padding, a search's query: the model's own forward then drops the mask) and three texts,
# one past the model's 256-token limit.
TRACE_TEXTS: Final = ("warm-up", "a short example sentence to trace the encoder with")
CHECK_BATCHES: Final = (("what did the check say about the museum trip?",),
                        ("check", "another sentence of a different length, with punctuation: 12 words or so.",
                         " ".join(["token"] * 300)))
# TorchScript's profiling executor runs a graph as traced first and optimizes it after the
# first calls; the check runs each batch this many times, so the optimized graph is checked
# too (and warmed up before the first request).
CHECK_RUNS: Final = 3


def pooled(model: Any, batch: dict[str, Any], traced: Any) -> Any:
    """`model(batch)["sentence_embedding"]` with the transformer's token embeddings from
    `traced`, and the model's own modules after it (pooling, normalization)."""
    features = dict(batch)
    features["token_embeddings"] = traced(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
    for module in list(model)[1:]:
        features = module(features)
    return features["sentence_embedding"]


def torch_loaded_first() -> bool:
    """Whether torch's C++ library was loaded before usearch's, if both are (sys.modules
    keeps the order of imports). Loaded after usearch, a TorchScript trace never returns
    (atoms/vector_index.py `_index_class`, which imports them in the safe order)."""
    names = list(sys.modules)
    if "usearch.compiled" not in sys.modules:
        return True
    return "torch._C" in sys.modules and names.index("torch._C") < names.index("usearch.compiled")


def transformer_of(model: Any) -> Any:
    """The model's BERT transformer (sentence-transformers names it `model` or `auto_model`)."""
    transformer = model[0]
    bert = getattr(transformer, "model", None)
    return bert if bert is not None else transformer.auto_model


def token_embeddings(bert: Any, *, to_float32: bool = False) -> Any:
    """`bert` as a module of three tensors (ids, token types, mask) that returns its token
    embeddings, cast to float32 with `to_float32` (the bfloat16 copy of atoms/minilm_bf16.py)."""
    import torch

    # Defined here, where torch is imported: the module is imported by processes without torch.
    class TokenEmbeddings(torch.nn.Module):
        def __init__(self, inner: Any) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, token_type_ids: Any, attention_mask: Any) -> Any:
            out = self.inner(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                             return_dict=False)[0]
            return out.float() if to_float32 else out

    return TokenEmbeddings(bert)


def trace_transformer(module: Any, model: Any) -> Any:
    """`module` (of `token_embeddings`) traced with TorchScript on TRACE_TEXTS tokenized by
    `model`. Raises whatever tracing raises; the caller checks what the trace gives."""
    import warnings

    import torch

    with torch.no_grad(), warnings.catch_warnings():
        # The tracer warns that values it read as Python numbers become constants, and that
        # torch.jit is deprecated: the callers' checks are what decide (and a torch that
        # drops tracing falls back). check_trace: the tracer's own re-run; ours are stricter.
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        example = model.preprocess(list(TRACE_TEXTS))
        return torch.jit.trace(module, (example["input_ids"], example["token_type_ids"], example["attention_mask"]),
                               strict=False, check_trace=False)


def traced_token_embeddings(model: Any) -> Any:
    """The model's transformer (BERT) traced with torch.jit, or None: one call into
    TorchScript instead of about 120 Python module calls and the library's wrappers around
    them, the same kernels in the same order. A one-query encode took 7.4-7.5 ms instead of
    9.6-9.8 on the development machine (docs/benchmarks.md "A traced encoder"). The trace
    shares the model's weights (no second copy).

    Accepted only if it gives the very same vectors as the model's own forward, bit for bit,
    on every check batch and run (CHECK_BATCHES, CHECK_RUNS); otherwise, or if tracing fails
    (another library version, another model layout), None: the model's own forward is used,
    with a warning that names no text. Either way the vectors are the same."""
    import torch

    if not torch_loaded_first():
        logger.warning("usearch was loaded before torch in this process; encoding without a trace")
        return None
    try:
        traced = trace_transformer(token_embeddings(transformer_of(model)), model)
        same = True
        with torch.inference_mode():
            for texts in CHECK_BATCHES:
                check = model.preprocess(list(texts))
                own = model(dict(check))["sentence_embedding"]
                for _ in range(CHECK_RUNS):
                    same = same and torch.equal(pooled(model, check, traced), own)
    except Exception as exc:  # noqa: BLE001 - any failure to trace means "use the model as it is"
        logger.warning("the MiniLM transformer could not be traced (%s); encoding without a trace", type(exc).__name__)
        return None
    if not same:
        logger.warning("the traced MiniLM transformer gave other vectors than the model; encoding without a trace")
        return None
    return traced
