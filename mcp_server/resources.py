"""Resources: the live USER.md / MEMORY.md and a session's frozen snapshot.

- `memoryhub://memory/MEMORY.md`, `memoryhub://memory/USER.md`: the approved entries as
  the file projection writes them (tenants/memory/files.py `desired_bytes`), read at once.
- `memoryhub://sessions/{session_id}/snapshot`: the exact system-prompt block frozen when
  the session was created (docs/memory-files.md, `POST /api/v1/sessions`).

Any key of the tenant may read them, as `GET /api/v1/memory` and `GET /api/v1/sessions/{id}`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memoryhub.api.errors import ApiError
from tenants.memory.files import desired_bytes
from tenants.memory.service import volume_for
from tenants.memory.sessions import session_of
from tenants.models import ApiKey

FILES = {"MEMORY.md": "memory", "USER.md": "user"}
FILE_URI = "memoryhub://memory/{name}"
SNAPSHOT_TEMPLATE = "memoryhub://sessions/{session_id}/snapshot"
SNAPSHOT_URI = re.compile(r"^memoryhub://sessions/(?P<session_id>[^/]+)/snapshot$")
DESCRIPTIONS = {
    "MEMORY.md": "Stable facts about the environment, as approved now (changes through the memory tool).",
    "USER.md": "Who the user is, as approved now (changes through the memory tool).",
}


@dataclass(frozen=True)
class Contents:
    uri: str
    mime_type: str
    text: str


def read_resource(key: ApiKey, uri: str) -> Contents:
    for name, target in FILES.items():
        if uri == FILE_URI.format(name=name):
            volume = volume_for(key.tenant)
            return Contents(uri, "text/markdown", desired_bytes(volume, target).decode("utf-8"))
    match = SNAPSHOT_URI.match(uri)
    if match:
        return Contents(uri, "text/plain", session_of(key.tenant, match["session_id"]).snapshot)
    raise ApiError("No such resource.", code="NOT_FOUND")
