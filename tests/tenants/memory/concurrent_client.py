"""One writer process for the memory-file concurrency tests.

Usage: python -m tests.tenants.memory.concurrent_client RAW_KEY START_AT INDEX COUNT
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
    raw_key, start_at, index, count = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    time.sleep(max(0.0, start_at - time.time()))
    statuses = [client.post("/api/v1/memory/memory", {"action": "add", "content": f"fact {index}-{j}"},
                            format="json").status_code for j in range(count)]
    print(json.dumps({"statuses": statuses}), flush=True)


if __name__ == "__main__":
    main()
