from django.apps import AppConfig


class AtomsConfig(AppConfig):
    name = "atoms"
    verbose_name = "atoms"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from atoms import settings_section
        from atoms.services.lexicon import lexicon_rebuild_other_versions

        settings_section.register()
        # Terms made with another Unicode version are rebuilt at the next migrate
        # (docs/atoms.md "Lexical index").
        post_migrate.connect(lexicon_rebuild_other_versions, sender=self, dispatch_uid="atoms.lexicon_versions")
