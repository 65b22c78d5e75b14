"""Every URL pattern the project serves, read from Django's resolver (nothing listed by hand)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django.urls import URLPattern, URLResolver, get_resolver

PARAM = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")


@dataclass(frozen=True)
class Route:
    """One pattern: `template` is its full route ("api/v1/agents/<str:agent>"), the key of
    the matrix tables."""

    template: str
    name: str | None
    callback: Callable[..., Any]

    @property
    def params(self) -> list[str]:
        return [m.group("name") for m in PARAM.finditer(self.template)]

    def path(self, values: dict[str, str]) -> str:
        """The URL with each <converter:name> replaced by values[name]."""
        missing = [p for p in self.params if p not in values]
        assert not missing, f"{self.template}: no value for {missing}"
        return "/" + PARAM.sub(lambda m: str(values[m.group("name")]), self.template)

    @property
    def view_class(self) -> type | None:
        return getattr(self.callback, "view_class", None) or getattr(self.callback, "cls", None)

    def api_methods(self) -> list[str]:
        """The HTTP methods a class-based API view implements (GET, POST, ...)."""
        cls = self.view_class
        assert cls is not None, f"{self.template}: not a class-based view"
        return [m.upper() for m in ("get", "post", "put", "patch", "delete") if hasattr(cls, m)]


def _pattern_text(pattern: Any) -> str:
    text = str(pattern)
    # re_path patterns keep their anchors; path() routes are plain.
    return text.removeprefix("^").removesuffix("$").replace("\\Z", "")


def _walk(patterns: list[Any], prefix: str) -> Iterator[Route]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _walk(entry.url_patterns, prefix + _pattern_text(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield Route(prefix + _pattern_text(entry.pattern), entry.name, entry.callback)


def all_routes() -> list[Route]:
    return list(_walk(get_resolver().url_patterns, ""))
