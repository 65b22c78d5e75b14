"""Threat scanner throughput: ordinary text and crafted worst cases (docs/memory-files.md, the threat scanner).

    .venv/bin/python bench/threats.py [--quick] [--rounds 7]

- ordinary text: a deterministic ~1 MB corpus of plain English sentences, built here from
  a fixed seed, cut into notes of 2,200 characters (the MEMORY.md default limit) and into
  65,536-character windows (the most one scan looks at); every note is scanned once per
  round. Redaction is timed on the same notes. Budget: under 1 ms per KB.
- worst cases: 64 KB made of one keyword repeated, for keywords that start a rule's match
  (so the regex engine tries a match at every repetition), for the scan and for redaction
  (op `redact`, keywords that start a credential rule). Budget: under 150 ms each.

Figures are the median over rounds, which the budgets are judged on; worst cases also show
the slowest round. It prints a
table and writes bench/out/threats.json. Pure local computation: no network, no Django.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "threats.json"
sys.path.insert(0, str(ROOT))

from memoryhub.threats import MAX_SCAN_CHARS, PATTERNS_VERSION, REDACTED, redact, scan  # noqa: E402

CORPUS_CHARS = 1_000_000
NOTE_CHARS = 2_200
BUDGET_MS_PER_KB = 1.0
BUDGET_WORST_MS = 150.0

# One keyword per rule family (several for the busiest ones), each repeated to fill 64 KB.
WORST_KEYWORDS = [
    "ignore ", "ignore all ", "forget the ", "disregard ", "<!-- ", "<!--", "translate and ", "do not tell ",
    "curl ", "curl $", "wget $x ", "cat ", "cat -n ", "you are ", "pretend to ", "show ", "check in ",
    "sliver ", "sliver c2 ", "c2 ", "send ", "send to http ", "share the full ", "authorized_keys ",
    "copy ", "copy .ssh ", "add ", "edit .md ", "password: '", "token=", "x", " ", ".",
]
# The same for redaction (memoryhub/redaction.py): each starts a credential rule's match.
REDACT_WORST_KEYWORDS = [
    "eyJ-", "eyJabcdefgh.", "token:", "token:1", "password=", "secret ", "aws ", "http://a:", "x://a:b",
    "-----BEGIN PRIVATE KEY-----", "Bearer ", "mh_abcdefgh_", "AIza", "sk-", "'password': '",
]

SUBJECTS = ["The team", "Our service", "The user", "This project", "The build", "Each release", "The API",
            "The mobile app", "Support", "The data pipeline", "Every reviewer", "The nightly job"]
VERBS = ["uses", "prefers", "keeps", "needs", "avoids", "documents", "ships", "tracks", "measures", "stores",
         "reviews", "schedules"]
OBJECTS = ["short answers", "Postgres 16", "small pull requests", "typed Python", "weekly releases",
           "tabs over spaces", "a staging environment", "feature flags", "dark mode", "plain English",
           "UTC timestamps", "a changelog", "unit tests", "the metric system", "Markdown notes"]
TAILS = ["for every change", "on weekdays", "since last spring", "in the main repository", "when possible",
         "after each deploy", "for new customers", "during the beta", "without exceptions", "by default"]


def build_corpus(chars: int, seed: int = 20240601) -> str:
    """Plain sentences in the style of memory notes; same seed, same text."""
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    while size < chars:
        sentence = f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} {rng.choice(TAILS)}."
        if rng.random() < 0.15:
            sentence += f" Version {rng.randint(1, 9)}.{rng.randint(0, 20)} is current."
        parts.append(sentence)
        size += len(sentence) + 1
    return " ".join(parts)[:chars]


def chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def timed_rounds(op: Callable[[], object], rounds: int) -> list[float]:
    """Seconds per round, after one warm-up call."""
    op()
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        op()
        samples.append(time.perf_counter() - started)
    return samples


def throughput_row(label: str, notes: list[str], op: Callable[[str], object], rounds: int) -> dict[str, Any]:
    kb = sum(len(note.encode("utf-8")) for note in notes) / 1024
    samples = timed_rounds(lambda: [op(note) for note in notes], rounds)
    median_s = statistics.median(samples)
    ms_per_kb = median_s * 1000 / kb
    return {
        "case": label,
        "notes": len(notes),
        "kb": round(kb, 1),
        "median_s": median_s,
        "kb_per_s": kb / median_s,
        "ms_per_kb": ms_per_kb,
        "within_budget": ms_per_kb < BUDGET_MS_PER_KB,
    }


def worst_row(keyword: str, rounds: int, op: str = "scan") -> dict[str, Any]:
    text = (keyword * (MAX_SCAN_CHARS // len(keyword) + 1))[:MAX_SCAN_CHARS]
    findings = [finding.pattern for finding in scan(text)] if op == "scan" else (
        ["redacted"] if REDACTED in redact(text) else [])
    work: Callable[[], object] = (lambda: scan(text)) if op == "scan" else (lambda: redact(text, ["tenant-secret-1"]))
    samples = timed_rounds(work, rounds)
    median_ms = statistics.median(samples) * 1000
    max_ms = max(samples) * 1000
    return {
        "op": op,
        "keyword": keyword,
        "chars": len(text),
        "findings": findings,
        "median_ms": median_ms,
        "max_ms": max_ms,
        "kb_per_s": len(text.encode("utf-8")) / 1024 / (median_ms / 1000),
        # Judged on the median: on a shared 2-core box a single round can lose the CPU.
        "within_budget": median_ms < BUDGET_WORST_MS,
    }


def print_tables(report: dict[str, Any]) -> None:
    machine = report["machine"]
    print(f"\nThreat scanner, patterns v{report['patterns_version']}; {machine['cpus']} CPUs, "
          f"Python {machine['python']}; median of {report['rounds']} rounds")
    print(f"\nOrdinary text ({report['corpus_chars']:,} chars, {report['corpus_findings']} findings; "
          f"budget < {BUDGET_MS_PER_KB} ms/KB)")
    header = f"{'case':<28} {'notes':>6} {'KB':>8} {'KB/s':>10} {'ms/KB':>8}  ok"
    print(header)
    print("-" * len(header))
    for row in report["ordinary"]:
        print(f"{row['case']:<28} {row['notes']:>6,} {row['kb']:>8,.1f} {row['kb_per_s']:>10,.0f} "
              f"{row['ms_per_kb']:>8.3f}  {'yes' if row['within_budget'] else 'NO'}")
    print(f"\nCrafted 64 KB inputs, one keyword repeated (budget < {BUDGET_WORST_MS:.0f} ms)")
    header = f"{'op':<7} {'keyword':<30} {'median ms':>10} {'max ms':>8} {'KB/s':>10}  ok   findings"
    print(header)
    print("-" * len(header))
    for row in report["worst_cases"]:
        print(f"{row['op']:<7} {row['keyword']!r:<30} {row['median_ms']:>10.1f} {row['max_ms']:>8.1f} {row['kb_per_s']:>10,.0f}  "
              f"{'yes' if row['within_budget'] else 'NO ':<3}  {', '.join(row['findings']) or '-'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per case (default 7)")
    parser.add_argument("--quick", action="store_true", help="3 rounds and a 256 KB corpus")
    args = parser.parse_args()
    rounds = 3 if args.quick else max(1, args.rounds)
    corpus_chars = CORPUS_CHARS // 4 if args.quick else CORPUS_CHARS

    load_start = os.getloadavg()
    corpus = build_corpus(corpus_chars)
    notes = chunks(corpus, NOTE_CHARS)
    windows = chunks(corpus, MAX_SCAN_CHARS)
    corpus_findings = sum(len(scan(note)) for note in notes)

    ordinary = [
        throughput_row(f"scan, {NOTE_CHARS:,}-char notes", notes, scan, rounds),
        throughput_row(f"scan, {MAX_SCAN_CHARS:,}-char windows", windows, scan, rounds),
        throughput_row(f"redact, {NOTE_CHARS:,}-char notes", notes, lambda note: redact(note, ["tenant-secret-1"]),
                       rounds),
    ]
    worst = [worst_row(keyword, rounds) for keyword in WORST_KEYWORDS]
    worst += [worst_row(keyword, rounds, "redact") for keyword in REDACT_WORST_KEYWORDS]

    report: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([".venv/bin/python", "bench/threats.py", *sys.argv[1:]]),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_average_at_start": [round(x, 2) for x in load_start],
            "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        },
        "patterns_version": PATTERNS_VERSION,
        "rounds": rounds,
        "corpus_chars": len(corpus),
        "corpus_findings": corpus_findings,
        "budgets": {"ms_per_kb": BUDGET_MS_PER_KB, "worst_case_ms": BUDGET_WORST_MS},
        "ordinary": ordinary,
        "worst_cases": worst,
        "worst_case_max_ms": max(row["max_ms"] for row in worst),
    }
    print_tables(report)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwritten to {OUT.relative_to(ROOT)}")
    within = all(row["within_budget"] for row in ordinary + worst)
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
