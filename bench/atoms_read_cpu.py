"""CPU time and queries per Atom read and search, and the answers themselves, on a kept corpus.

    .venv/bin/python bench/atoms_read_cpu.py build FILE [--size 100000]
    .venv/bin/python bench/atoms_read_cpu.py run FILE --out ANSWERS.json [--calls N] [--repeat N]
    .venv/bin/python bench/atoms_read_cpu.py compare OLD.json NEW.json

`build` writes the corpus of bench/atoms_scale.py (same texts, same links) into a SQLite file
that is kept, so runs of old and new code can alternate on one corpus without rebuilding it
(building 100k atoms takes minutes). `run` works on a copy of FILE (reads write refs and
receipts, so every run starts from the same state) and makes a fixed list of about 200 reads
and searches: varied queries and signal kinds, token budgets, limits, depths, and every
cursor followed for up to two more pages. It records each answer with its receipt's stored
manifest, normalized (refs, receipt ids and operation ids renamed by first appearance, clock
fields dropped, cursors opened), and the CPU time (`time.process_time`) and number of
queries of each call. With `--repeat N` the read and search calls of the list are made N more
times (refs then exist) for the CPU figures only. `compare` says whether two runs answered
byte for byte alike and prints their CPU and query figures side by side
(docs/benchmarks.md "CPU and queries per read").

The machine this runs on is shared: process time is the figure to compare, not wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SLUG = "bench-read-cpu"
IDS = re.compile(r"\b(ref|receipt|operation|input):[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
CLOCK_KEYS = {"evaluatedAt", "createdAt", "x", "at", "issuedAt"}


def setup(database: Path) -> None:
    os.environ.update(DATABASE_URL=f"sqlite:///{database}", LOG_LEVEL="WARNING",
                      DJANGO_SETTINGS_MODULE="memoryhub.settings", ATOMS_EMBEDDING="none",
                      MEMORYHUB_VAR_DIR=str(database.parent / "var"))
    for name in ("REDIS_URL", "ATOMS_VECTOR_INDEX_ROOT"):
        os.environ.pop(name, None)
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    import django

    django.setup()


def build(database: Path, size: int) -> None:
    setup(database)
    from atoms_scale import Corpus, grow
    from django.core.management import call_command

    from atoms.principal import Principal
    from memoryhub.actors import Actor
    from tenants.services.keys import apikey_create
    from tenants.services.tenancy import tenant_ensure

    call_command("migrate", "--noinput", verbosity=0)
    actor = Actor.system("bench")
    tenant, _ = tenant_ensure(slug=SLUG, name="Read CPU", actor=actor)
    key, _ = apikey_create(tenant=tenant, kind="ingest", actor=actor, name="bench")
    seconds = grow(Principal.for_key(key), Corpus(), [], size, time.monotonic() + 7200)
    print(f"built {size:,} atoms in {seconds:.0f} s", file=sys.stderr)


def calls(count: int) -> list[dict[str, Any]]:
    """The fixed call list: (op, body) with varied signals and options."""
    from atoms_scale import Corpus

    corpus = Corpus()
    queries = corpus.queries(count)
    out: list[dict[str, Any]] = []
    for i, query in enumerate(queries):
        options: dict[str, Any] = {"tokens": [4096, 1024, 256, 8192, 64][i % 5]}
        if i % 3 == 1:
            options["limit"] = [4, 12, 40][i % 4 % 3]
        if i % 4 == 2:
            options["depth"] = [0, 2, 1][i % 3]
        state: dict[str, Any] = {"query": query}
        if i % 6 == 5:
            state["context"] = queries[(i * 7) % len(queries)]
        if i % 10 == 9:
            state["observations"] = [queries[(i + 1) % len(queries)], queries[(i + 2) % len(queries)]]
        out.append({"op": "read", "body": {"state": state, "options": options}})
        if i % 2 == 0:
            search_options = {"limit": [10, 3, 50][i % 3]}
            if i % 8 == 4:
                search_options["depth"] = 2
            out.append({"op": "search", "body": {"query": query, "options": search_options}})
    return out


class _Names:
    """Random ids renamed by first appearance, so two runs compare."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def __call__(self, match: re.Match[str]) -> str:
        return self.names.setdefault(match.group(0), f"{match.group(1)}#{len(self.names)}")


def normalize(value: Any, names: _Names) -> Any:
    from atoms.services.cursors import SALT
    from memoryhub import keyset

    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in CLOCK_KEYS:
                continue
            if key == "cursor" and isinstance(item, str) and not item.startswith("{"):
                item = keyset.open_cursor(item, salt=SALT)
            out[key] = normalize(item, names)
        return out
    if isinstance(value, list):
        return [normalize(item, names) for item in value]
    if isinstance(value, str):
        return IDS.sub(names, value)
    return value


def run(database: Path, out: Path, count: int, repeat: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="memoryhub-read-cpu-"))
    copy = work / "db.sqlite3"
    shutil.copyfile(database, copy)
    if Path(f"{database}-wal").exists():  # a build that was not checkpointed yet
        shutil.copyfile(f"{database}-wal", f"{copy}-wal")
    try:
        setup(copy)
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from atoms.api.read import answer_read
        from atoms.api.search import answer_search
        from atoms.errors import AtomError
        from atoms.models import Receipt
        from atoms.principal import Principal
        from atoms.services.receipts import issued_manifest
        from tenants.models import ApiKey

        key = ApiKey.objects.filter(tenant__slug=SLUG).order_by("id").first()
        caller = Principal.for_key(key)
        ops = {"read": answer_read, "search": answer_search}
        names = _Names()
        answers: list[Any] = []
        figures: dict[str, list[tuple[float, int]]] = {"read": [], "search": [], "page": []}

        def call(op: str, body: dict[str, Any], label: str) -> dict[str, Any] | None:
            with CaptureQueriesContext(connection) as captured:
                started = time.process_time()
                try:
                    result = ops[op](caller, body)
                except AtomError as exc:
                    answers.append({"op": op, "error": normalize(exc.as_dict() if hasattr(exc, "as_dict")
                                                                  else [exc.code, str(exc)], names)})
                    return None
                cpu = time.process_time() - started
            figures[label].append((cpu, len(captured.captured_queries)))
            receipt = Receipt.objects.get(id=result["receipt"]["id"])
            answers.append({"op": op, "answer": normalize(result, names),
                            "manifest": normalize(issued_manifest(receipt.manifest), names), "kind": receipt.kind,
                            "seq": receipt.state_seq, "signal": receipt.signal_digest})
            return result

        for spec in calls(count):
            op, body = spec["op"], spec["body"]
            result = call(op, body, op)
            for _ in range(2):  # follow the cursor for two more pages
                if result is None or "cursor" not in result:
                    break
                options = {**body.get("options", {}), "cursor": result["cursor"]}
                result = call(op, {**body, "options": options}, "page")
        for _ in range(repeat):
            for spec in calls(count):
                started = time.process_time()
                with CaptureQueriesContext(connection) as captured:
                    ops[spec["op"]](caller, spec["body"])
                figures[spec["op"]].append((time.process_time() - started, len(captured.captured_queries)))
        out.write_text(json.dumps({"answers": answers, "figures": figures}, sort_keys=True, indent=1) + "\n")
        summary(out.name, figures)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def summary(label: str, figures: dict[str, list[list[float]]]) -> None:
    for op, rows in figures.items():
        if rows:
            cpu = [r[0] * 1000 for r in rows]
            queries = [r[1] for r in rows]
            print(f"{label:>24} {op:<6} n={len(rows):>4} cpu median {statistics.median(cpu):6.1f} ms  "
                  f"mean {statistics.fmean(cpu):6.1f} ms  queries median {statistics.median(queries):4.0f} "
                  f"max {max(queries)}")


def compare(old: Path, new: Path) -> int:
    a, b = json.loads(old.read_text()), json.loads(new.read_text())
    summary(old.name, a["figures"])
    summary(new.name, b["figures"])
    if len(a["answers"]) != len(b["answers"]):
        print(f"DIFFERENT: {len(a['answers'])} answers against {len(b['answers'])}")
        return 1
    differing = [i for i, (x, y) in enumerate(zip(a["answers"], b["answers"], strict=True))
                 if json.dumps(x, sort_keys=True) != json.dumps(y, sort_keys=True)]
    if differing:
        print(f"DIFFERENT: {len(differing)} of {len(a['answers'])} answers, first at {differing[0]}")
        return 1
    print(f"identical: {len(a['answers'])} answers")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("file", type=Path)
    b.add_argument("--size", type=int, default=100_000)
    r = sub.add_parser("run")
    r.add_argument("file", type=Path)
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--calls", type=int, default=100, help="queries in the list (reads; every other one also a search)")
    r.add_argument("--repeat", type=int, default=0)
    c = sub.add_parser("compare")
    c.add_argument("old", type=Path)
    c.add_argument("new", type=Path)
    args = parser.parse_args()
    if args.command == "build":
        build(args.file.resolve(), args.size)
        return 0
    if args.command == "run":
        run(args.file.resolve(), args.out.resolve(), args.calls, args.repeat)
        return 0
    return compare(args.old, args.new)


if __name__ == "__main__":
    sys.exit(main())
