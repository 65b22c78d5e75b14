# Index counters (docs/atoms.md "Index counters"): per-policy feed counters and each
# checkpoint's consumed events, filled from the revisions already stored.

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Count, Max, Q


def fill_counters(apps, schema_editor):
    """What atoms.services.feed.feed_rebuild computes, with the historical models."""
    Revision = apps.get_model("atoms", "Revision")
    PolicyFeed = apps.get_model("atoms", "PolicyFeed")
    IndexCheckpoint = apps.get_model("atoms", "IndexCheckpoint")
    rows = Revision.objects.values("tenant_id", "policy").annotate(events=Count("id"), top=Max("visible_seq"))
    PolicyFeed.objects.bulk_create([PolicyFeed(tenant_id=r["tenant_id"], policy=r["policy"], events=r["events"],
                                               head_seq=r["top"] or 0) for r in rows.iterator()], batch_size=500)
    for cp in IndexCheckpoint.objects.all().iterator():
        consumed = Revision.objects.filter(Q(visible_seq__lt=cp.seq) | Q(visible_seq=cp.seq, id__lte=cp.revision_id),
                                           tenant_id=cp.tenant_id, policy=cp.policy).count()
        IndexCheckpoint.objects.filter(pk=cp.pk).update(consumed=consumed)


class Migration(migrations.Migration):

    dependencies = [
        ('atoms', '0007_tenant_id_lookups'),
        ('tenants', '0003_memory_files'),
    ]

    operations = [
        migrations.AddField(
            model_name='indexcheckpoint',
            name='consumed',
            field=models.PositiveBigIntegerField(default=0),
        ),
        migrations.CreateModel(
            name='PolicyFeed',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('policy', models.CharField(max_length=128)),
                ('events', models.PositiveBigIntegerField(default=0)),
                ('head_seq', models.PositiveBigIntegerField(default=0)),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('tenant', 'policy'), name='atoms_policy_feed_unique')],
            },
        ),
        migrations.RunPython(fill_counters, migrations.RunPython.noop, elidable=True),
    ]
