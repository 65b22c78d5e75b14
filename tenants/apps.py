from django.apps import AppConfig


class TenantsConfig(AppConfig):
    name = "tenants"
    verbose_name = "tenants"

    def ready(self) -> None:
        # Each store adds its settings to GET/PATCH /api/v1/tenant.
        from tenants.kv import settings_section as kv_settings
        from tenants.memory import settings_section as memory_settings

        kv_settings.register()
        memory_settings.register()
        # The stores' parts of the tenant dashboard (tenants/dashboard.py).
        from tenants import dashboard_stores

        dashboard_stores.register()
