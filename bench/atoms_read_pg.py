"""Atom read and search on PostgreSQL: every statement of one call, and the answers of a call list.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/memoryhub_pg \
        .venv/bin/python bench/atoms_read_pg.py build [--size 3000]
    DATABASE_URL=... .venv/bin/python bench/atoms_read_pg.py trace [--op read|search]
    DATABASE_URL=... .venv/bin/python bench/atoms_read_pg.py run --out ANSWERS.json [--calls N] [--repeat N]
    .venv/bin/python bench/atoms_read_cpu.py compare OLD.json NEW.json

`build` writes the corpus of bench/atoms_scale.py into the database DATABASE_URL names
(dropped and created anew) and runs VACUUM (ANALYZE); it is then a template that is kept. `run` makes
`<name>_run` (`<name>_$BENCH_COPY`) from that template (reads write refs and receipts, so every run starts from the
same state) and makes the call list of bench/atoms_read_cpu.py, recording the answers,
normalized the same way, and the process time, wall time and statements of each call, so
`atoms_read_cpu.py compare` compares two runs. `trace` makes one read (or search) twice on
`<name>_run` and prints, for the second call, every message the client sends to the server
(libpq's protocol trace, which includes BEGIN, SET, SAVEPOINT and COMMIT that Django's query
log does not show) with the time each statement took until its answer arrived and the
client-side time before it (docs/benchmarks.md "PostgreSQL round trips (2026-12-02)").
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import atoms_read_cpu as cpu  # noqa: E402

COPY = os.environ.get("BENCH_COPY", "run")  # the copy's suffix: two runs at once need two copies


# Quoted literals (terms, texts) are masked in printed statements: they hold corpus content.
_QUOTED = re.compile(r"'(?:[^']|'')*'")

def _urls() -> tuple[str, str, str]:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        raise SystemExit("DATABASE_URL must name a PostgreSQL database")
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    return url, name, urlunsplit(parts._replace(path=f"/{name}_{COPY}"))


def _admin(sql: str) -> None:
    import psycopg

    url, _, _ = _urls()
    with psycopg.connect(urlunsplit(urlsplit(url)._replace(path="/postgres")), autocommit=True) as conn:
        conn.execute(sql)


def setup(url: str) -> None:
    os.environ.update(DATABASE_URL=url, LOG_LEVEL="WARNING", DJANGO_SETTINGS_MODULE="memoryhub.settings",
                      ATOMS_EMBEDDING="none", MEMORYHUB_VAR_DIR=tempfile.mkdtemp(prefix="memoryhub-read-pg-"))
    for name in ("REDIS_URL", "ATOMS_VECTOR_INDEX_ROOT"):
        os.environ.pop(name, None)
    import django

    django.setup()


def build(size: int) -> None:
    url, name, _ = _urls()
    _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    _admin(f'CREATE DATABASE "{name}"')
    setup(url)
    from atoms_scale import Corpus, grow, settle
    from django.core.management import call_command
    from django.db import connection

    from atoms.principal import Principal
    from memoryhub.actors import Actor
    from tenants.services.keys import apikey_create
    from tenants.services.tenancy import tenant_ensure

    call_command("migrate", "--noinput", verbosity=0)
    actor = Actor.system("bench")
    tenant, _ = tenant_ensure(slug=cpu.SLUG, name="Read CPU", actor=actor)
    key, _ = apikey_create(tenant=tenant, kind="ingest", actor=actor, name="bench")
    seconds = grow(Principal.for_key(key), Corpus(), [], size, time.monotonic() + 7200)
    settle()
    connection.close()
    print(f"built {size:,} atoms in {seconds:.0f} s", file=sys.stderr)


def _fresh_copy() -> str:
    _, name, run_url = _urls()
    _admin(f'DROP DATABASE IF EXISTS "{name}_{COPY}" WITH (FORCE)')
    _admin(f'CREATE DATABASE "{name}_{COPY}" TEMPLATE "{name}"')
    return run_url


def _caller() -> Any:
    from atoms.principal import Principal
    from tenants.models import ApiKey

    return Principal.for_key(ApiKey.objects.filter(tenant__slug=cpu.SLUG).order_by("id")[0])


def _body(op: str) -> dict[str, Any]:
    """A read with a context (two channel texts), a search at depth 2."""
    mark = "context" if op == "read" else "depth"
    spec = next(s for s in cpu.calls(12) if s["op"] == op and mark in json.dumps(s["body"]))
    return spec["body"]


MESSAGE = re.compile(r"^(?:\S+ )?(?P<at>\d\d:\d\d:\d\d\.\d+)\t(?P<dir>[FB])\t\d+\t(?P<kind>\w+)\t?(?P<rest>.*)$")


def trace(op: str) -> None:
    run_url = _fresh_copy()
    setup(run_url)
    from django.db import connection

    from atoms.api.read import answer_read
    from atoms.api.search import answer_search

    answer = {"read": answer_read, "search": answer_search}[op]
    caller, body = _caller(), _body(op)
    for _ in range(5):  # refs issued, caches warm: the call traced is one a repeated read makes
        answer(caller, body)
    log = Path(tempfile.mkstemp(prefix="memoryhub-pq-trace-")[1])
    connection.ensure_connection()
    pgconn = connection.connection.pgconn
    with log.open("w") as handle:
        pgconn.trace(handle.fileno())
        started = time.perf_counter()
        answer(caller, body)
        total = (time.perf_counter() - started) * 1000
        pgconn.untrace()
    rows = _statements(log.read_text())
    waited = sum(r["server_ms"] for r in rows)
    for i, r in enumerate(rows, 1):
        masked = _QUOTED.sub("'…'", r["sql"])
        print(f"{i:>3} {r['client_ms']:7.2f} {r['server_ms']:7.2f}  {masked[:150]}")
    print(f"{len(rows)} statements; waiting on the server {waited:.1f} ms of {total:.1f} ms wall "
          f"(client time before the first statement and after the last not counted in either column)")
    # The protocol trace writes every message to a file as it arrives, which inflates the times
    # of statements with many rows: time them again untraced, 20 calls, median per position.
    timings: list[list[float]] = []
    walls: list[float] = []
    commits: list[float] = []
    database = connection.connection

    def timed(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            timings[-1].append((time.perf_counter() - started) * 1000)

    commit = database.commit

    def timed_commit() -> None:
        started = time.perf_counter()
        commit()
        commits.append((time.perf_counter() - started) * 1000)

    database.commit = timed_commit
    with connection.execute_wrapper(timed):
        for _ in range(20):
            timings.append([])
            started = time.perf_counter()
            answer(caller, body)
            walls.append((time.perf_counter() - started) * 1000)
    database.commit = commit
    counts = {len(t) for t in timings}
    print(f"untraced, 20 calls: wall median {statistics.median(walls):.1f} ms; statements {sorted(counts)}; "
          f"COMMIT median {statistics.median(commits):.2f} ms")
    if len(counts) == 1:
        for i in range(counts.pop()):
            print(f"  statement {i + 1:>2}: median {statistics.median(t[i] for t in timings):6.2f} ms "
                  "(execute and fetch, from the client)")
        print(f"  sum of medians {sum(statistics.median(t[i] for t in timings) for i in range(len(timings[0]))):.1f} ms")


def _statements(text: str) -> list[dict[str, Any]]:
    """One row per statement: the client time since the previous answer, the time until the answer."""

    def seconds(stamp: str) -> float:
        h, m, s = stamp.split(":")
        return int(h) * 3600 + int(m) * 60 + float(s)

    rows: list[dict[str, Any]] = []
    last_answer: float | None = None
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        match = MESSAGE.match(line)
        if not match:
            continue
        at, direction, kind, rest = seconds(match["at"]), match["dir"], match["kind"], match["rest"]
        if direction == "F" and kind in ("Query", "Parse") and current is None:
            sql = rest.strip()
            if kind == "Parse":  # a statement name, the text, parameter types
                sql = re.sub(r'^"[^"]*"\s*', "", sql)
            sql = sql[1:sql.rfind('"')] if sql.startswith('"') else sql
            current = {"sent": at, "sql": " ".join(sql.split()),
                       "client_ms": (at - last_answer) * 1000 if last_answer is not None else 0.0}
        elif direction == "B" and kind == "ReadyForQuery" and current is not None:
            current["server_ms"] = (at - current["sent"]) * 1000
            rows.append(current)
            last_answer, current = at, None
    return rows


def run(out: Path, count: int, repeat: int) -> None:
    run_url = _fresh_copy()
    setup(run_url)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from atoms.api.read import answer_read
    from atoms.api.search import answer_search
    from atoms.errors import AtomError
    from atoms.models import Receipt
    from atoms.services.receipts import issued_manifest

    caller = _caller()
    ops = {"read": answer_read, "search": answer_search}
    names = cpu._Names()
    answers: list[Any] = []
    figures: dict[str, list[tuple[float, int, float]]] = {"read": [], "search": [], "page": []}

    def call(op: str, body: dict[str, Any], label: str) -> dict[str, Any] | None:
        with CaptureQueriesContext(connection) as captured:
            started, wall = time.process_time(), time.perf_counter()
            try:
                result = ops[op](caller, body)
            except AtomError as exc:
                answers.append({"op": op, "error": cpu.normalize(
                    exc.as_dict() if hasattr(exc, "as_dict") else [exc.code, str(exc)], names)})
                return None
            used, wall = time.process_time() - started, time.perf_counter() - wall
        figures[label].append((used, len(captured.captured_queries), wall))
        receipt = Receipt.objects.get(id=result["receipt"]["id"])
        answers.append({"op": op, "answer": cpu.normalize(result, names),
                        "manifest": cpu.normalize(issued_manifest(receipt.manifest), names), "kind": receipt.kind,
                        "seq": receipt.state_seq, "signal": receipt.signal_digest})
        return result

    for spec in cpu.calls(count):
        op, body = spec["op"], spec["body"]
        result = call(op, body, op)
        for _ in range(2):
            if result is None or "cursor" not in result:
                break
            options = {**body.get("options", {}), "cursor": result["cursor"]}
            result = call(op, {**body, "options": options}, "page")
    for _ in range(repeat):
        for spec in cpu.calls(count):
            with CaptureQueriesContext(connection) as captured:
                started, wall = time.process_time(), time.perf_counter()
                ops[spec["op"]](caller, spec["body"])
                used, wall = time.process_time() - started, time.perf_counter() - wall
            figures[spec["op"]].append((used, len(captured.captured_queries), wall))
    out.write_text(json.dumps({"answers": answers, "figures": figures}, sort_keys=True, indent=1) + "\n")
    cpu.summary(out.name, figures)  # type: ignore[arg-type]
    for op, rows in figures.items():
        if rows:
            walls = sorted(r[2] * 1000 for r in rows)
            print(f"{out.name:>24} {op:<6} wall median {statistics.median(walls):6.1f} ms  "
                  f"p95 {walls[int(0.95 * (len(walls) - 1))]:6.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("--size", type=int, default=3000)
    t = sub.add_parser("trace")
    t.add_argument("--op", choices=["read", "search"], default="read")
    r = sub.add_parser("run")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--calls", type=int, default=100)
    r.add_argument("--repeat", type=int, default=0)
    args = parser.parse_args()
    if args.command == "build":
        build(args.size)
    elif args.command == "trace":
        trace(args.op)
    else:
        run(args.out, args.calls, args.repeat)


if __name__ == "__main__":
    main()
