# Per-tenant limits on keys and policies, and opaque public ids (docs/api.md "Tenant settings").

import django.core.validators
from django.db import migrations, models

import memoryhub.public_ids

BATCH = 1000


def give_public_ids(apps, schema_editor):
    """Existing pending writes get their random public id before the column turns unique."""
    PendingWrite = apps.get_model("tenants", "PendingWrite")
    while True:
        rows = list(PendingWrite.objects.filter(public_id__isnull=True).only("pk")[:BATCH])
        if not rows:
            return
        for row in rows:
            row.public_id = memoryhub.public_ids.new_pending_id()
        PendingWrite.objects.bulk_update(rows, ["public_id"])


class Migration(migrations.Migration):

    dependencies = [
        ('tenants', '0003_memory_files'),
    ]

    operations = [
        migrations.AddField(
            model_name='tenant',
            name='max_api_keys',
            field=models.PositiveIntegerField(default=100, help_text='Most active (unrevoked) API keys the tenant may hold.', validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(10000)]),
        ),
        migrations.AddField(
            model_name='tenant',
            name='max_read_policies',
            field=models.PositiveIntegerField(default=100, help_text='Most distinct Atom read policies its active keys may name together.', validators=[django.core.validators.MinValueValidator(1), django.core.validators.MaxValueValidator(1000)]),
        ),
        migrations.AddField(
            model_name='pendingwrite',
            name='public_id',
            field=models.CharField(editable=False, max_length=32, null=True),
        ),
        migrations.RunPython(give_public_ids, migrations.RunPython.noop, elidable=True),
        migrations.AlterField(
            model_name='pendingwrite',
            name='public_id',
            field=models.CharField(default=memoryhub.public_ids.new_pending_id, editable=False, max_length=32, unique=True),
        ),
    ]
