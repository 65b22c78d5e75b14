# Redacts secrets already stored in pending writes, history and snapshots
# (docs/memory-files.md "Redaction").
#
# Before this release a staged write was stored as sent, and redaction knew only four
# credential shapes. This pass runs today's redaction (memoryhub/redaction.py, with each
# tenant's configured secrets) over every text the memory-files code keeps: the current
# entries, every history version, pending items (payloads, summaries, pinned entries,
# errors, reasons), session snapshots (their digest is recomputed) and threat findings.
# It uses only fields that exist since 0003_memory_files. Rows are read and written one
# tenant at a time, and only changed rows are saved. Running it twice changes nothing
# (redaction is idempotent). There is no way back: the reverse step does nothing.
# The work is done by tenants/memory/stored_redaction.py (shared with adding a tenant
# secret), on the historical models this migration passes it.

from __future__ import annotations

from typing import Any

from django.db import migrations

from tenants.memory.stored_redaction import redact_volume


def redact_stored_secrets(apps: Any, schema_editor: Any) -> None:
    for volume in apps.get_model("tenants", "MemoryVolume").objects.order_by("pk").iterator():
        redact_volume(apps, volume)


class Migration(migrations.Migration):

    dependencies = [
        ('tenants', '0004_tenant_limits'),
    ]

    operations = [
        migrations.RunPython(redact_stored_secrets, migrations.RunPython.noop, elidable=False),
    ]
