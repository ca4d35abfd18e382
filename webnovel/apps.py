from django.apps import AppConfig
from django.contrib import admin
from django.contrib.admin.apps import SimpleAdminConfig
from django.contrib.admin.checks import check_admin_app, check_dependencies
from django.core import checks


class ProjectConfig(AppConfig):
    """The project configuration (settings, urls, the API assembly) and the cross-app commands
    (``story``, ``demo_setup``). Labelled ``project``: ``webnovel`` is the core domain's label."""

    default = True  # the module also holds the admin's config
    name = "webnovel"
    label = "project"
    verbose_name = "webnovel"


def admin_app_check(app_configs=None, **kwargs):
    """The admin's own check of every ModelAdmin, after loading them (the checks may run before the URLconf)."""
    admin.autodiscover()
    return check_admin_app(app_configs, **kwargs)


class AdminConfig(SimpleAdminConfig):
    """The admin, with its ``admin.py`` modules loaded by the URLconf (``webnovel/urls.py``) instead of at
    start-up. They import every app's services and schemas (pydantic): a third of a ``story`` read process,
    which like the MCP stdio server never serves a page. The system checks load them first, so
    ``manage.py check`` still checks every ModelAdmin."""

    default = False

    def ready(self) -> None:
        checks.register(check_dependencies, checks.Tags.admin)
        checks.register(admin_app_check, checks.Tags.admin)
