from django.apps import AppConfig


class AtomsConfig(AppConfig):
    name = "atoms"
    verbose_name = "atoms"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from atoms import settings_section

        settings_section.register()
