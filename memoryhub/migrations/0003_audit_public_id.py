# Audit rows get an opaque public id: the global integer pk told a tenant how many changes
# other tenants made between two of its own rows (memoryhub/public_ids.py).

from django.db import migrations, models

import memoryhub.public_ids

BATCH = 1000


def give_public_ids(apps, schema_editor):
    AuditEvent = apps.get_model("memoryhub", "AuditEvent")
    while True:
        rows = list(AuditEvent.objects.filter(public_id__isnull=True).only("pk")[:BATCH])
        if not rows:
            return
        for row in rows:
            row.public_id = memoryhub.public_ids.new_audit_id()
        AuditEvent.objects.bulk_update(rows, ["public_id"])


class Migration(migrations.Migration):

    dependencies = [
        ('memoryhub', '0002_outbox'),
    ]

    operations = [
        migrations.AddField(
            model_name='auditevent',
            name='public_id',
            field=models.CharField(editable=False, max_length=32, null=True),
        ),
        migrations.RunPython(give_public_ids, migrations.RunPython.noop, elidable=True),
        migrations.AlterField(
            model_name='auditevent',
            name='public_id',
            field=models.CharField(default=memoryhub.public_ids.new_audit_id, editable=False, max_length=32, unique=True),
        ),
    ]
