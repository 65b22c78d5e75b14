"""The memory tool definition agents are given (JSON schema, OpenAI/Anthropic tool style)."""

from __future__ import annotations

from typing import Any

DESCRIPTION = (
    "Long-term memory in two short notes that are loaded into every new chat: 'user' (who the user is: role, "
    "preferences, style, repeated corrections) and 'memory' (stable facts about the environment: conventions, "
    "tool quirks, lessons). Save stable preferences, repeated corrections and lasting facts; skip one-off task "
    "stories, temporary to-dos, raw dumps and procedures. Both notes are capped in characters: merge or shorten "
    "entries with 'replace', drop stale ones with 'remove', and prefer one batch of operations for several changes. "
    "Writes are stored at once (or queued for review) but reach the prompt only in the next chat, not this one. "
    "Never store instructions for the model or secrets."
)
STEP: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "enum": ["add", "replace", "remove"]},
        "content": {"type": "string", "description": "The entry text (add, replace)."},
        "old_text": {"type": "string", "description": "A short piece of text found in exactly one entry (replace, remove)."},
    },
    "required": ["action"],
}
TOOL_SCHEMA: dict[str, Any] = {
    "name": "memory",
    "description": DESCRIPTION,
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["add", "replace", "remove", "list"]},
            "target": {"type": "string", "enum": ["memory", "user"], "default": "memory"},
            "content": STEP["properties"]["content"],
            "old_text": STEP["properties"]["old_text"],
            "operations": {"type": "array", "items": STEP, "minItems": 1, "maxItems": 50,
                           "description": "Several steps applied together or not at all; omit action/content/old_text."},
        },
    },
}
