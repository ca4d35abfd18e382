from django.apps import AppConfig


class ThreadsConfig(AppConfig):
    name = "threads"
    verbose_name = "线索与信息差"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        from core.models import Chapter
        from threads.models import Thread, ThreadHistoryEntry
        from threads.selectors import activity_forget

        # Cache invalidation only: a row saved in place (the admin) forgets the activity maps. The rebuilder's
        # bulk writes send no signal; they change the maps' stamp (and so does a deletion: no post_delete,
        # which would make Django fetch every deleted row).
        for model in (Chapter, Thread, ThreadHistoryEntry):
            post_save.connect(activity_forget, sender=model, dispatch_uid=f"threads-activity-{model.__name__}")
