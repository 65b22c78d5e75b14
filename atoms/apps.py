from django.apps import AppConfig


class AtomsConfig(AppConfig):
    name = "atoms"
    verbose_name = "atoms"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from atoms import embedding, settings_section
        from atoms.services.lexicon import lexicon_rebuild_other_versions
        from memoryhub import process_start

        settings_section.register()
        # Its dashboard panels: tenants offers the registry and never imports atoms.
        from atoms import dashboard

        dashboard.register()
        # The embedding model loads at process start (docs/atoms.md "Read path costs").
        process_start.register(process_start.Preload(
            name="encoder", load=embedding.warm_up, load_in_background=embedding.warm_up_in_background,
            status=embedding.encoder_status, enter_worker=embedding.enter_worker))
        # Terms made with another Unicode version are rebuilt at the next migrate
        # (docs/atoms.md "Lexical index").
        post_migrate.connect(lexicon_rebuild_other_versions, sender=self, dispatch_uid="atoms.lexicon_versions")
