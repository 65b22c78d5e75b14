"""One writer process of the mixed-store concurrency test (spawned by test_mixed_writers.py).

Usage: python -m tests.concurrency.mixed_client AGENT_KEY INGEST_KEY START_AT INDEX COUNT
Interleaves, COUNT times: a KV set, a memory-file add, an Atom create and a revise of it,
then reads each back. Prints one JSON line: statuses per operation and the first failures.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")

import django

django.setup()

from rest_framework.test import APIClient  # noqa: E402


def client_with(raw: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def main() -> None:
    agent_raw, ingest_raw, start_at, index, count = (sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]),
                                                     int(sys.argv[5]))
    agent, ingest = client_with(agent_raw), client_with(ingest_raw)
    statuses: dict[str, Counter[int]] = {}
    failures: list[str] = []

    def record(op: str, response: Any) -> Any:
        statuses.setdefault(op, Counter())[response.status_code] += 1
        if response.status_code != 200 and len(failures) < 5:
            failures.append(f"{op} {response.status_code} {response.content.decode()[:300]}")
        return response

    time.sleep(max(0.0, start_at - time.time()))
    for j in range(count):
        name = f"p{index}-{j}"
        record("kv_set", agent.post("/api/v1/agents/bot/memory", {"action": "set", "key": name, "value": j},
                                    format="json"))
        record("memory_add", agent.post("/api/v1/memory/memory", {"action": "add", "content": f"fact {name}"},
                                        format="json"))
        created = record("atom_create", ingest.post("/api/v1/atoms/write", {"changes": [
            {"id": "c", "op": "create", "content": {"text": f"note {name} draft", "links": []}, "sources": []}]},
            format="json"))
        if created.status_code == 200:
            ref = created.json()["changes"]["c"]["ref"]
            record("atom_revise", ingest.post("/api/v1/atoms/write", {"changes": [
                {"id": "r", "op": "revise", "target": ref, "content": {"text": f"note {name}", "links": []},
                 "sources": []}]}, format="json"))
        got = record("kv_get", agent.post("/api/v1/agents/bot/memory", {"action": "get", "key": name}, format="json"))
        if got.status_code == 200 and got.json().get("result") != j:
            failures.append(f"kv_get {name} read {got.json().get('result')!r}")
        record("memory_read", agent.get("/api/v1/memory/memory"))
        record("atom_search", ingest.post("/api/v1/atoms/search", {"query": f"note {name}"}, format="json"))
    print(json.dumps({"statuses": {op: dict(c) for op, c in statuses.items()}, "failures": failures}), flush=True)


if __name__ == "__main__":
    main()
