# Opaque public ids for threat findings (docs/api.md "Tenant isolation"): their integer pk,
# global across tenants, was in the findings page's URLs.

from django.db import migrations, models

import memoryhub.public_ids

BATCH = 1000


def give_public_ids(apps, schema_editor):
    """Existing findings get their random public id before the column turns unique."""
    ThreatFinding = apps.get_model("tenants", "ThreatFinding")
    while True:
        rows = list(ThreatFinding.objects.filter(public_id__isnull=True).only("pk")[:BATCH])
        if not rows:
            return
        for row in rows:
            row.public_id = memoryhub.public_ids.new_finding_id()
        ThreatFinding.objects.bulk_update(rows, ["public_id"])


class Migration(migrations.Migration):

    dependencies = [
        ('tenants', '0005_redact_stored_secrets'),
    ]

    operations = [
        migrations.AddField(
            model_name='threatfinding',
            name='public_id',
            field=models.CharField(editable=False, max_length=32, null=True),
        ),
        migrations.RunPython(give_public_ids, migrations.RunPython.noop, elidable=True),
        migrations.AlterField(
            model_name='threatfinding',
            name='public_id',
            field=models.CharField(default=memoryhub.public_ids.new_finding_id, editable=False, max_length=32, unique=True),
        ),
    ]
