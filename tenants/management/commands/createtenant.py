from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.actors import Actor
from tenants.models.tenancy import slug_validator
from tenants.services.tenancy import tenant_ensure


class Command(BaseCommand):
    help = "Create a tenant (idempotent: an existing tenant is left as it is unless --name is given)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", default=None)

    def handle(self, *args: Any, slug: str, name: str | None, **options: Any) -> None:
        try:
            slug_validator(slug)
        except ValidationError as exc:
            raise CommandError(f"invalid slug {slug!r}: {exc.messages[0]}") from exc
        tenant, created = tenant_ensure(slug=slug, name=name, actor=Actor.system("manage.py createtenant"))
        self.stdout.write(f"{'created' if created else 'exists'}: {tenant.slug} ({tenant.name})")
