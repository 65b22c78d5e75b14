from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.actors import Actor
from tenants.kv.rules import AGENT_SLUG_RE
from tenants.kv.store import agent_ensure
from tenants.models import Tenant


class Command(BaseCommand):
    help = "Create a KV agent (idempotent: an existing agent is left as it is)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True)
        parser.add_argument("slug", help="1-64 characters of a-z 0-9 -")
        parser.add_argument("--name", default="")

    def handle(self, *args: Any, tenant: str, slug: str, name: str, **options: Any) -> None:
        if not AGENT_SLUG_RE.match(slug):
            raise CommandError(f"invalid agent slug {slug!r}: use 1-64 characters of a-z 0-9 -")
        owner = Tenant.objects.filter(slug=tenant).first()
        if owner is None:
            raise CommandError(f"no tenant {tenant!r}; create it with createtenant")
        agent, created = agent_ensure(tenant=owner, slug=slug, name=name, actor=Actor.system("manage.py createagent"))
        self.stdout.write(f"{'created' if created else 'exists'}: {owner.slug}/{agent.slug} ({agent.name})")
        if not created and name and name != agent.name:
            self.stderr.write(f"warning: {owner.slug}/{agent.slug} keeps its name {agent.name!r}")
