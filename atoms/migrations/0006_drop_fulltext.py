"""The trigram prefilter of the old substring match goes: candidates now come from the
lexical index (0005) and the vector index (docs/atoms.md "Candidates"). Reversing this
migration rebuilds the prefilter exactly as 0003 made it.
"""

from __future__ import annotations

import importlib

from django.db import migrations

fulltext = importlib.import_module("atoms.migrations.0003_fulltext")


class Migration(migrations.Migration):

    dependencies = [
        ("atoms", "0005_lexical_index"),
    ]

    operations = [
        migrations.RunPython(fulltext.backwards, fulltext.forwards),
    ]
