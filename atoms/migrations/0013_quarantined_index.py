"""The quarantined revisions' partial index (docs/atoms.md "Candidates"): a common term's scan
of the posting index skips a quarantined head's postings by probing it, so its window holds
eligible heads only (eligibility applies before the window's cap). It holds only quarantined
revisions, so it is small and quick to build (docs/operations.md "Upgrading"). On SQLite the
lookup names it, so `migrate` runs before the new code starts."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('atoms', '0012_one_head'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='revision',
            index=models.Index(condition=models.Q(('review_status', 'quarantined')), fields=['id'], name='atoms_rev_quarantined'),
        ),
    ]
