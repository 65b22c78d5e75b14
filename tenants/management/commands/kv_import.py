from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from memoryhub.actors import Actor
from tenants.kv.files import (
    ImportOutcome,
    NamespaceFile,
    import_directory,
    import_namespace,
    namespace_file_paths,
    read_namespace_file,
)
from tenants.kv.rules import AGENT_SLUG_RE, KvError
from tenants.kv.store import agent_ensure
from tenants.models import Agent, Tenant


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def describe(outcome: ImportOutcome, *, dry_run: bool) -> str:
    verb = "would import" if dry_run else "imported"
    text = (f"{verb} {_plural(outcome.created + outcome.updated, 'key')} "
            f"({outcome.created} new, {outcome.updated} updated)")
    if outcome.cleared:
        text += f" after clearing {_plural(outcome.cleared, 'key')}"
    return text


class Command(BaseCommand):
    help = ("Import namespace files (<namespace>.json, as the original writes them) into an agent's "
            "KV store: PATH/*.json, or PATH/.chidori/memory/*.json when that folder exists. "
            "One transaction per file; exits 1 if any file failed.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--agent", required=True, help="created if missing")
        parser.add_argument("path", type=Path)
        parser.add_argument("--replace", action="store_true", help="clear each imported namespace first")
        parser.add_argument("--dry-run", action="store_true", help="check everything, limits included; change nothing")

    def handle(self, *args: Any, **o: Any) -> None:
        source: Path = o["path"]
        if not source.is_dir():
            raise CommandError(f"{source} is not a directory")
        tenant = Tenant.objects.filter(slug=o["tenant"]).first()
        if tenant is None:
            raise CommandError(f"no tenant {o['tenant']!r}")
        if not AGENT_SLUG_RE.match(o["agent"]):
            raise CommandError(f"invalid agent slug {o['agent']!r}: use 1-64 characters of a-z 0-9 -")
        directory = import_directory(source)
        paths = namespace_file_paths(directory)
        if not paths:
            self.stdout.write(f"no .json files in {directory}")
            return
        if o["dry_run"]:
            # Everything runs as for real, in one transaction that is then rolled back, so
            # limits that several files share (namespaces per agent) are checked as well.
            with transaction.atomic():
                failed = self._import(tenant, o["agent"], paths, replace=o["replace"], dry_run=True)
                transaction.set_rollback(True)
        else:
            failed = self._import(tenant, o["agent"], paths, replace=o["replace"], dry_run=False)
        if failed:
            raise CommandError(f"{failed} of {_plural(len(paths), 'file')} failed; nothing was imported from them")

    def _import(self, tenant: Tenant, slug: str, paths: list[Path], *, replace: bool, dry_run: bool) -> int:
        """Import each file in its own transaction; returns how many failed."""
        agent, created = agent_ensure(tenant=tenant, slug=slug, actor=Actor.system("manage.py kv_import"))
        if created:
            self.stdout.write(f"{'would create' if dry_run else 'created'} agent {tenant.slug}/{agent.slug}")
        failed = 0
        for path in paths:
            ok, line = self._one(agent, read_namespace_file(path), replace=replace, dry_run=dry_run)
            failed += not ok
            self.stdout.write(line)
        return failed

    def _one(self, agent: Agent, read: NamespaceFile, *, replace: bool, dry_run: bool) -> tuple[bool, str]:
        """(succeeded, the file's line)."""
        if read.status == "skipped":
            return True, f"{read.name}: warning: " + "; ".join(read.warnings)
        if read.status == "error":
            return False, f"{read.name}: error: {read.error}; nothing imported"
        assert read.namespace is not None
        head = f"{read.name} -> {read.namespace}: "
        warnings = "".join(f"warning: {w}; " for w in read.warnings)
        try:
            # Not dry_run=True here: the caller's outer transaction is the one rolled back.
            outcome = import_namespace(agent=agent, namespace=read.namespace, items=read.items,
                                       replace=replace, dry_run=False)
        except KvError as exc:
            return False, f"{head}error: {exc.code}: {exc.message.rstrip('.')}; nothing imported"
        return True, head + warnings + describe(outcome, dry_run=dry_run)
