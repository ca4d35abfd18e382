"""Every model registered in the admin: its list page and the change page of its first row render
for a superuser on the demo book (with its memory and sample extractions), and its search box
answers — the curators' front door never answers a 500."""

import pytest
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.urls import reverse

from tests.conftest import DEMO_BOOK
from webnovel import urls  # noqa: F401 — the URLconf loads the admin modules (webnovel/apps.py::AdminConfig)

pytestmark = pytest.mark.skipif(not (DEMO_BOOK / "book.yaml").is_file(), reason="examples/demo-book is absent")


@pytest.fixture
def curator(client, db, django_capture_on_commit_callbacks):
    from bookfiles.rebuilder import book_rebuild
    from core.models import Book
    from webnovel.demo import demo_extractions_ingest

    with django_capture_on_commit_callbacks(execute=True):
        assert book_rebuild(root=DEMO_BOOK)["ok"] is True
        demo_extractions_ingest(book=Book.objects.get(slug="demo-book"))
    user = get_user_model().objects.create_superuser("curator", "c@example.com", "pw-123456")
    client.force_login(user)
    return client


def test_every_admin_list_change_and_search_page_renders(curator):
    models = sorted(admin.site._registry, key=lambda m: m._meta.label)
    assert len(models) == 31  # core, threads, entities, story system, memory, api keys, auth
    rendered = []
    for model in models:
        meta = model._meta
        changelist = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
        assert curator.get(changelist).status_code == 200, changelist
        if admin.site._registry[model].search_fields:
            assert curator.get(changelist, {"q": "林风"}).status_code == 200, changelist
        first = model._default_manager.order_by("pk").first()
        if first is not None:
            page = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[first.pk])
            assert curator.get(page).status_code == 200, page
            rendered.append(meta.label)
    # the demo book fills the main tables: their first rows were rendered
    for label in ("webnovel.Chapter", "threads.Thread", "entities.Entity", "memory.Fact", "memory.DerivationStamp"):
        assert label in rendered
