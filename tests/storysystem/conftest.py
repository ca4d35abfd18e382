"""Fixtures of the story-system tests: a book in a tmp folder, and the shared GPL reference
library imported from ../shared/refcsv (skipped with a reason when it is absent)."""

import pytest

from tests.conftest import REFCSV


@pytest.fixture
def book(db, tmp_path):
    from core.models import Book

    return Book.objects.create(slug="tuihun", title="退婚之后", genre="玄幻", root=str(tmp_path))


@pytest.fixture
def refcsv(db):
    """The refcsv library imported next to the seed; returns the import report."""
    if not (REFCSV / "题材与调性推理.csv").exists():
        pytest.skip(f"shared reference CSVs not found at {REFCSV}")
    from storysystem.services import references_import

    return references_import(directory=REFCSV, library="refcsv")


@pytest.fixture
def refcsv_only(refcsv):
    """refcsv as the only enabled library (the seed is disabled), for exact-value checks."""
    from storysystem.models import ReferenceLibrary

    seed = ReferenceLibrary.objects.get(name="seed")
    seed.enabled = False
    seed.save()
    return refcsv
