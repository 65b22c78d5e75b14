"""Indexing rate with MiniLM on LoCoMo turns: atoms/s of the worker's drain, and where its
time goes (docs/benchmarks.md "Indexing rate: `bench/atoms_index_rate.py`").

    .venv/bin/python bench/atoms_index_rate.py [--turns 640] [--step 256] [--threads 1,2]
        [--rounds 2] [--variants before,now] [--data PATH]

The first `--turns` LoCoMo dev turns (conversations in file order, read where
bench/locomo_ingest.py reads them or from `--data`, never copied into the project; without
the file the script says so and exits with status 0) are written as plain atoms into one fresh tenant, SQLite in a
temporary folder, in process, as bench/locomo_recall.py writes them. Then, for every round,
every torch thread count of `--threads` and every variant, the tenant's index is emptied
(entries, tombstones, checkpoints) and drained again with MiniLM in steps of `--step`
events (default ATOMS_INDEX_TASK_STEP, as atoms.index_update runs it), timed:

- `now`: the code as it stands, `atoms.services.indexing.index_drain`;
- `before`: the indexing path as of commit b61d76b, kept below (`before_index_drain`): one
  `SentenceTransformer.encode` call per step with batches of 64 texts in character-length
  order, vectors through Python float lists, normalized twice more, every head's text
  hashed twice.

Variants alternate within a round and their order flips every round (ABBA), so a change of
machine load between them hits both. Each drain is split into tokenization (the model's
`preprocess`), model forward (the provider's traced forward, or the model's own `forward` for
`before`: all timed on the loaded model) and everything else (DB reads, hashing, packing,
saving entries, the checkpoint). The report gives wall seconds, process CPU seconds (both
cores' threads counted), atoms/s on the wall clock, the tokens the forward computed (padding
included) against the texts' own tokens, and the ratio `now / before` of the median rates per
thread count. The stored vectors of every
drain are compared with the first drain's (max |difference|, must stay <= 1e-6).

Writes bench/out/atoms_index_rate.json. Model load and the write are not timed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from locomo_ingest import DATA, ROOT, Conversation, environment, progress, samples, start, turns_of, write

OUT = ROOT / "bench" / "out" / "atoms_index_rate.json"
TOLERANCE = 1e-6


# --- The path before (commit b61d76b), kept to compare in the same process -------------------


def before_encode(loaded: Any, texts: list[str]) -> Any:
    """MiniLMProvider.encode and LoadedProvider.encode as they were."""
    import numpy as np

    if not texts:
        return np.zeros((0, loaded.provider.dimensions), dtype=np.float32)
    model = loaded.provider.model
    raw = (
        model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        .astype(np.float32)
        .tolist()
    )
    array = np.asarray(raw, dtype=np.float32)
    if array.shape != (len(texts), loaded.provider.dimensions) or not np.isfinite(array).all():
        raise AssertionError("bad shape")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return np.divide(array, norms, out=np.zeros_like(array), where=norms > 0)


def before_index_step(tenant: Any, loaded: Any, policy: str, limit: int) -> Any:
    """index_step as it was, with encode_entries inlined."""
    from django.db import transaction

    from atoms.core.canonical import sha256_hex
    from atoms.core.embedding import chunk_text
    from atoms.errors import AtomError
    from atoms.models import IndexCheckpoint, IndexEntry, Revision, VectorTombstone
    from atoms.services import indexing
    from atoms.services.feed import checkpoint_advanced, lock_feed

    checkpoint = indexing._checkpoint(tenant, loaded.config, policy)
    events = list(
        Revision.objects.filter(indexing._after(checkpoint), tenant=tenant, policy=policy)
        .order_by("visible_seq", "id")
        .values_list("visible_seq", "id", "atom_id")[: limit + 1]
    )
    pending = len(events) > limit
    events = events[:limit]
    if not events:
        return indexing.StepResult(indexed=0, processed=0, pending=False)
    heads = list(
        Revision.objects.filter(tenant=tenant, atom_id__in=list({a for _, _, a in events}), is_head=True).order_by(
            "atom_id"
        )
    )
    valid = indexing.valid_atoms(tenant, loaded.config, heads)
    todo = [h for h in heads if h.is_unquarantined_active_head and h.atom_id not in valid]
    dropped = [h.atom_id for h in heads if not h.is_unquarantined_active_head]
    chunks = [chunk_text(head.body) for head in todo]
    vectors = before_encode(loaded, [chunk for group in chunks for chunk in group])
    entries = []
    position = 0
    for head, group in zip(todo, chunks, strict=True):
        block = vectors[position : position + len(group)]
        position += len(group)
        entries.append(
            IndexEntry(
                tenant=tenant,
                atom_id=head.atom_id,
                config=loaded.config,
                policy=head.policy,
                text_hash=sha256_hex(head.body),
                revision_id=head.id,
                dimensions=loaded.provider.dimensions,
                count=len(group),
                vectors=IndexEntry.pack(block),
            )
        )
    last_seq, last_id, _ = events[-1]
    with transaction.atomic():
        lock_feed(tenant, policy)
        moved = IndexCheckpoint.objects.filter(
            pk=checkpoint.pk, seq=checkpoint.seq, revision_id=checkpoint.revision_id
        ).update(seq=last_seq, revision_id=last_id)
        if not moved:
            raise AtomError("REVISION_CONFLICT", "Another indexer moved this checkpoint.", {"policy": policy})
        checkpoint_advanced(checkpoint, last_seq, last_id)
        old = list(
            IndexEntry.objects.filter(
                tenant=tenant, config=loaded.config, atom_id__in=[e.atom_id for e in entries] + dropped
            ).values_list("id", "count")
        )
        if old:
            VectorTombstone.objects.bulk_create(
                [VectorTombstone(tenant=tenant, config=loaded.config, entry_id=i, count=c) for i, c in old]
            )
            IndexEntry.objects.filter(id__in=[i for i, _ in old]).delete()
        IndexEntry.objects.bulk_create(entries)
    return indexing.StepResult(indexed=len(entries), processed=len(events), pending=pending)


def before_index_drain(*, tenant: Any, loaded: Any, policy: str, seconds: float, step: int) -> Any:
    from atoms.services.indexing import StepResult

    indexed = processed = 0
    while True:
        result = before_index_step(tenant, loaded, policy, step)
        indexed += result.indexed
        processed += result.processed
        if not result.pending:
            return StepResult(indexed=indexed, processed=processed, pending=False)


def now_index_drain(**kwargs: Any) -> Any:
    from atoms.services.indexing import index_drain

    return index_drain(**kwargs)


VARIANTS: dict[str, Callable[..., Any]] = {"before": before_index_drain, "now": now_index_drain}


# --- Timing the model's parts ----------------------------------------------------------------


class Split:
    """Wall and CPU seconds inside the loaded model's preprocess (tokenization) and forward,
    and the tokens the forward computed (padded) against the texts' own. The forward is the
    provider's `_forward` (the traced transformer, docs/atoms.md "Semantic index") or the
    model's own `forward` (the `before` variant, and the provider's fallback), each batch
    counted once."""

    def __init__(self, provider: Any) -> None:
        model = provider.model
        self.model = model
        self.reset()
        self.depth = 0
        preprocess, forward, provider_forward = model.preprocess, model.forward, provider._forward

        def timed_preprocess(*args: Any, **kwargs: Any) -> Any:
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return preprocess(*args, **kwargs)
            finally:
                self.tokenize[0] += time.perf_counter() - wall
                self.tokenize[1] += time.process_time() - cpu

        def timed(run: Any) -> Any:
            def timed_forward(features: Any, *args: Any, **kwargs: Any) -> Any:
                if self.depth:  # the provider's fallback calling the model: counted already
                    return run(features, *args, **kwargs)
                mask = features["attention_mask"]
                self.padded += int(mask.numel())
                self.real += int(mask.sum())
                self.calls += 1
                self.depth += 1
                wall, cpu = time.perf_counter(), time.process_time()
                try:
                    return run(features, *args, **kwargs)
                finally:
                    self.depth -= 1
                    self.forward[0] += time.perf_counter() - wall
                    self.forward[1] += time.process_time() - cpu

            return timed_forward

        model.preprocess = timed_preprocess
        model.forward = timed(forward)
        provider._forward = timed(provider_forward)

    def reset(self) -> None:
        self.tokenize = [0.0, 0.0]
        self.forward = [0.0, 0.0]
        self.padded = self.real = self.calls = 0


# --- The run -------------------------------------------------------------------------------


def first_turns(path: Path, count: int) -> Conversation:
    turns = []
    for sample in samples(path, None):
        turns += turns_of(sample)
        if len(turns) >= count:
            break
    return Conversation(sample_id=f"first{count}", form="plain", turns=turns[:count], questions=[], skipped=0)


def stored_vectors(tenant: Any, config: str) -> dict[str, Any]:
    from atoms.models import IndexEntry

    return {
        entry.atom_id: entry.matrix().reshape(-1)
        for entry in IndexEntry.objects.filter(tenant=tenant, config=config).only("atom_id", "count", "dimensions",
                                                                                  "vectors")
    }


def empty_index(tenant: Any) -> None:
    from atoms.models import IndexCheckpoint, IndexEntry, VectorTombstone

    IndexEntry.objects.filter(tenant=tenant).delete()
    VectorTombstone.objects.filter(tenant=tenant).delete()
    IndexCheckpoint.objects.filter(tenant=tenant).delete()


def trial(variant: str, threads: int, tenant: Any, loaded: Any, split: Split, step: int) -> dict[str, Any]:
    import gc

    import torch

    torch.set_num_threads(threads)
    empty_index(tenant)
    gc.collect()
    split.reset()
    wall, cpu = time.perf_counter(), time.process_time()
    result = VARIANTS[variant](tenant=tenant, loaded=loaded, policy="default", seconds=3600.0, step=step)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if result.pending:
        raise SystemExit("the drain did not finish")
    return {
        "variant": variant,
        "threads": threads,
        "atoms": result.indexed,
        "events": result.processed,
        "wall_s": wall,
        "cpu_s": cpu,
        "atoms_per_s": result.indexed / wall,
        "tokenize_s": split.tokenize[0],
        "forward_s": split.forward[0],
        "other_s": wall - split.tokenize[0] - split.forward[0],
        "tokenize_cpu_s": split.tokenize[1],
        "forward_cpu_s": split.forward[1],
        "other_cpu_s": cpu - split.tokenize[1] - split.forward[1],
        "forward_calls": split.calls,
        "padded_tokens": split.padded,
        "real_tokens": split.real,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    start(0)  # torch threads are set per trial
    import numpy as np
    from django.conf import settings

    from atoms.embedding import tenant_provider
    from memoryhub.actors import Actor

    args.step = args.step or settings.ATOMS_INDEX_TASK_STEP  # as atoms.index_update runs it
    conversation = first_turns(args.data, args.turns)
    progress(f"writing {len(conversation.turns)} turns ...")
    write(conversation, Actor.system("bench"))
    tenant = conversation.caller.tenant
    loaded = tenant_provider(tenant)
    assert loaded is not None, "the MiniLM provider is configured for the benchmark"
    split = Split(loaded.provider)
    loaded.encode(["warm-up"])
    reference: dict[str, Any] | None = None
    trials = []
    for number in range(args.rounds):
        for threads in args.threads:
            order = args.variants if number % 2 == 0 else args.variants[::-1]
            for variant in order:
                figures = trial(variant, threads, tenant, loaded, split, args.step)
                vectors = stored_vectors(tenant, loaded.config)
                if reference is None:
                    reference = vectors
                if set(vectors) != set(reference):
                    raise SystemExit(f"{variant}: indexed other atoms than the first drain")
                figures["max_abs_diff"] = max(float(np.abs(v - reference[a]).max()) for a, v in vectors.items())
                figures["round"] = number
                trials.append(figures)
                progress(
                    f"round {number} {variant:>6} {threads} thread(s): {figures['atoms']} atoms in "
                    f"{figures['wall_s']:.2f} s = {figures['atoms_per_s']:.1f} atoms/s; tokenize "
                    f"{figures['tokenize_s']:.2f} s, forward {figures['forward_s']:.2f} s, other "
                    f"{figures['other_s']:.2f} s; cpu {figures['cpu_s']:.2f} s; tokens "
                    f"{figures['padded_tokens']:,} for {figures['real_tokens']:,}; "
                    f"max |diff| {figures['max_abs_diff']:.1e}"
                )
    empty_index(tenant)
    return {"turns": len(conversation.turns), "step": args.step, "trials": trials}


def median_of(trials: list[dict[str, Any]], variant: str, threads: int, key: str) -> float:
    return statistics.median(t[key] for t in trials if t["variant"] == variant and t["threads"] == threads)


def print_report(report: dict[str, Any], variants: list[str], threads_list: list[int]) -> None:
    trials = report["trials"]
    print(
        f"\n{report['turns']} LoCoMo turns, steps of {report['step']}, {report['rounds']} round(s); load average "
        f"{report['machine']['load_average_at_start']} at the start, {report['machine']['load_average_at_end']} "
        "at the end. Medians over rounds:"
    )
    header = (
        f"{'threads':>7} {'variant':<7} {'atoms/s':>8} {'wall s':>7} {'tokenize':>8} {'forward':>8} "
        f"{'other':>6} {'cpu s':>6} {'cpu ms/atom':>11} {'tokens computed / own':>22} {'max|diff|':>9}"
    )
    print(header + "\n" + "-" * len(header))
    for threads in threads_list:
        for variant in variants:
            rows = [t for t in trials if t["variant"] == variant and t["threads"] == threads]
            m = {
                key: median_of(trials, variant, threads, key)
                for key in ("atoms_per_s", "wall_s", "tokenize_s", "forward_s", "other_s", "cpu_s")
            }
            atoms = rows[0]["atoms"]
            print(
                f"{threads:>7} {variant:<7} {m['atoms_per_s']:>8.1f} {m['wall_s']:>7.2f} {m['tokenize_s']:>8.2f} "
                f"{m['forward_s']:>8.2f} {m['other_s']:>6.2f} {m['cpu_s']:>6.2f} {m['cpu_s'] * 1000 / atoms:>11.1f} "
                f"{rows[0]['padded_tokens']:>12,} / {rows[0]['real_tokens']:>7,} "
                f"{max(r['max_abs_diff'] for r in rows):>9.1e}"
            )
        if len(variants) == 2:
            a, b = variants
            print(
                f"{threads:>7} {b} / {a}: atoms/s x{median_of(trials, b, threads, 'atoms_per_s') / median_of(trials, a, threads, 'atoms_per_s'):.2f}, "
                f"cpu s x{median_of(trials, b, threads, 'cpu_s') / median_of(trials, a, threads, 'cpu_s'):.2f}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=640, help="the first N LoCoMo dev turns (default 640)")
    parser.add_argument("--step", type=int, default=0, help="events per index step (default ATOMS_INDEX_TASK_STEP)")
    parser.add_argument("--threads", default="1,2", help="torch thread counts, comma-separated (default 1,2)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of every variant and thread count (default 2)")
    parser.add_argument("--variants", default="before,now", help=f"comma-separated, of {', '.join(VARIANTS)}")
    parser.add_argument("--data", type=Path, default=DATA, help=f"LoCoMo JSON (default {DATA})")
    args = parser.parse_args()
    args.threads = [int(x) for x in args.threads.split(",")]
    args.variants = [v for v in args.variants.split(",") if v]
    if not args.variants or any(v not in VARIANTS for v in args.variants):
        parser.error(f"--variants takes {', '.join(VARIANTS)}")
    if not args.data.is_file():
        print(f"LoCoMo data not found at {args.data}; skipping (see docs/benchmarks.md)")
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="memoryhub-bench-index-rate-"))
    environment(tmp)
    started, load_at_start = datetime.now(UTC), [round(x, 2) for x in os.getloadavg()]
    try:
        figures = run(args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report = {
        "date": started.isoformat(timespec="seconds"),
        "command": " ".join([".venv/bin/python", "bench/atoms_index_rate.py", *sys.argv[1:]]),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_at_start": load_at_start,
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        },
        "rounds": args.rounds,
        **figures,
    }
    print_report(report, args.variants, args.threads)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=1) + "\n")
    print(f"\nwritten to {OUT.relative_to(ROOT)}")
    worst = max(t["max_abs_diff"] for t in figures["trials"])
    if worst > TOLERANCE:
        print(f"stored vectors differ by up to {worst:.1e} between drains (tolerance {TOLERANCE:.0e})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
