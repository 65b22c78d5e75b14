"""manage.py atoms_index: drain the semantic index feeds now, with a progress bar.

For the embedded mode without a broker, for a first index of a large import, or after an
encoder change. `--repair` also encodes again the atoms whose stored vectors were damaged
(docs/atoms.md "Semantic index"). Safe beside running workers: the checkpoint compare-and-set lets only one
indexer consume a policy's events at a time (the other skips ahead on REVISION_CONFLICT).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from atoms.embedding import LoadedProvider, ProviderUnavailable, tenant_provider
from atoms.errors import AtomError
from atoms.models import IndexCheckpoint
from atoms.services.indexing import backlog, damaged_atoms, index_step, repair_damaged, served_policies
from atoms.vector_index import refresh
from tenants.models import Tenant


class Command(BaseCommand):
    help = "Encode every pending atom of every served policy (or one tenant's) and refresh the vector files."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="Only this tenant (slug).")
        parser.add_argument("--step", type=int, default=256, help="Events per step (default 256).")
        parser.add_argument("--no-progress", action="store_true", help="No progress bar (logs, CI).")
        parser.add_argument("--repair", action="store_true",
                            help="Also encode again the atoms whose stored vectors are damaged.")

    def handle(self, *args: Any, **options: Any) -> None:
        tenants = Tenant.objects.order_by("slug")
        if options["tenant"]:
            tenants = tenants.filter(slug=options["tenant"])
            if not tenants.exists():
                raise CommandError(f"No tenant {options['tenant']!r}.")
        for tenant in tenants:
            try:
                loaded = tenant_provider(tenant)
            except ProviderUnavailable as exc:
                raise CommandError(f"{tenant.slug}: {exc}") from exc
            if loaded is None:
                self.stdout.write(f"{tenant.slug}: no embedding provider, nothing to index")
                continue
            indexed = 0
            for policy in served_policies(tenant):
                checkpoint, _ = IndexCheckpoint.objects.get_or_create(tenant=tenant, config=loaded.config, policy=policy)
                total = backlog(tenant, checkpoint)
                with tqdm(total=total, desc=f"{tenant.slug}/{policy}", unit="event",
                          disable=options["no_progress"] or not total) as bar:
                    while True:
                        try:
                            step = index_step(tenant=tenant, loaded=loaded, policy=policy, limit=options["step"])
                        except AtomError as exc:
                            if exc.code != "REVISION_CONFLICT":
                                raise
                            continue  # a worker moved the checkpoint: read it again
                        indexed += step.indexed
                        bar.update(step.processed)
                        if not step.pending:
                            break
            if options["repair"]:
                self._repair(tenant, loaded, options)
            refresh(tenant.pk, loaded.config)
            self.stdout.write(f"{tenant.slug}: {indexed} atoms encoded with {loaded.provider.id}")

    def _repair(self, tenant: Tenant, loaded: LoadedProvider, options: dict[str, Any]) -> None:
        """Encode again, a step of atoms at a time, the atoms whose stored vectors are damaged."""
        damaged = damaged_atoms(tenant, loaded.config)
        repaired = 0
        with tqdm(total=len(damaged), desc=f"{tenant.slug}: damaged vectors", unit="atom",
                  disable=options["no_progress"] or not damaged) as bar:
            for start in range(0, len(damaged), options["step"]):
                page = damaged[start:start + options["step"]]
                repaired += repair_damaged(tenant=tenant, loaded=loaded, atom_ids=page)
                bar.update(len(page))
        self.stdout.write(f"{tenant.slug}: damaged vectors in {len(damaged)} entries, {repaired} encoded again")
