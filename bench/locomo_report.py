"""The pure parts of bench/locomo_recall.py: the BM25 baseline, the render-cost model and
rank-order packing, the metrics, the tables and the plot. Nothing here touches Django.

A question's record holds, per method, the 1-based rank of each of its evidence turns in
that method's ranking (None when the turn is not ranked within RANK_CUTOFF), and, per
budget, how many evidence turns a budgeted answer contained: `budget` for atoms_read's own
selection, `packed` for the method's ranking packed in rank order under the same cost.
Every figure is a mean over questions (macro average), so a question with three evidence
turns weighs as much as one with a single turn.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# LoCoMo numbers its question categories; these are the names the benchmark's evaluation
# code and later papers use for them (5, adversarial, is left out of recall figures).
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
METHODS = ("bm25", "dense", "lexical", "hybrid")
LABELS = {"bm25": "BM25 (rank-bm25)", "dense": "MiniLM cosine only", "lexical": "engine, lexical only",
          "hybrid": "engine, MiniLM hybrid"}
PACKINGS = {"budget": "atoms_read's selection", "packed": "ranking packed in order"}
KS = (1, 5, 10)
# The engine ranks at most maxSeeds = 64 atoms when nothing is linked (atoms.md §6.4), so
# every method's ranking is cut there: MRR and recall@k are then like for like.
RANK_CUTOFF = 64
READ_LIMIT = 128  # maxAtoms: the byte budget, not the item count, bounds a read
WORD = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    return WORD.findall(text.lower())


def ranks_of(ranking: list[int], evidence: list[int]) -> list[int | None]:
    position = {turn: rank for rank, turn in enumerate(ranking[:RANK_CUTOFF], 1)}
    return [position.get(turn) for turn in evidence]


def cost_of(costs: list[int], chosen: list[int]) -> int:
    """utf8-bytes-v1 of the render of these units: frame 45 bytes, units, commas (§6.5)."""
    from atoms.core.render import EMPTY_WRAPPER_BYTES

    return EMPTY_WRAPPER_BYTES + sum(costs[i] for i in chosen) + len(chosen) - 1 if chosen else 0


def pack(ranking: list[int], costs: list[int], budget: int) -> list[int]:
    """read's baseline packing: walk the ranking, keep each unit whose addition still fits."""
    from atoms.core.render import EMPTY_WRAPPER_BYTES

    chosen: list[int] = []
    used = EMPTY_WRAPPER_BYTES - 1
    for turn in ranking:
        if len(chosen) == READ_LIMIT:
            break
        if used + costs[turn] + 1 <= budget:
            chosen.append(turn)
            used += costs[turn] + 1
    return chosen


class Bm25:
    """BM25Okapi over the turns the memory holds (quarantined ones left out)."""

    def __init__(self, texts: list[str], left_out: set[int]) -> None:
        from rank_bm25 import BM25Okapi

        self.turns = [i for i in range(len(texts)) if i not in left_out]
        self.model = BM25Okapi([tokens(texts[i]) for i in self.turns])

    def ranking(self, question: str) -> list[int]:
        """Turns with a positive score, best first; ties in turn order."""
        scores = self.model.get_scores(tokens(question))
        return [self.turns[j] for j in sorted((j for j, s in enumerate(scores) if s > 0),
                                              key=lambda j: (-scores[j], j))]


def tally(chosen: list[int], evidence: list[int], spent: int) -> dict[str, int]:
    return {"found": len(set(chosen) & set(evidence)), "evidence": len(evidence), "items": len(chosen),
            "bytes": spent}


def recall_at(ranks: Sequence[int | None], k: int) -> float:
    """Share of the evidence turns ranked within the first k."""
    return sum(1 for r in ranks if r is not None and r <= k) / len(ranks)


def reciprocal_rank(ranks: Sequence[int | None]) -> float:
    """1 / rank of the first evidence turn found, 0 when none is ranked."""
    found = [r for r in ranks if r is not None]
    return 1.0 / min(found) if found else 0.0


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def summarize(records: list[dict[str, Any]], budgets: Sequence[int]) -> dict[str, Any]:
    """{"overall": block, "by_category": {name: block}}; a block has, per method, recall@k,
    MRR and the budgeted recall per budget (when measured), and the question count."""

    def block(rows: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {"questions": len(rows), "evidence_turns": sum(len(r["evidence"]) for r in rows)}
        for method in METHODS:
            ranked = [r["ranks"][method] for r in rows if method in r["ranks"]]
            if not ranked:
                continue
            figures: dict[str, Any] = {f"recall@{k}": _mean([recall_at(x, k) for x in ranked]) for k in KS}
            figures["mrr"] = _mean([reciprocal_rank(x) for x in ranked])
            figures["curve"] = [_mean([recall_at(x, k) for x in ranked]) for k in range(1, RANK_CUTOFF + 1)]
            for packing in PACKINGS:
                budgeted: dict[str, Any] = {}
                for budget in budgets:
                    got = [r[packing][method][str(budget)] for r in rows
                           if str(budget) in r[packing].get(method, {})]
                    if got:
                        budgeted[str(budget)] = {
                            "recall": _mean([g["found"] / g["evidence"] for g in got]),
                            "items_mean": _mean([g["items"] for g in got]),
                            "bytes_mean": _mean([g["bytes"] for g in got]),
                            "item_bytes_mean": _mean([g["bytes"] / g["items"] for g in got if g["items"]]),
                        }
                figures[packing] = budgeted
            out[method] = figures
        return out

    by_category = {name: block([r for r in records if r["category"] == number])
                   for number, name in CATEGORIES.items()}
    return {"overall": block(records), "by_category": {k: v for k, v in by_category.items() if v["questions"]}}


def _pct(value: float | None) -> str:
    return "  -  " if value is None else f"{100 * value:5.1f}"


def _budget_cells(figures: dict[str, Any], packing: str, budgets: Sequence[int]) -> str:
    return " ".join(f"{_pct(figures[packing].get(str(b), {}).get('recall')):>6}" for b in budgets)


def print_tables(report: dict[str, Any]) -> None:
    summary, budgets = report["summary"], report["budgets"]
    print(f"\nLoCoMo evidence recall, {report['conversations']} conversations, {report['questions']} questions "
          f"(categories 1-4), {report['turns']:,} turns; {report['date']}")
    kib = [f"{b // 1024}k" for b in budgets]
    header = (f"{'scope':<12} {'n':>5} {'method':<22} " + " ".join(f"{'R@' + str(k):>6}" for k in KS)
              + f" {'MRR':>6} | " + " ".join(f"{'sel' + k:>6}" for k in kib) + " | "
              + " ".join(f"{'rank' + k:>6}" for k in kib))
    print(header + "\n" + "-" * len(header))
    scopes = [("overall", summary["overall"]), *list(summary["by_category"].items())]
    for name, block in scopes:
        for method in METHODS:
            if method not in block:
                continue
            f = block[method]
            cells = " ".join(f"{_pct(f[f'recall@{k}']):>6}" for k in KS)
            print(f"{name:<12} {block['questions']:>5} {LABELS[method]:<22} {cells} {_pct(f['mrr']):>6} | "
                  f"{_budget_cells(f, 'budget', budgets)} | {_budget_cells(f, 'packed', budgets)}")
    overall = summary["overall"]
    if "hybrid" in overall and "bm25" in overall:
        gap = 100 * (overall["hybrid"]["recall@10"] - overall["bm25"]["recall@10"])
        verdict = "meets" if gap >= 10 else "misses"
        print(f"hybrid recall@10 - BM25 recall@10 = {gap:+.1f} points: {verdict} the design target of +10")
    print(f"R@k: evidence recall within the first k (percent); MRR over the first {RANK_CUTOFF}. "
          "selNk: share of evidence turns in atoms_read's answer for a budget of N KiB; rankNk: the method's "
          "ranking packed in rank order under the same render cost (what read's baseline step would keep)")
    for method in ("hybrid", "lexical", "bm25"):
        for packing in PACKINGS:
            got = overall.get(method, {}).get(packing, {})
            if got:
                print(f"  {LABELS[method]}, {PACKINGS[packing]}: items / mean bytes per item = " + ", ".join(
                    f"{b // 1024}k {got[str(b)]['items_mean']:.1f} / {got[str(b)]['item_bytes_mean']:.0f}"
                    for b in budgets if str(b) in got))
    quarantined = [f"{c['sample']} {dia}" for c in report.get("per_conversation", []) for dia in c["quarantined_turns"]]
    if quarantined:
        print(f"quarantined at write by the threat scanner (in no ranking): {', '.join(quarantined)}")
    index = report.get("indexing")
    if index:
        print(f"indexing with MiniLM: {index['atoms']:,} atoms in {index['seconds']:.1f} s = "
              f"{index['atoms_per_second']:.0f} atoms/s per worker (index_drain, steps of {index['step']}, "
              f"{index['torch_threads']} torch thread(s); model load {index['model_load_seconds']:.1f} s not included)")


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary, budgets = report["summary"], report["budgets"]
    overall = summary["overall"]
    methods = [m for m in METHODS if m in overall]
    colors = {"bm25": "#888888", "dense": "#6aa84f", "lexical": "#e08a2c", "hybrid": "#2c6fbb"}
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))

    ax = axes[0]
    ks = list(range(1, RANK_CUTOFF + 1))
    for method in methods:
        ax.plot(ks, [100 * v for v in overall[method]["curve"]], label=LABELS[method], color=colors[method])
    ax.axvline(10, color="#cccccc", linestyle=":")
    ax.set(xscale="log", xlabel="k (turns)", ylabel="evidence recall@k (%)", title="Recall@k, all categories",
           ylim=(0, 100))
    ticks = [1, 2, 5, 10, 20, RANK_CUTOFF]
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.legend(loc="lower right", fontsize=8)

    ax = axes[1]
    names = [*list(summary["by_category"]), "overall"]
    blocks = [*[summary["by_category"][n] for n in names[:-1]], overall]
    width = 0.8 / len(methods)
    for i, method in enumerate(methods):
        xs = [j + (i - (len(methods) - 1) / 2) * width for j in range(len(names))]
        ax.bar(xs, [100 * (b[method]["recall@10"] or 0) for b in blocks], width, label=LABELS[method],
               color=colors[method])
    ax.set_xticks(range(len(names)), [f"{n}\n(n={b['questions']})" for n, b in zip(names, blocks, strict=True)],
                  fontsize=8)
    ax.set(ylabel="evidence recall@10 (%)", title="Recall@10 by category", ylim=(0, 100))
    ax.legend(fontsize=8)

    ax = axes[2]
    for method in methods:
        for packing, style in (("budget", "-"), ("packed", ":")):
            got = overall[method][packing]
            points = [(b, got[str(b)]["recall"]) for b in budgets if str(b) in got]
            if points and (packing == "budget" or method in ("bm25", "hybrid")):
                label = LABELS[method] + ("" if packing == "budget" else ", rank order")
                ax.plot([b / 1024 for b, _ in points], [100 * v for _, v in points], marker="o", linestyle=style,
                        label=label, color=colors[method])
    ax.set(xlabel="read budget (KiB of rendered text)", ylabel="evidence turns in the answer (%)",
           title="Budgeted recall (solid: atoms_read)", ylim=(0, 100), xticks=[b / 1024 for b in budgets])
    ax.legend(fontsize=8)

    fig.suptitle(f"LoCoMo evidence retrieval ({report['conversations']} conversations, {report['questions']} "
                 f"questions, {report['date'][:10]})", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
