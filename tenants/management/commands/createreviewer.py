from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from memoryhub.actors import Actor
from tenants.models import Role, Tenant
from tenants.services.members import MemberError
from tenants.services.tenancy import membership_set


class Command(BaseCommand):
    help = "Create or update a login and make it a member of a tenant with a role."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--username", required=True)
        parser.add_argument("--password", required=True)
        parser.add_argument("--role", default=Role.REVIEWER, choices=Role.values)

    def handle(self, *args: Any, **o: Any) -> None:
        tenant = Tenant.objects.filter(slug=o["tenant"]).first()
        if tenant is None:
            raise CommandError(f"no tenant {o['tenant']!r}; create it with createtenant")
        user_model = get_user_model()
        try:
            with transaction.atomic():  # a refused role leaves the password as it was, too
                user, created = user_model.objects.get_or_create(username=o["username"])
                user.set_password(o["password"])
                user.save()
                membership_set(tenant=tenant, user=user, role=o["role"],
                               actor=Actor.system("manage.py createreviewer"))
        except MemberError as exc:
            raise CommandError(f"{o['username']} keeps their role in {tenant.slug}: {exc.message}") from exc
        self.stdout.write(f"{'created' if created else 'updated'} {user.username}: {o['role']} of {tenant.slug}")
