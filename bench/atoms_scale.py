"""Atom read and search latency as one tenant's corpus grows, against the design's latency targets
(docs/benchmarks.md "Atoms at scale").

    .venv/bin/python bench/atoms_scale.py [--quick] [--sizes 1000,10000,100000] [--postgres]
        [--semantic [--semantic-sizes 10000,100000] [--minilm-max 10000] [--torch-threads 1]]
    .venv/bin/python bench/atoms_scale.py --corpus FILE|postgres://... [--config JSON ...] [--rounds 2]

One fresh tenant is filled through the service layer (answer_write with an ingest key, batches
of 128 changes: the write budget's maxAtoms ceiling) with a deterministic synthetic corpus: texts of 8-20 words drawn with a Zipf
skew from a fixed vocabulary of 3,000 pseudo-words, and about 20 % of the atoms linking to 1-3
earlier ones (a third of those links required). The corpus grows in place, so the 10k corpus
is the 1k one plus 9,000 atoms. At each size it times atoms_read (budget tokens 4,096) and
atoms_search over the same ~50 vocabulary queries: service time in this process, no HTTP. It
also records diagnostics.scanned and acquisition, the tracemalloc peak of one extra call and
the process's peak RSS, prints a table with the 10k -> 100k growth and p95/target, and writes
bench/out/atoms_scale.json. SQLite in a temporary file by default; --postgres uses
DATABASE_URL or postgres://postgres@127.0.0.1:5432/mh_bench_atoms (created if missing), where
the bench tenant is deleted afterwards. Only 127.0.0.1 is contacted; every loop is bounded.

These lexical figures run without an embedding provider (ATOMS_EMBEDDING=none). With
--semantic, at the sizes of --semantic-sizes the corpus is also indexed and read / search
are timed again with the semantic index on, and the MiniLM drain gives the indexing
throughput per worker (bench/atoms_semantic.py says how).

With --corpus, nothing is written: a copy of a SQLite corpus kept by `bench/atoms_read_cpu.py
build`, or of a PostgreSQL template database kept by `bench/atoms_read_pg.py build` (named by
its URL on 127.0.0.1; the copy is `<name>_scale`, dropped afterwards), with the same texts and
links, is timed as it is, lexical only, once per --config (a tenant
config, validated like the API's, stored in the tenant's AtomStore before its turn; none means
the defaults) and --rounds times over, the configs alternating, so two configs compare on one
corpus in one run without rebuilding it (docs/benchmarks.md "Atoms at scale"). With
--semantic, the corpus is then indexed and the hybrid phase runs once, under the last config.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import resource
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import atoms_semantic
from kv import Stats, progress, stats_of
from memory_files import ensure_database

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "atoms_scale.json"
PG_DEFAULT = "postgres://postgres@127.0.0.1:5432/mh_bench_atoms"
# docs/benchmarks.md "Atoms at scale": service time p95 at 100k atoms, one query text, 4,096 tokens.
TARGETS_P95_MS = {"read": 40.0, "search": 25.0}
HYBRID_TARGETS_P95_MS = {"read": 60.0, "search": 45.0}  # query encoding included
# MAX_BATCH is 256 changes, but a write is also charged 1 maxAtoms per change against a
# ceiling of 128 (budget.py), so 128 is the largest batch the service accepts.
BATCH = 128
VOCABULARY = 3000
QUERIES = 50
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"] + ["an", "el", "or", "um", "is"]


# --- The corpus: same seed, same texts, same links ----------------------------------------------

def vocabulary() -> list[str]:
    """VOCABULARY distinct pseudo-words of 2-4 syllables, most frequent first."""
    rng, words, seen = random.Random(1), [], set()
    while len(words) < VOCABULARY:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


class Corpus:
    """Texts and links of atom i depend only on i, so any prefix is the same corpus."""

    def __init__(self) -> None:
        self.words = vocabulary()
        # Zipf-like weights (1/rank): a few words are everywhere, most are rare, like prose.
        self.cumulative = list(_accumulate([1.0 / (rank + 1) for rank in range(VOCABULARY)]))

    def draw(self, rng: random.Random, count: int) -> list[str]:
        return rng.choices(self.words, cum_weights=self.cumulative, k=count)

    def text(self, i: int) -> str:
        rng = random.Random(i * 7919 + 3)
        return " ".join(self.draw(rng, rng.randint(8, 20))).capitalize() + "."

    def links(self, i: int) -> list[tuple[int, bool]]:
        """(earlier atom, required) pairs for about 20 % of the atoms."""
        rng = random.Random(i * 104_729 + 11)
        if i == 0 or rng.random() >= 0.2:
            return []
        targets = sorted({rng.randrange(i) for _ in range(rng.randint(1, 3))})
        return [(target, rng.random() < 1 / 3) for target in targets]

    def queries(self, count: int) -> list[str]:
        rng = random.Random(99)
        return [" ".join(self.draw(rng, rng.randint(1, 3))) for _ in range(count)]


def _accumulate(values: list[float]) -> list[float]:
    total, out = 0.0, []
    for value in values:
        total += value
        out.append(total)
    return out


def change(corpus: Corpus, i: int, refs: list[str]) -> dict[str, Any]:
    links: dict[str, list[dict[str, Any]]] = {}
    for target, required in corpus.links(i):
        # An earlier atom of the same batch has no ref yet: it is named by its change id.
        spec = {"ref": refs[target]} if target < len(refs) else {"local": f"a{target}"}
        links.setdefault("condition" if required else "related", []).append({**spec, "required": required})
    return {"id": f"a{i}", "op": "create", "content": {"text": corpus.text(i), "links": links}, "sources": []}


def settle() -> None:
    """After a build on PostgreSQL: VACUUM (ANALYZE), as autovacuum would in a running service.
    The planner needs the statistics, and the BM25 lookup's index-only scans need the pages
    that vacuum marks all-visible (until then every posting is fetched from the heap too; the
    postings table's own autovacuum settings are in docs/operations.md "PostgreSQL"). A corpus
    that grew to 100k atoms in minutes has had neither; one that grew in a service over weeks
    has had both (docs/benchmarks.md "A settled corpus on PostgreSQL")."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM (ANALYZE)")


def grow(caller: Any, corpus: Corpus, refs: list[str], size: int, deadline: float) -> float:
    """Write atoms len(refs)..size-1 in batches; returns seconds spent. Stops at the deadline."""
    from atoms.api.write import answer_write

    start, started, next_report = len(refs), time.perf_counter(), 0.1
    while len(refs) < size and time.monotonic() < deadline:
        first = len(refs)
        batch = [change(corpus, i, refs) for i in range(first, min(size, first + BATCH))]
        outcome = answer_write(caller, {"changes": batch})
        refs.extend(outcome["changes"][c["id"]]["ref"] for c in batch)
        done = (len(refs) - start) / max(1, size - start)
        if done >= next_report or len(refs) == size:
            rate = (len(refs) - start) / (time.perf_counter() - started)
            progress(f"  {len(refs):>7,} atoms ({done:4.0%} of this step), {rate:,.0f} atoms/s")
            next_report = done + 0.1
    return time.perf_counter() - started


# --- Measuring ----------------------------------------------------------------------------------

def measure(label: str, call: Callable[[str], dict[str, Any]], queries: list[str], budget_s: float) -> dict[str, Any]:
    """Time `call` per query (after 3 untimed calls), stopping early after `budget_s`; then one
    traced call for the heap peak (tracemalloc slows the call, so it is not among the samples)."""
    for query in queries[:3]:
        call(query)
    samples, scanned, partial, items = [], [], 0, []
    started = time.perf_counter()
    for query in queries:
        if time.perf_counter() - started > budget_s:
            break
        t0 = time.perf_counter()
        result = call(query)
        samples.append(time.perf_counter() - t0)
        diagnostics = result["diagnostics"]
        scanned.append(diagnostics["scanned"])
        partial += bool(diagnostics["acquisition"]["partial"])
        items.append(len(result["items"]))
    tracemalloc.start()
    call(queries[0])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    stats = stats_of(samples)
    progress(f"  {label}: {stats.n} calls, median {stats.median_ms:.1f} ms, p95 {stats.p95_ms:.1f} ms, "
             f"scanned median {statistics.median(scanned):,.0f} (max {max(scanned):,}), partial {partial}")
    return {"stats": asdict(stats), "scanned_median": statistics.median(scanned), "scanned_max": max(scanned),
            "acquisition_partial": partial, "items_median": statistics.median(items),
            "tracemalloc_peak_mb": peak / 2**20, "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "p95_vs_target": stats.p95_ms / TARGETS_P95_MS[label]}


def run(args: argparse.Namespace, url: str) -> dict[str, Any]:
    import django

    os.environ["DATABASE_URL"] = url
    django.setup()
    from django.core.management import call_command
    from django.db import connection, connections

    from atoms.api.read import answer_read
    from atoms.api.search import answer_search
    from atoms.principal import Principal
    from memoryhub.actors import Actor
    from tenants.models import Tenant
    from tenants.services.keys import apikey_create
    from tenants.services.tenancy import tenant_ensure

    if args.corpus is not None:
        return run_kept(args, answer_read, answer_search)
    progress("migrating ...")
    call_command("migrate", "--noinput", verbosity=0)
    actor = Actor.system("bench")
    slug = f"bench-atoms-{os.getpid()}"
    tenant, _ = tenant_ensure(slug=slug, name="Atoms at scale", actor=actor)
    key, _ = apikey_create(tenant=tenant, kind="ingest", actor=actor, name="bench")
    caller = Principal.for_key(key)
    corpus, refs, rows = Corpus(), [], []
    queries = corpus.queries(QUERIES)
    deadline = time.monotonic() + args.build_limit
    try:
        for size in args.sizes:
            progress(f"growing the corpus to {size:,} atoms ...")
            seconds = grow(caller, corpus, refs, size, deadline)
            settle()
            if len(refs) < size:
                progress(f"  stopped at {len(refs):,} atoms: the build limit of {args.build_limit:.0f} s is spent")
            reached = len(refs)
            row = {"size": reached, "target_size": size, "build_seconds": seconds,
                   "links": sum(len(corpus.links(i)) for i in range(reached)),
                   "read": measure("read", lambda q: answer_read(
                       caller, {"state": {"query": q}, "options": {"tokens": 4096}}), queries, args.measure_limit),
                   "search": measure("search", lambda q: answer_search(caller, {"query": q}), queries,
                                     args.measure_limit)}
            if args.semantic and reached == size and size in args.semantic_sizes:
                row["hybrid"] = atoms_semantic.hybrid(caller, size, args.minilm_max, queries, measure,
                                                      args.measure_limit, args.torch_threads)
            rows.append(row)
            if reached < size:
                break
    finally:
        if connection.vendor != "sqlite":
            progress("removing the bench tenant ...")
            Tenant.objects.filter(slug=slug).delete()
        database = connection.vendor
        connections.close_all()
    return {"database": database, "rows": rows, "queries": queries, "vocabulary": VOCABULARY, "batch": BATCH}


def run_kept(args: argparse.Namespace, answer_read: Callable[..., Any], answer_search: Callable[..., Any]) -> dict[str, Any]:
    """The --corpus mode (module docstring): each config in turn, --rounds times."""
    from atoms_read_cpu import SLUG
    from django.core.management import call_command

    from atoms.config import validate_config
    from atoms.models import AtomStore, Revision
    from atoms.principal import Principal
    from memoryhub.actors import Actor
    from tenants.models import Tenant
    from tenants.services.keys import apikey_create

    # The copy is brought to this checkout's schema, so an older corpus serves newer code.
    call_command("migrate", "--noinput", verbosity=0)
    tenant = Tenant.objects.get(slug=SLUG)
    key, _ = apikey_create(tenant=tenant, kind="ingest", actor=Actor.system("bench"), name="bench scale")
    caller = Principal.for_key(key)
    size = Revision.objects.filter(tenant=tenant, is_head=True).count()
    queries = Corpus().queries(QUERIES)
    configs = [json.loads(text) for text in args.config] or [{}]
    rows = []
    for round_no in range(args.rounds):
        for config in configs:
            AtomStore.objects.filter(tenant=tenant).update(config=validate_config(config))
            progress(f"round {round_no + 1}, config {json.dumps(config)}, {size:,} atoms")
            rows.append({"size": size, "target_size": size, "build_seconds": 0.0, "round": round_no + 1,
                         "config": config,
                         "read": measure("read", lambda q: answer_read(
                             caller, {"state": {"query": q}, "options": {"tokens": 4096}}), queries, args.measure_limit),
                         "search": measure("search", lambda q: answer_search(caller, {"query": q}), queries,
                                           args.measure_limit)})
    if args.semantic:  # once, after the lexical rounds, with the last config stored
        rows[-1]["hybrid"] = atoms_semantic.hybrid(caller, size, args.minilm_max, queries, measure, args.measure_limit,
                                                   args.torch_threads)
    from django.db import connection

    return {"database": connection.vendor, "rows": rows, "queries": queries, "vocabulary": VOCABULARY, "batch": BATCH}


def growth(rows: list[dict[str, Any]], small: int, large: int) -> dict[str, dict[str, float]] | None:
    by_size = {row["size"]: row for row in rows}
    if small not in by_size or large not in by_size:
        return None
    return {op: {stat: by_size[large][op]["stats"][stat] / by_size[small][op]["stats"][stat]
                 for stat in ("median_ms", "p95_ms")} for op in ("read", "search")}


def print_table(report: dict[str, Any]) -> None:
    print(f"\nAtoms at scale, service time in ms; {report['database']}, {report['machine']['cpus']} CPUs, "
          f"{report['date']}, up to {QUERIES} queries per op")
    header = (f"{'atoms':>7} {'op':<6} {'calls':>5} {'median':>7} {'p95':>7} {'p95/target':>10} {'scanned':>8} "
              f"{'partial':>7} {'items':>5} {'heap peak MB':>12} {'max RSS MB':>10} {'build s':>8}")
    print(header + "\n" + "-" * len(header))
    for row in report["rows"]:
        if "config" in row:
            print(f"round {row['round']}, config {json.dumps(row['config'])}:")
        for op in ("read", "search"):
            m, stats = row[op], Stats(**row[op]["stats"])
            print(f"{row['size']:>7,} {op:<6} {stats.n:>5} {stats.median_ms:>7.1f} {stats.p95_ms:>7.1f} {m['p95_vs_target']:>9.2f}x "
                  f"{m['scanned_median']:>8,.0f} {m['acquisition_partial']:>7} {m['items_median']:>5.0f} "
                  f"{m['tracemalloc_peak_mb']:>12.1f} {m['max_rss_mb']:>10.0f} {row['build_seconds']:>8.0f}")
    for label, ratio in report["growth"].items():
        if ratio:
            print(f"growth {label} (10x atoms): " + ", ".join(
                f"{op} median {r['median_ms']:.2f}x, p95 {r['p95_ms']:.2f}x" for op, r in ratio.items()))
    print(f"targets: read p95 <= {TARGETS_P95_MS['read']:.0f} ms, search p95 <= {TARGETS_P95_MS['search']:.0f} ms "
          "at 100k atoms; read sub-linear in N")
    atoms_semantic.print_table(report["rows"], HYBRID_TARGETS_P95_MS)
    short = [row for row in report["rows"] if row["size"] < row["target_size"]]
    if short:
        print(f"NOTE: the build limit stopped the corpus at {short[0]['size']:,} of {short[0]['target_size']:,} atoms")


_NAME = re.compile(r"[a-z0-9_]{1,50}")


def _pg_copy(template_url: str) -> str:
    """`<template>_scale` made anew from the template database `template_url` names, which must
    exist (it is never created or dropped here); returns the copy's URL."""
    import psycopg

    parts = urlparse(template_url)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit(f"the benchmark database must be on 127.0.0.1 (got {parts.hostname!r})")
    name = parts.path[1:]
    if not _NAME.fullmatch(name) or name.endswith("_scale"):
        raise SystemExit("--corpus: a template name of a-z, 0-9 and _, not ending in _scale")
    with psycopg.connect(parts._replace(path="/postgres").geturl(), autocommit=True, connect_timeout=5) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            raise SystemExit(f"--corpus: no database {name} (build it with bench/atoms_read_pg.py build)")
        conn.execute(f'DROP DATABASE IF EXISTS "{name}_scale" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}_scale" TEMPLATE "{name}"')
    return parts._replace(path=f"/{name}_scale").geturl()


def _pg_drop(copy_url: str) -> None:
    """Drop the copy `_pg_copy` made (its name ends in _scale); a failure is reported, not raised."""
    import psycopg

    parts = urlparse(copy_url)
    name = parts.path[1:]
    assert name.endswith("_scale") and _NAME.fullmatch(name)
    try:
        with psycopg.connect(parts._replace(path="/postgres").geturl(), autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    except psycopg.Error as exc:
        progress(f"could not drop the copy {name}: {exc}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="sizes 1,000 and 10,000")
    parser.add_argument("--sizes", help="corpus sizes, comma-separated (default 1000,10000,100000)")
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL on 127.0.0.1 instead of SQLite")
    parser.add_argument("--build-limit", type=float, default=480.0, help="seconds for writing the corpus in all")
    parser.add_argument("--measure-limit", type=float, default=90.0, help="seconds of timed calls per op and size")
    parser.add_argument("--semantic", action="store_true",
                        help="also index the corpus and time hybrid read/search (bench/atoms_semantic.py)")
    parser.add_argument("--semantic-sizes", default="10000,100000", help="sizes with the semantic phase")
    parser.add_argument("--minilm-max", type=int, default=10_000,
                        help="largest size indexed with MiniLM; above it FakeHashProvider at 384 dimensions")
    parser.add_argument("--torch-threads", type=int, default=1,
                        help="torch intra-op threads with --semantic (default 1: one core per worker child; 0: torch's default)")
    parser.add_argument("--corpus", help="time a copy of this kept corpus instead of growing one: a SQLite file "
                        "(bench/atoms_read_cpu.py build) or a PostgreSQL URL (bench/atoms_read_pg.py build)")
    parser.add_argument("--config", action="append", default=[],
                        help="with --corpus: a tenant config as JSON; repeat to alternate several")
    parser.add_argument("--rounds", type=int, default=1, help="with --corpus: passes over the configs")
    args = parser.parse_args()
    if args.corpus is not None and args.postgres:
        parser.error("--corpus names its database itself")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    args.semantic_sizes = {int(part) for part in args.semantic_sizes.split(",") if part.strip()}
    raw = args.sizes or ("1000,10000" if args.quick else "1000,10000,100000")
    args.sizes = sorted({int(part) for part in raw.split(",") if part.strip()})
    if not args.sizes or args.sizes[0] < 10 or args.sizes[-1] > 1_000_000:
        parser.error("sizes must be between 10 and 1,000,000")
    tmp = Path(tempfile.mkdtemp(prefix="memoryhub-bench-atoms-"))
    # The lexical figures run without a provider; --semantic switches one on per phase.
    os.environ.update(MEMORYHUB_VAR_DIR=str(tmp / "var"), LOG_LEVEL="WARNING",
                      DJANGO_SETTINGS_MODULE="memoryhub.settings", ATOMS_EMBEDDING="none",
                      HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    for name in ("REDIS_URL", "ATOMS_VECTOR_INDEX_ROOT"):  # embedded mode; vector files in the temporary folder
        os.environ.pop(name, None)
    sys.path.insert(0, str(ROOT))
    copy = None
    if args.corpus is not None and args.corpus.startswith(("postgres://", "postgresql://")):
        copy = url = _pg_copy(args.corpus)
    elif args.corpus is not None:
        kept = Path(args.corpus)
        if not kept.is_file():
            shutil.rmtree(tmp, ignore_errors=True)
            parser.error(f"--corpus: no file {kept}")
        shutil.copyfile(kept, tmp / "bench.sqlite3")
        if Path(f"{kept}-wal").exists():  # a build that was not checkpointed yet
            shutil.copyfile(f"{kept}-wal", tmp / "bench.sqlite3-wal")
        url = f"sqlite:///{tmp / 'bench.sqlite3'}"
    elif args.postgres:
        given = os.environ.get("DATABASE_URL", "")
        url = given if given.startswith(("postgres://", "postgresql://")) else PG_DEFAULT
        ensure_database(url)  # refuses any host but 127.0.0.1
    else:
        url = f"sqlite:///{tmp / 'bench.sqlite3'}"
    started, load_at_start = datetime.now(UTC), [round(x, 2) for x in os.getloadavg()]
    try:
        figures = run(args, url)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # the SQLite database goes with it
        if copy is not None:
            _pg_drop(copy)
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
               "load_average_at_start": load_at_start, "load_average_at_end": [round(x, 2) for x in os.getloadavg()]}
    report = {"date": started.isoformat(timespec="seconds"), "seconds": (datetime.now(UTC) - started).seconds,
              "embedding_for_lexical_figures": None,
              "command": " ".join([".venv/bin/python", "bench/atoms_scale.py", *sys.argv[1:]]), "machine": machine,
              "database_url_host": urlparse(url).hostname or "file", "targets_p95_ms": TARGETS_P95_MS, "hybrid_targets_p95_ms": HYBRID_TARGETS_P95_MS, **figures}
    report["growth"] = {"1k->10k": growth(figures["rows"], 1000, 10_000),
                        "10k->100k": growth(figures["rows"], 10_000, 100_000)}
    print_table(report)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwritten to {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
