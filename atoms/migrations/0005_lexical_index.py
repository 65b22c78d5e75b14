"""The lexical index (docs/atoms.md "Lexical index"): tables, then every existing active head
indexed through the service's own term rules, as `manage.py atoms_lexicon --rebuild` would.
"""

import django.db.models.deletion
from django.db import migrations, models


def build(apps, schema_editor) -> None:
    # The live service on purpose: the index must hold exactly what the running code
    # would have written, and the rules are versioned by the Unicode version it stores.
    from atoms.services.lexicon import lexicon_rebuild

    lexicon_rebuild()


class Migration(migrations.Migration):

    dependencies = [
        ('atoms', '0004_index'),
        ('tenants', '0003_memory_files'),
    ]

    operations = [
        migrations.CreateModel(
            name='LexicalCorpus',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('policy', models.CharField(max_length=128)),
                ('docs', models.BigIntegerField(default=0)),
                ('length', models.BigIntegerField(default=0)),
                ('unicode_version', models.CharField(max_length=16)),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('tenant', 'policy'), name='atoms_corpus_unique')],
            },
        ),
        migrations.CreateModel(
            name='LexicalPosting',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('policy', models.CharField(max_length=128)),
                ('term', models.CharField(max_length=64)),
                ('revision_id', models.CharField(max_length=64)),
                ('atom_id', models.CharField(max_length=64)),
                ('tf', models.PositiveIntegerField()),
                ('length', models.PositiveIntegerField()),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant')),
            ],
            options={
                'indexes': [models.Index(fields=['tenant', 'term', 'policy', 'tf', '-length', 'revision_id', 'atom_id'], name='atoms_post_lookup'), models.Index(fields=['revision_id'], name='atoms_post_revision')],
            },
        ),
        migrations.CreateModel(
            name='LexicalTerm',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('policy', models.CharField(max_length=128)),
                ('term', models.CharField(max_length=64)),
                ('docs', models.IntegerField()),
                ('tenant', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.tenant')),
            ],
            options={
                'indexes': [models.Index(fields=['tenant', 'term', 'policy', 'docs'], name='atoms_term_lookup')],
                'constraints': [models.UniqueConstraint(fields=('tenant', 'policy', 'term'), name='atoms_term_unique')],
            },
        ),
        migrations.RunPython(build, migrations.RunPython.noop),
    ]
