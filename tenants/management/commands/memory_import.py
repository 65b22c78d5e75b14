from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub.actors import Actor
from tenants.memory.importing import FILE_NAMES, ImportFailure, StoreImport, memory_import, own_folder, read_folder
from tenants.models import Tenant


def _count(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def describe(outcome: StoreImport, *, dry_run: bool) -> str:
    text = f"{outcome.file_name}: {_count(len(outcome.entries), 'entry', 'entries')}"
    if outcome.dropped_duplicates:
        text += f" ({_count(outcome.dropped_duplicates, 'duplicate', 'duplicates')} dropped)"
    if outcome.limit_raised_to is not None:
        text += f"; {'would raise' if dry_run else 'raised'} the {outcome.target} limit to {outcome.limit_raised_to:,}"
    if outcome.unchanged:
        return text + f"; the {outcome.target} store already holds them, unchanged"
    replaced = f", replacing {outcome.before_count}" if outcome.before_count else ""
    if dry_run:
        return text + f"; would be imported into {outcome.target}{replaced}"
    return text + f"; imported into {outcome.target} as version {outcome.version}{replaced}"


class Command(BaseCommand):
    help = ("Import USER.md and MEMORY.md (as the original tool writes them) from a memories/ folder into a "
            "tenant's memory stores, as one `import` version per store, never staged. Both files in one "
            "transaction: any problem prints file, entry and code, exits 1 and changes nothing.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True)
        parser.add_argument("dir", type=Path, help="the memories/ folder (or a folder holding one)")
        parser.add_argument("--dry-run", action="store_true", help="check everything; change nothing")
        parser.add_argument("--replace", action="store_true", help="needed to replace a non-empty store")
        parser.add_argument("--raise-limits", action="store_true",
                            help="raise a store's limit to fit its file instead of failing")

    def handle(self, *args: Any, **o: Any) -> None:
        folder: Path = o["dir"]
        if not folder.is_dir():
            raise CommandError(f"{folder} is not a directory")
        if not any((folder / name).exists() for name in FILE_NAMES.values()) and (folder / "memories").is_dir():
            folder = folder / "memories"
        tenant = Tenant.objects.filter(slug=o["tenant"]).first()
        if tenant is None:
            raise CommandError(f"no tenant {o['tenant']!r}")
        try:
            files = read_folder(folder)
            if not files:
                raise CommandError(f"neither USER.md nor MEMORY.md in {folder}")
            own = own_folder(tenant)
            # The tenant's own folder is adopted: its files become the ones last written, not drift.
            adopt = own is not None and os.path.realpath(folder) == os.path.realpath(own)
            outcomes = memory_import(
                tenant=tenant, files=files, actor=Actor.system("manage.py memory_import"), replace=o["replace"],
                raise_limits=o["raise_limits"], dry_run=o["dry_run"], adopt=adopt,
                reason=f"memory_import from {folder}",
            )
        except ImportFailure as failure:
            raise CommandError(f"{failure}; nothing was imported") from failure
        for outcome in outcomes:
            self.stdout.write(describe(outcome, dry_run=o["dry_run"]))
        if adopt and not o["dry_run"]:
            self.stdout.write(f"adopted {folder} as {tenant.slug}'s memory folder")
