"""Atom read over HTTP against the recall target (docs/benchmarks.md "Atom read over HTTP: `bench/atoms_http.py`").

    .venv/bin/python bench/atoms_http.py [--quick] [--atoms 10000] [--clients 8] [--workers 2] [--seconds 60]

The target (one of recall v2's, docs/benchmarks.md "Atoms at scale"): read p95 over HTTP
<= 100 ms with gunicorn, 2 workers, 8 concurrent clients, 10k atoms in one tenant, PostgreSQL;
lexical, tokens 4,096, one query text per read. The script creates a PostgreSQL database of its
own (`memoryhub_httpbench_<pid>`, through `--postgres`, dropped at the end), migrates it,
creates a tenant with an ingest key and an agent key, and writes the corpus of
bench/atoms_scale.py through the service (batches of 128, progress lines), then runs `VACUUM (ANALYZE)`.
It times the 50 queries of atoms_scale in this process first (answer_read and answer_search
with the agent key: service time, no HTTP), then starts `gunicorn memoryhub.wsgi -w N` (sync
workers) on a free 127.0.0.1 port against the same database in the embedded mode (no Redis,
eager tasks, ATOMS_EMBEDDING=none: lexical recall).

Three phases follow, each with `--clients` threads on kept-alive connections for `--warmup`
unmeasured seconds and then `--seconds` measured ones, the queries round-robin: `POST
/api/v1/atoms/read` {"state": {"query": q}, "options": {"tokens": 4096}}, `POST
/api/v1/atoms/search` {"query": q}, and `GET /api/v1/whoami` (key authentication and the
framework alone: the baseline). Latency is the client's, queueing for a free worker included;
percentiles are of the 200 answers, and any other status is an error, counted and reported.
The per-key rate limit is lifted (MEMORYHUB_DEFAULT_API_RATE_PER_MINUTE), as in bench/load.py:
the baseline would otherwise measure the throttle. It prints a table and the read p95 against
the target, and writes bench/results/atoms_http.json and atoms_http.png.

Only 127.0.0.1 is contacted; every loop is bounded by the clock, every wait has a timeout, and
the server runs in a session of its own that is always stopped. `--quick`: 1,000 atoms, 10 s.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kv import progress
from kv_http import BenchError, Server, free_port
from load import Client, admin_sql, error_code, local_url, percentile, with_database

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
DATABASE_PREFIX = "memoryhub_httpbench"
TARGET_READ_P95_MS = 100.0  # docs/benchmarks.md "Atoms at scale": over HTTP, 2 workers, 8 clients, 10k atoms, PostgreSQL
TOKENS = 4096
# Method, path and body per endpoint, in the order they run: the target first, then the baselines.
ENDPOINTS: dict[str, tuple[str, str, Callable[[str], dict[str, Any] | None]]] = {
    "read": ("POST", "/api/v1/atoms/read", lambda q: {"state": {"query": q}, "options": {"tokens": TOKENS}}),
    "search": ("POST", "/api/v1/atoms/search", lambda q: {"query": q}),
    "whoami": ("GET", "/api/v1/whoami", lambda q: None),
}


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# --- Setup: database, corpus, service time ----------------------------------------------------

def prepare_environment(tmp: Path, database_url: str) -> None:
    """The embedded mode on our own database, set before Django starts here and inherited by gunicorn."""
    os.environ.update({
        "DATABASE_URL": database_url,
        "MEMORYHUB_VAR_DIR": str(tmp / "var"),
        "ATOMS_EMBEDDING": "none",  # lexical recall, as the target states
        "MEMORYHUB_DEFAULT_API_RATE_PER_MINUTE": str(10**9),
        "LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "memoryhub.settings",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    })
    for name in ("REDIS_URL", "ATOMS_VECTOR_INDEX_ROOT", "MEMORYHUB_ENV"):
        os.environ.pop(name, None)
    sys.path.insert(0, str(ROOT))


def build(args: argparse.Namespace) -> dict[str, Any]:
    """Migrate, create the tenant and keys, write the corpus, ANALYZE, time the reads in process."""
    import django

    django.setup()
    from atoms_scale import QUERIES, Corpus, grow, measure, settle
    from django.core.management import call_command

    from atoms.api.read import answer_read
    from atoms.api.search import answer_search
    from atoms.principal import Principal
    from memoryhub.actors import Actor
    from tenants.services.keys import apikey_create
    from tenants.services.tenancy import tenant_ensure

    progress("migrating ...")
    call_command("migrate", "--noinput", verbosity=0)
    actor = Actor.system("bench/atoms_http.py")
    tenant, _ = tenant_ensure(slug="httpbench", name="Atom read over HTTP", actor=actor)
    ingest, _ = apikey_create(tenant=tenant, kind="ingest", actor=actor, name="bench writes")
    agent, agent_token = apikey_create(tenant=tenant, kind="agent", actor=actor, name="bench reads")
    corpus = Corpus()
    refs: list[str] = []
    queries = corpus.queries(QUERIES)
    progress(f"writing {args.atoms:,} atoms through the service ...")
    seconds = grow(Principal.for_key(ingest), corpus, refs, args.atoms, time.monotonic() + args.build_limit)
    if len(refs) < args.atoms:
        raise BenchError(f"the build limit of {args.build_limit:.0f} s stopped the corpus at {len(refs):,} atoms")
    settle()  # a tenant grown within minutes: what autovacuum would do in a running service
    reader = Principal.for_key(agent)
    progress("service time in this process (no HTTP), one caller ...")
    in_process = {
        "read": measure("read", lambda q: answer_read(
            reader, {"state": {"query": q}, "options": {"tokens": TOKENS}}), queries, args.measure_limit),
        "search": measure("search", lambda q: answer_search(reader, {"query": q}), queries,
                          args.measure_limit),
    }
    for figures in in_process.values():
        figures.pop("p95_vs_target")  # atoms_scale's service targets at 100k atoms, not this one
    corpus_info: dict[str, Any] = {"atoms": len(refs), "links": sum(len(corpus.links(i)) for i in range(len(refs))),
                   "build_seconds": round(seconds, 1), "atoms_per_second": round(len(refs) / seconds, 1)}
    return {"token": agent_token, "queries": queries, "corpus": corpus_info, "in_process": in_process}


# --- HTTP load ---------------------------------------------------------------------------------

class Gunicorn(Server):
    """kv_http's Server with `-w workers` sync workers instead of its fixed two."""

    def __init__(self, tmp: Path, workers: int) -> None:
        self.port = free_port()
        self.log = tmp / "gunicorn.log"
        command = [str(Path(sys.executable).parent / "gunicorn"), "memoryhub.wsgi", "-w", str(workers), "-k", "sync",
                   "-b", f"127.0.0.1:{self.port}", "--error-logfile", str(self.log), "--log-level", "warning"]
        self.process = subprocess.Popen(command, cwd=ROOT, env=os.environ.copy(), stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)


def run_phase(name: str, port: int, token: str, queries: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """`args.clients` threads call one endpoint until the clock runs out; calls started in the
    warm-up are not kept. Returns the phase's figures."""
    method, path, make_body = ENDPOINTS[name]
    lock, turn = threading.Lock(), [0]
    calls: list[tuple[float, float, int]] = []  # (start since t0, latency ms, status), measured window only
    errors: dict[str, int] = {}
    first_errors: list[str] = []
    t0 = time.monotonic()
    warmup_until, stop_at = t0 + args.warmup, t0 + args.warmup + args.seconds

    def work() -> None:
        client = Client(port, token)
        try:
            while time.monotonic() < stop_at:
                with lock:  # one round-robin over the queries for all clients
                    query = queries[turn[0] % len(queries)]
                    turn[0] += 1
                started = time.monotonic()
                status, raw = client.call(method, path, make_body(query))
                elapsed_ms = (time.monotonic() - started) * 1000
                if started < warmup_until:
                    continue
                with lock:
                    calls.append((started - t0, elapsed_ms, status))
                    if status != 200:
                        label = f"{status} {error_code(raw)}"
                        errors[label] = errors.get(label, 0) + 1
                        if len(first_errors) < 5:
                            first_errors.append(f"{label}: {raw[:200].decode(errors='replace')}")
        finally:
            client.close()

    progress(f"{name}: {method} {path}, {args.clients} clients, {args.warmup:.0f} s warm-up + {args.seconds:.0f} s ...")
    load_before = load_average()
    threads = [threading.Thread(target=work, daemon=True) for _ in range(args.clients)]
    for thread in threads:
        thread.start()
    # A call has a 30 s client timeout, so every thread is done well within this bound.
    hard_stop, next_report = stop_at + 60, t0 + args.warmup + 10
    while any(t.is_alive() for t in threads) and time.monotonic() < hard_stop:
        time.sleep(0.5)
        if time.monotonic() >= next_report and time.monotonic() < stop_at:
            with lock:
                done, failed = len(calls), sum(errors.values())
            progress(f"  {time.monotonic() - warmup_until:3.0f} s: {done:,} calls, {failed} errors")
            next_report += 10
    stuck = sum(t.is_alive() for t in threads)
    if stuck:
        raise BenchError(f"{stuck} client threads of the {name} phase did not finish within 60 s of its end")
    figures = summarize(calls, args.seconds)
    figures.update(method=method, path=path, errors_by_kind=errors, first_errors=first_errors,
                   load_average_before=load_before, load_average_after=load_average())
    progress(f"  {figures['count']:,} answers, {figures['per_second']:.1f}/s, p50 {figures['p50_ms']:.1f} ms, "
             f"p95 {figures['p95_ms']:.1f} ms, {figures['errors']} errors")
    return figures


def summarize(calls: list[tuple[float, float, int]], seconds: float) -> dict[str, Any]:
    """Rates and percentiles of the 200 answers; a quick error answer must not flatter them."""
    ok = sorted(latency for _, latency, status in calls if status == 200)
    errors = sum(1 for _, _, status in calls if status != 200)
    quantiles = [round(percentile(ok, q / 200), 2) for q in range(1, 201)] if ok else []  # to redraw the CDF
    return {"count": len(ok), "per_second": round(len(ok) / seconds, 2), "errors": errors,
            "p50_ms": round(percentile(ok, 0.50), 2), "p95_ms": round(percentile(ok, 0.95), 2),
            "p99_ms": round(percentile(ok, 0.99), 2), "max_ms": round(ok[-1], 2) if ok else float("nan"),
            "mean_ms": round(statistics.fmean(ok), 2) if ok else float("nan"), "quantiles_ms": quantiles}


def queueing(result: dict[str, Any]) -> dict[str, Any]:
    """Closed-loop load on sync workers: each worker serves one request at a time, so with more
    clients than workers a request waits for the ones ahead of it. Little's law gives the mean
    latency as clients / throughput; when the workers are always busy, a request holds a worker
    for workers / throughput, and the mean latency is about that time x clients / workers."""
    conf, out = result["config"], {}
    for name, figures in result["endpoints"].items():
        rate = figures["per_second"]
        out[name] = {"worker_ms_per_request": round(1000 * conf["workers"] / rate, 1) if rate else None,
                     "littles_law_mean_ms": round(1000 * conf["clients"] / rate, 1) if rate else None,
                     "measured_mean_ms": figures["mean_ms"]}
    service = result["in_process"]["read"]["stats"]["mean_ms"]
    out["read_in_process_mean_ms"] = round(service, 1)
    out["read_estimate_from_service_mean_ms"] = round(service * conf["clients"] / conf["workers"], 1)
    return out


# --- Report ------------------------------------------------------------------------------------

def print_table(result: dict[str, Any]) -> None:
    conf, target = result["config"], result["target"]
    print(f"\nAtom read over HTTP: gunicorn -w {conf['workers']} (sync), {conf['clients']} clients, "
          f"{result['corpus']['atoms']:,} atoms, PostgreSQL, lexical, tokens {TOKENS:,}; {conf['seconds']:.0f} s per "
          f"endpoint; {result['date']}, load average {result['machine']['load_average_at_start']} at the start")
    header = f"{'endpoint':<22}{'answers':>8}{'req/s':>8}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'mean ms':>9}{'errors':>8}"
    print(header + "\n" + "-" * len(header))
    for name, f in result["endpoints"].items():
        print(f"{f['method'] + ' ' + name:<22}{f['count']:>8,}{f['per_second']:>8.1f}{f['p50_ms']:>9.1f}"
              f"{f['p95_ms']:>9.1f}{f['p99_ms']:>9.1f}{f['mean_ms']:>9.1f}{f['errors']:>8}")
    for name, figures in result["in_process"].items():
        s = figures["stats"]
        print(f"{name + ' in process':<22}{s['n']:>8}{'':>8}{s['median_ms']:>9.1f}{s['p95_ms']:>9.1f}{'':>9}"
              f"{s['mean_ms']:>9.1f}{'':>8}")
    q = result["queueing"]
    print(f"\nread p95 {target['read_p95_ms']:.1f} ms / target {TARGET_READ_P95_MS:.0f} ms = {target['ratio']:.2f}x: "
          f"{'met' if target['met'] else 'MISSED'}")
    print(f"queueing: read holds a worker {q['read']['worker_ms_per_request']} ms per request under load "
          f"(in process, one caller: mean {q['read_in_process_mean_ms']} ms); in-process mean x {conf['clients']} "
          f"clients / {conf['workers']} workers = {q['read_estimate_from_service_mean_ms']} ms, measured mean "
          f"{q['read']['measured_mean_ms']} ms")
    for name, f in result["endpoints"].items():
        for line in f["first_errors"]:
            print(f"  {name} error: {line}")


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    endpoints = result["endpoints"]
    figure, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8))
    for name, f in endpoints.items():
        if f["quantiles_ms"]:
            left.plot(f["quantiles_ms"], [q / 200 for q in range(1, 201)], label=f"{f['method']} {name} (HTTP)")
    for name, figures in result["in_process"].items():
        s = figures["stats"]
        left.plot([s["median_ms"], s["p95_ms"]], [0.5, 0.95], "o--", label=f"{name} in process (p50, p95)")
    left.axvline(TARGET_READ_P95_MS, color="red", linestyle=":", label="read p95 target")
    left.axhline(0.95, color="grey", linewidth=0.6)
    left.set_xscale("log")
    left.set_xlabel("latency, ms (log scale)")
    left.set_ylabel("fraction of answers at most this latency")
    left.set_title("Latency distribution per endpoint")
    left.legend(fontsize=7, loc="lower right")
    names = list(endpoints)
    width, x = 0.27, range(len(names))
    for shift, (key, label) in enumerate([("p50_ms", "p50"), ("p95_ms", "p95"), ("p99_ms", "p99")]):
        right.bar([i + (shift - 1) * width for i in x], [endpoints[n][key] for n in names], width, label=label)
    right.axhline(TARGET_READ_P95_MS, color="red", linestyle=":", label="read p95 target")
    right.set_xticks(list(x), [f"{endpoints[n]['method']} {n}\n{endpoints[n]['per_second']:.0f} req/s" for n in names])
    right.set_ylabel("latency, ms")
    right.set_title("Percentiles over HTTP")
    right.legend()
    conf = result["config"]
    figure.suptitle(f"bench/atoms_http.py: gunicorn -w {conf['workers']} (sync), {conf['clients']} clients, "
                    f"{result['corpus']['atoms']:,} atoms, PostgreSQL, lexical; {result['date']}, "
                    f"load average {result['machine']['load_average_at_start'][0]}", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


# --- Main --------------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--atoms", type=int, default=10_000, help="corpus size (default 10,000)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent client threads (default 8)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn sync workers (default 2)")
    parser.add_argument("--seconds", type=float, default=60, help="measured seconds per endpoint (default 60)")
    parser.add_argument("--warmup", type=float, default=5, help="unmeasured seconds before each endpoint's (default 5)")
    parser.add_argument("--quick", action="store_true", help="1,000 atoms, 10 s per endpoint, 2 s warm-up")
    parser.add_argument("--build-limit", type=float, default=1800, help="seconds for writing the corpus (default 1800)")
    parser.add_argument("--measure-limit", type=float, default=60, help="seconds of in-process calls per op (default 60)")
    parser.add_argument("--postgres", default=os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres"),
                        help="a local PostgreSQL URL whose role may create databases; the run uses a database of its own")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for atoms_http.json and atoms_http.png")
    args = parser.parse_args()
    if args.quick:
        args.atoms, args.seconds, args.warmup = 1000, 10.0, 2.0
    if not (10 <= args.atoms <= 200_000 and 1 <= args.clients <= 64 and 1 <= args.workers <= 16
            and 1 <= args.seconds <= 3600 and 0 <= args.warmup <= 600):
        parser.error("--atoms 10-200,000, --clients 1-64, --workers 1-16, --seconds 1-3600, --warmup 0-600")
    local_url(args.postgres, "--postgres")

    tmp = Path(tempfile.mkdtemp(prefix="mh-httpbench-"))
    database = f"{DATABASE_PREFIX}_{os.getpid()}"
    started, load_at_start = datetime.now(UTC), load_average()
    server: Gunicorn | None = None
    created = False
    try:
        progress(f"creating database {database}")
        admin_sql(args.postgres, f'CREATE DATABASE "{database}"')
        created = True
        prepare_environment(tmp, with_database(args.postgres, database))
        setup = build(args)
        from django.db import connections

        connections.close_all()  # this process is idle while gunicorn serves
        server = Gunicorn(tmp, args.workers)
        server.wait_ready()
        progress(f"gunicorn -w {args.workers} on 127.0.0.1:{server.port}")
        endpoints = {name: run_phase(name, server.port, setup["token"], setup["queries"], args) for name in ENDPOINTS}
        read_p95 = endpoints["read"]["p95_ms"]
        result: dict[str, Any] = {
            "benchmark": "atoms_http",
            "command": " ".join([".venv/bin/python", "bench/atoms_http.py", *sys.argv[1:]]),
            "date": started.isoformat(timespec="seconds"),
            "seconds": (datetime.now(UTC) - started).seconds,
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                        "load_average_at_start": load_at_start, "load_average_at_end": load_average()},
            "config": {"atoms": args.atoms, "clients": args.clients, "workers": args.workers, "seconds": args.seconds,
                       "warmup": args.warmup, "tokens": TOKENS, "web": f"gunicorn memoryhub.wsgi -w {args.workers} (sync)",
                       "database": "PostgreSQL (own database, dropped after)", "mode": "embedded (no Redis, eager tasks)",
                       "embedding": None, "api_rate_per_minute": "unlimited (10**9)"},
            "corpus": setup["corpus"],
            "in_process": setup["in_process"],
            "endpoints": endpoints,
            "target": {"read_p95_ms": read_p95, "target_ms": TARGET_READ_P95_MS,
                       "ratio": round(read_p95 / TARGET_READ_P95_MS, 2), "met": read_p95 <= TARGET_READ_P95_MS},
            "queries": setup["queries"],
        }
        result["queueing"] = queueing(result)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "atoms_http.json").write_text(json.dumps(result, indent=2) + "\n")
        plot(result, args.out / "atoms_http.png")
        print_table(result)
        print(f"\nwrote {args.out / 'atoms_http.json'} and {args.out / 'atoms_http.png'}")
        return 0 if sum(f["errors"] for f in endpoints.values()) == 0 else 1
    except BenchError as exc:
        print(f"atoms_http benchmark failed: {exc}", file=sys.stderr)
        return 2
    finally:
        if server is not None:
            server.stop()
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # noqa: BLE001 - Django may never have been set up
            pass
        if created:
            admin_sql(args.postgres, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            progress(f"dropped database {database}")
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
