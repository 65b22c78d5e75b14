"""KV set/get latency: our service layer and HTTP API against the original's whole-file store.

    .venv/bin/python bench/kv.py [--quick] [--sizes 100,1000,10000] [--no-http]

For each namespace size it times `set` (overwrite of an existing key) and `get`:
- service: store.kv_set / store.kv_get in this process;
- http: POST /api/v1/agents/{agent}/memory against `gunicorn memoryhub.wsgi -w 2` started
  here on 127.0.0.1, one client on one kept-alive connection (reopened whenever the
  server closes it), plus a short run with several concurrent clients for requests/s;
- baseline: what the original does: load the namespace's JSON file, change it, write it
  back with json.dumps(indent=2, sort_keys=True).
It prints medians and p95 in milliseconds and the ratio ours/baseline, and writes
bench/out/kv.json. The database is a fresh SQLite file in a temporary folder, or the
PostgreSQL named by DATABASE_URL (a bench tenant is created there and deleted after).
Only 127.0.0.1 is contacted; every loop has a count and a time bound.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from kv_http import BenchError, Client, Server, check_endpoint, error_code, throughput

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "kv.json"
LOCAL_HOSTS = {"", "127.0.0.1", "localhost", "::1"}
AGENT = "bench"


# --- Setup before Django is imported --------------------------------------------------------

def prepare_environment(tmp: Path) -> str:
    """Point settings at a throwaway SQLite file (or the given local PostgreSQL)."""
    url = os.environ.get("DATABASE_URL", "").strip()
    if url:
        host = urlparse(url).hostname or ""
        if host not in LOCAL_HOSTS:
            raise SystemExit(f"DATABASE_URL must point at 127.0.0.1 (got host {host!r}); this benchmark stays local")
    else:
        url = f"sqlite:///{tmp / 'bench.sqlite3'}"
    os.environ["DATABASE_URL"] = url
    os.environ["MEMORYHUB_VAR_DIR"] = str(tmp / "var")
    os.environ.pop("REDIS_URL", None)  # embedded mode: local cache, no broker to reach
    # The default per-key rate (6,000/min) would throttle the benchmark itself.
    os.environ["MEMORYHUB_DEFAULT_API_RATE_PER_MINUTE"] = str(10**9)
    os.environ["LOG_LEVEL"] = "WARNING"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    sys.path.insert(0, str(ROOT))
    return url


# --- Measuring --------------------------------------------------------------------------------

@dataclass
class Stats:
    n: int
    median_ms: float
    p95_ms: float
    mean_ms: float


def stats_of(samples: list[float]) -> Stats:
    ordered = sorted(samples)
    p95 = ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]
    return Stats(len(ordered), statistics.median(ordered) * 1000, p95 * 1000, statistics.fmean(ordered) * 1000)


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def timed(label: str, op: Callable[[int], None], *, count: int, budget_s: float, warmup: int = 5) -> Stats:
    """Run `op(i)` up to `count` times (after a few untimed calls), stopping early after
    `budget_s` seconds; the samples are wall-clock seconds per call."""
    for i in range(warmup):
        op(-1 - i)
    samples: list[float] = []
    started = time.perf_counter()
    for i in range(count):
        t0 = time.perf_counter()
        op(i)
        samples.append(time.perf_counter() - t0)
        if time.perf_counter() - started > budget_s:
            break
    result = stats_of(samples)
    progress(f"  {label}: {result.n} calls, median {result.median_ms:.3f} ms, p95 {result.p95_ms:.3f} ms")
    return result


def key_of(i: int) -> str:
    return f"key-{i:06d}"


def value_of(i: int) -> dict[str, Any]:
    # A small, typical memory value (~120 bytes canonical).
    return {"note": f"Prefer short sentences; lead with impact (rule {i}).", "seen": i, "tags": ["style", "draft"]}


# --- The original's store: one JSON file per namespace ----------------------------------------

class FileBaseline:
    def __init__(self, folder: Path) -> None:
        self.folder = folder / ".chidori" / "memory"
        self.folder.mkdir(parents=True, exist_ok=True)

    def path(self, namespace: str) -> Path:
        return self.folder / f"{namespace}.json"

    def write(self, namespace: str, obj: dict[str, Any]) -> None:
        self.path(namespace).write_text(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False), encoding="utf-8")

    def set(self, namespace: str, key: str, value: Any) -> None:
        path = self.path(namespace)
        obj = json.loads(path.read_text(encoding="utf-8"))
        obj[key] = value
        self.write(namespace, obj)

    def get(self, namespace: str, key: str) -> Any:
        return json.loads(self.path(namespace).read_text(encoding="utf-8")).get(key)


# --- The run ----------------------------------------------------------------------------------

@dataclass
class Row:
    size: int
    op: str
    service: Stats
    baseline: Stats
    http: Stats | None = None
    http_rps: float | None = None

    def ratios(self) -> dict[str, float | None]:
        base = self.baseline.median_ms
        return {"service": self.service.median_ms / base,
                "http": self.http.median_ms / base if self.http else None}


def manage(*args: str) -> list[str]:
    import io

    from django.core.management import call_command

    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue().strip().splitlines()


def prefill(agent: Any, baseline: FileBaseline, namespace: str, size: int) -> None:
    """Fill both stores with the same `size` keys (rows in bulk: this is setup, not measured)."""
    from django.utils import timezone

    from tenants.kv.rules import canonical
    from tenants.models import KvEntry, KvNamespace

    now = timezone.now()
    rows = []
    for i in range(size):
        key, value = key_of(i), canonical(value_of(i))
        rows.append(KvEntry(agent=agent, namespace=namespace, key=key, value=value, key_bytes=len(key),
                            value_bytes=len(value.encode()), version=1, created_at=now, updated_at=now,
                            created_by="bench", updated_by="bench"))
    KvEntry.objects.bulk_create(rows, batch_size=2000)
    KvNamespace.objects.create(agent=agent, name=namespace, key_count=size)
    baseline.write(namespace, {key_of(i): value_of(i) for i in range(size)})


def run(args: argparse.Namespace, tmp: Path, database_url: str) -> dict[str, Any]:
    import django

    django.setup()
    from django.db import connection, connections

    from memoryhub.actors import Actor
    from tenants.kv import store
    from tenants.kv.rules import canonical
    from tenants.models import Agent, Tenant

    started = datetime.now(UTC)
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    progress("setting up the database ...")
    manage("migrate", "--noinput")
    tenant_slug = f"bench-{os.getpid()}"
    manage("createtenant", tenant_slug, "--name", "KV benchmark")
    manage("createagent", "--tenant", tenant_slug, AGENT)
    token = manage("createapikey", "--tenant", tenant_slug, "--kind", "agent", "--name", "bench")[-1]
    tenant = Tenant.objects.get(slug=tenant_slug)
    agent = Agent.objects.get(tenant=tenant, slug=AGENT)
    limits = store.limits_for(tenant)
    actor = Actor.system("bench")
    baseline = FileBaseline(tmp / "original")
    rng = random.Random(7)
    count, budget = (60, 8.0) if args.quick else (300, 30.0)
    rows: list[Row] = []
    try:
        for size in args.sizes:
            namespace = f"n{size}"
            progress(f"namespace of {size:,} keys: filling ...")
            prefill(agent, baseline, namespace, size)
            keys = [key_of(rng.randrange(size)) for _ in range(count + 10)]

            def service_set(i: int, ns: str = namespace, ks: list[str] = keys) -> None:
                store.kv_set(agent=agent, limits=limits, namespace=ns, key=ks[i], value=canonical(value_of(i)),
                             actor=actor)

            def service_get(i: int, ns: str = namespace, ks: list[str] = keys) -> None:
                entry = store.kv_get(agent=agent, namespace=ns, key=ks[i])
                assert entry is not None
                json.loads(entry.value)

            def file_set(i: int, ns: str = namespace, ks: list[str] = keys) -> None:
                baseline.set(ns, ks[i], value_of(i))

            def file_get(i: int, ns: str = namespace, ks: list[str] = keys) -> None:
                assert baseline.get(ns, ks[i]) is not None

            rows.append(Row(size, "set", timed("service set", service_set, count=count, budget_s=budget),
                            timed("baseline set", file_set, count=count, budget_s=budget)))
            rows.append(Row(size, "get", timed("service get", service_get, count=count, budget_s=budget),
                            timed("baseline get", file_get, count=count, budget_s=budget)))
        http_error = None if args.no_http else measure_http(args, tmp, token, rows, rng, count, budget)
    finally:
        if not database_url.startswith("sqlite"):
            progress("removing the bench tenant ...")
            Tenant.objects.filter(slug=tenant_slug).delete()
        connections.close_all()
    return {
        "date": started.isoformat(timespec="seconds"),
        "seconds": round((datetime.now(UTC) - started).total_seconds(), 1),
        "command": " ".join([".venv/bin/python", "bench/kv.py", *sys.argv[1:]]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                    "load_average_at_start": load_at_start,
                    "load_average_at_end": [round(x, 2) for x in os.getloadavg()]},
        "database": connection.vendor,
        "calls_per_phase": count,
        "http_clients": args.clients,
        "http_error": http_error,
        "rows": [{**asdict(row), "ratio": row.ratios()} for row in rows],
    }


def measure_http(args: argparse.Namespace, tmp: Path, token: str, rows: list[Row], rng: random.Random,
                 count: int, budget: float) -> str | None:
    """Fill in the http figures of `rows`; returns why they are missing, if they are."""
    from django.db import connections

    connections.close_all()  # the server's workers get the database to themselves
    progress("starting gunicorn (2 workers) ...")
    server = Server(tmp)
    path = f"/api/v1/agents/{AGENT}/memory"
    try:
        server.wait_ready()
        client = Client(server.port, token)
        check_endpoint(client, path)
        for row in rows:
            namespace = f"n{row.size}"
            keys = [key_of(rng.randrange(row.size)) for _ in range(count + 10)]

            def body(i: int, op: str = row.op, ns: str = namespace, ks: list[str] = keys) -> dict[str, Any]:
                fields: dict[str, Any] = {"action": op, "key": ks[i % len(ks)], "namespace": ns}
                if op == "set":
                    fields["value"] = value_of(i)
                return fields

            def call(i: int, make: Callable[[int], dict[str, Any]] = body) -> None:
                status, answer = client.post(path, make(i))
                if status != 200:
                    raise BenchError(f"POST {path} answered {status} {error_code(answer)}")

            progress(f"namespace of {row.size:,} keys over HTTP:")
            row.http = timed(f"http {row.op}", call, count=count, budget_s=budget)
            total = 400 if args.quick else 2000
            row.http_rps = throughput(server.port, token, path, body, clients=args.clients, total=total,
                                      budget_s=budget)
            progress(f"  http {row.op} with {args.clients} clients: {row.http_rps:,.0f} requests/s")
        client.close()
    except BenchError as exc:
        reason = str(exc)
        last = server.log_tail().splitlines()[-1:]
        if last:  # a server-side failure: its last log line usually names it
            reason += f" (server log: {last[0].strip()})"
        progress(f"HTTP part failed: {reason}")
        return reason
    finally:
        server.stop()
    return None


def fmt(stats: Stats | None) -> str:
    return "-" if stats is None else f"{stats.median_ms:8.3f} ({stats.p95_ms:.3f})"


def print_table(report: dict[str, Any], rows: list[Row]) -> None:
    print(f"\nKV latency, median (p95) in ms; {report['database']}, {report['machine']['cpus']} CPUs, "
          f"{report['date']}")
    header = (f"{'keys':>7}  {'op':<3}  {'service':>18}  {'http':>18}  {'baseline file':>18}  "
              f"{'service/base':>12}  {'http/base':>9}  {'http req/s':>10}")
    print(header)
    print("-" * len(header))
    for row in rows:
        ratio = row.ratios()
        http_ratio = "-" if ratio["http"] is None else f"{ratio['http']:.2f}x"
        rps = "-" if row.http_rps is None else f"{row.http_rps:,.0f}"
        print(f"{row.size:>7,}  {row.op:<3}  {fmt(row.service):>18}  {fmt(row.http):>18}  {fmt(row.baseline):>18}  "
              f"{ratio['service']:>11.2f}x  {http_ratio:>9}  {rps:>10}")
    if report["http_error"]:
        print(f"\nHTTP part failed: {report['http_error']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls per phase (a smoke run, ~1 minute)")
    parser.add_argument("--sizes", default="100,1000,10000", help="namespace sizes, comma-separated")
    parser.add_argument("--clients", type=int, default=4, help="concurrent HTTP clients for requests/s")
    parser.add_argument("--no-http", action="store_true", help="service layer and baseline only")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (database, files, log)")
    args = parser.parse_args()
    args.sizes = [int(part) for part in args.sizes.split(",") if part.strip()]
    if not args.sizes or min(args.sizes) < 1 or max(args.sizes) > 100_000:
        parser.error("sizes must be between 1 and 100,000 (the default keys_per_namespace limit)")
    tmp = Path(tempfile.mkdtemp(prefix="memoryhub-bench-kv-"))
    try:
        database_url = prepare_environment(tmp)
        report = run(args, tmp, database_url)
    finally:
        if args.keep:
            progress(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    rows = [Row(r["size"], r["op"], Stats(**r["service"]), Stats(**r["baseline"]),
                Stats(**r["http"]) if r["http"] else None, r["http_rps"]) for r in report["rows"]]
    print_table(report, rows)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwritten to {OUT.relative_to(ROOT)}")
    return 1 if report["http_error"] else 0


if __name__ == "__main__":
    sys.exit(main())
