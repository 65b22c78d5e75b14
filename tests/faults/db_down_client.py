"""Requests against a database nobody listens on (spawned by test_database_down.py).

Usage: DATABASE_URL=postgres://...:<closed port>/x python -m tests.faults.db_down_client
Prints one JSON line: for each request, its status, Content-Type, Retry-After and body.
"""

from __future__ import annotations

import json
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")

import django

django.setup()

from django.test import Client  # noqa: E402

KEY = "mh_abcdefghij_" + "x" * 40


def main() -> None:
    client = Client()
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {KEY}"}
    requests = {
        "whoami": lambda: client.get("/api/v1/whoami", **bearer),
        "kv_set": lambda: client.post("/api/v1/agents/bot/memory", {"action": "set", "key": "k", "value": 1},
                                      content_type="application/json", **bearer),
        "memory_add": lambda: client.post("/api/v1/memory/memory", {"action": "add", "content": "x"},
                                          content_type="application/json", **bearer),
        "atoms_read": lambda: client.post("/api/v1/atoms/read", {"query": "x"}, content_type="application/json",
                                          **bearer),
        "login": lambda: client.post("/login/", {"username": "alice", "password": "pw"}),
        "healthz": lambda: client.get("/healthz"),
    }
    out = {}
    for name, send in requests.items():
        response = send()
        out[name] = {"status": response.status_code, "type": response.get("Content-Type", ""),
                     "retry_after": response.get("Retry-After"), "body": response.content.decode()}
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
