from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from tenants.models import ApiKey


def create(change_id: str, text: str, links: Any = None, sources: list[Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": change_id, "op": "create", "content": {"text": text, "links": links if links is not None else []},
            "sources": sources or [], **extra}


class AtomsClient:
    def __init__(self, client: APIClient, key: ApiKey) -> None:
        self.client = client
        self.key = key

    def post(self, endpoint: str, body: Any) -> Any:
        return self.client.post(f"/api/v1/atoms/{endpoint}", body, format="json")

    def write(self, *changes: dict[str, Any], **body: Any) -> Any:
        return self.post("write", {"changes": list(changes), **body})

    def ok_write(self, *changes: dict[str, Any], **body: Any) -> dict[str, Any]:
        response = self.write(*changes, **body)
        assert response.status_code == 200, response.content
        return response.json()

    def ref(self, *changes: dict[str, Any]) -> str:
        outcome = self.ok_write(*changes)
        return outcome["changes"][changes[0]["id"]]["ref"]


def prepared_statements() -> set[str]:
    """The texts of the statements prepared on this PostgreSQL connection."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return {row[0] for row in cursor.fetchall()}


def ranked(answer: dict[str, Any]) -> list[tuple[str, Any]]:
    """(text, score) of an answer's items, in order."""
    return [(item["text"], item.get("score")) for item in answer["items"]]
