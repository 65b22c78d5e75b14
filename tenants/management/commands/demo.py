from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from memoryhub.actors import Actor
from tenants.models import ApiKey, KeyKind, Role, Tenant
from tenants.services.keys import apikey_create
from tenants.services.tenancy import membership_set, tenant_ensure

DEMO_PASSWORD = "memoryhub-demo"
ACTOR = Actor.system("manage.py demo")


def _keys_file() -> Path:
    # The raw demo keys are kept (0600, under var/) so that re-running `demo` prints
    # the same working keys instead of minting new ones each time.
    return Path(settings.VAR_DIR) / "demo-keys.json"


def _still_valid(tenant: Tenant, raw: str) -> bool:
    prefix = ApiKey.parse(raw)
    key = ApiKey.objects.filter(tenant=tenant, prefix=prefix).first() if prefix else None
    return bool(key and key.is_active and key.matches(raw))


class Command(BaseCommand):
    help = (
        "Seed local demo data (idempotent): tenants `demo` and `sandbox`, logins `reviewer` and "
        f"`admin` (password {DEMO_PASSWORD!r}) and one API key of each kind, printed."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.PRODUCTION:
            raise CommandError("demo creates known passwords; it refuses to run with MEMORYHUB_ENV=production")
        user_model = get_user_model()
        with transaction.atomic():
            demo, _ = tenant_ensure(slug="demo", name="Demo", actor=ACTOR)
            sandbox, _ = tenant_ensure(slug="sandbox", name="Sandbox", actor=ACTOR)
            reviewer, _ = user_model.objects.get_or_create(username="reviewer")
            reviewer.set_password(DEMO_PASSWORD)
            reviewer.save()
            admin, _ = user_model.objects.get_or_create(username="admin")
            admin.set_password(DEMO_PASSWORD)
            admin.is_staff = admin.is_superuser = True
            admin.save()
            membership_set(tenant=demo, user=reviewer, role=Role.REVIEWER, actor=ACTOR)
            membership_set(tenant=sandbox, user=reviewer, role=Role.VIEWER, actor=ACTOR)
            membership_set(tenant=demo, user=admin, role=Role.ADMIN, actor=ACTOR)
            membership_set(tenant=sandbox, user=admin, role=Role.ADMIN, actor=ACTOR)

            path = _keys_file()
            saved: dict[str, str] = json.loads(path.read_text()) if path.exists() else {}
            keys: dict[str, str] = {}
            for kind in KeyKind.values:
                raw = saved.get(kind)
                if not raw or not _still_valid(demo, raw):
                    _, raw = apikey_create(tenant=demo, kind=kind, name=f"demo {kind}", actor=ACTOR)
                keys[kind] = raw
        path.write_text(json.dumps(keys, indent=2))
        path.chmod(0o600)

        self.stdout.write("Demo tenant: demo (also: sandbox)")
        self.stdout.write(f"Reviewer login: reviewer / {DEMO_PASSWORD}   Admin login: admin / {DEMO_PASSWORD}")
        for kind, raw in keys.items():
            self.stdout.write(f"{kind:>8} key: {raw}")
        self.stdout.write(f'Try: curl -H "Authorization: Bearer {keys["agent"]}" http://127.0.0.1:8000/api/v1/whoami')
        self.stdout.write("MCP (make run): http://127.0.0.1:8001/mcp with any key above as the Bearer token (docs/mcp.md)")
