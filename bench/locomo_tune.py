"""Tune the tenant's retrieval and activation config on LoCoMo dev: search recall@10 and MRR
of the hybrid engine against BM25, with the conversations as plain turns and as sessions of
linked turns (bench/locomo_ingest.py).

    .venv/bin/python bench/locomo_tune.py [--quick] [--conversations N] [--grid staged|full]
        [--semantic 0.3,0.4,...,0.9] [--propagation 0,0.1,0.2,0.3,0.5]
        [--follows 1:1,1:0,0:1] [--max-seeds 32,64,128] [--depth 0,1,2]
        [--lexical-candidates N,..] [--semantic-candidates N,..] [--top N] [--torch-threads N]

Data: the LoCoMo dev file only (Maharana et al., ACL 2024), given by --data (the default is
the shared data folder beside the checkout; docs/benchmarks.md "Retrieval quality (LoCoMo)");
without it the script says so and exits with status 0.

Each conversation is written and indexed once per form, into its own tenant; the encoder
loads once. A grid point is a tenant config (`retrieval.weights` {semantic, lexical = 1 -
semantic}, `activation.propagation`, `activation.relations.follows` {forward, reverse},
`retrieval.maxSeeds`, `retrieval.depth`, and the candidate counts when given). For each
point the config is stored in every tenant's AtomStore.config directly, then
atoms_search(query=question, limit 64) runs for every question of categories 1-4. Keys that
atoms/config.py does not accept yet are stored all the same, and the output says which.

Points that the activation formulas (docs/atoms.md "Defaults") make equal are measured once: without
links (plain form) only the weights, maxSeeds and candidate counts act; with propagation 0,
depth 0, or both `follows` weights 0, the linked form ranks as it would without links.
Question vectors are memoized during the grid (the same text gives the same vector), which
takes the encoder out of the grid's run time.

`--grid staged` (the default): (1) every semantic weight with propagation 0; (2) with the
best weights, every propagation x follows weights x depth > 0; (3) with the best of those,
every maxSeeds and candidate count, and the weights next to the best. `--grid full`: the
whole product. Prints a table sorted by the mean over the two forms of recall@10 minus
BM25's, writes bench/out/locomo_tune.json.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from locomo_ingest import DATA, FORMS, ROOT, Conversation, environment, ingest, progress, samples, start
from locomo_report import RANK_CUTOFF, Bm25, ranks_of, recall_at, reciprocal_rank

OUT = ROOT / "bench" / "out" / "locomo_tune.json"


@dataclass(frozen=True)
class Point:
    semantic: float = 0.8
    propagation: float = 0.5
    forward: float = 1.0
    reverse: float = 1.0
    max_seeds: int = 64
    depth: int = 2
    lexical_candidates: int | None = None
    semantic_candidates: int | None = None
    stopwords: str = "none"  # a list of atoms/core/stopwords.py, for the query terms (not a config key)
    defaults: bool = False  # the engine's own defaults: an empty config, the engine's own stopwords

    def config(self) -> dict[str, Any]:
        if self.defaults:
            return {}
        retrieval: dict[str, Any] = {"weights": {"semantic": self.semantic, "lexical": round(1 - self.semantic, 6)},
                                     "maxSeeds": self.max_seeds, "depth": self.depth}
        if self.lexical_candidates is not None:
            retrieval["lexicalCandidates"] = self.lexical_candidates
        if self.semantic_candidates is not None:
            retrieval["semanticCandidates"] = self.semantic_candidates
        return {"retrieval": retrieval, "activation": {
            "propagation": self.propagation, "relations": {"follows": {"forward": self.forward, "reverse": self.reverse}}}}

    def inert(self, form: str) -> bool:
        """True when links cannot change the ranking in `form` (docs/atoms.md "Defaults")."""
        return form == "plain" or self.propagation == 0 or self.depth == 0 or self.forward == self.reverse == 0

    def key(self, form: str) -> tuple[Any, ...]:
        """Points with equal keys rank identically in `form` (see the module docstring)."""
        if self.defaults:
            return ("defaults",)
        graph = ("no-graph",) if self.inert(form) else (self.propagation, self.forward, self.reverse, self.depth)
        return (self.semantic, self.max_seeds, self.lexical_candidates, self.semantic_candidates, self.stopwords,
                *graph)

    def measured(self, form: str) -> Point:
        """The equal point that is cheapest to measure: depth 0 when links cannot act."""
        return replace(self, depth=0) if not self.defaults and self.inert(form) else self

    def label(self) -> str:
        if self.defaults:
            return "engine defaults (config {})"
        extra = "".join(f" {name} {value}" for name, value in (("lexC", self.lexical_candidates),
                                                                ("semC", self.semantic_candidates)) if value is not None)
        extra += f" stop {self.stopwords}" if self.stopwords != "none" else ""
        return (f"sem {self.semantic:.2f} p {self.propagation:.2f} follows {self.forward:g}:{self.reverse:g} "
                f"seeds {self.max_seeds} depth {self.depth}{extra}")


# --- Configs ------------------------------------------------------------------------------------

def unaccepted(point: Point) -> list[str]:
    """The keys of the point's config that atoms/config.py refuses, each with its message."""
    from atoms.config import ConfigError, validate_config

    config, out = point.config(), []
    for section, values in config.items():
        for name, value in values.items():
            try:
                validate_config({section: {name: value}})
            except ConfigError as exc:
                out.append(f"{section}.{name} ({exc})")
    return out


ENGINE_STOPWORDS: frozenset[str] | None = None  # the engine's own list, kept for the defaults point


def use_stopwords(point: Point) -> None:
    """Set the query stopwords the engine uses (atoms/core/bm25.py STOPWORDS) for this point:
    a code constant, not a tenant config key, so the bench switches it in the process."""
    global ENGINE_STOPWORDS
    from atoms.core import bm25
    from atoms.core.stopwords import LISTS

    if ENGINE_STOPWORDS is None:
        ENGINE_STOPWORDS = bm25.STOPWORDS
    bm25.STOPWORDS = ENGINE_STOPWORDS if point.defaults else LISTS[point.stopwords]


def store_config(conversations: list[Conversation], point: Point) -> None:
    """The validated config when atoms/config.py accepts it, else the raw one (reported)."""
    from atoms.config import ConfigError, validate_config
    from atoms.models import AtomStore

    use_stopwords(point)
    try:
        config = validate_config(point.config())
    except ConfigError:
        config = point.config()
    tenants = [c.caller.tenant.pk for c in conversations]
    AtomStore.objects.filter(tenant_id__in=tenants).update(config=config)


def memoize_queries() -> bool:
    """Memoize the loaded encoder's answers by input, for the grid only (indexing is over)."""
    from django.conf import settings

    from atoms.embedding import load_provider

    loaded = load_provider(settings.ATOMS_EMBEDDING_PROVIDER)
    provider = getattr(loaded, "provider", None)
    if provider is None or not callable(getattr(provider, "encode", None)):
        return False
    encode, memo = provider.encode, {}

    def memoized(texts: list[str]) -> Any:
        key = tuple(texts)
        if key not in memo:
            memo[key] = encode(list(texts))
        return memo[key]

    provider.encode = memoized
    return True


# --- Measuring ----------------------------------------------------------------------------------

def asked(conversation: Conversation, step: int) -> list[dict[str, Any]]:
    """Every `step`-th question of the conversation (all with step 1): the screening subset."""
    return conversation.questions[::step]


def measure(conversations: list[Conversation], point: Point, step: int, bar: Any) -> dict[str, Any]:
    """recall@10, MRR and a fingerprint of the rankings for one form under one config."""
    from atoms.api.search import answer_search

    store_config(conversations, point)
    r10, mrr, rankings = [], [], []
    for conversation in conversations:
        for question in asked(conversation, step):
            result = answer_search(conversation.caller,
                                   {"query": question["question"], "options": {"limit": RANK_CUTOFF}})
            ranking = [conversation.ref_turn[item["ref"]] for item in result["items"]]
            ranks = ranks_of(ranking, question["turns"])
            r10.append(recall_at(ranks, 10))
            mrr.append(reciprocal_rank(ranks))
            rankings.append(tuple(ranking[:RANK_CUTOFF]))
            bar.update(1)
    return {"recall@10": sum(r10) / len(r10), "mrr": sum(mrr) / len(mrr), "questions": len(r10), "step": step,
            "fingerprint": hash(tuple(rankings))}


def baseline(conversations: list[Conversation], step: int) -> dict[str, float]:
    r10, mrr = [], []
    for conversation in conversations:
        bm25 = Bm25([turn.text for turn in conversation.turns], conversation.quarantined)
        for question in asked(conversation, step):
            ranks = ranks_of(bm25.ranking(question["question"]), question["turns"])
            r10.append(recall_at(ranks, 10))
            mrr.append(reciprocal_rank(ranks))
    return {"recall@10": sum(r10) / len(r10), "mrr": sum(mrr) / len(mrr)}


class Tuner:
    def __init__(self, memories: dict[str, list[Conversation]]) -> None:
        self.memories = memories
        self.bm25: dict[tuple[str, int], dict[str, float]] = {}
        self.cache: dict[tuple[str, int, tuple[Any, ...]], dict[str, Any]] = {}
        self.results: dict[Point, dict[str, dict[str, Any]]] = {}  # the last measurement of each point
        self.refused: set[str] = set()

    def baseline(self, form: str, step: int) -> dict[str, float]:
        if (form, step) not in self.bm25:
            self.bm25[(form, step)] = baseline(self.memories[form], step)
        return self.bm25[(form, step)]

    def gain(self, point: Point) -> float:
        """Mean over the forms of recall@10 minus BM25's on the same questions."""
        result = self.results[point]
        return sum(r["recall@10"] - self.baseline(f, r["step"])["recall@10"] for f, r in result.items()) / len(result)

    def run(self, points: list[Point], stage: str, step: int = 1) -> None:
        from tqdm import tqdm

        todo = {(form, step, p.key(form)): p for p in points for form in self.memories
                if (form, step, p.key(form)) not in self.cache}
        total = sum(len(asked(c, step)) for form, _, _ in todo for c in self.memories[form])
        scope = "all questions" if step == 1 else f"1 in {step} questions"
        progress(f"{stage}: {len(points)} configs, {len(todo)} distinct measurements, {scope}")
        with tqdm(total=total, desc=stage, unit="q", file=sys.stderr) as bar:
            for (form, _, _), point in todo.items():
                self.refused.update(unaccepted(point))
                result = self.cache[(form, step, point.key(form))] = measure(
                    self.memories[form], point.measured(form), step, bar)
                progress(f"  {form}: {point.measured(form).label()}: R@10 {100 * result['recall@10']:.1f} "
                         f"(BM25 {100 * self.baseline(form, step)['recall@10']:.1f}) MRR {100 * result['mrr']:.1f}")
        for point in points:
            self.results[point] = {form: self.cache[(form, step, point.key(form))] for form in self.memories}

    def best(self, points: list[Point]) -> Point:
        return max(points, key=lambda p: (self.gain(p), -points.index(p)))


def grids(args: argparse.Namespace, tuner: Tuner) -> None:
    axes = {"semantic": args.semantic, "propagation": args.propagation, "follows": args.follows,
            "max_seeds": args.max_seeds, "depth": args.depth,
            "lexical_candidates": args.lexical_candidates or [None],
            "semantic_candidates": args.semantic_candidates or [None], "stopwords": args.stopwords}
    if args.grid == "list":
        tuner.run(list(dict.fromkeys(parse_point(text) for text in args.point)), "listed points")
        return
    if args.grid == "full":
        points = [Point(semantic=s, propagation=p, forward=f, reverse=r, max_seeds=m, depth=d,
                        lexical_candidates=lc, semantic_candidates=sc, stopwords=sw)
                  for s, p, (f, r), m, d, lc, sc, sw in itertools.product(*axes.values())]
        tuner.run([Point(defaults=True), *dict.fromkeys(points)], "full grid")
        return
    tuner.run([Point(defaults=True)], "0 engine defaults")
    base = Point(max_seeds=64 if 64 in args.max_seeds else args.max_seeds[0], stopwords=args.stopwords[0])
    stage1 = [replace(base, semantic=s, propagation=0.0) for s in args.semantic]
    tuner.run(stage1, "1 weights")
    weights = tuner.best(stage1).semantic
    stage2 = [replace(base, semantic=weights, propagation=p, forward=f, reverse=r, depth=d)
              for p, (f, r), d in itertools.product(args.propagation, args.follows, args.depth) if p > 0 and d > 0]
    # Screened on a subset of the questions (the linked form's graph makes these the slow
    # searches); the best few are then measured on all questions.
    tuner.run(stage2, "2 activation", step=args.screen)
    finalists = sorted(stage2, key=lambda p: -tuner.gain(p))[:args.finalists]
    tuner.run(finalists, "2 finalists")
    best = tuner.best(stage1 + finalists)
    near = [s for s in args.semantic if abs(s - best.semantic) < 0.15 and s != best.semantic]
    stage3 = ([replace(best, max_seeds=m) for m in args.max_seeds if m != best.max_seeds]
              + [replace(best, semantic=s) for s in near]
              + [replace(best, lexical_candidates=lc, semantic_candidates=sc)
                 for lc, sc in itertools.product(axes["lexical_candidates"], axes["semantic_candidates"])
                 if (lc, sc) != (None, None)])
    tuner.run(stage3, "3 seeds, weights, candidates")


def inert_axes(tuner: Tuner) -> list[str]:
    """Axes whose values, all else equal, never changed a ranking in any form."""
    out = []
    for axis in ("semantic", "propagation", "forward", "reverse", "max_seeds", "depth", "lexical_candidates",
                 "semantic_candidates", "stopwords"):
        groups: dict[tuple[Any, ...], list[Point]] = {}
        for point, result in tuner.results.items():
            step = next(iter(result.values()))["step"]  # fingerprints compare on the same questions only
            groups.setdefault((step, *(v for k, v in asdict(point).items() if k != axis)), []).append(point)
        varied = [g for g in groups.values() if len({getattr(p, axis) for p in g}) > 1]
        if varied and all(len({tuner.results[p][f]["fingerprint"] for p in g}) == 1
                          for g in varied for f in tuner.memories):
            out.append(axis)
    return out


def print_table(tuner: Tuner, top: int) -> list[dict[str, Any]]:
    """One table per question set (all, then the screening subset), best mean gain first."""
    forms = list(tuner.memories)
    steps = sorted({next(iter(r.values()))["step"] for r in tuner.results.values()})
    out = []
    for step in steps:
        rows = sorted((p for p, r in tuner.results.items() if next(iter(r.values()))["step"] == step),
                      key=lambda p: -tuner.gain(p))
        n = next(iter(tuner.results[rows[0]].values()))["questions"]
        scope = f"all {n} questions" if step == 1 else f"screened on 1 in {step} questions ({n})"
        print(f"\n{scope}; BM25 (rank-bm25): " + ", ".join(
            f"{f} R@10 {100 * tuner.baseline(f, step)['recall@10']:.1f} MRR {100 * tuner.baseline(f, step)['mrr']:.1f}"
            for f in forms))
        header = f"{'#':>3} {'config':<50} " + " ".join(f"{f + ' R@10':>12} {'d':>6} {'MRR':>5}" for f in forms)
        header += f" {'mean d':>7}" + (f" {'lnk-pln':>7}" if len(forms) == 2 else "")
        print(header + "\n" + "-" * len(header))
        for rank, point in enumerate(rows, 1):
            result = tuner.results[point]
            cells = " ".join(f"{100 * result[f]['recall@10']:>12.1f} "
                             f"{100 * (result[f]['recall@10'] - tuner.baseline(f, step)['recall@10']):>+6.1f} "
                             f"{100 * result[f]['mrr']:>5.1f}" for f in forms)
            diff = 100 * (result["linked"]["recall@10"] - result["plain"]["recall@10"]) if len(forms) == 2 else None
            if rank <= top:
                print(f"{rank:>3} {point.label():<50} {cells} {100 * tuner.gain(point):>+7.1f}"
                      + (f" {diff:>+7.1f}" if diff is not None else ""))
            out.append({"point": {"defaults": True} if point.defaults else asdict(point), "config": point.config(), "mean_gain": tuner.gain(point),
                        "bm25": {f: tuner.baseline(f, step) for f in forms},
                        **{f: {k: v for k, v in result[f].items() if k != "fingerprint"} for f in forms}})
        if len(rows) > top:
            print(f"... {len(rows) - top} more in the JSON")
    print("d: recall@10 minus BM25's on the same questions (points); mean d: over the forms; "
          "lnk-pln: linked minus plain recall@10; MRR over the first 64")
    return out


def floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x]


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


POINT_KEYS = {"sem": ("semantic", float), "p": ("propagation", float), "seeds": ("max_seeds", int),
              "depth": ("depth", int), "lexC": ("lexical_candidates", int), "semC": ("semantic_candidates", int),
              "stop": ("stopwords", str)}


def parse_point(text: str) -> Point:
    """`sem=0.3,p=0.1,follows=1:1,seeds=32,depth=1,stop=lucene` (unnamed keys as Point's defaults)."""
    values: dict[str, Any] = {}
    for item in text.split(","):
        name, _, value = item.partition("=")
        if name == "follows":
            values["forward"], values["reverse"] = pairs(value)[0]
        else:
            field_name, kind = POINT_KEYS[name]
            values[field_name] = kind(value)
    return Point(**values)


def pairs(text: str) -> list[tuple[float, float]]:
    return [(float(a), float(b)) for a, b in (x.split(":") for x in text.split(",") if x)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the first 2 conversations only")
    parser.add_argument("--conversations", type=int, help="the first N conversations (default all 7)")
    parser.add_argument("--grid", choices=("staged", "full", "list"), default="staged",
                        help="list: the --point configs only")
    parser.add_argument("--point", action="append", default=[],
                        help="--grid list: one config, e.g. sem=0.3,p=0.1,follows=1:1,seeds=32,depth=1,stop=lucene")
    parser.add_argument("--stopwords", type=lambda t: [x for x in t.split(",") if x], default=["none"],
                        help="query stopword lists of atoms/core/stopwords.py: none, lucene, glasgow (default none)")
    parser.add_argument("--semantic", type=floats, default=floats("0.3,0.4,0.5,0.6,0.7,0.8,0.9"),
                        help="retrieval.weights.semantic values (lexical = 1 - semantic)")
    parser.add_argument("--propagation", type=floats, default=floats("0,0.1,0.2,0.3,0.5"))
    parser.add_argument("--follows", type=pairs, default=pairs("1:1,1:0,0:1"),
                        help="activation.relations.follows forward:reverse pairs")
    parser.add_argument("--max-seeds", type=ints, default=ints("32,64,128"))
    parser.add_argument("--depth", type=ints, default=ints("0,1,2"))
    parser.add_argument("--lexical-candidates", type=ints, help="retrieval.lexicalCandidates values (default unset)")
    parser.add_argument("--semantic-candidates", type=ints, help="retrieval.semanticCandidates values (default unset)")
    parser.add_argument("--screen", type=int, default=3,
                        help="staged grid: screen the activation stage on every Nth question (default 3)")
    parser.add_argument("--finalists", type=int, default=4,
                        help="staged grid: the best N screened configs are measured on all questions (default 4)")
    parser.add_argument("--forms", default=",".join(FORMS), help=f"comma-separated, of {', '.join(FORMS)}")
    parser.add_argument("--top", type=int, default=40, help="rows printed (all are written to the JSON)")
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--data", type=Path, default=DATA, help=f"LoCoMo dev JSON (default {DATA})")
    parser.add_argument("--out", type=Path, default=OUT, help=f"the JSON written (default {OUT.relative_to(ROOT)})")
    args = parser.parse_args()
    forms = [f for f in FORMS if f in args.forms.split(",")]
    if not args.data.is_file():
        print(f"LoCoMo data not found at {args.data}; skipping (see docs/benchmarks.md)")
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="memoryhub-bench-tune-"))
    environment(tmp)
    started = datetime.now(UTC)
    try:
        model_load = start(args.torch_threads)
        from memoryhub.actors import Actor

        actor = Actor.system("bench")
        memories: dict[str, list[Conversation]] = {form: [] for form in forms}
        limit = 2 if args.quick and args.conversations is None else args.conversations
        for sample in samples(args.data, limit):
            for form in forms:
                memories[form].append(ingest(sample, form, actor)[0])
        memoized = memoize_queries()
        tuner = Tuner(memories)
        grids(args, tuner)
        print(f"\nLoCoMo dev tuning, {len(memories[forms[0]])} conversations, "
              f"{sum(len(c.questions) for c in memories[forms[0]])} questions, {len(tuner.results)} configs, "
              f"{len(tuner.cache)} measurements; {started.isoformat(timespec='seconds')}, "
              f"{(datetime.now(UTC) - started).seconds} s (model load {model_load:.1f} s"
              f"{', question vectors memoized' if memoized else ''})")
        if tuner.refused:
            print("set directly, bypassing validation (atoms/config.py does not accept them yet): "
                  + "; ".join(sorted(tuner.refused)))
        inert = inert_axes(tuner)
        if inert:
            print("never changed a ranking, all else equal (the engine may not read them): " + ", ".join(inert))
        rows = print_table(tuner, args.top)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"date": started.isoformat(timespec="seconds"), "command": " ".join(
        [".venv/bin/python", "bench/locomo_tune.py", *sys.argv[1:]]), "bypassed": sorted(tuner.refused),
        "inert_axes": inert, "load_average": os.getloadavg(), "results": rows}, indent=1) + "\n")
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
