"""MiniLM's query encoder in bfloat16 (docs/atoms.md "Query vectors in bfloat16").

A read or a search encodes its signal texts before anything else, and a one-query forward
streams the whole transformer's float32 weights through the cache: its cost is that of
the weights more than that of the few tokens. On a CPU with native bfloat16 matrix
products (AVX512-BF16 or AMX-BF16), a copy of the transformer in bfloat16 reads half the
bytes and computes on them natively: a LoCoMo question took 5.6 ms instead of 9.7 on the
development machine (docs/benchmarks.md "8-bit vector files and queries in bfloat16"). A
query's vector keeps a cosine of at least MIN_COSINE to its float32 one (0.99994 measured
at the least); the float32 vectors stay what indexing writes, so the stored vectors and
every cosine computed from them are unchanged and only the query side moves.

`ATOMS_QUERY_BF16` decides: `auto` (the default) uses it where the CPU has native
bfloat16 products, `on` everywhere (emulated elsewhere: not measured here), `off` never.
Workers never build it: they encode what they index, in float32.
"""

from __future__ import annotations

import copy
import logging
from typing import Any, Final

from atoms.minilm_runtime import (
    CHECK_BATCHES,
    CHECK_RUNS,
    pooled,
    token_embeddings,
    torch_loaded_first,
    trace_transformer,
    transformer_of,
)

logger = logging.getLogger("atoms.embedding")

# Every check text's bfloat16 vector must be at least this close (cosine) to its float32
# one, or the copy is not used. Measured: 0.99994 at the least over 150 LoCoMo questions.
MIN_COSINE: Final = 0.9995


def native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 matrices natively (torch's own CPU capabilities)."""
    import torch

    capabilities = getattr(getattr(torch, "cpu", None), "get_capabilities", None)
    if capabilities is None:  # an older torch: assume not
        return False
    try:
        found = capabilities()
    except Exception:  # noqa: BLE001 - a probe that fails means "not known to be there"
        return False
    return bool(found.get("avx512_bf16") or found.get("amx_bf16"))


def bf16_wanted(mode: str) -> bool:
    """Whether ATOMS_QUERY_BF16 = `mode` asks for the bfloat16 copy on this CPU."""
    return mode == "on" or (mode == "auto" and native_bf16())


def _bf16_copy(torch: Any, module: Any) -> Any:
    """`module` copied with its floating-point parameters and buffers in bfloat16. The copy
    is made from the converted tensors directly: a plain deep copy first duplicated every
    float32 weight (a peak 26 MB higher, measured). Integer buffers are shared."""
    memo: dict[int, Any] = {}
    for parameter in module.parameters():
        memo[id(parameter)] = torch.nn.Parameter(parameter.detach().to(torch.bfloat16), requires_grad=False)
    for buffer in module.buffers():
        memo[id(buffer)] = buffer.to(torch.bfloat16) if buffer.is_floating_point() else buffer
    return copy.deepcopy(module, memo)


def bf16_token_embeddings(model: Any) -> Any | None:
    """A traced bfloat16 copy of the model's transformer that returns float32 token
    embeddings (the model's own pooling and normalization follow, in float32), or None.

    Accepted only if, on every check batch and run, the trace gives the very vectors of the
    copy's own forward, and each of them is within MIN_COSINE of the float32 model's;
    otherwise, or if the copy cannot be made or traced, None (queries are then encoded in
    float32), with a warning that names no text. A web process holds about 105 MB more with
    it (docs/benchmarks.md "8-bit vector files and queries in bfloat16")."""
    import torch

    if not torch_loaded_first():
        logger.warning("usearch was loaded before torch in this process; queries are encoded in float32")
        return None
    try:
        twin = token_embeddings(_bf16_copy(torch, transformer_of(model)), to_float32=True)
        traced = trace_transformer(twin, model)
        same, close = True, True
        with torch.inference_mode():
            for texts in CHECK_BATCHES:
                check = model.preprocess(list(texts))
                own = model(dict(check))["sentence_embedding"]
                eager = pooled(model, check, twin)
                close = close and bool(((eager * own).sum(dim=1) >= MIN_COSINE).all())
                for _ in range(CHECK_RUNS):
                    same = same and torch.equal(pooled(model, check, traced), eager)
    except Exception as exc:  # noqa: BLE001 - any failure means "encode queries in float32"
        logger.warning("the bfloat16 query encoder could not be built (%s); queries are encoded in float32",
                       type(exc).__name__)
        return None
    if not close:
        logger.warning("the bfloat16 query vectors strayed from the float32 ones; queries are encoded in float32")
        return None
    if not same:
        logger.warning("the traced bfloat16 query encoder differs from its own forward; queries are encoded in float32")
        return None
    return traced
