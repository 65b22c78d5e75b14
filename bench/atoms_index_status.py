"""POST /api/v1/atoms/index/status before and after the index counters (docs/atoms.md
"Index counters"), in one run.

    .venv/bin/python bench/atoms_index_status.py [--keys 10] [--policies-per-key 100]
        [--atoms-per-policy 3] [--repeat 5]

Builds a SQLite database of its own (a temporary directory, deleted afterwards) with one
tenant whose `--keys` keys each read and write `--policies-per-key` policies of their own
(10 x 100 = 1,000 policies in use: the security finding's case, allowed here by raising
the tenant's max_read_policies), `--atoms-per-policy` atoms in each policy, written through
atoms_write, and half of the policies indexed with the fake embedding provider so that
checkpoints exist. It then times the status document `--repeat` times each way:

- before: the per-policy scans the endpoint used to run (a checkpoint lookup, a MAX over
  the policy's revisions and a COUNT of its backlog per policy, plus the two entry counts),
  kept here verbatim as `status_before`;
- after: atoms.services.index_status.status_response, which reads the counters.

It prints the median milliseconds and the number of queries of each, the ratio, and checks
that both documents agree. Service time in this process, no HTTP. Only local files are used.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def status_before(tenant: Any) -> dict[str, Any]:
    """The endpoint's document as computed before the counters (git history of
    atoms/services/index_status.py), per-policy scans included."""
    from datetime import timedelta

    from django.db.models import Max, Q
    from django.utils import timezone

    from atoms.core.embedding import index_config
    from atoms.embedding import describe, provider_spec
    from atoms.models import AtomStore, IndexCheckpoint, IndexEntry, Revision
    from tenants.models import ApiKey

    store = AtomStore.get_or_create_for(tenant)
    encoder = describe(provider_spec(store))
    config = index_config(*encoder) if encoder else None
    served: set[str] = set()
    for key in ApiKey.objects.filter(tenant=tenant, revoked_at__isnull=True):
        served.update(key.effective_read_policies)
    policies = []
    for policy in sorted(served):
        checkpoint = (IndexCheckpoint.objects.filter(tenant=tenant, config=config, policy=policy).first()
                      if config else None) or IndexCheckpoint(tenant=tenant, config=config or "", policy=policy)
        latest = int(Revision.objects.filter(tenant=tenant, policy=policy).aggregate(top=Max("visible_seq"))["top"] or 0)
        after = Q(visible_seq__gt=checkpoint.seq) | Q(visible_seq=checkpoint.seq, id__gt=checkpoint.revision_id)
        waiting = Revision.objects.filter(after, tenant=tenant, policy=policy).count()
        policies.append({"policy": policy, "checkpoint": {"seq": checkpoint.seq, "revisionId": checkpoint.revision_id},
                         "headSeq": latest, "backlog": waiting, "drained": waiting == 0})
    entries = IndexEntry.objects.filter(tenant=tenant, config=config) if config else IndexEntry.objects.none()
    entries.filter(created_at__gte=timezone.now() - timedelta(minutes=5)).count()
    entries.count()
    result: dict[str, Any] = {"ready": encoder is not None and all(p["drained"] for p in policies),
                              "config": config, "indexGeneration": store.index_generation, "policies": policies}
    if encoder is not None:
        result["encoder"] = {"id": encoder[0], "dimensions": encoder[1]}
    return result


def build(keys: int, per_key: int, per_policy: int) -> Any:
    import django

    django.setup()
    from django.core.management import call_command

    from atoms.api.write import answer_write
    from atoms.embedding import tenant_provider
    from atoms.models import AtomStore
    from atoms.principal import Principal
    from atoms.services.indexing import index_step
    from memoryhub.actors import Actor
    from tenants.models import Tenant
    from tenants.services.keys import apikey_create

    progress("migrating ...")
    call_command("migrate", "--noinput", verbosity=0)
    actor = Actor.system("bench/atoms_index_status.py")
    tenant = Tenant.objects.create(slug="status-bench", name="Status bench", max_api_keys=keys + 1,
                                   max_read_policies=keys * per_key)
    loaded = tenant_provider(tenant, AtomStore.get_or_create_for(tenant))
    written = 0
    for k in range(keys):
        policies = [f"team-{k:02}-{p:03}" for p in range(per_key)]
        key, _ = apikey_create(tenant=tenant, kind="ingest", actor=actor, read_policies=policies,
                               write_policies=policies)
        caller = Principal.for_key(key)
        for policy in policies:
            answer_write(caller, {"binding": {"writePolicy": policy}, "changes": [
                {"id": f"a{i}", "op": "create", "content": {"text": f"Note {i} of {policy}.", "links": []},
                 "sources": []} for i in range(per_policy)]})
            written += per_policy
        for policy in policies[: per_key // 2]:
            index_step(tenant=tenant, loaded=loaded, policy=policy, limit=per_policy)
        progress(f"key {k + 1}/{keys}: {written} atoms")
    return tenant


def timed(fn: Any, tenant: Any, repeat: int) -> tuple[float, int, dict[str, Any]]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    times = []
    result: dict[str, Any] = {}
    for _ in range(repeat):
        # The log is a bounded deque: once full, CaptureQueriesContext would count nothing.
        connection.queries_log.clear()
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            result = fn(tenant)
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), len(queries), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=10)
    parser.add_argument("--policies-per-key", type=int, default=100)
    parser.add_argument("--atoms-per-policy", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="memoryhub-bench-status-"))
    sys.path.insert(0, str(ROOT))
    os.environ.update(MEMORYHUB_VAR_DIR=str(tmp / "var"), LOG_LEVEL="WARNING", ATOMS_EMBEDDING="fake",
                      DJANGO_SETTINGS_MODULE="memoryhub.settings", DATABASE_URL=f"sqlite:///{tmp / 'bench.sqlite3'}",
                      ATOMS_VECTOR_INDEX_ROOT="")
    os.environ.pop("REDIS_URL", None)
    try:
        tenant = build(args.keys, args.policies_per_key, args.atoms_per_policy)
        from atoms.services.index_status import status_response

        before_ms, before_queries, before = timed(status_before, tenant, args.repeat)
        after_ms, after_queries, after = timed(status_response, tenant, args.repeat)
        if before != after:
            raise SystemExit("the two status documents differ")
        policies = len(after["policies"])
        print(f"index/status, {args.keys} keys x {args.policies_per_key} read policies = {policies} policies, "
              f"{args.atoms_per_policy} atoms each, SQLite, median of {args.repeat}")
        print(f"  before (per-policy scans): {before_ms:9.1f} ms  {before_queries:5d} queries  "
              f"{before_ms / policies:.3f} ms/policy")
        print(f"  after  (counters):         {after_ms:9.1f} ms  {after_queries:5d} queries  "
              f"{after_ms / policies:.3f} ms/policy")
        print(f"  ratio before/after: {before_ms / after_ms:.1f}x")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
