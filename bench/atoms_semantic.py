"""The semantic part of bench/atoms_scale.py (`--semantic`): indexing throughput per worker
and hybrid read / search latency on the same corpus.

At each size of `--semantic-sizes` the tenant's atoms are indexed and read / search are
timed again with the provider on (hybrid candidates: the nearest index entries plus the
lexical ones, scored 0.8·semantic + 0.2·lexical, docs/atoms.md "Candidates"):

- up to `--minilm-max` atoms (default 10,000) with MiniLM, the deployment default. The
  drain runs as the Celery task does (index_drain, steps of ATOMS_INDEX_TASK_STEP events) and is timed: that
  is the indexing throughput per worker. Its query vectors are real MiniLM encodings, so
  their time is inside the measured latency.
- above it with FakeHashProvider at 384 dimensions (MiniLM's width), because encoding
  100,000 atoms with MiniLM takes longer than the run may on this machine. The HNSW file,
  the candidate set and the scoring work are those of a 384-dimensional index; only the
  query encoding is nearly free. So read and search are timed a second time with
  `FakeVectorsMiniLMQuery`: the same vectors, but each query is also run through MiniLM, so
  a request pays the real model's forward for its signal where a request with MiniLM does.
  The MiniLM encode time of the same queries is also measured apart and added to the first
  timing (the "projected" sum of the earlier runs).

The provider is switched with override_settings(ATOMS_EMBEDDING_PROVIDER=...), the
setting the engine reads per request; the lexical figures run with none.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from kv import Stats, progress, stats_of

MINILM = {"class": "atoms.embedding.MiniLMProvider", "options": {}}
FAKE_384 = {"class": "atoms.core.embedding.FakeHashProvider", "options": {"dimensions": 384}}
COSTED_384 = {"class": "atoms_semantic.FakeVectorsMiniLMQuery", "options": {}}
SETUP_STEP = 256  # the fake index is setup, not a figure: larger steps, fewer transactions

Measure = Callable[..., dict[str, Any]]


class FakeVectorsMiniLMQuery:
    """FakeHashProvider's 384-dimensional vectors (the same id, so the same index config and
    entries), computed after MiniLM has encoded the same texts: a query costs what a MiniLM
    query costs, while its vector still finds the fake-hash entries."""

    def __init__(self) -> None:
        from atoms.core.embedding import FakeHashProvider

        self.inner = FakeHashProvider(384)
        self.id = self.inner.id
        self.dimensions = 384

    def encode(self, texts: list[str]) -> list[list[float]]:
        from atoms.embedding import load_provider

        # The process's one MiniLM (query_encoding uses it too), loaded at the first
        # (untimed) call: load_provider is not reentrant, so not from __init__.
        minilm = load_provider(MINILM)
        assert minilm is not None
        minilm.encode_queries(texts)  # the cost of a query's encoding, not the answer
        return self.inner.encode(texts)


def provider_for(size: int, minilm_max: int) -> tuple[str, dict[str, Any]]:
    return ("minilm", MINILM) if size <= minilm_max else ("fake-hash-384", FAKE_384)


def index(tenant: Any, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Drain the tenant's feed under `spec` (timed), then build the HNSW file (timed)."""
    import torch
    from django.conf import settings
    from django.test import override_settings
    from tqdm import tqdm

    from atoms.embedding import load_provider
    from atoms.models import IndexCheckpoint
    from atoms.services.indexing import backlog, index_drain
    from atoms.vector_index import refresh

    started = time.perf_counter()
    loaded = load_provider(spec)
    assert loaded is not None
    load_seconds = time.perf_counter() - started
    step = settings.ATOMS_INDEX_TASK_STEP if name == "minilm" else SETUP_STEP  # as atoms.index_update runs it
    with override_settings(ATOMS_EMBEDDING_PROVIDER=spec):
        checkpoint, _ = IndexCheckpoint.objects.get_or_create(tenant=tenant, config=loaded.config, policy="default")
        total = backlog(tenant, checkpoint)
        indexed, started = 0, time.perf_counter()
        with tqdm(total=total, desc=f"  indexing ({name})", unit="atom", file=sys.stderr) as bar:
            while True:
                # The task's own loop: 30 s of steps, then it queues itself again.
                result = index_drain(tenant=tenant, loaded=loaded, policy="default", seconds=30.0, step=step)
                indexed += result.indexed
                bar.update(result.processed)
                if not result.pending:
                    break
        drain_seconds = time.perf_counter() - started
        started = time.perf_counter()
        snapshot = refresh(tenant.pk, loaded.config)
        refresh_seconds = time.perf_counter() - started
    from django.db import connection

    if connection.vendor == "postgresql":
        # The entries were all written just now: give the planner their statistics, as
        # autovacuum's analyze would within a minute or so. Without them it scanned the
        # whole entry table (about 100 ms a statement at 100k; docs/benchmarks.md "Hybrid
        # recall at 100k atoms with MiniLM's query cost").
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    figures = {"provider": name, "encoder": loaded.provider.id, "atoms": indexed, "step": step,
               "drain_seconds": drain_seconds, "atoms_per_second": indexed / drain_seconds if drain_seconds else None,
               "refresh_seconds": refresh_seconds, "vectors": snapshot.vectors if snapshot else 0,
               "model_load_seconds": load_seconds, "torch_threads": torch.get_num_threads()}
    progress(f"  indexed {indexed:,} atoms with {loaded.provider.id} in {drain_seconds:.1f} s "
             f"({figures['atoms_per_second'] or 0:,.0f} atoms/s, steps of {step}); HNSW file {refresh_seconds:.1f} s")
    return figures


def query_encoding(queries: list[str]) -> dict[str, Any]:
    """MiniLM's time to encode one query, as prepare() does once per request (encode_queries)."""
    from atoms.embedding import load_provider

    loaded = load_provider(MINILM)
    assert loaded is not None
    for query in queries[:3]:
        loaded.encode_queries([query])
    samples = []
    for query in queries:
        started = time.perf_counter()
        loaded.encode_queries([query])
        samples.append(time.perf_counter() - started)
    stats = stats_of(samples)
    progress(f"  MiniLM query encoding: median {stats.median_ms:.1f} ms, p95 {stats.p95_ms:.1f} ms")
    return asdict(stats)


def hybrid(caller: Any, size: int, minilm_max: int, queries: list[str], measure: Measure,
           budget_s: float, torch_threads: int) -> dict[str, Any]:
    """Index the corpus as it stands and time hybrid read and search on it. torch is
    imported here, not earlier, so that the lexical rows before it do not carry it."""
    import torch
    from django.test import override_settings

    from atoms.api.read import answer_read
    from atoms.api.search import answer_search

    if torch_threads:
        torch.set_num_threads(torch_threads)

    def both() -> dict[str, Any]:
        return {"read": measure("read", lambda q: answer_read(
                    caller, {"state": {"query": q}, "options": {"tokens": 4096}}), queries, budget_s),
                "search": measure("search", lambda q: answer_search(caller, {"query": q}), queries, budget_s)}

    name, spec = provider_for(size, minilm_max)
    progress(f"semantic index at {size:,} atoms ({name}) ...")
    row: dict[str, Any] = {"index": index(caller.tenant, name, spec)}
    with override_settings(ATOMS_EMBEDDING_PROVIDER=spec):
        probe = answer_search(caller, {"query": queries[0]})
        row["index_state"] = probe["diagnostics"]["index"]  # "ready": every candidate had a valid entry
        row.update(both())
    if name != "minilm":
        from django.conf import settings

        allowed = [*settings.ATOMS_EMBEDDING_PROVIDERS, COSTED_384["class"]]
        with override_settings(ATOMS_EMBEDDING_PROVIDER=COSTED_384, ATOMS_EMBEDDING_PROVIDERS=allowed):
            row["with_minilm_query"] = both()
        row["minilm_query_encoding"] = encoding = query_encoding(queries)
        for op in ("read", "search"):
            stats = row[op]["stats"]
            row[op]["projected_with_minilm_ms"] = {"median_ms": stats["median_ms"] + encoding["median_ms"],
                                                   "p95_ms": stats["p95_ms"] + encoding["p95_ms"]}
    return row


def print_table(rows: list[dict[str, Any]], targets: dict[str, float]) -> None:
    semantic = [row for row in rows if row.get("hybrid")]
    if not semantic:
        return
    print("\nHybrid recall (semantic index on), service time in ms")
    header = (f"{'atoms':>7} {'provider':<14} {'op':<6} {'median':>7} {'p95':>7} {'p95/target':>10} "
              f"{'+MiniLM query p95':>17} {'lexical p95':>11} {'scanned':>8} {'index':>6}")
    print(header + "\n" + "-" * len(header))
    for row in semantic:
        h = row["hybrid"]
        for op in ("read", "search"):
            stats = Stats(**h[op]["stats"])
            projected = h[op].get("projected_with_minilm_ms")
            plus = f"{projected['p95_ms']:.1f}" if projected else "included"
            print(f"{row['size']:>7,} {h['index']['provider']:<14} {op:<6} {stats.median_ms:>7.1f} {stats.p95_ms:>7.1f} "
                  f"{stats.p95_ms / targets[op]:>9.2f}x {plus:>17} "
                  f"{row[op]['stats']['p95_ms']:>11.1f} {h[op]['scanned_median']:>8,.0f} {h['index_state']:>6}")
            if "with_minilm_query" in h:
                costed = Stats(**h["with_minilm_query"][op]["stats"])
                print(f"{'':>7} {'+MiniLM query':<14} {op:<6} {costed.median_ms:>7.1f} {costed.p95_ms:>7.1f} "
                      f"{costed.p95_ms / targets[op]:>9.2f}x {'measured':>17}")
    for row in semantic:
        index = row["hybrid"]["index"]
        label = "per worker" if index["provider"] == "minilm" else "(setup, not a figure)"
        print(f"indexing {index['atoms']:,} atoms with {index['encoder']}: {index['atoms_per_second'] or 0:,.0f} atoms/s "
              f"{label}, steps of {index['step']}, {index['torch_threads']} torch thread(s); HNSW file "
              f"{index['refresh_seconds']:.1f} s for {index['vectors']:,} vectors")
    encodings = [row["hybrid"]["minilm_query_encoding"] for row in semantic if "minilm_query_encoding" in row["hybrid"]]
    if encodings:
        print("rows with fake-hash-384 vectors: the +MiniLM column adds the measured MiniLM query encoding "
              f"(p95 {statistics.fmean(e['p95_ms'] for e in encodings):.1f} ms) to the hybrid p95; the "
              "'+MiniLM query' rows below them are measured with each query run through MiniLM as well")
