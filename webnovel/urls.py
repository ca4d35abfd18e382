from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from webnovel.api import api

# The admin modules load here, with the pages they serve, not at start-up (webnovel/apps.py::AdminConfig).
admin.autodiscover()

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("dashboard/", include("dashboard.urls")),
    path("", RedirectView.as_view(url="/dashboard/", permanent=False)),
]
