from django.apps import AppConfig


class MemoryhubConfig(AppConfig):
    name = "memoryhub"
    verbose_name = "memoryhub"

    def ready(self) -> None:
        from memoryhub import signals  # noqa: F401  (connects the worker-ready heartbeat)
