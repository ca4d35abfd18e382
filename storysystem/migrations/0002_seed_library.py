"""Load the shipped starter library (storysystem/seed/) so a fresh ``migrate`` already routes.

Later edits of the seed are applied with ``python manage.py import_references storysystem/seed``.
"""

import uuid
from pathlib import Path

from django.db import migrations

SEED_DIR = Path(__file__).resolve().parent.parent / "seed"


def load_seed(apps, schema_editor):
    from storysystem.csvio import folder_parse

    Library = apps.get_model("storysystem", "ReferenceLibrary")
    Table = apps.get_model("storysystem", "ReferenceTable")
    Entry = apps.get_model("storysystem", "ReferenceEntry")
    State = apps.get_model("storysystem", "LibraryState")
    parsed = folder_parse(SEED_DIR)
    errors = [e for t in parsed for e in t.errors]
    if errors:
        raise RuntimeError("seed library is broken: " + "; ".join(errors))
    library, _ = Library.objects.get_or_create(name="seed", defaults={"source_dir": "storysystem/seed"})
    for pt in parsed:
        table, _ = Table.objects.update_or_create(
            library=library,
            name=pt.name,
            defaults={
                "columns": pt.columns,
                "key_column": pt.key_column,
                "has_bom": pt.has_bom,
                "line_terminator": pt.line_terminator,
            },
        )
        for position, row in enumerate(pt.rows):
            Entry.objects.update_or_create(
                table=table,
                code=row.code,
                defaults={"position": position, **row.contract, "extra": row.extra, "raw": row.cells},
            )
    State.objects.update_or_create(pk=1, defaults={"token": uuid.uuid4().hex})


class Migration(migrations.Migration):
    dependencies = [("storysystem", "0001_initial")]

    operations = [migrations.RunPython(load_seed, migrations.RunPython.noop)]
