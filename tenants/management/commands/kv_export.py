from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tenants.kv.files import FILE_SUFFIX, namespace_export
from tenants.kv.rules import KvError, resolve_namespace
from tenants.kv.runs import journal_jsonl
from tenants.kv.store import kv_namespaces
from tenants.models import Agent, KvRun, Tenant

SAFE_FILE_STEM = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]*$")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomically(path: Path, chunks: Iterable[str]) -> int:
    """Write UTF-8 text through a temporary file and a rename, so a reader of `path`
    never sees a half-written file; returns the bytes written."""
    size = 0
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in chunks:
                data = chunk.encode("utf-8")
                out.write(data)
                size += len(data)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it private; give it a normal file's mode
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return size


def agent_of(tenant_slug: str, agent_slug: str) -> Agent:
    tenant = Tenant.objects.filter(slug=tenant_slug).first()
    if tenant is None:
        raise CommandError(f"no tenant {tenant_slug!r}")
    agent = Agent.objects.for_tenant(tenant).filter(slug=agent_slug).first()
    if agent is None:
        raise CommandError(f"no agent {agent_slug!r} in tenant {tenant_slug!r}")
    return agent


class Command(BaseCommand):
    help = ("Export an agent's KV store: one <namespace>.json per non-empty namespace (the files "
            "the original keeps in .chidori/memory), one namespace, or a run's journal as <run_id>.jsonl.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--agent", required=True)
        parser.add_argument("path", type=Path, help="directory to write into (created if missing)")
        which = parser.add_mutually_exclusive_group()
        which.add_argument("--namespace", help="export just this namespace ({} when empty)")
        which.add_argument("--run", dest="run_id", help="export this run's journal as JSONL")

    def handle(self, *args: Any, **o: Any) -> None:
        agent = agent_of(o["tenant"], o["agent"])
        target: Path = o["path"]
        if target.exists() and not target.is_dir():
            raise CommandError(f"{target} is not a directory")
        if o["run_id"] is not None:
            self._export_run(agent, o["run_id"], target)
            return
        if o["namespace"] is not None:
            try:
                namespaces = [resolve_namespace(o["namespace"])]
            except KvError as exc:
                raise CommandError(f"invalid namespace: {exc}") from exc
        else:
            namespaces = [summary.namespace for summary in kv_namespaces(agent=agent)]
        target.mkdir(parents=True, exist_ok=True)
        for namespace in namespaces:
            path = target / f"{namespace}{FILE_SUFFIX}"
            size = write_atomically(path, [namespace_export(agent=agent, namespace=namespace)])
            self.stdout.write(f"{path.name}: {size} bytes")
        if not namespaces:
            self.stdout.write(f"{agent.slug} has no keys; nothing written")

    def _export_run(self, agent: Agent, run_id: str, target: Path) -> None:
        run = KvRun.objects.filter(agent=agent, run_id=run_id).first()
        if run is None:
            raise CommandError(f"no run {run_id!r} of agent {agent.slug!r}")
        target.mkdir(parents=True, exist_ok=True)
        if not SAFE_FILE_STEM.match(run.run_id):  # the id becomes a file name: no separators
            raise CommandError(f"run id {run.run_id!r} cannot be used as a file name")
        path = target / f"{run.run_id}.jsonl"
        size = write_atomically(path, journal_jsonl(run))
        self.stdout.write(f"{path.name}: {size} bytes")
