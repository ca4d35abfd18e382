from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("entities", "0011_issue31_tier_default"),
        ("entities", "0010_issue33_help_texts"),
    ]

    operations = []
