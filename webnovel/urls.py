from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from webnovel.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("dashboard/", include("dashboard.urls")),
    path("", RedirectView.as_view(url="/dashboard/", permanent=False)),
]
