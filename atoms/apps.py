from django.apps import AppConfig


class AtomsConfig(AppConfig):
    name = "atoms"
    verbose_name = "atoms"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from atoms import settings_section
        from atoms.fulltext import on_connection_created

        settings_section.register()
        # The full-text index triggers on SQLite call a Python function (atoms/fulltext.py).
        connection_created.connect(on_connection_created, dispatch_uid="atoms.fulltext")
