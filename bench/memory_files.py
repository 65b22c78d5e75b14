"""Memory-file writes (scan + lock + version) and the threat scanner, against the design targets.

    .venv/bin/python bench/memory_files.py [--quick]

Phases: 1 writer adding ~60-char facts through `service.memory_write` (PostgreSQL, SQLite, SQLite
with the file projection); 32 writer processes on ONE tenant, then on 32 tenants (PostgreSQL),
each checked for lost writes; `threats.scan` over the corpus of bench/threats.py. PostgreSQL is
DATABASE_URL if it is a postgres:// URL, else 127.0.0.1/mh_bench_mem (created if missing). See
docs/benchmarks.md. Every loop is bounded by a count and a time budget.
"""

from __future__ import annotations

import argparse
import json
import logging
import multiprocessing as mp
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import psycopg
from kv import Stats, progress, stats_of
from threats import CORPUS_CHARS, NOTE_CHARS, OBJECTS, SUBJECTS, TAILS, VERBS, build_corpus, chunks, throughput_row

from memoryhub.threats import scan

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "memory_files.json"
PG_DEFAULT = "postgres://postgres@127.0.0.1:5432/mh_bench_mem"
TARGET_P95_MS = 10.0
LIMIT = 65_536
WRITERS = 32
SPAWN = mp.get_context("spawn")


# --- Run inside a spawned process with Django set up --------------------------------------------

def django_setup(url: str) -> None:
    """Settings for `url`; the rest of the environment is inherited from main()."""
    import django

    os.environ["DATABASE_URL"] = url
    django.setup()
    # Eager Celery (embedded mode) opens a producer on the memory:// broker and warns about it.
    logging.getLogger("kombu.connection").setLevel(logging.ERROR)


def fact(writer: int, i: int) -> str:
    """A plain, unique fact of about 60 characters; same arguments, same text."""
    rng = random.Random(writer * 100_003 + i)
    return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(TAILS)} ({writer}.{i})"


def add(tenant: Any, text: str) -> tuple[float, str | None]:
    """One timed add through the service layer: (seconds, error code or None)."""
    from memoryhub.actors import Actor
    from tenants.memory.rules import MemoryRuleError, parse_request
    from tenants.memory.service import memory_write

    started = time.perf_counter()
    request = parse_request({"action": "add", "content": text}, "memory")
    try:
        memory_write(tenant=tenant, request=request, origin="foreground", actor=Actor.system("bench"))
    except MemoryRuleError as exc:
        return time.perf_counter() - started, exc.code
    return time.perf_counter() - started, None


def prepare(slugs: list[str]) -> None:
    """Migrate, then make fresh tenants whose agent writes apply at once."""
    from django.core.management import call_command

    from memoryhub.actors import Actor
    from tenants.models import MemoryVolume
    from tenants.services.tenancy import tenant_ensure

    call_command("migrate", "--noinput", verbosity=0)
    for slug in slugs:
        tenant, _ = tenant_ensure(slug=slug, name="Memory-file benchmark", actor=Actor.system("bench"))
        MemoryVolume.objects.update_or_create(tenant=tenant, defaults={"approval": "off", "memory_limit": LIMIT})


def write_series(slug: str, count: int, budget_s: float, volume_root: str = "") -> dict[str, Any]:
    """`count` adds by one writer after 5 untimed ones; stops early after `budget_s`."""
    from django.conf import settings

    from tenants.models import Tenant

    settings.MEMORYHUB_VOLUME_ROOT = Path(volume_root) if volume_root else None
    tenant = Tenant.objects.get(slug=slug)
    results = [add(tenant, fact(0, -1 - i)) for i in range(5)]  # warm-up: connection, caches
    started = time.perf_counter()
    while len(results) < 5 + count and time.perf_counter() - started < budget_s:
        results.append(add(tenant, fact(0, len(results) - 5)))
    samples = [seconds for seconds, _ in results[5:]]
    tenth = max(1, len(samples) // 10)  # the store grows with every add: its first and last tenth
    return {"samples": samples, "wall_s": time.perf_counter() - started, "errors": sorted({c for _, c in results if c}),
            "ok_by_slug": {slug: sum(code is None for _, code in results)},  # warm-up adds included
            "first_and_last_tenth": [asdict(stats_of(part)) for part in (samples[:tenth], samples[-tenth:])]}


def verify(slugs: list[str]) -> dict[str, dict[str, int]]:
    """Per tenant: entries stored, distinct entries, version number, version rows, size."""
    from tenants.memory.rules import file_form
    from tenants.models import MemoryVersion, MemoryVolume

    return {volume.tenant.slug: {
        "entries": len(volume.memory_entries), "distinct": len(set(volume.memory_entries)),
        "version": volume.memory_version, "chars": len(file_form(volume.memory_entries)),
        "rows": MemoryVersion.objects.filter(volume=volume, target="memory").count(),
    } for volume in MemoryVolume.objects.filter(tenant__slug__in=slugs).select_related("tenant")}


def cleanup(prefix: str) -> int:
    from tenants.models import Tenant

    return Tenant.objects.filter(slug__startswith=prefix).delete()[0]


def concurrent_writer(url: str, slug: str, index: int, count: int, go: Any, out: Any) -> None:
    """One of the writer processes: connect, report ready, wait for the start, add `count` facts."""
    try:
        django_setup(url)
        from django.db import connections

        from tenants.memory import service  # noqa: F401 - imported before the start, like the rest
        from tenants.memory.rules import parse_request, plan_write
        from tenants.models import Tenant

        tenant = Tenant.objects.get(slug=slug)  # connects before the start signal
        plan_write(parse_request({"action": "add", "content": fact(index, -1)}, "memory"), [], LIMIT)  # stores nothing
        out.put(("ready", index))
        if not go.wait(timeout=600):
            raise TimeoutError("no start signal")
        results = [add(tenant, fact(index, j)) for j in range(count)]
        connections.close_all()
        out.put(("done", index, [s for s, code in results if code is None], sorted({c for _, c in results if c})))
    except Exception as exc:  # noqa: BLE001 - the parent must hear of it, not wait for a timeout
        out.put(("failed", index, repr(exc)))


# --- The parent ---------------------------------------------------------------------------------

def ensure_database(url: str) -> None:
    parts = urlparse(url)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit(f"the benchmark database must be on 127.0.0.1 (got {parts.hostname!r})")
    with psycopg.connect(parts._replace(path="/postgres").geturl(), autocommit=True, connect_timeout=5) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name := parts.path[1:]]).fetchone():
            progress(f"creating database {name} ...")
            conn.execute(f'CREATE DATABASE "{name}"')


def collect(out: Any, deadline: float) -> list[tuple[Any, ...]]:
    """One message from each writer (queue.Empty once the deadline passes); any failure ends the phase."""
    messages = [out.get(timeout=max(1.0, deadline - time.monotonic())) for _ in range(WRITERS)]
    if failed := [msg for msg in messages if msg[0] == "failed"]:
        raise RuntimeError(f"{len(failed)} writer(s) failed; writer {failed[0][1]}: {failed[0][2]}")
    return messages


def crowd(url: str, slugs: list[str], count: int) -> dict[str, Any]:
    """WRITERS processes, writer i on slugs[i % len(slugs)], released together once all connected."""
    go, out = SPAWN.Event(), SPAWN.Queue()
    procs = [SPAWN.Process(target=concurrent_writer, args=(url, slugs[i % len(slugs)], i, count, go, out))
             for i in range(WRITERS)]
    deadline = time.monotonic() + 600
    try:
        for proc in procs:
            proc.start()
        collect(out, deadline)  # all connected and waiting
        started = time.perf_counter()
        go.set()
        done = collect(out, deadline)
        wall = time.perf_counter() - started
    finally:
        for proc in procs:
            proc.join(timeout=10 if go.is_set() else 0)
            if proc.is_alive():
                proc.terminate()
    ok_by_slug = {slug: sum(len(msg[2]) for msg in done if msg[1] % len(slugs) == k) for k, slug in enumerate(slugs)}
    return {"samples": [s for msg in done for s in msg[2]], "wall_s": wall, "ok_by_slug": ok_by_slug,
            "errors": sorted({code for msg in done for code in msg[3]})}


def row(phase: str, run: dict[str, Any], found: dict[str, dict[str, int]]) -> dict[str, Any]:
    """One phase's figures; lost = successful adds missing from entries, version number or version rows."""
    stats, expected = stats_of(run.pop("samples")), run.pop("ok_by_slug")
    lost = sum(expected[slug] - min(got["entries"], got["distinct"], got["version"], got["rows"])
               for slug, got in found.items())
    total = {name: sum(got[name] for got in found.values()) for name in ("entries", "version")}
    line = {"phase": phase, "stats": asdict(stats), "writes_per_s": stats.n / run.pop("wall_s"), "lost": lost,
            "successful_adds": sum(expected.values()), "stored_entries": total["entries"], "version_sum": total["version"],
            "largest_store_chars": max(g["chars"] for g in found.values()), "p95_vs_target": stats.p95_ms / TARGET_P95_MS,
            **run}
    progress(f"  {stats.n} timed writes, median {stats.median_ms:.2f} ms, p95 {stats.p95_ms:.2f} ms, "
             f"{line['writes_per_s']:,.0f}/s; {line['successful_adds']} successful adds, {total['entries']} entries, "
             f"versions sum to {total['version']}: lost {lost}")
    return line


def scanner(quick: bool) -> dict[str, Any]:
    """Throughput on the corpus of bench/threats.py, and the scan of one fact as a write does it."""
    notes = chunks(build_corpus(CORPUS_CHARS // 4 if quick else CORPUS_CHARS), NOTE_CHARS)
    result = throughput_row(f"scan, {NOTE_CHARS:,}-char notes", notes, scan, 3 if quick else 7)
    facts = [fact(1, i) for i in range(500)]
    per_fact = throughput_row("scan, one fact", facts, scan, 3 if quick else 7)["median_s"] / len(facts)
    result.update(fact_scan_us=per_fact * 1e6, fact_chars=statistics.fmean(map(len, facts)))
    progress(f"  {result['kb_per_s']:,.0f} KB/s; one ~{result['fact_chars']:.0f}-char fact {result['fact_scan_us']:.0f} µs")
    return result


def run(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    count, budget, per_writer = (100, 20.0, 5) if args.quick else (500, 90.0, 20)
    given = os.environ.get("DATABASE_URL", "")
    pg_url = given if given.startswith(("postgres://", "postgresql://")) else PG_DEFAULT
    ensure_database(pg_url)
    prefix = f"bench-mem-{os.getpid()}"
    single, one, spread = f"{prefix}-single", f"{prefix}-one", [f"{prefix}-w{i:02d}" for i in range(WRITERS)]
    rows = []
    # One spawned process per database, with Django set up for it: setup, 1-writer runs, checks.
    with ProcessPoolExecutor(1, SPAWN, django_setup, (pg_url,)) as pg:
        try:
            progress(f"PostgreSQL ({urlparse(pg_url).path[1:]}): migrating, creating {WRITERS + 2} tenants ...")
            pg.submit(prepare, [single, one, *spread]).result(timeout=600)
            for label, slugs, measure in (
                ("1 writer, PostgreSQL", [single],
                 lambda: pg.submit(write_series, single, count, budget).result(timeout=budget + 120)),
                (f"{WRITERS} writers, 1 tenant, PostgreSQL", [one], lambda: crowd(pg_url, [one], per_writer)),
                (f"{WRITERS} writers, {WRITERS} tenants, PostgreSQL", spread, lambda: crowd(pg_url, spread, per_writer)),
            ):
                progress(f"{label} ...")
                rows.append(row(label, measure(), pg.submit(verify, slugs).result()))
        finally:
            progress(f"removing the bench tenants ({pg.submit(cleanup, prefix).result()} rows) ...")
    with ProcessPoolExecutor(1, SPAWN, django_setup, (f"sqlite:///{tmp / 'bench.sqlite3'}",)) as lite:
        progress(f"1 writer, SQLite ({count} adds, then {count} with the file projection) ...")
        lite.submit(prepare, [single, f"{single}-files"]).result(timeout=600)
        for slug, root, label in ((single, "", "1 writer, SQLite"),
                                  (f"{single}-files", str(tmp / "volumes"), "1 writer, SQLite + files (eager)")):
            series = lite.submit(write_series, slug, count, budget, root).result(timeout=budget + 120)
            rows.append(row(label, series, lite.submit(verify, [slug]).result()))
    progress("scanner throughput ...")
    return {"rows": rows, "scanner": scanner(args.quick), "adds_single": count, "adds_per_writer": per_writer}


def print_table(report: dict[str, Any]) -> None:
    print(f"\nMemory-file writes via service.memory_write, ms; {report['machine']['cpus']} CPUs, {report['date']}")
    header = f"{'phase':<36} {'writes':>6} {'lost':>4} {'median':>7} {'p95':>8} {'writes/s':>8} {'p95/10ms':>8}"
    print(header + "\n" + "-" * len(header))
    for line in report["rows"]:
        stats = Stats(**line["stats"])
        errors = f"  errors: {', '.join(line['errors'])}" if line["errors"] else ""
        print(f"{line['phase']:<36} {stats.n:>6} {line['lost']:>4} {stats.median_ms:>7.2f} {stats.p95_ms:>8.2f} "
              f"{line['writes_per_s']:>8,.0f} {line['p95_vs_target']:>7.2f}x{errors}")
    found, lost = report["scanner"], sum(line["lost"] for line in report["rows"])
    print(f"\nScanner: {found['kb_per_s']:,.0f} KB/s ({found['ms_per_kb']:.3f} ms/KB) over {found['kb']:,.0f} KB in "
          f"{found['notes']} notes of {NOTE_CHARS:,} chars; one ~{found['fact_chars']:.0f}-char fact "
          f"{found['fact_scan_us']:.0f} µs\nTargets: p95 <= {TARGET_P95_MS:.0f} ms per write; {WRITERS} concurrent "
          f"writers, 0 lost: lost {lost}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 single adds, 5 per concurrent writer")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memoryhub-bench-mem-"))
    # Inherited by every spawned process: throwaway var folder, embedded mode, no file projection.
    os.environ.update(MEMORYHUB_VAR_DIR=str(tmp / "var"), MEMORYHUB_VOLUME_ROOT="", LOG_LEVEL="WARNING",
                      DJANGO_SETTINGS_MODULE="memoryhub.settings")
    os.environ.pop("REDIS_URL", None)
    started, load_at_start = datetime.now(UTC), [round(x, 2) for x in os.getloadavg()]
    try:
        figures = run(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
               "load_average_at_start": load_at_start, "load_average_at_end": [round(x, 2) for x in os.getloadavg()]}
    report = {"date": started.isoformat(timespec="seconds"), "seconds": (datetime.now(UTC) - started).seconds,
              "command": " ".join([".venv/bin/python", "bench/memory_files.py", *sys.argv[1:]]), "machine": machine,
              "targets": {"p95_ms": TARGET_P95_MS, "writers": WRITERS, "lost": 0}, "memory_limit": LIMIT, **figures}
    print_table(report)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwritten to {OUT.relative_to(ROOT)} (no plot: matplotlib is not a project dependency)")
    return 0 if all(line["lost"] == 0 and not line["errors"] for line in report["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
