from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.actors import Actor
from tenants.api.keys import KeySpecSerializer
from tenants.models import KeyKind, Tenant
from tenants.services.keys import TenantLimitReached, apikey_create


def _csv(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [part.strip() for part in value.split(",") if part.strip()]


class Command(BaseCommand):
    help = "Create an API key; the key itself is printed alone on the last line of stdout."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--kind", required=True, choices=KeyKind.values)
        parser.add_argument("--name", default="")
        parser.add_argument("--read-only", action="store_true")
        parser.add_argument("--agents", help="comma-separated agent slugs (default: all agents)")
        parser.add_argument("--read-policies", help="comma-separated (default: default)")
        parser.add_argument("--write-policies", help="comma-separated (default: default)")

    def handle(self, *args: Any, **o: Any) -> None:
        tenant = Tenant.objects.filter(slug=o["tenant"]).first()
        if tenant is None:
            raise CommandError(f"no tenant {o['tenant']!r}; create it with createtenant")
        data: dict[str, Any] = {"kind": o["kind"], "name": o["name"], "read_only": o["read_only"],
                                "agents": _csv(o["agents"])}
        for name in ["read_policies", "write_policies"]:
            if o[name] is not None:
                data[name] = _csv(o[name])
        spec = KeySpecSerializer(data=data)
        if not spec.is_valid():
            raise CommandError("; ".join(f"{k}: {' '.join(map(str, v))}" for k, v in spec.errors.items()))
        try:
            key, raw = apikey_create(tenant=tenant, actor=Actor.system("manage.py createapikey"), **spec.validated_data)
        except TenantLimitReached as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f"created {key.kind} key {key.public_id} for {tenant.slug}")
        self.stdout.write(raw)
