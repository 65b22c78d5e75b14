"""Audit rows as sentences a person reads: "bob approved a pending write to MEMORY.md".

A sentence is built from the row's actor, action, object type and object id only, plus
facts looked up by those ids (a key's name, which file a pending write targets). Never from
stored content: the rows hold none (digests only), and KV rows name a key by a digest, so a
KV sentence says "a KV value" and names only the agent (docs/operations.md "The tenant
dashboard"). Lookups are made for the whole page at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.urls import NoReverseMatch, reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from memoryhub.models import AuditEvent
from tenants.actor_names import ActorNames
from tenants.memory.importing import FILE_NAMES
from tenants.models import PendingWrite, Tenant

MEMORY_ORIGINS = {
    "foreground": "from a chat",
    "review": "by the after-turn curator",
    "human": "by hand",
    "import": "by an import",
}


@dataclass
class Facts:
    """What the sentences of one page need beyond the rows themselves."""

    tenant: Tenant
    names: ActorNames
    pending_targets: dict[str, str]

    @classmethod
    def for_rows(cls, tenant: Tenant, names: ActorNames, events: Iterable[AuditEvent]) -> Facts:
        events = list(events)
        labels = [e.actor_label for e in events]
        # Objects that are keys: apikey rows name one by id, Atom uses rows by subject.
        labels += [f"key:{e.object_id}" for e in events if e.object_type == "apikey"]
        labels += [e.object_id for e in events if e.object_type == "subject"]
        names.prime(labels)
        pending_ids = {e.object_id for e in events if e.object_type == "pending_write"}
        pending = dict(PendingWrite.objects.filter(volume__tenant=tenant, public_id__in=pending_ids)
                       .values_list("public_id", "target")) if pending_ids else {}
        return cls(tenant, names, pending)

    def file_of_pending(self, pending_id: str) -> str:
        target = self.pending_targets.get(pending_id)
        return FILE_NAMES.get(target or "", "a memory file")


def _code(text: str) -> SafeString:
    return format_html('<code class="id">{}</code>', text)


def _atom(event: AuditEvent, facts: Facts) -> SafeString:
    try:
        url = reverse("atom-detail", args=[facts.tenant.slug, event.object_id])
    except NoReverseMatch:  # not an atom id (an older row): shown, not linked
        return format_html("atom {}", _code(event.object_id))
    return format_html('atom <a href="{}">{}</a>', url, _code(event.object_id))


def _agent_of(object_id: str) -> str:
    # kv_entry ids read `agent/namespace#digest`, kv_namespace ids `agent/namespace`.
    return object_id.split("/", 1)[0]


def _memory_version(event: AuditEvent, facts: Facts) -> SafeString:
    # memory_store ids read `<target>@<version>`; the origin is the action's middle word.
    target, _, number = event.object_id.partition("@")
    origin = MEMORY_ORIGINS.get(event.action.split(".")[1], "")
    name = FILE_NAMES.get(target, target)
    return format_html("changed {} (version {}{})", name, number, f", {origin}" if origin else "")


Phrase = Callable[[AuditEvent, Facts], SafeString]


def text(words: str) -> Phrase:
    return lambda event, facts: format_html("{}", words)


PHRASES: dict[str, Phrase] = {
    # Keys and people
    "apikey.create": lambda e, f: format_html("created {}", f.names.name(f"key:{e.object_id}").html()),
    "apikey.revoke": lambda e, f: format_html("revoked {}", f.names.name(f"key:{e.object_id}").html()),
    "membership.set": lambda e, f: format_html("set the role of {}", e.object_id),
    "membership.delete": lambda e, f: format_html("removed {} from the tenant", e.object_id),
    "tenant.create": text("created the tenant"),
    # Written by the Django admin for any field it changed (name, slug, limits).
    "tenant.update": text("changed the tenant in the Django admin"),
    "tenant.settings": text("changed the tenant settings"),
    "tenant.suspend": text("suspended the tenant"),
    "tenant.unsuspend": text("lifted the tenant's suspension"),
    "agent.create": lambda e, f: format_html("created agent {}", e.object_id),
    "agent.update": lambda e, f: format_html("changed agent {}", e.object_id),
    "agent.delete": lambda e, f: format_html("deleted agent {}", e.object_id),
    # KV
    "kv.set": lambda e, f: format_html("set a KV value of agent {}", _agent_of(e.object_id)),
    "kv.delete": lambda e, f: format_html("deleted a KV value of agent {}", _agent_of(e.object_id)),
    "kv.clear": lambda e, f: format_html("cleared a KV namespace of agent {}", _agent_of(e.object_id)),
    "kv.agent.create": lambda e, f: format_html("created agent {}", e.object_id),
    "kv.agent.delete": lambda e, f: format_html("deleted agent {} and its KV data", e.object_id),
    "kv.run.create": lambda e, f: format_html("started KV run {}", _code(e.object_id)),
    "kv.run.close": lambda e, f: format_html("closed KV run {}", _code(e.object_id)),
    # Memory files
    "memory.stage": lambda e, f: format_html("asked to write to {} (held for review)", f.file_of_pending(e.object_id)),
    "memory.approve": lambda e, f: format_html("approved a pending write to {}", f.file_of_pending(e.object_id)),
    "memory.reject": lambda e, f: format_html("rejected a pending write to {}", f.file_of_pending(e.object_id)),
    "memory.foreground.write": _memory_version,
    "memory.review.write": _memory_version,
    "memory.human.write": _memory_version,
    "memory.import.write": _memory_version,
    "memory.drift.detected": lambda e, f: format_html("found {} edited outside memoryhub", e.object_id),
    "memory.drift.import": lambda e, f: format_html("took the outside edit of {} into the store", e.object_id),
    "memory.drift.overwrite": lambda e, f: format_html("overwrote the outside edit of {} with the stored text",
                                                       e.object_id),
    "memory.secrets.add": text("added a secret to redact from memory files"),
    "memory.secrets.clear": text("cleared the secrets redacted from memory files"),
    "memory.limit.raise": lambda e, f: format_html("raised the size limit of {}",
                                                   FILE_NAMES.get(e.object_id, e.object_id)),
    # Atoms
    "atoms.write": lambda e, f: format_html("wrote atoms (operation {})", _code(e.object_id)),
    "atoms.approve": lambda e, f: format_html("approved {}", _atom(e, f)),
    # The page's reject also writes `atoms.ui.reject` (docs/atoms.md "Review UI"): the engine's
    # row says what changed in the store, so the two sentences differ.
    "atoms.reject": lambda e, f: format_html("marked the quarantined text of {} rejected", _atom(e, f)),
    "atoms.ui.edit": lambda e, f: format_html("edited {}", _atom(e, f)),
    "atoms.ui.retire": lambda e, f: format_html("retired {}", _atom(e, f)),
    "atoms.ui.restore": lambda e, f: format_html("restored an older revision of {}", _atom(e, f)),
    "atoms.ui.reject": lambda e, f: format_html("rejected {} from the review page", _atom(e, f)),
    "atoms.purge": lambda e, f: format_html("purged atoms (erasure receipt {})", _code(e.object_id)),
    "atoms.uses": lambda e, f: format_html("recorded which atoms {} used", f.names.name(e.object_id).html()),
    "atoms.uses.reset": lambda e, f: format_html("reset the atom uses of {}", f.names.name(e.object_id).html()),
}


def readable_action(action: str) -> str:
    """An action nobody wrote a sentence for, as words: `kv.agent.rename` → "kv agent rename"."""
    return " ".join(action.replace("_", " ").replace(".", " ").split()) or "an unnamed action"


def sentence(event: AuditEvent, facts: Facts) -> SafeString:
    """`<actor> <what happened>`, escaped; ids are in <code>, the actor's label in its title."""
    actor = facts.names.name(event.actor_label, event.actor_kind).html()
    phrase = PHRASES.get(event.action)
    if phrase is None:
        what = format_html("did “{}” on {} {}", readable_action(event.action), event.object_type.replace("_", " "),
                           _code(event.object_id))
    else:
        what = phrase(event, facts)
    return format_html("{} {}", actor, what)
