from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "仪表盘"

    def ready(self) -> None:
        from django.contrib import admin

        # The admin's "查看站点" link leads to the dashboard; the dashboard links back to the admin.
        admin.site.site_url = "/dashboard/"
