"""Who did something, as a person reads it: a key's name, a username, or "system".

Actors are stored as labels (docs/api.md "`GET /api/v1/audit`"): `key:k_<prefix>` for an API key,
`user:<username>` for a person, anything else for the system (`import`, `files_sync`,
`manage.py …`). KV writers are stored bare (`k_<prefix>`, `<username>`, `import`;
docs/kv.md "Decisions the specification leaves open"). The page shows the name and keeps
the stored label in a `title` for those who need the id.

Names are looked up together: a view primes the labels its page shows (one query for the
keys, one for bare usernames), and a template that was not primed gets every key (or every
member's username) of the tenant in a single query on its first unknown one. Never a query
per row. Only the request's tenant's keys and members are looked up, so another tenant's key
id stays an id, and a bare label names a person only if a member of this tenant has that
username (whether some account elsewhere has it is not this tenant's business).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.safestring import SafeString

from tenants.models import ApiKey, Membership, Tenant

BARE_KEY_RE = re.compile(r"^k_([a-z0-9]{10})$")
REQUEST_ATTR = "_actor_names"


@dataclass(frozen=True)
class KeyInfo:
    public_id: str
    name: str
    kind: str
    agents: tuple[str, ...]
    revoked: bool

    @property
    def display(self) -> str:
        """`key support-bot (support)`: the agents a key is limited to, else its kind."""
        scope = ", ".join(self.agents) if self.agents else self.kind
        return f"key {self.name or self.public_id} ({scope})"


@dataclass(frozen=True)
class ActorName:
    kind: str  # "key", "user", "system" or "subject" (an Atom subject that is none of these)
    text: str
    raw: str

    def html(self) -> SafeString:
        return format_html('<span class="actor actor-{}" title="{}">{}</span>', self.kind, self.raw, self.text)

    def __str__(self) -> str:
        return self.text


def _key_prefix(label: str) -> str | None:
    """The key prefix a label names (`key:k_abc…` or a bare KV writer `k_abc…`), or None."""
    match = BARE_KEY_RE.match(label.removeprefix("key:"))
    return match.group(1) if match else None


def _is_bare(label: str) -> bool:
    # KV writers: no kind prefix. A username or a system label (`import`, `manage.py …`).
    return ":" not in label and _key_prefix(label) is None


class ActorNames:
    """The display names of one page's actors, for one tenant."""

    def __init__(self, tenant: Tenant | None) -> None:
        self.tenant = tenant
        self._keys: dict[str, KeyInfo | None] = {}
        self._people: dict[str, bool] = {}
        self._all_keys_loaded = False
        self._all_people_loaded = False

    def prime(self, labels: Iterable[str]) -> ActorNames:
        """Look up every key and bare username among `labels` at once (at most two queries)."""
        labels = {str(label) for label in labels if label}
        prefixes = {p for label in labels if (p := _key_prefix(label)) and p not in self._keys}
        if prefixes:
            self._load_keys(prefix__in=prefixes)
            for prefix in prefixes:
                self._keys.setdefault(prefix, None)  # not this tenant's (or gone): shown as its id
        bare = {label for label in labels if _is_bare(label) and label not in self._people}
        if bare and not self._all_people_loaded:
            found = set(self._members().filter(user__username__in=bare).values_list("user__username", flat=True))
            self._people.update({label: label in found for label in bare})
        return self

    def _members(self) -> QuerySet[Membership]:
        return Membership.objects.filter(tenant=self.tenant) if self.tenant is not None else Membership.objects.none()

    def _load_keys(self, **where: Any) -> None:
        if self.tenant is None:
            return
        rows = ApiKey.objects.for_tenant(self.tenant).filter(**where).values_list(
            "prefix", "name", "kind", "agents", "revoked_at")
        for prefix, name, kind, agents, revoked_at in rows:
            self._keys[prefix] = KeyInfo(f"k_{prefix}", name, kind, tuple(agents or ()), revoked_at is not None)

    def key(self, prefix: str) -> KeyInfo | None:
        if prefix not in self._keys and not self._all_keys_loaded:
            # Not primed: every key of the tenant in one query, so the rest of the page asks nothing.
            self._all_keys_loaded = True
            self._load_keys()
        return self._keys.get(prefix)

    def name(self, label: str, kind: str = "") -> ActorName:
        label = str(label or "")
        if (prefix := _key_prefix(label)) is not None:
            key = self.key(prefix)
            if key is None:
                return ActorName("key", f"key k_{prefix}", label)
            return ActorName("key", key.display, f"{label} (revoked)" if key.revoked else label)
        if label.startswith("user:"):
            return ActorName("user", label.removeprefix("user:"), label)
        if kind == "system" or (kind == "" and _is_bare(label) and not self._is_person(label)):
            return ActorName("system", "system", label)
        if kind == "user" or _is_bare(label):
            return ActorName("user", label, label)
        return ActorName("subject", label, label)

    def _is_person(self, label: str) -> bool:
        if label not in self._people and not self._all_people_loaded:
            # Not primed: every member's username in one query, so the rest of the page asks nothing.
            self._all_people_loaded = True
            self._people.update(dict.fromkeys(self._members().values_list("user__username", flat=True), True))
        return self._people.get(label, False)


def actor_names(request: HttpRequest) -> ActorNames:
    """The request's resolver, made on first use for the request's tenant."""
    names = getattr(request, REQUEST_ATTR, None)
    if names is None:
        names = ActorNames(getattr(request, "tenant", None))
        setattr(request, REQUEST_ATTR, names)
    return names


def prime_actor_names(request: HttpRequest, labels: Iterable[str]) -> ActorNames:
    """For views: look up the page's actors before the template asks for them one by one."""
    return actor_names(request).prime(labels)
