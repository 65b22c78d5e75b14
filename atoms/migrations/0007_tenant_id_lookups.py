"""Index look-ups by id inside a tenant (docs/atoms.md "Read path costs")."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('atoms', '0006_drop_fulltext'),
        ('tenants', '0003_memory_files'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='atom',
            index=models.Index(fields=['tenant', 'id'], name='atoms_atom_tenant_id'),
        ),
        migrations.AddIndex(
            model_name='inputtoken',
            index=models.Index(fields=['tenant', 'id'], name='atoms_token_tenant_id'),
        ),
        migrations.AddIndex(
            model_name='receipt',
            index=models.Index(fields=['tenant', 'id'], name='atoms_receipt_tenant_id'),
        ),
        migrations.AddIndex(
            model_name='ref',
            index=models.Index(fields=['tenant', 'principal', 'revision_id'], name='atoms_ref_lookup'),
        ),
        migrations.AddIndex(
            model_name='revision',
            index=models.Index(fields=['tenant', 'id'], name='atoms_rev_tenant_id'),
        ),
        migrations.AddIndex(
            model_name='tombstone',
            index=models.Index(fields=['tenant', 'id'], name='atoms_tomb_tenant_id'),
        ),
    ]
