from django.urls import path

from dashboard import continuity_views, memory_views, search_views, views

app_name = "dashboard"

urlpatterns = [
    path("", views.book_list, name="books"),
    path("<str:slug>/", views.overview, name="overview"),
    path("<str:slug>/threads/", views.thread_board, name="threads"),
    path("<str:slug>/threads/<str:thread_id>/", views.thread_detail, name="thread"),
    path("<str:slug>/entities/", views.entity_list, name="entities"),
    path("<str:slug>/entities/<str:entity_id>/", views.entity_detail, name="entity"),
    path("<str:slug>/secrets/", views.secrets, name="secrets"),
    path("<str:slug>/context/", views.context_preview, name="context"),
    path("<str:slug>/style/", views.style_drift, name="style"),
    path("<str:slug>/continuity/", continuity_views.continuity_page, name="continuity"),
    path("<str:slug>/memory/", memory_views.memory_page, name="memory"),
    path("<str:slug>/search/", search_views.search_page, name="search"),
    path("<str:slug>/memory/<str:key>/<str:action>/", memory_views.memory_fact_action, name="memory_action"),
]
