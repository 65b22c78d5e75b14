"""Mixed agent traffic against a production-shaped local deployment.

    .venv/bin/python bench/load.py [--seconds 60] [--clients 4] [--embedding fake|minilm]

Starts `gunicorn memoryhub.wsgi -w 2` and one Celery worker (prefork, concurrency 1) against
a PostgreSQL database of its own (created here, dropped at the end) and Redis, creates a
tenant with an agent key and an ingest key, seeds some atoms, then runs `--clients` client
threads for `--seconds`, each picking operations at random with fixed weights: KV set/get,
memory-file add/remove/read, Atom write/read/search. It prints throughput, p50/p95/p99 per
operation and the error count, and writes bench/results/load.json and load.png.

Only 127.0.0.1 is contacted; every loop is bounded by the clock, every wait has a timeout,
and the servers run in sessions of their own that are always stopped.
"""

from __future__ import annotations

import argparse
import http.client
import json
import math
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse, urlunparse

from kv_http import BenchError, Server

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}
AGENT = "bench"

# Operation weights: reads dominate, as they do for an agent that recalls before each step.
WEIGHTS = {"kv_set": 15, "kv_get": 20, "memory_write": 8, "memory_read": 10, "atom_write": 10, "atom_read": 20,
           "atom_search": 17}

WORDS_SUBJECT = ["Alice", "Bob", "the build", "the team", "our API", "the staging cluster", "Carol", "the nightly job"]
WORDS_VERB = ["prefers", "uses", "needs", "avoids", "depends on", "was moved to", "runs", "documents"]
WORDS_OBJECT = ["green tea", "PostgreSQL 15", "Bun and Nx", "short answers", "the EU region", "weekly releases",
                "Redis streams", "a 30 minute timeout", "type hints", "dark mode"]


def sentence(rng: random.Random) -> str:
    """KV values and memory-file entries: short notes."""
    return f"{rng.choice(WORDS_SUBJECT)} {rng.choice(WORDS_VERB)} {rng.choice(WORDS_OBJECT)}."


class AtomTexts:
    """Atom texts and queries from bench/atoms_scale.py's corpus (Zipf-skewed pseudo-words),
    so that Atom figures here and there describe the same kind of text."""

    def __init__(self) -> None:
        from atoms_scale import Corpus  # imported after the environment is set: it imports Django modules

        self.corpus = Corpus()
        self.queries = self.corpus.queries(200)

    def text(self, i: int) -> str:
        return self.corpus.text(i)

    def query(self, rng: random.Random) -> str:
        return rng.choice(self.queries)


# --- Setup -----------------------------------------------------------------------------------

def local_url(url: str, what: str) -> None:
    host = urlparse(url).hostname or ""
    if host not in LOCAL_HOSTS:
        raise SystemExit(f"{what} must point at 127.0.0.1 (got host {host!r}); this benchmark stays local")


def with_database(url: str, name: str) -> str:
    return urlunparse(urlparse(url)._replace(path=f"/{name}"))


def admin_sql(maintenance_url: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(maintenance_url, autocommit=True) as conn:
        conn.execute(statement)


def prepare_environment(args: argparse.Namespace, tmp: Path, database_url: str, queue: str) -> None:
    os.environ.update({
        "DATABASE_URL": database_url,
        "REDIS_URL": args.redis_url,
        "CELERY_TASK_DEFAULT_QUEUE": queue,  # a queue of its own: nobody else's worker takes our tasks
        "MEMORYHUB_VAR_DIR": str(tmp / "var"),
        "MEMORYHUB_VOLUME_ROOT": str(tmp / "volumes"),  # the worker projects the memory files here
        "ATOMS_VECTOR_INDEX_ROOT": str(tmp / "vectors"),
        "ATOMS_EMBEDDING": args.embedding,
        "MEMORYHUB_DEFAULT_API_RATE_PER_MINUTE": str(10**9),  # the benchmark must not throttle itself
        "LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "memoryhub.settings",
    })
    os.environ.pop("MEMORYHUB_ENV", None)
    sys.path.insert(0, str(ROOT))


def create_tenant() -> dict[str, str]:
    """Migrate, then a tenant with approval off (agent adds apply at once) and two keys."""
    import django

    django.setup()
    from django.core.management import call_command

    from memoryhub.actors import Actor
    from tenants.models import Approval, MemoryVolume
    from tenants.services.keys import apikey_create
    from tenants.services.tenancy import tenant_ensure

    call_command("migrate", verbosity=0)
    actor = Actor.system("bench/load.py")
    tenant, _ = tenant_ensure(slug="load", name="Load", actor=actor)
    volume = MemoryVolume.get_or_create_for(tenant)
    volume.approval = Approval.OFF
    volume.save(update_fields=["approval"])
    _, agent = apikey_create(tenant=tenant, kind="agent", actor=actor)
    _, ingest = apikey_create(tenant=tenant, kind="ingest", actor=actor)
    _, host = apikey_create(tenant=tenant, kind="host", actor=actor)
    return {"agent": agent, "ingest": ingest, "host": host}


class Worker:
    """`celery -A memoryhub worker` (prefork, one child) on the bench queue, stopped on exit."""

    def __init__(self, tmp: Path, queue: str) -> None:
        self.node = f"{queue}@bench"
        self.log = tmp / "worker.log"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "memoryhub", "worker", "--pool=prefork", "--concurrency=1",
             "-Q", queue, "-n", self.node, "--without-gossip", "--without-mingle", "--loglevel=warning"],
            cwd=ROOT, env=os.environ.copy(), stdout=self.log.open("wb"), stderr=subprocess.STDOUT,
            start_new_session=True)

    def wait_ready(self, timeout_s: float = 90) -> None:
        from memoryhub.models import WorkerHeartbeat

        deadline = time.monotonic() + timeout_s
        while not WorkerHeartbeat.objects.filter(hostname=self.node).exists():
            if self.process.poll() is not None:
                raise BenchError(f"the worker exited with {self.process.returncode}; see {self.log}")
            if time.monotonic() > deadline:
                raise BenchError(f"the worker was not ready within {timeout_s:.0f} s; see {self.log}")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=5)


# --- Traffic ---------------------------------------------------------------------------------

class Client:
    """One HTTP connection to the local gunicorn (reopened when the server closes it)."""

    def __init__(self, port: int, token: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        data = json.dumps(body).encode() if body is not None else None
        try:
            self.conn.request(method, path, data, self.headers)
            response = self.conn.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()  # a reset or timeout: counted as an error, the next call reconnects
            return 0, b""

    def close(self) -> None:
        self.conn.close()


@dataclass
class Samples:
    """What one client thread saw: (op, seconds since start, latency ms, status) per call."""

    calls: list[tuple[str, float, float, int]] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    first_errors: list[str] = field(default_factory=list)


def error_code(body: bytes) -> str:
    try:
        return str(json.loads(body)["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return "(no error body)"


def run_client(slot: int, port: int, keys: dict[str, str], texts: AtomTexts, mix: dict[str, int], t0: float,
               warmup_until: float, stop_at: float, seed: int, out: Samples) -> None:
    rng = random.Random(seed + slot)
    agent, ingest = Client(port, keys["agent"]), Client(port, keys["ingest"])
    kv_keys: list[str] = []
    my_entry: str | None = None  # the memory entry this client added last and removes next
    ops, weights = list(mix), list(mix.values())
    n = 0
    try:
        while time.monotonic() < stop_at:
            op = rng.choices(ops, weights)[0]
            n += 1
            if op == "kv_get" and not kv_keys:
                op = "kv_set"
            if op == "kv_set":
                key = f"c{slot}-{n % 500}"
                client, method, path = agent, "POST", f"/api/v1/agents/{AGENT}/memory"
                body: Any = {"action": "set", "key": key, "value": {"n": n, "note": sentence(rng)}}
            elif op == "kv_get":
                client, method, path = agent, "POST", f"/api/v1/agents/{AGENT}/memory"
                body = {"action": "get", "key": rng.choice(kv_keys)}
            elif op == "memory_write":
                client, method, path = agent, "POST", "/api/v1/memory/memory"
                if my_entry is None:
                    op, my_entry = "memory_add", f"client {slot} note {n}: {sentence(rng)}"
                    body = {"action": "add", "content": my_entry}
                else:  # remove what this client added, so the capped store never fills up
                    op, body, my_entry = "memory_remove", {"action": "remove", "old_text": my_entry}, None
            elif op == "memory_read":
                client, method, path, body = agent, "GET", "/api/v1/memory/memory", None
            elif op == "atom_write":
                client, method, path = ingest, "POST", "/api/v1/atoms/write"
                text = texts.text(1_000_000 * (slot + 1) + n)  # past the seeded atoms, distinct per client
                body = {"changes": [{"id": "c", "op": "create", "content": {"text": text, "links": []}, "sources": []}]}
            elif op == "atom_read":
                client, method, path = agent, "POST", "/api/v1/atoms/read"
                body = {"state": {"query": texts.query(rng)}, "options": {"tokens": 1024}}
            else:
                client, method, path, body = agent, "POST", "/api/v1/atoms/search", {"query": texts.query(rng)}
            started = time.monotonic()
            status, raw = client.call(method, path, body)
            elapsed_ms = (time.monotonic() - started) * 1000
            if op == "kv_set" and status == 200 and body["key"] not in kv_keys:
                kv_keys.append(body["key"])
            if op == "memory_add" and status != 200:
                my_entry = None
            if started < warmup_until:
                continue
            out.calls.append((op, started - t0, elapsed_ms, status))
            if status != 200:
                label = f"{op} {status} {error_code(raw)}"
                out.errors[label] = out.errors.get(label, 0) + 1
                if len(out.first_errors) < 5:
                    out.first_errors.append(f"{label}: {raw[:200].decode(errors='replace')}")
    finally:
        agent.close()
        ingest.close()


def seed_atoms(port: int, keys: dict[str, str], count: int, texts: AtomTexts) -> None:
    client = Client(port, keys["ingest"])
    try:
        for start in range(0, count, 100):
            changes = [{"id": f"s{i}", "op": "create", "content": {"text": texts.text(i), "links": []}, "sources": []}
                       for i in range(start, min(count, start + 100))]
            status, raw = client.call("POST", "/api/v1/atoms/write", {"changes": changes})
            if status != 200:
                raise BenchError(f"seeding atoms failed: {status} {raw[:300]!r}")
    finally:
        client.close()


def wait_indexed(port: int, keys: dict[str, str], timeout_s: float) -> dict[str, Any]:
    """Wait (bounded) until the worker has indexed the seeded atoms, so the run does not
    start with a backlog that only the first seconds would pay for."""
    client = Client(port, keys["host"])
    started = time.monotonic()
    try:
        while True:
            status, raw = client.call("POST", "/api/v1/atoms/index/status", {})
            body = json.loads(raw) if status == 200 else {}
            if body.get("ready") or time.monotonic() - started > timeout_s:
                backlog = sum(p.get("backlog", 0) for p in body.get("policies", []))
                return {"ready": bool(body.get("ready")), "backlog": backlog,
                        "seconds": round(time.monotonic() - started, 1)}
            time.sleep(1)
    finally:
        client.close()


# --- Figures ---------------------------------------------------------------------------------

def percentile(ordered: list[float], q: float) -> float:
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] if ordered else float("nan")


def summarize(samples: list[Samples], seconds: float) -> dict[str, Any]:
    calls = [c for s in samples for c in s.calls]
    per_op: dict[str, Any] = {}
    for op in sorted({c[0] for c in calls}):
        latencies = sorted(c[2] for c in calls if c[0] == op)
        errors = sum(1 for c in calls if c[0] == op and c[3] != 200)
        per_op[op] = {"count": len(latencies), "per_second": round(len(latencies) / seconds, 1),
                      "p50_ms": round(percentile(latencies, 0.50), 2), "p95_ms": round(percentile(latencies, 0.95), 2),
                      "p99_ms": round(percentile(latencies, 0.99), 2), "errors": errors}
    errors: dict[str, int] = {}
    for s in samples:
        for label, count in s.errors.items():
            errors[label] = errors.get(label, 0) + count
    return {"total": len(calls), "per_second": round(len(calls) / seconds, 1),
            "errors": sum(errors.values()), "error_kinds": errors,
            "first_errors": [e for s in samples for e in s.first_errors][:10], "operations": per_op}


def timeline(samples: list[Samples], warmup: float, seconds: float) -> dict[str, list[int]]:
    """Completed calls per second of the measured window, per operation."""
    buckets = max(1, math.ceil(seconds))
    series: dict[str, list[int]] = {}
    for s in samples:
        for op, at, _, _ in s.calls:
            index = min(buckets - 1, max(0, int(at - warmup)))
            series.setdefault(op, [0] * buckets)[index] += 1
    return dict(sorted(series.items()))


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ops = list(result["summary"]["operations"])
    figure, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8))
    series = result["timeline"]
    seconds = list(range(len(next(iter(series.values()), []))))
    left.stackplot(seconds, [series[op] for op in ops], labels=ops)
    left.set_xlabel("second of the measured window")
    left.set_ylabel("completed requests per second")
    left.set_title(f"Throughput ({result['summary']['per_second']:.0f} req/s overall)")
    left.legend(loc="upper left", fontsize=7, ncol=2)
    width = 0.27
    x = range(len(ops))
    figures = result["summary"]["operations"]
    for shift, (key, label) in enumerate([("p50_ms", "p50"), ("p95_ms", "p95"), ("p99_ms", "p99")]):
        right.bar([i + (shift - 1) * width for i in x], [figures[op][key] for op in ops], width, label=label)
    right.set_xticks(list(x), ops, rotation=30, ha="right", fontsize=8)
    right.set_ylabel("latency, ms")
    right.set_title("Latency per operation")
    right.legend()
    conf = result["config"]
    figure.suptitle(f"bench/load.py: {conf['clients']} clients, {conf['seconds']:.0f} s, gunicorn -w 2 + 1 worker, "
                    f"PostgreSQL + Redis, embedding {conf['embedding']}", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def print_table(summary: dict[str, Any]) -> None:
    print(f"\n{'operation':<14}{'count':>8}{'req/s':>9}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'errors':>8}")
    for op, f in summary["operations"].items():
        print(f"{op:<14}{f['count']:>8}{f['per_second']:>9.1f}{f['p50_ms']:>9.2f}{f['p95_ms']:>9.2f}"
              f"{f['p99_ms']:>9.2f}{f['errors']:>8}")
    print(f"{'all':<14}{summary['total']:>8}{summary['per_second']:>9.1f}{'':>27}{summary['errors']:>8}")
    for line in summary["first_errors"]:
        print(f"  error: {line}")


# --- Main ------------------------------------------------------------------------------------

def drain(queue: str, redis_url: str, timeout_s: float) -> dict[str, Any]:
    """Wait (bounded) until the worker has taken every queued task; report what is left."""
    import redis

    from memoryhub.models import OutboxTask

    client = redis.Redis.from_url(redis_url)
    started = time.monotonic()
    try:
        while client.llen(queue) and time.monotonic() - started < timeout_s:
            time.sleep(0.5)
        return {"queued": int(client.llen(queue)), "outbox": OutboxTask.objects.count(),
                "seconds": round(time.monotonic() - started, 1)}
    finally:
        client.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60, help="measured duration (default 60)")
    parser.add_argument("--warmup", type=float, default=5, help="unmeasured seconds before it (default 5)")
    parser.add_argument("--clients", type=int, default=4, help="client threads (default 4)")
    parser.add_argument("--seed-atoms", type=int, default=2000, help="atoms written before the run (default 2000)")
    parser.add_argument("--embedding", choices=["fake", "minilm", "none"], default="fake",
                        help="the deployment's embedding provider (default fake: vectors without a model on the CPU)")
    parser.add_argument("--postgres", default=os.environ.get("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres"),
                        help="a local PostgreSQL URL whose role may create databases; the run uses a database of its own")
    parser.add_argument("--redis-url", default=os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/12"),
                        help="local Redis (default database 12); only the bench's own queue is deleted afterwards")
    parser.add_argument("--ops", default=",".join(WEIGHTS),
                        help=f"comma-separated subset of the operations (default all: {','.join(WEIGHTS)})")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for load.json and load.png")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, volumes)")
    args = parser.parse_args()
    if not (1 <= args.clients <= 64 and 1 <= args.seconds <= 3600):
        raise SystemExit("--clients must be 1-64 and --seconds 1-3600")
    mix = {op: WEIGHTS[op] for op in args.ops.split(",") if op in WEIGHTS}
    if not mix or set(args.ops.split(",")) - set(WEIGHTS):
        raise SystemExit(f"--ops takes a comma-separated subset of {','.join(WEIGHTS)}")
    local_url(args.postgres, "--postgres")
    local_url(args.redis_url, "--redis-url")

    tmp = Path(tempfile.mkdtemp(prefix="mh-load-"))
    database = f"mh_load_{os.getpid()}"
    queue = f"load-{os.getpid()}"
    server: Server | None = None
    worker: Worker | None = None
    created = False
    try:
        print(f"creating database {database}", file=sys.stderr)
        admin_sql(args.postgres, f'CREATE DATABASE "{database}"')
        created = True
        prepare_environment(args, tmp, with_database(args.postgres, database), queue)
        keys = create_tenant()
        worker = Worker(tmp, queue)
        server = Server(tmp)
        server.wait_ready()
        worker.wait_ready()
        print(f"gunicorn on 127.0.0.1:{server.port}, worker {worker.node}; seeding {args.seed_atoms} atoms",
              file=sys.stderr)
        texts = AtomTexts()
        seed_atoms(server.port, keys, args.seed_atoms, texts)
        indexed = {"ready": None, "backlog": None, "seconds": 0.0}
        if args.embedding != "none":
            indexed = wait_indexed(server.port, keys, timeout_s=600)
            print(f"index ready={indexed['ready']} after {indexed['seconds']} s", file=sys.stderr)

        samples = [Samples() for _ in range(args.clients)]
        t0 = time.monotonic()
        warmup_until, stop_at = t0 + args.warmup, t0 + args.warmup + args.seconds
        print(f"running {args.clients} clients for {args.warmup:.0f} + {args.seconds:.0f} s", file=sys.stderr)
        load_before = os.getloadavg()
        threads = [threading.Thread(target=run_client,
                                    args=(slot, server.port, keys, texts, mix, t0, warmup_until, stop_at, 1000,
                                          samples[slot]))
                   for slot in range(args.clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=args.warmup + args.seconds + 120)
        load_after = os.getloadavg()
        backlog = drain(queue, args.redis_url, timeout_s=120)

        summary = summarize(samples, args.seconds)
        result = {
            "benchmark": "load",
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                        "load_average_before": [round(x, 2) for x in load_before],
                        "load_average_after": [round(x, 2) for x in load_after]},
            "config": {"seconds": args.seconds, "warmup": args.warmup, "clients": args.clients,
                       "embedding": args.embedding, "seed_atoms": args.seed_atoms, "weights": mix,
                       "web": "gunicorn memoryhub.wsgi -w 2 (sync)", "worker": "celery prefork, concurrency 1",
                       "database": "PostgreSQL (own database, dropped after)", "broker": args.redis_url},
            "summary": summary,
            "index_before_run": indexed,
            "after_run": backlog,
            "timeline": timeline(samples, args.warmup, args.seconds),
        }
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "load.json").write_text(json.dumps(result, indent=2) + "\n")
        plot(result, args.out / "load.png")
        print_table(summary)
        print(f"\nafter the run: {backlog['queued']} tasks still queued, {backlog['outbox']} in the outbox "
              f"(waited {backlog['seconds']} s)")
        print(f"wrote {args.out / 'load.json'} and {args.out / 'load.png'}")
        return 0 if summary["errors"] == 0 else 1
    except BenchError as exc:
        print(f"load benchmark failed: {exc}", file=sys.stderr)
        return 2
    finally:
        if server is not None:
            server.stop()
        if worker is not None:
            worker.stop()
        try:
            from django.db import connections

            connections.close_all()
        except Exception:  # noqa: BLE001 - Django may never have been set up
            pass
        if created:
            admin_sql(args.postgres, f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            print(f"dropped database {database}", file=sys.stderr)
        try:
            import redis

            client = redis.Redis.from_url(args.redis_url)
            client.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
            client.close()
        except Exception:  # noqa: BLE001 - cleanup is best effort; the queue name is unique anyway
            pass
        if args.keep:
            print(f"kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
