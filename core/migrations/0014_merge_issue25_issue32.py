from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("webnovel", "0013_issue25_book_journal_id"),
        ("webnovel", "0013_issue32_chapter_hash_idx"),
    ]

    operations = []
