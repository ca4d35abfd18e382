"""One owner for every field, in the admin: a row that comes from an author's file (a chapter, a
thread, a card's front matter, the roster, book.yaml …) is shown read-only, with the file to edit
(its path relative to the book folder), because the next ``sync`` or ``rebuild`` reads that file again
and would silently undo an edit made here. Rows made by ingestion or curation stay editable, through
their services, which journal the edit (``core/journal.py``).

``FileOwnedAdmin`` is mixed into a ``ModelAdmin``: ``file_origin(obj)`` says where a row comes from
(None: not from a file). When ``file_owned_fields`` is None every field is the file's and the change
page is a view page (a POST is refused); otherwise only those fields are read-only and a POST that
names them is refused whole, with the file named (a read-only field is not part of the form, so such a
POST is forged: saving the rest under a success message would hide that the value did not change). File rows cannot be
deleted here either: the file would bring them back. ``FileOwnedInline`` makes an inline read-only
under a file-owned parent.
"""

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.http import HttpResponseRedirect

FILE_NOTE_FIELD = "file_source"


def file_note(path: str, *, part: str = "") -> str:
    """The Chinese line that tells a curator where a value is edited: ``来自 <path> 的 <part>，请在文件中修改``."""
    where = f"{path} 的 {part}" if part else path
    return f"来自 {where}，请在文件中修改"


class FileOwnedAdmin:
    """A ModelAdmin mixin: file-derived rows read-only, with their file named (see the module docstring)."""

    file_owned_fields: tuple[str, ...] | None = None  # None: every field belongs to the file

    def file_origin(self, obj: Any) -> str | None:
        """The note naming the file ``obj`` comes from (``file_note``), or None when it is not file-derived."""
        path = getattr(obj, "source_path", "")
        return file_note(path) if path else None

    def _file_owned(self, obj: Any) -> bool:
        return obj is not None and obj.pk is not None and self.file_origin(obj) is not None

    @admin.display(description="字段归属")
    def file_source(self, obj: Any) -> str:
        return self.file_origin(obj) or "可在此编辑（修改写入书籍文件夹的日志 .journal/）"

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if not self._file_owned(obj):
            return fields
        owned = self._owned_names(obj)
        return [FILE_NOTE_FIELD, *(f for f in fields if f != FILE_NOTE_FIELD), *(f for f in owned if f not in fields)]

    def _owned_names(self, obj: Any) -> tuple[str, ...]:
        owned = self.file_owned_fields
        if owned is None:
            owned = tuple(f.name for f in self.model._meta.fields if f.editable and not f.auto_created)
        return owned

    def change_view(self, request, object_id, form_url="", extra_context=None):
        if request.method == "POST" and self.file_owned_fields is not None:  # else a view page: 403
            obj = self.get_object(request, unquote(object_id))
            posted = [name for name in self._owned_names(obj) if name in request.POST] if self._file_owned(obj) else []
            if posted:
                labels = "、".join(str(self.model._meta.get_field(name).verbose_name) for name in posted)
                self.message_user(request, f"未修改：{labels} {self.file_origin(obj)}", level=messages.ERROR)
                return HttpResponseRedirect(request.get_full_path())
        return super().change_view(request, object_id, form_url, extra_context)

    def get_fields(self, request, obj=None):
        fields = list(super().get_fields(request, obj))
        if self._file_owned(obj):
            fields = [FILE_NOTE_FIELD, *(f for f in fields if f != FILE_NOTE_FIELD)]
        return fields

    def has_change_permission(self, request, obj=None):
        if self.file_owned_fields is None and self._file_owned(obj):
            return False  # the view page: every field is the file's
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        if self._file_owned(obj):
            return False  # the next sync would bring the row back from its file
        return super().has_delete_permission(request, obj)


class FileOwnedInline:
    """An inline mixin: under a parent that ``parent_file_owned`` says comes from a file, the inline's
    rows are shown read-only (no add, change or delete). Without a parent test, always read-only."""

    def parent_file_owned(self, obj: Any) -> bool:
        return True

    def _locked(self, obj: Any) -> bool:
        return obj is None or obj.pk is None or self.parent_file_owned(obj)

    def has_add_permission(self, request, obj=None):
        return False if self._locked(obj) else super().has_add_permission(request, obj)

    def has_change_permission(self, request, obj=None):
        return False if self._locked(obj) else super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return False if self._locked(obj) else super().has_delete_permission(request, obj)
