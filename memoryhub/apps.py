from django.apps import AppConfig


class MemoryhubConfig(AppConfig):
    name = "memoryhub"
    verbose_name = "memoryhub"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from memoryhub import signals  # noqa: F401  (connects the worker-ready heartbeat)
        from memoryhub.sqlite_checkpoints import on_connection_created

        connection_created.connect(on_connection_created, dispatch_uid="memoryhub.sqlite_checkpoints")
