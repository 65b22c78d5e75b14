"""One client process of the KV concurrency scenarios (spawned by test_concurrency.py).

Usage: python -m tests.tenants.kv.concurrent_client SCENARIO KEY AGENT START_AT INDEX
Prints one JSON line with what it saw. Talks to the database named by DATABASE_URL
through the full Django request stack (test client), not through a server.
"""

from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")

import django

django.setup()

from rest_framework.test import APIClient  # noqa: E402


def main() -> None:
    scenario, raw_key, agent, start_at, index = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    rpc = f"/api/v1/agents/{agent}/memory"
    out: dict[str, object] = {}
    time.sleep(max(0.0, start_at - time.time()))
    if scenario == "distinct":
        responses = [client.post(rpc, {"action": "set", "key": f"p{index}-{j}", "value": j}, format="json")
                     for j in range(200)]
        failures = [r.content.decode()[:300] for r in responses if r.status_code != 200]
        out["failed"] = len(failures)
        out["first_failure"] = failures[0] if failures else None
    elif scenario == "cas":
        url = f"/api/v1/agents/{agent}/namespaces/default/keys/counter"
        done = retries = 0
        while done < 100:
            current = client.get(url)
            value, etag = current.json()["value"], current["ETag"]
            put = client.put(url, {"value": value + 1}, format="json", headers={"If-Match": etag})
            if put.status_code == 412:
                retries += 1
                continue
            assert put.status_code == 200, put.content
            done += 1
        out["retries"] = retries
    elif scenario == "same-key":
        statuses = [client.post(rpc, {"action": "set", "key": "shared", "value": index}, format="json").status_code
                    for _ in range(50)]
        out["failed"] = sum(1 for s in statuses if s != 200)
    elif scenario == "overwrite":
        statuses = [client.post(rpc, {"action": "set", "key": "big", "value": chr(65 + j % 26) * 100_000},
                                format="json").status_code for j in range(60)]
        out["writes"] = len(statuses)
        out["failed"] = sum(1 for s in statuses if s != 200)
    elif scenario == "read":
        torn = failed = 0
        for _ in range(500):
            response = client.post(rpc, {"action": "get", "key": "big"}, format="json")
            if response.status_code != 200:
                failed += 1
                continue
            value = response.json()["result"]
            if not (isinstance(value, str) and len(value) == 100_000 and value == value[0] * 100_000):
                torn += 1
        out["torn"], out["failed"] = torn, failed
    elif scenario == "limit":
        out["status"] = client.post(rpc, {"action": "set", "key": f"new-{index}", "value": 1}, format="json").status_code
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
