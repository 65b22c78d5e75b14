"""Helpers for KV API tests: an agent key's client and RPC shortcuts."""

from __future__ import annotations

import json
from typing import Any

from rest_framework.test import APIClient


class Kv:
    def __init__(self, client: APIClient, agent: str = "bot") -> None:
        self.client = client
        self.agent = agent

    def call(self, body: Any, raw: bytes | None = None, **headers: str) -> Any:
        data = raw if raw is not None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        return self.client.generic("POST", f"/api/v1/agents/{self.agent}/memory", data,
                                   content_type="application/json", headers=headers)

    def ok(self, body: dict[str, Any], **headers: str) -> Any:
        response = self.call(body, **headers)
        assert response.status_code == 200, response.content
        return response.json()["result"]

    def set(self, key: str, value: Any, **fields: Any) -> Any:
        return self.ok({"action": "set", "key": key, "value": value, **fields})

    def get(self, key: str, **fields: Any) -> Any:
        return self.ok({"action": "get", "key": key, **fields})

    def list(self, **fields: Any) -> Any:
        return self.ok({"action": "list", **fields})

    def url(self, tail: str) -> str:
        return f"/api/v1/agents/{self.agent}/{tail}"
