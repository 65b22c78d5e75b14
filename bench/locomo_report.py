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
# Hybrid recall@10 over BM25 that each form must reach (docs/benchmarks.md "Results (recall v2, 2026-12-01)").
TARGETS = {"plain": 0.10, "linked": 0.14}

LABELS = {"bm25": "BM25 (rank-bm25)", "dense": "MiniLM cosine only", "lexical": "engine, lexical only",
          "hybrid": "engine, MiniLM hybrid"}
PACKINGS = {"budget": "atoms_read's selection", "packed": "ranking packed in order"}
FORM_LABELS = {"plain": "plain turns, no links",
               "linked": "sessions of linked turns, each turn `follows` the one before it"}
KS = (1, 5, 10)
# Every method's ranking is cut at the same rank, so MRR and recall@k compare like for like. The
# engine ranks at most maxSeeds atoms when nothing is linked (32 by default, 64 until 2026-12-02:
# docs/atoms.md "Defaults"); on plain turns its ranks 33-64 are therefore misses. The cut stays at
# 64 so the figures compare with the earlier runs (recall@10 does not depend on it).
RANK_CUTOFF = 64
READ_LIMIT = 128  # maxAtoms: the byte budget, not the item count, bounds a read
WORD = re.compile(r"\w+")


def tokens(text: str) -> list[str]:
    return WORD.findall(text.lower())


def ranks_of(ranking: list[int], evidence: list[int]) -> list[int | None]:
    position = {turn: rank for rank, turn in enumerate(ranking[:RANK_CUTOFF], 1)}
    return [position.get(turn) for turn in evidence]


def cost_of(costs: list[int], chosen: list[int]) -> int:
    """utf8-bytes-v1 of the render of these units: frame 45 bytes, units, commas (docs/atoms.md "Read path costs")."""
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


def print_form(report: dict[str, Any], form: str) -> None:
    block = report["forms"][form]
    summary, budgets = block["summary"], report["budgets"]
    print(f"\n[{form}] {FORM_LABELS[form]}: LoCoMo evidence recall, {report['conversations']} conversations, "
          f"{summary['overall']['questions']} questions (categories 1-4), {report['turns']:,} turns, "
          f"{block['links']:,} links; {report['date']}")
    kib = [f"{b // 1024}k" for b in budgets]
    header = (f"{'scope':<12} {'n':>5} {'method':<22} " + " ".join(f"{'R@' + str(k):>6}" for k in KS)
              + f" {'MRR':>6} | " + " ".join(f"{'sel' + k:>6}" for k in kib) + " | "
              + " ".join(f"{'rank' + k:>6}" for k in kib))
    print(header + "\n" + "-" * len(header))
    scopes = [("overall", summary["overall"]), *list(summary["by_category"].items())]
    for name, scope in scopes:
        for method in METHODS:
            if method not in scope:
                continue
            f = scope[method]
            cells = " ".join(f"{_pct(f[f'recall@{k}']):>6}" for k in KS)
            print(f"{name:<12} {scope['questions']:>5} {LABELS[method]:<22} {cells} {_pct(f['mrr']):>6} | "
                  f"{_budget_cells(f, 'budget', budgets)} | {_budget_cells(f, 'packed', budgets)}")
    overall = summary["overall"]
    for method in ("hybrid", "lexical", "bm25"):
        for packing in PACKINGS:
            got = overall.get(method, {}).get(packing, {})
            if got:
                print(f"  {LABELS[method]}, {PACKINGS[packing]}: items / mean bytes per item = " + ", ".join(
                    f"{b // 1024}k {got[str(b)]['items_mean']:.1f} / {got[str(b)]['item_bytes_mean']:.0f}"
                    for b in budgets if str(b) in got))
    latency = block.get("latency", {})
    cells = [f"{op} {m} {v['median_ms']:.0f}" for op in ("search", "read") for m, v in latency.get(op, {}).items() if v]
    if cells:
        print("  median service time, ms: " + ", ".join(cells))
    if block.get("hybrid_index_pending") or block.get("bm25_cost_mismatches"):
        print(f"  hybrid answers with index not ready: {block['hybrid_index_pending']}; reads whose tokenCount "
              f"the unit prices missed: {block['bm25_cost_mismatches']}")


def _ratio(value: float | None, base: float | None) -> float | None:
    return value / base if value is not None and base else None


def _minus(value: float | None, base: float | None) -> float | None:
    return value - base if value is not None and base is not None else None


def compare(report: dict[str, Any]) -> dict[str, Any]:
    """Overall figures per form and method, against the same form's BM25 (BM25 ranks the same
    texts in both forms: links are not text), and linked minus plain per method."""
    out: dict[str, Any] = {}
    for form, block in report["forms"].items():
        overall = block["summary"]["overall"]
        bm25 = overall["bm25"]
        rows: dict[str, Any] = {}
        for method in METHODS:
            if method not in overall:
                continue
            f = overall[method]
            row: dict[str, Any] = {"recall@10": f["recall@10"], "mrr": f["mrr"],
                                   "recall@10_minus_bm25": _minus(f["recall@10"], bm25["recall@10"]),
                                   "recall@10_over_bm25": _ratio(f["recall@10"], bm25["recall@10"]),
                                   "mrr_minus_bm25": _minus(f["mrr"], bm25["mrr"]), "budgets": {}}
            for budget in report["budgets"]:
                base = bm25["packed"].get(str(budget), {}).get("recall")
                sel = f["budget"].get(str(budget), {}).get("recall")
                packed = f["packed"].get(str(budget), {}).get("recall")
                row["budgets"][str(budget)] = {
                    "selection": sel, "rank_order": packed, "selection_minus_rank_order": _minus(sel, packed),
                    "selection_minus_bm25": _minus(sel, base), "selection_over_bm25": _ratio(sel, base),
                    "rank_order_minus_bm25": _minus(packed, base)}
            rows[method] = row
        out[form] = rows
    if {"plain", "linked"} <= set(out):
        out["linked_minus_plain"] = {
            method: {"recall@10": _minus(out["linked"][method]["recall@10"], out["plain"][method]["recall@10"]),
                     "mrr": _minus(out["linked"][method]["mrr"], out["plain"][method]["mrr"]),
                     "selection": {b: _minus(out["linked"][method]["budgets"][b]["selection"],
                                             out["plain"][method]["budgets"][b]["selection"])
                                   for b in out["plain"][method]["budgets"]}}
            for method in out["plain"] if method in out["linked"]}
    return out


def _pts(value: float | None) -> str:
    return "   -  " if value is None else f"{100 * value:+6.1f}"


def _times(value: float | None) -> str:
    return "   -  " if value is None else f"{value:5.2f}x"


def print_comparison(report: dict[str, Any]) -> None:
    comparison, budgets = report["comparison"], report["budgets"]
    kib = [f"{b // 1024}k" for b in budgets]
    print(f"\nBoth forms, overall ({report['questions']} questions). d: points against the same form's BM25 "
          "(recall@10, MRR; sel/rank: against BM25 packed in rank order); x: ratio to it")
    header = (f"{'form':<7} {'method':<22} {'R@10':>6} {'dR@10':>6} {'xR@10':>6} {'MRR':>6} {'dMRR':>6} | "
              + " ".join(f"{'sel' + k:>6}" for k in kib) + " | " + " ".join(f"{'rank' + k:>6}" for k in kib)
              + " | " + " ".join(f"{'dsel' + k:>7}" for k in kib) + " | " + " ".join(f"{'xsel' + k:>7}" for k in kib))
    print(header + "\n" + "-" * len(header))
    for form in report["forms"]:
        for method, row in comparison[form].items():
            cells = [row["budgets"][str(b)] for b in budgets]
            print(f"{form:<7} {LABELS[method]:<22} {_pct(row['recall@10']):>6} {_pts(row['recall@10_minus_bm25'])} "
                  f"{_times(row['recall@10_over_bm25'])} {_pct(row['mrr']):>6} {_pts(row['mrr_minus_bm25'])} | "
                  + " ".join(f"{_pct(c['selection']):>6}" for c in cells) + " | "
                  + " ".join(f"{_pct(c['rank_order']):>6}" for c in cells) + " | "
                  + " ".join(f"{_pts(c['selection_minus_bm25']):>7}" for c in cells) + " | "
                  + " ".join(f"{_times(c['selection_over_bm25']):>7}" for c in cells))
    for method, row in comparison.get("linked_minus_plain", {}).items():
        if method in ("hybrid", "lexical"):
            sel = ", ".join(f"sel{int(b) // 1024}k {_pts(v).strip()}" for b, v in row["selection"].items() if v is not None)
            print(f"linked - plain, {LABELS[method]}: R@10 {_pts(row['recall@10']).strip()}, "
                  f"MRR {_pts(row['mrr']).strip()} points" + (f"; {sel}" if sel else ""))
    for form in report["forms"]:
        gap = comparison[form].get("hybrid", {}).get("recall@10_minus_bm25")
        if gap is not None:
            target = TARGETS.get(form, 0.10)
            verdict = "meets" if gap >= target else "misses"
            print(f"[{form}] hybrid recall@10 - BM25 recall@10 = {100 * gap:+.1f} points: "
                  f"{verdict} the design target of {100 * target:+.0f}")


def print_tables(report: dict[str, Any]) -> None:
    for form in report["forms"]:
        print_form(report, form)
    print(f"R@k: evidence recall within the first k (percent); MRR over the first {RANK_CUTOFF}. "
          "selNk: share of evidence turns in atoms_read's answer for a budget of N KiB; rankNk: the method's "
          "ranking packed in rank order under the same render cost (what read's baseline step would keep)")
    print_comparison(report)
    quarantined = sorted({f"{c['sample']} {dia}" for c in report.get("per_conversation", [])
                          for dia in c["quarantined_turns"]})
    if quarantined:
        print(f"quarantined at write by the threat scanner (in no ranking): {', '.join(quarantined)}")
    index = report.get("indexing")
    if index:
        print(f"indexing with MiniLM: {index['atoms']:,} atoms in {index['seconds']:.1f} s = "
              f"{index['atoms_per_second']:.0f} atoms/s per worker (index_drain, steps of {index['step']}, "
              f"{index['torch_threads']} torch thread(s); model load {index['model_load_seconds']:.1f} s not included)")


def _plot_form(axes: Any, summary: dict[str, Any], budgets: Sequence[int], form: str) -> None:
    """One row of the figure: recall@k, recall@10 by category, budgeted recall."""
    overall = summary["overall"]
    methods = [m for m in METHODS if m in overall]
    colors = {"bm25": "#888888", "dense": "#6aa84f", "lexical": "#e08a2c", "hybrid": "#2c6fbb"}

    ax = axes[0]
    ks = list(range(1, RANK_CUTOFF + 1))
    for method in methods:
        ax.plot(ks, [100 * v for v in overall[method]["curve"]], label=LABELS[method], color=colors[method])
    ax.axvline(10, color="#cccccc", linestyle=":")
    ax.set(xscale="log", xlabel="k (turns)", ylabel="evidence recall@k (%)", title=f"[{form}] Recall@k, all categories",
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
    ax.set(ylabel="evidence recall@10 (%)", title=f"[{form}] Recall@10 by category", ylim=(0, 100))
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
           title=f"[{form}] Budgeted recall (solid: atoms_read)", ylim=(0, 100), xticks=[b / 1024 for b in budgets])
    ax.legend(fontsize=8)


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    forms = list(report["forms"])
    fig, axes = plt.subplots(len(forms), 3, figsize=(16, 4.8 * len(forms)), squeeze=False)
    for row, form in zip(axes, forms, strict=True):
        _plot_form(row, report["forms"][form]["summary"], report["budgets"], form)
    fig.suptitle(f"LoCoMo evidence retrieval, plain turns and sessions of linked turns ({report['conversations']} "
                 f"conversations, {report['questions']} questions, {report['date'][:10]})", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
