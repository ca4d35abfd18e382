"""What the rebuild, finalize and sync share on the book-files side: the volumes a book gets from
book.yaml plus its chapter folders, the changed paths by kind, the roster's skipped entries as issues.

The rebuilder writes no table itself: it calls each app's own writers in its one transaction — the
core's rows through ``core.rows``, threads and secrets through ``threads.services``, the roster's
entities and aliases through ``entities.roster``.
"""

from collections import defaultdict
from collections.abc import Iterable

from bookfiles.parser import EntityData, Issue, VolumeData
from core.models import Book
from entities.roster import roster_write


def entities_write(*, book: Book, entities: list[EntityData]) -> tuple[int, int, list[Issue]]:
    """The roster's entities and aliases (entities.roster), with its skipped entries as warnings."""
    count, aliases, skipped = roster_write(book=book, entities=entities)
    return count, aliases, [Issue(*s) for s in skipped]


def volumes_merge(
    config_volumes: list[VolumeData], chapters: Iterable[tuple[int | None, int | None, str]]
) -> list[VolumeData]:
    """book.yaml volumes plus any volume a chapter names (front matter or folder) that book.yaml
    lacks; such a volume takes its name from the volume folder. ``chapters``: (number, volume,
    folder name) in chapter order."""
    volumes = {v.number: VolumeData(v.number, v.name, v.start_chapter, v.end_chapter) for v in config_volumes}
    extra_names: dict[int, str] = {}
    for _number, volume, folder_name in chapters:
        if volume is None or volume in volumes:
            continue
        if volume not in extra_names or (not extra_names[volume] and folder_name):
            extra_names[volume] = folder_name
    for number, name in extra_names.items():
        volumes[number] = VolumeData(number=number, name=name)
    return [volumes[n] for n in sorted(volumes)]


def group_by_kind(items: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for path, kind in items:
        out[kind].append(path)
    return out
