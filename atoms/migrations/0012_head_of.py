"""An index of heads by atom id (docs/atoms.md "Read path costs"): the semantic channel's
eligibility statement finds each hit's head through it. Partial, so it holds one entry per
atom. Built in the migration's transaction: writes to the revision table wait for it
(docs/operations.md "Upgrading")."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('atoms', '0011_postgres_storage'),
        ('tenants', '0007_tenant_suspension'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='revision',
            index=models.Index(condition=models.Q(('is_head', True)), fields=['atom'], name='atoms_rev_head_of'),
        ),
    ]
