from django.apps import AppConfig


class ProjectConfig(AppConfig):
    """The project configuration (settings, urls, the API assembly) and the cross-app commands
    (``story``, ``demo_setup``). Labelled ``project``: ``webnovel`` is the core domain's label."""

    name = "webnovel"
    label = "project"
    verbose_name = "webnovel"
