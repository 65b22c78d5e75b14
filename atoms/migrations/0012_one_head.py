"""One head per atom (docs/atoms.md "Read path costs"): a partial unique index of revisions
by atom where `is_head`. The write path already kept one head per atom; the database now
holds it too, and the semantic channel's eligibility statement finds each hit's head
through the index. Built in the migration's transaction: writes to the revision table wait
for it, and an atom with two heads (which no release wrote) stops the migration
(docs/operations.md "Upgrading")."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('atoms', '0011_postgres_storage'),
    ]

    operations = [
        migrations.AddConstraint(
            model_name='revision',
            constraint=models.UniqueConstraint(condition=models.Q(('is_head', True)), fields=('atom',), name='atoms_rev_one_head'),
        ),
    ]
