# KV audit rows named the namespace in plain text (`agent/namespace#<key digest>`); a namespace
# is a name an agent chose and may say what the memory holds, so rows now keep its digest
# (`agent/ns:<digest>#<key digest>`, tenants/kv/store.py namespace_audit_id). This rewrites the
# rows written before. Namespaces are [A-Za-z0-9_-] and agent slugs [a-z0-9-], so the old id
# splits unambiguously at the first "/" and the "#".

import hashlib

from django.db import migrations

BATCH = 1000


def _digested(object_id: str) -> str | None:
    agent, slash, rest = object_id.partition("/")
    if not slash or rest.startswith("ns:"):
        return None
    namespace, hash_sign, key_digest = rest.partition("#")
    digest = hashlib.sha256(namespace.encode()).hexdigest()[:12]
    return f"{agent}/ns:{digest}{hash_sign}{key_digest}"


def digest_namespaces(apps, schema_editor):
    AuditEvent = apps.get_model("memoryhub", "AuditEvent")
    rows = AuditEvent.objects.filter(object_type__in=["kv_entry", "kv_namespace"]).exclude(
        object_id__contains="/ns:").only("pk", "object_id").order_by("pk")
    last = 0
    while True:
        batch = list(rows.filter(pk__gt=last)[:BATCH])
        if not batch:
            return
        changed = []
        for row in batch:
            new_id = _digested(row.object_id)
            if new_id is not None:
                row.object_id = new_id
                changed.append(row)
        AuditEvent.objects.bulk_update(changed, ["object_id"])
        last = batch[-1].pk


class Migration(migrations.Migration):

    dependencies = [
        ("memoryhub", "0003_audit_public_id"),
    ]

    operations = [
        migrations.RunPython(digest_namespaces, migrations.RunPython.noop, elidable=True),
    ]
