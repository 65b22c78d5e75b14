"""Retrieval quality on LoCoMo: turn-level evidence recall of the Atom engine against BM25.

    .venv/bin/python bench/locomo_recall.py [--quick] [--conversations N] [--lexical-reads]
        [--torch-threads N] [--data PATH]

Data: LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM
Agents", ACL 2024), read from ../shared/data/locomo-dev.json (never copied into the
project); without it the script says so and exits with status 0.

Each conversation gets a fresh tenant with an ingest key. Every turn becomes one atom,
"[<session date>] <speaker>: <text>" (plus " [shares a photo: <caption>]" for image turns),
written through atoms_write in batches of 128 with an idempotency key. The tenant is then
indexed with MiniLM the way a worker does it (index_drain, steps of 32 events), timed, and
its HNSW file built (vector_index.refresh). For every question of categories 1-4:

- hybrid: atoms_search(query=question, limit 64) with the MiniLM provider, the ranked items
  mapped back to dia_ids; atoms_read(state {query: question}, tokens 1,024 / 2,048 / 4,096,
  limit 128) for the budgeted recall;
- lexical: the same engine and atoms with ATOMS_EMBEDDING_PROVIDER = None (reads only with
  --lexical-reads: they add about a quarter to the run time);
- bm25: rank_bm25.BM25Okapi over the same turn texts, lowercase \\w+ tokens;
- dense (analysis): the cosine between the question's MiniLM vector and the atoms' stored
  index vectors alone, to tell the encoder's part from the engine's combination.
Every ranking is also packed in rank order under the engine's own render cost (utf8-bytes-v1
of the format-2 units; walk the ranking, keep what fits, as read's baseline step does), which
separates ranking quality from read's selection.

Prints recall@1/5/10, MRR and budgeted recall per category and overall, the indexing
throughput, and writes bench/out/locomo_recall.json and bench/out/locomo_recall.png.
SQLite in a temporary folder; nothing but this process is contacted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from locomo_report import (
    RANK_CUTOFF,
    READ_LIMIT,
    Bm25,
    cost_of,
    pack,
    plot,
    print_tables,
    ranks_of,
    summarize,
    tally,
)

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "locomo-dev.json"
OUT = ROOT / "bench" / "out" / "locomo_recall.json"
PNG = ROOT / "bench" / "out" / "locomo_recall.png"
BUDGETS = (1024, 2048, 4096)
BATCH = 128  # the largest write the service accepts (see bench/atoms_scale.py)
STEP = 32  # events per index step, as the Celery task runs them (atoms.md §10)
CATEGORIES = (1, 2, 3, 4)


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# --- The data ----------------------------------------------------------------------------------

def turns_of(sample: dict[str, Any]) -> list[tuple[str, str]]:
    """(dia_id, atom text) of every turn, sessions in order."""
    conversation = sample["conversation"]
    numbers = sorted(int(k.split("_")[1]) for k, v in conversation.items()
                     if re.fullmatch(r"session_\d+", k) and isinstance(v, list))
    out = []
    for n in numbers:
        date = conversation.get(f"session_{n}_date_time", "")
        for turn in conversation[f"session_{n}"]:
            text = f"[{date}] {turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares a photo: {turn['blip_caption']}]"
            out.append((turn["dia_id"], text))
    return out


def evidence_of(qa: dict[str, Any], known: set[str]) -> list[str]:
    """The question's evidence dia_ids that name a turn; a few entries pack several ids into
    one string ("D8:6; D9:17"), which are split."""
    ids: list[str] = []
    for entry in qa.get("evidence", []):
        for part in re.split(r"[;,\s]+", str(entry)):
            if part in known and part not in ids:
                ids.append(part)
    return ids


# --- One conversation in its own tenant -------------------------------------------------------

@dataclass
class Conversation:
    sample_id: str
    turns: list[tuple[str, str]]
    questions: list[dict[str, Any]]
    skipped: int
    caller: Any = None
    ref_turn: dict[str, int] = field(default_factory=dict)
    atom_turn: dict[str, int] = field(default_factory=dict)
    # Turns the threat scanner quarantined at write: not in recall, so not ranked by BM25 either.
    quarantined: set[int] = field(default_factory=set)
    unit_cost: list[int] = field(default_factory=list)


def prepare(sample: dict[str, Any]) -> Conversation:
    turns = turns_of(sample)
    position = {dia: i for i, (dia, _) in enumerate(turns)}
    known = set(position)
    questions, skipped = [], 0
    for index, qa in enumerate(sample["qa"]):
        if qa.get("category") not in CATEGORIES:
            continue
        evidence = evidence_of(qa, known)
        if not evidence:
            skipped += 1
            continue
        questions.append({"sample": sample["sample_id"], "qa": index, "category": qa["category"],
                          "question": qa["question"], "evidence": evidence,
                          "turns": [position[dia] for dia in evidence]})
    return Conversation(sample_id=sample["sample_id"], turns=turns, questions=questions, skipped=skipped)


def write(conversation: Conversation, actor: Any) -> float:
    """A fresh tenant and ingest key; every turn one atom. Returns seconds spent writing."""
    from atoms.core.canonical import canonical
    from atoms.principal import Principal
    from atoms.services.refs import resolve_ref
    from atoms.services.write import atoms_write
    from tenants.services.keys import apikey_create
    from tenants.services.tenancy import tenant_ensure

    tenant, _ = tenant_ensure(slug=f"locomo-{conversation.sample_id}-{os.getpid()}",
                              name=f"LoCoMo {conversation.sample_id}", actor=actor)
    key, _ = apikey_create(tenant=tenant, kind="ingest", actor=actor, name="locomo")
    conversation.caller = Principal.for_key(key)
    started = time.perf_counter()
    for first in range(0, len(conversation.turns), BATCH):
        indexes = range(first, min(len(conversation.turns), first + BATCH))
        changes = [{"id": f"t{i}", "op": "create", "content": {"text": conversation.turns[i][1], "links": {}},
                    "sources": []} for i in indexes]
        outcome = atoms_write(caller=conversation.caller, body={
            "changes": changes, "options": {"idempotencyKey": f"locomo-{conversation.sample_id}-{first // BATCH}"}})
        for i in indexes:
            view = outcome["changes"][f"t{i}"]
            conversation.ref_turn[view["ref"]] = i
            if outcome["review"][f"t{i}"] == "quarantined":
                conversation.quarantined.add(i)
            # The unit read renders for this atom (atoms.md §6.5), priced for BM25's packing.
            unit = {"links": view["links"], "provenance": view["provenance"], "ref": view["ref"],
                    "sources": view["sources"], "text": view["text"]}
            conversation.unit_cost.append(len(canonical(unit).encode()))
    seconds = time.perf_counter() - started
    for ref, i in conversation.ref_turn.items():
        if i not in conversation.quarantined:  # only indexed atoms need their id (dense ranking)
            conversation.atom_turn[resolve_ref(conversation.caller, ref, ["default"]).atom_id] = i
    return seconds


def index(conversation: Conversation) -> dict[str, Any]:
    """Encode every atom as the worker does, then build the HNSW file; timed apart."""
    from atoms.embedding import tenant_provider
    from atoms.services.indexing import index_drain
    from atoms.vector_index import refresh

    tenant = conversation.caller.tenant
    loaded = tenant_provider(tenant)
    assert loaded is not None, "the MiniLM provider is configured for the benchmark"
    started = time.perf_counter()
    result = index_drain(tenant=tenant, loaded=loaded, policy="default", seconds=3600.0, step=STEP)
    encoded = time.perf_counter()
    refresh(tenant.pk, loaded.config)
    done = time.perf_counter()
    expected = len(conversation.turns) - len(conversation.quarantined)
    if result.pending or result.indexed != expected:
        raise SystemExit(f"{conversation.sample_id}: indexed {result.indexed} of {expected} atoms")
    return {"atoms": result.indexed, "drain_seconds": encoded - started, "refresh_seconds": done - encoded}


@dataclass
class Timings:
    search: dict[str, list[float]] = field(default_factory=lambda: {"hybrid": [], "lexical": []})
    read: dict[str, list[float]] = field(default_factory=lambda: {"hybrid": [], "lexical": []})
    pending: int = 0  # hybrid answers whose diagnostics said the index was not ready
    cost_mismatch: int = 0  # engine reads whose tokenCount our unit prices did not reproduce


def rank(record: dict[str, Any], method: str, ranking: list[int], conversation: Conversation,
         evidence: list[int]) -> None:
    """The ranks of the evidence in `ranking`, and the ranking packed in order per budget."""
    record["ranks"][method] = ranks_of(ranking, evidence)
    record["packed"][method] = {}
    for budget in BUDGETS:
        chosen = pack(ranking, conversation.unit_cost, budget)
        record["packed"][method][str(budget)] = tally(chosen, evidence, cost_of(conversation.unit_cost, chosen))


def engine_pass(conversation: Conversation, records: list[dict[str, Any]], method: str, reads: bool,
                timings: Timings, bar: Any) -> None:
    from atoms.services.read import atoms_read
    from atoms.services.search import atoms_search

    caller = conversation.caller
    for question, record in zip(conversation.questions, records, strict=True):
        evidence = question["turns"]
        t0 = time.perf_counter()
        result = atoms_search(caller=caller, body={"query": question["question"], "options": {"limit": RANK_CUTOFF}})
        timings.search[method].append(time.perf_counter() - t0)
        timings.pending += method == "hybrid" and result["diagnostics"]["index"] != "ready"
        rank(record, method, [conversation.ref_turn[item["ref"]] for item in result["items"]], conversation, evidence)
        if reads:
            record["budget"][method] = {}
            for budget in BUDGETS:
                t0 = time.perf_counter()
                answer = atoms_read(caller=caller, body={"state": {"query": question["question"]},
                                                         "options": {"tokens": budget, "limit": READ_LIMIT}})
                timings.read[method].append(time.perf_counter() - t0)
                chosen = [conversation.ref_turn[item["ref"]] for item in answer["items"]]
                timings.cost_mismatch += cost_of(conversation.unit_cost, chosen) != answer["tokenCount"]
                record["budget"][method][str(budget)] = tally(chosen, evidence, answer["tokenCount"])
        bar.update(1)


def dense_rankings(conversation: Conversation) -> list[list[int]]:
    """Turns by the best cosine between the question's vector and the atom's stored vectors."""
    import numpy as np

    from atoms.embedding import tenant_provider
    from atoms.models import IndexEntry

    tenant = conversation.caller.tenant
    loaded = tenant_provider(tenant)
    assert loaded is not None
    blocks: list[np.ndarray] = []
    owners: list[int] = []
    for entry in IndexEntry.objects.filter(tenant=tenant, config=loaded.config):
        blocks.append(np.frombuffer(bytes(entry.vectors), dtype="<f4").reshape(entry.count, entry.dimensions))
        owners += [conversation.atom_turn[entry.atom_id]] * entry.count
    matrix, turns = np.concatenate(blocks), np.array(owners)
    queries = loaded.encode([q["question"] for q in conversation.questions])
    out = []
    for scores in queries @ matrix.T:
        best = np.full(len(conversation.turns), -2.0, dtype=np.float32)
        np.maximum.at(best, turns, scores)
        held = [i for i in range(len(best)) if i not in conversation.quarantined]
        out.append(sorted(held, key=lambda i: (-best[i], i))[:RANK_CUTOFF * 4])
    return out


def evaluate(conversation: Conversation, args: argparse.Namespace, timings: Timings) -> list[dict[str, Any]]:
    from django.test import override_settings
    from tqdm import tqdm

    bm25 = Bm25([text for _, text in conversation.turns], conversation.quarantined)
    dense = dense_rankings(conversation)
    records = []
    for question, dense_ranking in zip(conversation.questions, dense, strict=True):
        record: dict[str, Any] = {"sample": question["sample"], "qa": question["qa"], "category": question["category"],
                                  "evidence": question["evidence"], "ranks": {}, "budget": {}, "packed": {}}
        rank(record, "bm25", bm25.ranking(question["question"]), conversation, question["turns"])
        rank(record, "dense", dense_ranking, conversation, question["turns"])
        records.append(record)
    with tqdm(total=len(records), desc=f"{conversation.sample_id} hybrid", unit="q", file=sys.stderr) as bar:
        engine_pass(conversation, records, "hybrid", True, timings, bar)
    with override_settings(ATOMS_EMBEDDING_PROVIDER=None), \
            tqdm(total=len(records), desc=f"{conversation.sample_id} lexical", unit="q", file=sys.stderr) as bar:
        engine_pass(conversation, records, "lexical", args.lexical_reads, timings, bar)
    return records


# --- The run -----------------------------------------------------------------------------------

def samples(args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    data = json.loads(args.data.read_text())
    limit = 2 if args.quick and args.conversations is None else args.conversations
    yield from data[:limit] if limit else data


def run(args: argparse.Namespace) -> dict[str, Any]:
    import django

    django.setup()
    import torch
    from django.conf import settings
    from django.core.management import call_command

    from atoms.embedding import load_provider
    from memoryhub.actors import Actor

    if args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    progress("migrating ...")
    call_command("migrate", "--noinput", verbosity=0)
    started = time.perf_counter()
    load_provider(settings.ATOMS_EMBEDDING_PROVIDER)
    model_load = time.perf_counter() - started
    actor = Actor.system("bench")
    timings, records, per_conversation, skipped = Timings(), [], [], 0
    for sample in samples(args):
        conversation = prepare(sample)
        skipped += conversation.skipped
        progress(f"{conversation.sample_id}: {len(conversation.turns)} turns, {len(conversation.questions)} questions")
        written = write(conversation, actor)
        indexed = index(conversation)
        progress(f"  written in {written:.1f} s; indexed {indexed['atoms']} atoms in {indexed['drain_seconds']:.1f} s "
                 f"({indexed['atoms'] / indexed['drain_seconds']:.0f} atoms/s), HNSW file {indexed['refresh_seconds']:.2f} s")
        records += evaluate(conversation, args, timings)
        per_conversation.append({"sample": conversation.sample_id, "turns": len(conversation.turns),
                                 "quarantined_turns": [conversation.turns[i][0] for i in sorted(conversation.quarantined)],
                                 "questions": len(conversation.questions), "skipped_questions": conversation.skipped,
                                 "write_seconds": written, **indexed})
    atoms = sum(c["atoms"] for c in per_conversation)
    seconds = sum(c["drain_seconds"] for c in per_conversation)

    def ms(samples: list[float]) -> dict[str, float] | None:
        return {"n": len(samples), "median_ms": statistics.median(samples) * 1000,
                "mean_ms": statistics.fmean(samples) * 1000} if samples else None

    return {
        "conversations": len(per_conversation), "turns": sum(c["turns"] for c in per_conversation),
        "questions": len(records), "skipped_questions_without_evidence": skipped, "per_conversation": per_conversation,
        "indexing": {"atoms": atoms, "seconds": seconds, "atoms_per_second": atoms / seconds, "step": STEP,
                     "torch_threads": torch.get_num_threads(), "model_load_seconds": model_load,
                     "refresh_seconds": sum(c["refresh_seconds"] for c in per_conversation)},
        "latency": {"search": {m: ms(v) for m, v in timings.search.items()},
                    "read": {m: ms(v) for m, v in timings.read.items()}},
        "hybrid_index_pending": timings.pending, "bm25_cost_mismatches": timings.cost_mismatch,
        "vector_candidates": settings.ATOMS_VECTOR_CANDIDATES, "records": records,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the first 2 conversations only")
    parser.add_argument("--conversations", type=int, help="the first N conversations (default all)")
    parser.add_argument("--lexical-reads", action="store_true", help="budgeted reads for the lexical engine too")
    parser.add_argument("--torch-threads", type=int, default=1,
                        help="torch intra-op threads (default 1: one core per worker child; 0 keeps torch's default)")
    parser.add_argument("--data", type=Path, default=DATA, help=f"LoCoMo JSON (default {DATA})")
    args = parser.parse_args()
    if not args.data.is_file():
        print(f"LoCoMo data not found at {args.data}; skipping (see docs/benchmarks.md)")
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="memoryhub-bench-locomo-"))
    os.environ.update(MEMORYHUB_VAR_DIR=str(tmp / "var"), LOG_LEVEL="WARNING", DATABASE_URL=f"sqlite:///{tmp / 'bench.sqlite3'}",
                      DJANGO_SETTINGS_MODULE="memoryhub.settings", ATOMS_EMBEDDING="minilm",
                      HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    for name in ("REDIS_URL", "ATOMS_VECTOR_INDEX_ROOT"):  # embedded mode; vector files in the temporary folder
        os.environ.pop(name, None)
    sys.path.insert(0, str(ROOT))
    started, load_at_start = datetime.now(UTC), [round(x, 2) for x in os.getloadavg()]
    try:
        figures = run(args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
               "load_average_at_start": load_at_start, "load_average_at_end": [round(x, 2) for x in os.getloadavg()]}
    report = {"date": started.isoformat(timespec="seconds"), "seconds": (datetime.now(UTC) - started).seconds,
              "command": " ".join([".venv/bin/python", "bench/locomo_recall.py", *sys.argv[1:]]), "machine": machine,
              "data": "LoCoMo (Maharana et al., ACL 2024), " + args.data.name, "budgets": list(BUDGETS),
              "rank_cutoff": RANK_CUTOFF, **figures}
    report["summary"] = summarize(report["records"], BUDGETS)
    print_tables(report)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=1) + "\n")
    plot(report, PNG)
    print(f"\nwritten to {OUT.relative_to(ROOT)} and {PNG.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
