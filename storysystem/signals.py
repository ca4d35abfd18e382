"""Cache invalidation only: any change to the library moves the version token, so the in-process
search index rebuilds on next use (bulk imports call ``library_touch`` themselves)."""

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from storysystem.models import ReferenceEntry, ReferenceLibrary, ReferenceTable
from storysystem.services import library_touch


@receiver([post_save, post_delete], sender=ReferenceEntry)
@receiver([post_save, post_delete], sender=ReferenceTable)
@receiver([post_save, post_delete], sender=ReferenceLibrary)
def _library_changed(sender, **kwargs) -> None:
    if not kwargs.get("raw"):
        library_touch()
