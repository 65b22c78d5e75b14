"""Retrieval quality on LoCoMo: turn-level evidence recall of the Atom engine against BM25,
with the conversations written in two forms in the same run.

    .venv/bin/python bench/locomo_recall.py [--quick] [--conversations N] [--lexical-reads]
        [--forms plain,linked] [--torch-threads N] [--data PATH]

Data: LoCoMo (Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM
Agents", ACL 2024): its dev file, given by --data (the default is the shared data folder
beside the checkout; docs/benchmarks.md "Retrieval quality (LoCoMo)"), never copied into the
project; without it the script says so and exits with status 0.

Each conversation is written twice, each time into a fresh tenant with an ingest key
(bench/locomo_ingest.py): `plain`, every turn one atom without links, and `linked`, each
session a chain in which every turn links to the one before it with role `follows` (an
ordinary link: not required, so read's closures never pull a linked turn in). Every turn
becomes one atom, "[<session date>] <speaker>: <text>" (plus " [shares a photo: <caption>]"
for image turns), written through atoms_write in batches of whole sessions (at most 128
changes) with an idempotency key. Each tenant is indexed with MiniLM the way a worker does
it (index_drain, steps of ATOMS_INDEX_TASK_STEP events), timed, and its HNSW file built. For every
question of
categories 1-4, in each form:

- hybrid: atoms_search(query=question, limit 64) with the MiniLM provider, the ranked items
  mapped back to dia_ids; atoms_read(state {query: question}, tokens 1,024 / 2,048 / 4,096,
  limit 128) for the budgeted recall;
- lexical: the same engine and atoms with ATOMS_EMBEDDING_PROVIDER = None (reads only with
  --lexical-reads: they add about a quarter to the run time);
- bm25: rank_bm25.BM25Okapi over the same turn texts, lowercase \\w+ tokens;
- dense (analysis): the cosine between the question's MiniLM vector and the atoms' stored
  index vectors alone, to tell the encoder's part from the engine's combination.
Every ranking is also packed in rank order under the engine's own render cost (utf8-bytes-v1
of the format-2 units, links included; walk the ranking, keep what fits, as read's baseline
step does), which separates ranking quality from read's selection.

Prints, per form, recall@1/5/10, MRR and budgeted recall per category and overall, then the
two forms side by side with differences and ratios against BM25, and the indexing
throughput; writes bench/out/locomo_recall.json and bench/out/locomo_recall.png.
SQLite in a temporary folder; nothing but this process is contacted.
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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from locomo_ingest import DATA, FORMS, ROOT, Conversation, environment, ingest, samples, start
from locomo_report import (
    RANK_CUTOFF,
    READ_LIMIT,
    Bm25,
    compare,
    cost_of,
    pack,
    plot,
    print_tables,
    ranks_of,
    summarize,
    tally,
)

OUT = ROOT / "bench" / "out" / "locomo_recall.json"
PNG = ROOT / "bench" / "out" / "locomo_recall.png"
BUDGETS = (1024, 2048, 4096)


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
    from atoms.api.read import answer_read
    from atoms.api.search import answer_search

    caller = conversation.caller
    for question, record in zip(conversation.questions, records, strict=True):
        evidence = question["turns"]
        t0 = time.perf_counter()
        result = answer_search(caller, {"query": question["question"], "options": {"limit": RANK_CUTOFF}})
        timings.search[method].append(time.perf_counter() - t0)
        timings.pending += method == "hybrid" and result["diagnostics"]["index"] != "ready"
        rank(record, method, [conversation.ref_turn[item["ref"]] for item in result["items"]], conversation, evidence)
        if reads:
            record["budget"][method] = {}
            for budget in BUDGETS:
                t0 = time.perf_counter()
                answer = answer_read(caller, {"state": {"query": question["question"]},
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
        blocks.append(entry.matrix())
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

    bm25 = Bm25([turn.text for turn in conversation.turns], conversation.quarantined)
    dense = dense_rankings(conversation)
    records = []
    for question, dense_ranking in zip(conversation.questions, dense, strict=True):
        record: dict[str, Any] = {"sample": question["sample"], "form": conversation.form, "qa": question["qa"],
                                  "category": question["category"],
                                  "evidence": question["evidence"], "ranks": {}, "budget": {}, "packed": {}}
        rank(record, "bm25", bm25.ranking(question["question"]), conversation, question["turns"])
        rank(record, "dense", dense_ranking, conversation, question["turns"])
        records.append(record)
    with tqdm(total=len(records), desc=f"{conversation.sample_id} {conversation.form} hybrid", unit="q", file=sys.stderr) as bar:
        engine_pass(conversation, records, "hybrid", True, timings, bar)
    with override_settings(ATOMS_EMBEDDING_PROVIDER=None), \
            tqdm(total=len(records), desc=f"{conversation.sample_id} {conversation.form} lexical", unit="q", file=sys.stderr) as bar:
        engine_pass(conversation, records, "lexical", args.lexical_reads, timings, bar)
    return records


# --- The run -----------------------------------------------------------------------------------

def ms(values: list[float]) -> dict[str, float] | None:
    return {"n": len(values), "median_ms": statistics.median(values) * 1000,
            "mean_ms": statistics.fmean(values) * 1000} if values else None


def run(args: argparse.Namespace) -> dict[str, Any]:
    model_load = start(args.torch_threads)
    import torch
    from django.conf import settings

    from atoms.config import DEFAULT_WEIGHTS, RETRIEVAL
    from memoryhub.actors import Actor

    actor = Actor.system("bench")
    timings = {form: Timings() for form in args.forms}
    records: dict[str, list[dict[str, Any]]] = {form: [] for form in args.forms}
    per_conversation: list[dict[str, Any]] = []
    limit = 2 if args.quick and args.conversations is None else args.conversations
    for sample in samples(args.data, limit):
        # Both forms of a conversation one after the other: the same machine load for each.
        for form in args.forms:
            conversation, figures = ingest(sample, form, actor)
            records[form] += evaluate(conversation, args, timings[form])
            per_conversation.append(figures)
    atoms = sum(c["atoms"] for c in per_conversation)
    seconds = sum(c["drain_seconds"] for c in per_conversation)
    first = [c for c in per_conversation if c["form"] == args.forms[0]]
    forms = {form: {
        "links": sum(c["links"] for c in per_conversation if c["form"] == form),
        "latency": {"search": {m: ms(v) for m, v in timings[form].search.items()},
                    "read": {m: ms(v) for m, v in timings[form].read.items()}},
        "hybrid_index_pending": timings[form].pending, "bm25_cost_mismatches": timings[form].cost_mismatch,
        "records": records[form]} for form in args.forms}
    return {
        "conversations": len(first), "turns": sum(c["turns"] for c in first),
        "questions": len(records[args.forms[0]]), "skipped_questions_without_evidence": sum(c["skipped_questions"] for c in first),
        "per_conversation": per_conversation,
        "indexing": {"atoms": atoms, "seconds": seconds, "atoms_per_second": atoms / seconds,
                     "step": settings.ATOMS_INDEX_TASK_STEP,
                     "torch_threads": torch.get_num_threads(), "model_load_seconds": model_load,
                     "refresh_seconds": sum(c["refresh_seconds"] for c in per_conversation)},
        "retrieval_defaults": {name: default for name, (default, _, _) in RETRIEVAL.items()},
        "weights": DEFAULT_WEIGHTS, "forms": forms,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the first 2 conversations only")
    parser.add_argument("--conversations", type=int, help="the first N conversations (default all)")
    parser.add_argument("--lexical-reads", action="store_true", help="budgeted reads for the lexical engine too")
    parser.add_argument("--forms", default=",".join(FORMS), help=f"comma-separated, of {', '.join(FORMS)} (default both)")
    parser.add_argument("--torch-threads", type=int, default=1,
                        help="torch intra-op threads (default 1: one core per worker child; 0 keeps torch's default)")
    parser.add_argument("--data", type=Path, default=DATA, help=f"LoCoMo JSON (default {DATA})")
    args = parser.parse_args()
    args.forms = [f for f in FORMS if f in args.forms.split(",")]
    if not args.forms:
        parser.error(f"--forms names none of {', '.join(FORMS)}")
    if not args.data.is_file():
        print(f"LoCoMo data not found at {args.data}; skipping (see docs/benchmarks.md)")
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="memoryhub-bench-locomo-"))
    environment(tmp)  # SQLite, vector files and var/ in the temporary folder; embedded mode
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
    for block in report["forms"].values():
        block["summary"] = summarize(block["records"], BUDGETS)
    report["comparison"] = compare(report)
    print_tables(report)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=1) + "\n")
    plot(report, PNG)
    print(f"\nwritten to {OUT.relative_to(ROOT)} and {PNG.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
